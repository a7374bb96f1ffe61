import Foundation
import Synchronization
import Testing
import Reel
import ReelSystem
import ReelTestSupport
@testable import ReelCLI

/// What `reel record --replay` says of a folder that a kill left saves in (the library decides:
/// ``ReplayFolderTests``), and its hint's words.
@Suite struct ReplaySaverTests {
    @Test func saysWhatAKillLeftAndWhatBecameOfIt() throws {
        let dir = try TemporaryDirectory()
        let hidden = dir.url.appendingPathComponent(".Reel 2026-12-01 at 03.10.00.replay-999999-17.mp4")
        try PatternFile.write(hidden, settings: VideoSettings(preset: "ultrafast"))
        let unfinished = dir.url.appendingPathComponent(".Reel 2026-12-01 at 03.12.00.replay-999999-2.mp4")
        try PatternFile.write(unfinished, settings: VideoSettings(preset: "ultrafast"), finish: false)
        let said = ReplaySaver.notes(try ReplayBuffer.prepareFolder(dir.url)).joined(separator: "\n")
        #expect(said.contains("a replay saved while reel was killed is now \(dir.url.path)/Reel 2026-12-01 at 03.10.00.mp4"), "\(said)")
        #expect(said.contains("\(unfinished.path) is a replay save that a kill cut short"), "\(said)")
    }

    @Test func aReadOnlyFolderIsRefusedAtOnceNamingReplayDir() throws {
        let disk = try SmallDisk(size: "1M")
        #expect(try Subprocess.run(["mount", "-o", "remount,ro", disk.url.path]).status == 0)
        #expect {
            _ = try ReplaySaver.prepareFolder(disk.url, console: Console(isTerminal: false))
        } throws: { error in
            let e = error as? ReelError
            return e?.message.contains("read-only") == true && e?.hint?.contains("--replay-dir") == true
        }
    }

    /// A replay save asked for before anything was recorded (the buffer is empty): said with a
    /// `saveFailed` event and a warning, and counted as a failed save, which makes the run's exit
    /// status 1 as the docs say of any failed save (s6, issue 26 item 18: it exited 0).
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

/// Giving a finished file the first name that is free.
@Suite struct PlaceAtFirstFreeTests {
    @Test func takesTheFirstFreeNameAndReplacesNothing() throws {
        let dir = try TemporaryDirectory()
        let names = (1...3).map { dir.url.appendingPathComponent("n\($0).mp4") }
        try Data("one".utf8).write(to: names[0])
        let temporary = dir.url.appendingPathComponent(".n1.replay-1-1.mp4")
        try Data("new".utf8).write(to: temporary)
        #expect(try FilePlacement.placeAtFirstFree(temporary, candidates: names, what: "the file") == names[1])
        #expect(try String(contentsOf: names[0], encoding: .utf8) == "one")
        #expect(try String(contentsOf: names[1], encoding: .utf8) == "new")
        #expect(!FileManager.default.fileExists(atPath: temporary.path))
        try Data("newer".utf8).write(to: temporary)
        try Data("three".utf8).write(to: names[2])
        #expect(throws: ReelError.self) { try FilePlacement.placeAtFirstFree(temporary, candidates: Array(names.prefix(3)), what: "the file") }
        #expect(try String(contentsOf: temporary, encoding: .utf8) == "newer", "a file with nowhere to go stays where it is")
    }
}
