import Foundation
import Testing
import Reel
import ReelTestSupport

/// A take with a microphone that reaches its limit waits there as one without (port3 P1): the
/// clip that reached it is completed, the limit said, and an undo opens the take again; the
/// take's progress counts a paused clip until it is completed (port3 P2).
extension CameraRecorderTakeTests {
    func recorderWithSound(_ dir: TemporaryDirectory, _ clock: ManualClock) -> CameraRecorder {
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        let recorder = CameraRecorder(camera: camera(), microphone: ToneSource(), settings: settings, clock: clock)
        recorder.outputURL = dir.url.appendingPathComponent("take.mp4")
        return recorder
    }

    @Test func aTakeWithSoundWaitsAtItsLimit() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorderWithSound(dir, clock)
        // The NextLevel pattern: a clip, a pause, a clip held past the limit, undo, record again.
        try await recorder.startRecording(limit: 2.02)
        clock.advance(to: MediaTime(seconds: 0.5))
        _ = try await settled { recorder.recordedDuration }
        try recorder.pause()
        clock.advance(to: MediaTime(seconds: 0.7))
        #expect(try await eventually { recorder.clips.count == 1 })
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 3))
        #expect(try await eventually { recorder.hasReachedLimit && recorder.clips.count == 2 },
                "at the limit: \(recorder.clips.count) clips, \(recorder.recordedDuration.seconds) s, recording \(recorder.isRecording)")
        #expect(!recorder.isRecording && !recorder.canRecord)
        #expect(recorder.progress == 1, "progress \(recorder.progress) at the limit")
        #expect { try recorder.pause() } throws: { ($0 as? ReelError)?.code == .limitReached }

        try recorder.removeLastClip()
        #expect(!recorder.hasReachedLimit && recorder.canRecord && recorder.clips.count == 1)
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 3.5))
        _ = try await settled { recorder.recordedDuration }
        try recorder.pause()
        clock.advance(to: MediaTime(seconds: 4))
        #expect(try await eventually { recorder.clips.count == 2 })
        let summary = try #require(try await stop(recorder, clock))
        #expect(summary.clipCount == 2 && !summary.reachedLimit)
        #expect(abs(summary.duration.seconds - 1) < 0.07, "\(summary.duration.seconds) s: 0.5 s and 0.5 s kept")
    }
}
