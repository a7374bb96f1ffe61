import Foundation
import Testing
@testable import Reel
import ReelTestSupport

/// A pause puts on the disk all that was recorded before it: the encoder gives out the frames
/// its lookahead held and the file completes its fragment, so that a kill during the pause
/// (here: a copy of the file as the disk holds it, which is what a kill leaves) loses nothing.
@Suite struct PauseFlushTests {
    @Test(arguments: ["mp4", "mkv"])
    func whatWasRecordedBeforeAPauseIsOnTheDiskDuringIt(_ ext: String) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("paused.\(ext)")
        let clock = ManualClock(mode: .stepped)
        let session = CaptureSession(clock: clock)
        try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240)))
        try session.addInput(ToneSource())
        // veryfast: x264 holds about fifteen frames in its lookahead.
        let recorder = Recorder(url: url, settings: Recorder.Settings())
        recorder.pause(at: MediaTime(seconds: 2.9))
        try session.addOutput(recorder)
        let paused = Task {
            for await event in recorder.events { if case .paused = event { return true } }
            return false
        }
        try await session.start()
        clock.advance(to: MediaTime(seconds: 5))
        #expect(await paused.value, "the recorder paused")
        // Frames 0 to 86 were recorded (the pause falls on frame 87's slot at 2.9 s).
        var counters: [Int64?] = []
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let copy = dir.url.appendingPathComponent("killed-\(Int(Date().timeIntervalSince1970 * 1000)).\(ext)")
            try? FileManager.default.removeItem(at: copy)
            try FileManager.default.copyItem(at: url, to: copy)
            if (try? Recovery.recover(copy)) != nil {
                counters = (try? MediaProbe.decodeLuma(copy, width: 320, height: 240).map(\.counter)) ?? []
                if counters.count >= 87 { break }
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(counters == (0..<87).map { Optional($0) }, "every frame before the pause is on the disk: \(counters.count)")
        await session.stop()
        let summary = try await recorder.result()
        #expect(summary.frames == 87)
    }
}
