import Foundation
import Testing
@testable import Reel
import ReelPreview
import ReelTestSupport

/// What a take's clips lost, as the app sees it while recording (a preview's status bar) and
/// as a recovery of the clips says it: the clips kept, never those undone.
extension CameraRecorderTakeTests {
    /// A camera recorder whose camera loses frames 10–11 (in a clip from 0 to 1 s) and 45–49 (in
    /// one from 1.2 to 2 s), and `more`, both clips recorded and listed.
    func twoLossyClips(_ dir: TemporaryDirectory, _ clock: ManualClock, more: Set<Int64> = []) async throws -> CameraRecorder {
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        let recorder = CameraRecorder(camera: LossyCamera(lost: Set<Int64>([10, 11, 45, 46, 47, 48, 49]).union(more)), settings: settings, clock: clock)
        recorder.outputURL = dir.url.appendingPathComponent("take.mp4")
        try await recorder.start()
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 1))
        _ = try await settled { recorder.recordedDuration }
        try recorder.pause()
        clock.advance(to: MediaTime(seconds: 1.2))
        #expect(try await eventually { recorder.clips.count == 1 })
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 2))
        _ = try await settled { recorder.recordedDuration }
        try recorder.pause()
        clock.advance(to: MediaTime(seconds: 2.2))
        #expect(try await eventually { recorder.clips.count == 2 })
        #expect(recorder.clips.map(\.droppedFrames) == [2, 5], "\(recorder.clips.map(\.droppedFrames))")
        return recorder
    }

    /// The preview's status bar counts what the clips kept lost, as the merged file's summary
    /// does: an undone clip takes its drops with it, at once (it said 7 after the undo, the 5
    /// of the clip undone included, until the recorder's next progress).
    @Test func theStatusBarCountsTheDropsOfTheClipsKept() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        // Frames 70–72 are lost in a third clip, from 2.2 to 2.6 s.
        let recorder = try await twoLossyClips(dir, clock, more: [70, 71, 72])
        #expect(PreviewWindow.Status(of: recorder).droppedFrames == 7)
        #expect(recorder.recordingSession?.frameDrops.total == 7)

        #expect(try recorder.removeLastClip())
        #expect(PreviewWindow.Status(of: recorder).droppedFrames == 2, "the undone clip's 5 are gone at once")
        #expect(recorder.recordingSession?.frameDrops.total == 2)

        // The clip being recorded counts its own as they come, and goes with an undo at once,
        // finished or not.
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 2.6))
        let recording = try await settled { PreviewWindow.Status(of: recorder).droppedFrames }
        #expect(recording == 5, "2 kept and 3 in the clip being recorded: \(recording)")
        try recorder.pause()
        #expect(try recorder.removeLastClip())
        #expect(PreviewWindow.Status(of: recorder).droppedFrames == 2, "the clip in flight took its 3")
        clock.advance(to: MediaTime(seconds: 2.8))
        let after = try await settled { PreviewWindow.Status(of: recorder).droppedFrames }
        #expect(after == 2, "once the undone clip is finished too: \(after)")
        #expect(recorder.clips.map(\.droppedFrames) == [2])

        // The recorder's own progress says the same once it reports again.
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 3.6))
        _ = try await settled { recorder.recordedDuration }
        #expect(recorder.takeRecorder?.progress?.droppedFrames == 2, "\(String(describing: recorder.takeRecorder?.progress?.droppedFrames))")
        let summary = try #require(try await stop(recorder, clock))
        #expect(summary.droppedFrames == 2)
    }

    /// The clips' manifest keeps what each finished clip lost, so that a recovery of the clips
    /// (after a crash or an abort) says it as the recorder would have (it said none); a
    /// manifest written before drops were kept still recovers, with none said.
    @Test func aRecoveryOfTheClipsSaysWhatTheyLost() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = try await twoLossyClips(dir, clock)
        let kept = recorder.clips.reduce(into: FrameDrops()) { $0.add($1.frameDrops) }
        let folder = dir.url.appendingPathComponent("take.clips", isDirectory: true)
        let manifestURL = folder.appendingPathComponent(RecordingSession.manifestName)
        // A clip is listed a moment before the manifest that says it finished is on the disk
        // (written after the list is updated, outside its lock): read it once it says so.
        func readManifest() -> [String: Any]? {
            (try? Data(contentsOf: manifestURL)).flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
        }
        _ = try await eventually {
            ((readManifest()?["clips"] as? [[String: Any]]) ?? []).filter { $0["finished"] as? Bool == true }.count == 2
        }
        let manifest = try #require(readManifest())
        let entries = try #require(manifest["clips"] as? [[String: Any]])
        let written = entries.map { ($0["drops"] as? [String: Int64])?.values.reduce(0, +) ?? 0 }
        #expect(written == [2, 5], "the manifest's drops: \(entries)")

        // A manifest of a recorder before drops were kept: the same clips, no "drops".
        let old = dir.url.appendingPathComponent("old.clips", isDirectory: true)
        try FileManager.default.createDirectory(at: old, withIntermediateDirectories: false)
        for name in ["clip-001.mp4", "clip-002.mp4"] {
            try FileManager.default.copyItem(at: folder.appendingPathComponent(name), to: old.appendingPathComponent(name))
        }
        var before = manifest
        before["clips"] = entries.map { $0.filter { $0.key != "drops" } }
        before["target"] = dir.url.appendingPathComponent("old.mp4").path
        try JSONSerialization.data(withJSONObject: before).write(to: old.appendingPathComponent(RecordingSession.manifestName))

        guard case .clips = try #require(recorder.abort()).outcome else { Issue.record("the abort left no clips"); return }
        let recovered = try RecordingSession.recover(folder: folder)
        #expect(recovered.clipCount == 2)
        #expect(recovered.droppedFrames == 7, "\(recovered.frameDrops)")
        #expect(recovered.frameDrops == kept)

        let older = try RecordingSession.recover(folder: old)
        #expect(older.clipCount == 2 && older.videoFrames == recovered.videoFrames)
        #expect(older.droppedFrames == 0, "no drops kept, none said")
        _ = try await stop(recorder, clock)
    }
}
