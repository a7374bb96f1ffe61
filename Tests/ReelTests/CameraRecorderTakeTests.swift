import Foundation
import Testing
import Reel
import ReelPreview
import ReelTestSupport

/// A camera recorder's take on a stepped manual clock, exactly: the time recorded while a clip
/// runs, the end of a take at its limit, and clips taken back after the stop (issue 29).
@Suite struct CameraRecorderTakeTests {
    func camera() -> TestPatternSource {
        TestPatternSource(size: PixelSize(width: 160, height: 120), frameRate: FrameRate(30), beeps: .never, name: "camera")
    }

    func recorder(_ dir: TemporaryDirectory, _ clock: ManualClock, name: String = "take.mp4") -> CameraRecorder {
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        let recorder = CameraRecorder(camera: camera(), settings: settings, clock: clock)
        recorder.outputURL = dir.url.appendingPathComponent(name)
        return recorder
    }

    /// `value` once it has stopped changing (the recorder has taken every frame the clock let
    /// through), polled in real time; gives up after 20 s with the last value.
    func settled<T: Equatable>(_ value: () -> T) async throws -> T {
        var last = value(), same = 0
        let end = Date().addingTimeInterval(20)
        while same < 4 && Date() < end {
            try await Task.sleep(for: .milliseconds(100))
            let now = value()
            same = now == last ? same + 1 : 0
            last = now
        }
        return last
    }

