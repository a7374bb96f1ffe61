import Foundation
import Synchronization
import Testing
@testable import ReelCLI
import Reel
import ReelTestSupport

/// A replay save asked for before anything was recorded (the buffer is empty): said with a
/// `saveFailed` event and a warning, and counted as a failed save, which makes the run's exit
/// status 1 as the docs say of any failed save (s6, issue 26 item 18: it exited 0).
@Suite struct ReplaySaverTests {
    @Test func aSaveOfNothingYetIsAFailedSave() async throws {
        let dir = try TemporaryDirectory()
        let events = Mutex<[String]>([])
        let saver = ReplaySaver(buffer: try ReplayBuffer(duration: MediaTime(seconds: 2)), folder: dir.url, container: .mp4,
                                console: Console(isTerminal: false), json: false, onEvent: { line in events.withLock { $0.append(line) } })
        let saved = await saver.saveNow()
        #expect(!saved)
        #expect(saver.failed == 1 && saver.saved == 0)
        let said = events.withLock { $0 }
        #expect(said.count == 1 && said[0].contains("\"saveFailed\"") && said[0].contains("nothingRecorded"), "\(said)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).isEmpty, "no file made")
    }
}
