import Foundation
import Testing
import Reel
import ReelPreview
import ReelTestSupport

/// What a stranger porting a NextLevel-style clip camera found (issue 29, p5), on a stepped
/// manual clock: the state right after `start()`.
extension CameraRecorderTakeTests {
    /// Right after `start()`, before anything is recorded, the take is neither recording nor
    /// paused, as NextLevel's and `AVCaptureMovieFileOutput`'s (p5 F8: `isPaused` was true);
    /// it is paused once a clip was recorded and `pause()` ended it.
    @Test func beforeTheFirstRecordTheTakeIsNotPaused() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock)
        try await recorder.start()
        #expect(!recorder.isPaused && !recorder.isRecording && recorder.canRecord)
        try recorder.record()
        #expect(recorder.isRecording && !recorder.isPaused)
        clock.advance(to: MediaTime(seconds: 0.5))
        _ = try await settled { recorder.recordedDuration }
        try recorder.pause()
        #expect(recorder.isPaused && !recorder.isRecording)
        _ = try await stop(recorder, clock)
        #expect(!recorder.isPaused && !recorder.isRecording)
        // The next start after a stop: not paused either.
        recorder.outputURL = dir.url.appendingPathComponent("next.mp4")
        try await recorder.start()
        #expect(!recorder.isPaused && !recorder.isRecording)
        _ = try await stop(recorder, clock)
    }
}
