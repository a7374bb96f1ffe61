import Foundation
import Testing
import Reel
import ReelPreview
import ReelTestSupport

/// What a stranger porting a NextLevel-style clip camera found (issue 29, p5), on a stepped
/// manual clock: the state right after `start()`, and the preview's size after an undo.
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

    /// The preview's status bar counts the size of the clips kept: an undo takes the clip's
    /// bytes off at once, while paused (p5: it went on counting the undone clip).
    @Test func thePreviewsSizeCountsTheClipsKept() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock)
        try await recorder.start()
        for (clip, end) in [(1, 1.0), (2, 2.0)] {
            try recorder.record()
            clock.advance(to: MediaTime(seconds: end - 0.2))
            _ = try await settled { recorder.recordedDuration }
            try recorder.pause()
            clock.advance(to: MediaTime(seconds: end))
            #expect(try await eventually { recorder.clips.count == clip })
        }
        let firstClip = try #require(recorder.clips.first)
        let firstMedia = try MediaProbe.packetExtents(firstClip.url).reduce(0) { $0 + $1.size }
        let both = try await settled { PreviewWindow.Status(of: recorder).bytes }
        #expect(both > firstMedia + firstMedia / 2, "two clips: \(both) bytes, the first \(firstMedia)")
        #expect(try recorder.removeLastClip())
        // The camera runs on while paused: its next pictures let the recorder say so.
        clock.advance(to: MediaTime(seconds: 2.2))
        let kept = try await settled { PreviewWindow.Status(of: recorder).bytes }
        // (The encoder's count and the file's packets may differ by a byte or so.)
        #expect(abs(kept - firstMedia) <= firstMedia / 100, "the clip kept: \(kept) bytes, its file's media \(firstMedia) (both clips: \(both))")
        _ = try await stop(recorder, clock)
    }
}