    /// Stops `recorder`, moving the stepped clock on meanwhile: the camera waits on it for its
    /// next picture, and stopping waits for the camera.
    func stop(_ recorder: CameraRecorder, _ clock: ManualClock) async throws -> RecordingSummary? {
        let ticking = Task {
            while !Task.isCancelled {
                clock.advance(by: MediaTime(value: 1, timescale: 30))
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        defer { ticking.cancel() }
        return try await recorder.stop()
    }

    /// Polls `condition` for up to 20 s.
    func eventually(_ condition: () -> Bool) async throws -> Bool {
        let end = Date().addingTimeInterval(20)
        while !condition() && Date() < end { try await Task.sleep(for: .milliseconds(50)) }
        return condition()
    }

    @Test func theClipBeingRecordedIsCountedOnce() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock)
        try await recorder.startRecording(limit: 10)
        clock.advance(to: MediaTime(seconds: 1))
        let first = try await settled { recorder.recordedDuration }.seconds
        #expect(first > 0.9 && first <= 1.04, "\(first) s recorded after a second of the first clip")
        #expect(abs(recorder.progress - first / 10) < 0.001, "progress \(recorder.progress) for \(first) s of 10")

        try recorder.pause()
        clock.advance(to: MediaTime(seconds: 1.5))
        _ = try await settled { recorder.clips.count }
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 2.5))
        let second = try await settled { recorder.recordedDuration }.seconds
        #expect(second > 1.9 && second <= 2.1, "\(second) s recorded a second into the second clip")
        #expect(abs(recorder.progress - second / 10) < 0.001, "progress \(recorder.progress) for \(second) s of 10")
        _ = try await stop(recorder, clock)
    }

    /// A preview's status bar reads a camera recorder's take as it goes (`showStatus(of:)` took
    /// only a `Recorder`, and a ported camera app fed the bar by hand).
    @Test func aPreviewsStatusFollowsTheTake() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock)
        recorder.maxRecordedDuration = MediaTime(seconds: 10)
        try await recorder.start()
        #expect(PreviewWindow.Status(of: recorder) == PreviewWindow.Status(state: .idle, elapsed: .zero, maxDuration: MediaTime(seconds: 10)))
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 1))
        let recording = try await settled { PreviewWindow.Status(of: recorder) }
        #expect(recording.state == .recording)
        #expect(recording.elapsed == recorder.recordedDuration && recording.elapsed.seconds > 0.9, "\(recording.elapsed.seconds) s")
        #expect(recording.bytes > 0, "the take's size")
        #expect(abs((recording.progress ?? 0) - recorder.progress) < 0.001)
        try recorder.pause()
        let paused = try await settled { PreviewWindow.Status(of: recorder) }
        #expect(paused.state == .paused && paused.elapsed == recorder.recordedDuration)
        _ = try await stop(recorder, clock)
        #expect(PreviewWindow.Status(of: recorder).state == .idle)
    }

    @Test func reachingTheLimitEndsTheTake() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock)
        recorder.maxRecordedDuration = MediaTime(seconds: 1)
        try await recorder.start()
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 2))
        #expect(try await eventually { !recorder.isRecording }, "the take ends at its limit")
        #expect(!recorder.isPaused, "a take at its limit is over, not paused")
        #expect(recorder.isRunning, "capture (the preview) goes on")
        #expect(recorder.progress == 1)
        #expect { try recorder.record() } throws: { error in
            (error as? ReelError).map { $0.message.contains("limit") } ?? false
        }
        #expect { try recorder.pause() } throws: { error in
            (error as? ReelError).map { $0.message.contains("limit") } ?? false
        }
        let summary = try #require(try await stop(recorder, clock))
        #expect(summary.reachedLimit)
        #expect(abs(summary.duration.seconds - 1) < 0.04, "\(summary.duration.seconds) s")
        #expect(FileManager.default.fileExists(atPath: summary.url.path))
    }

    @Test func theLastClipCanBeTakenBackAfterTheStop() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock)
        recorder.mergesClipsAutomatically = false
        try await recorder.start()
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 1))
        _ = try await settled { recorder.recordedDuration }
        try recorder.pause()
        clock.advance(to: MediaTime(seconds: 1.5))
        _ = try await settled { recorder.clips.count }
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 2))
        _ = try await settled { recorder.recordedDuration }
        let summary = try #require(try await stop(recorder, clock))
        #expect(summary.url.path == recorder.recordingSession?.folder.path, "unmerged, the take's url is the clips' folder, as documented")
        let clips = recorder.clips
        #expect(clips.count == 2, "the take's clips stay listed after the stop")
        try recorder.removeLastClip()
        #expect(recorder.clips.count == 1)
        #expect(recorder.clips.first?.url == clips.first?.url)
        if let last = clips.last { #expect(!FileManager.default.fileExists(atPath: last.url.path), "its file went too") }
        #expect(abs(recorder.recordedDuration.seconds - (clips.first?.duration.seconds ?? 0)) < 0.001)
    }

    /// The porting stranger's undo right after a pause: the clip just ended is still being
    /// finished (not in `clips` yet); the undo removes it, its time leaves `recordedDuration` at
    /// once, and it is never said completed.
    @Test func anUndoRightAfterAPauseRemovesTheClipInFlight() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock)
        let told = Told()
        recorder.delegate = told
        recorder.maxRecordedDuration = MediaTime(seconds: 10)
        try await recorder.start()
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 1))
        let before = try await settled { recorder.recordedDuration }.seconds
        #expect(before > 0.9)
        try recorder.pause()
        #expect(recorder.clips.isEmpty, "the clip is listed once finished, a moment after the pause")
        try recorder.removeLastClip()
        #expect(recorder.recordedDuration == .zero, "the undone take's time goes at once: \(recorder.recordedDuration.seconds) s")
        #expect(recorder.progress == 0)
        clock.advance(to: MediaTime(seconds: 1.5))
        _ = try await settled { recorder.clips.count }
        #expect(recorder.clips.isEmpty)
        #expect(recorder.recordedDuration == .zero)
        #expect(try recorder.removeLastClip() == false, "nothing left to remove: no error (issue 29, port 4)")

        try recorder.record()
        clock.advance(to: MediaTime(seconds: 2.5))
        _ = try await settled { recorder.recordedDuration }
        try recorder.pause()
        clock.advance(to: MediaTime(seconds: 3))
        #expect(try await eventually { recorder.clips.count == 1 })
        let kept = try #require(recorder.clips.first)
        #expect(abs(kept.duration.seconds - 1) < 0.04, "\(kept.duration.seconds) s")
        let summary = try #require(try await stop(recorder, clock))
        #expect(summary.clipCount == 1)
        var names: [String] = []
        for await event in recorder.events {
            if case .progress = event { continue }
            names.append(Self.name(event))
            if case .mergeFinished = event { break }
        }
        #expect(names == ["started 0", "started 0", "completed", "merged"],
                "the undone clip is never said completed, and the next takes its place (p5 F7): \(names)")
        #expect(try await eventually { told.all.contains("merged") })
        #expect(told.all.filter { $0 == "completed" }.count == 1, "\(told.all)")
    }

    /// What a NextLevel delegate was told, in order.
    final class Told: CameraRecorderDelegate, @unchecked Sendable {
        private let lock = NSLock()
        private var calls: [String] = []
        var all: [String] { lock.withLock { calls } }
        private func note(_ call: String) { lock.withLock { calls.append(call) } }
        func cameraRecorder(_ recorder: CameraRecorder, didStartClipAt index: Int) { note("started \(index)") }
        func cameraRecorder(_ recorder: CameraRecorder, didComplete clip: Clip) { note("completed") }
        func cameraRecorder(_ recorder: CameraRecorder, didUpdateProgress progress: Double, recorded: MediaTime) { note("progress") }
        func cameraRecorderDidReachLimit(_ recorder: CameraRecorder) { note("limit") }
        func cameraRecorder(_ recorder: CameraRecorder, didFinishMerging summary: RecordingSummary) { note("merged") }
        func cameraRecorder(_ recorder: CameraRecorder, didFailWith error: ReelError) { note("failed") }
    }

    /// The event's name, and progress events run together.
    static func name(_ event: CameraRecorder.Event) -> String {
        switch event {
        case .clipStarted(let index): "started \(index)"
        case .clipCompleted: "completed"
        case .progress: "progress"
        case .limitReached: "limit"
        case .mergeFinished: "merged"
        case .failed: "failed"
        case .clipsFolderChanged: "folder"
        case .sourceLost, .sourceInterrupted, .sourceResumed, .sourceIncomplete: "source"
        }
    }

    @Test func eventsAndTheDelegateTellTheTake() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock)
        let told = Told()
        recorder.delegate = told
        recorder.maxRecordedDuration = MediaTime(seconds: 1)
        #expect(!recorder.canRecord, "not before start()")
        try await recorder.start()
        #expect(recorder.canRecord)
        try recorder.record()
        #expect(!recorder.canRecord, "not while recording")
        clock.advance(to: MediaTime(seconds: 0.5))
        _ = try await settled { recorder.recordedDuration }
        try recorder.pause()
        clock.advance(to: MediaTime(seconds: 0.7))
        _ = try await settled { recorder.clips.count }
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 2))
        #expect(try await eventually { recorder.hasReachedLimit })
        #expect(!recorder.canRecord)
        let summary = try #require(try await stop(recorder, clock))
        #expect(summary.clipCount == 2)

        // Progress comes from the camera's pictures, beside the recorder's events: it is
        // checked apart (it only grows, and reaches the limit), the rest in order.
        var names: [String] = []
        var recorded: [MediaTime] = []
        var merged: RecordingSummary?
        for await event in recorder.events {
            if case .progress(let time, _) = event { recorded.append(time); continue }
            names.append(Self.name(event))
            if case .mergeFinished(let s) = event { merged = s; break }
        }
        // The clip that reaches the limit ends there, then the limit is said.
        let expected = ["started 0", "completed", "started 1", "completed", "limit", "merged"]
        #expect(names == expected)
        #expect(merged?.url == summary.url)
        #expect(!recorded.isEmpty && recorded == recorded.sorted(), "\(recorded.map(\.seconds))")
        #expect(abs((recorded.last?.seconds ?? 0) - 1) < 0.04, "\(recorded.last?.seconds ?? 0) s at the end")
        #expect(try await eventually { told.all.filter { $0 != "progress" }.count >= expected.count }, "\(told.all)")
        #expect(told.all.filter { $0 != "progress" } == expected)
        #expect(told.all.contains("progress"))
    }
}
