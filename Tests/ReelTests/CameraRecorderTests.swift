import Foundation
import Observation
import Testing
import Synchronization
import Reel
import ReelTestSupport

/// The one-object camera recorder, in real time: start without recording, clips, pause,
/// progress (observed), filter, stop and merge, a second take, a take with nothing recorded.
@Suite(.serialized, .tags(.realTime)) struct CameraRecorderTests {
    final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        func set() { lock.withLock { value = true } }
        var isSet: Bool { lock.withLock { value } }
    }

    func camera() -> TestPatternSource {
        TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30), beeps: .never, background: .blue, name: "blue camera")
    }

    func settings() -> Recorder.Settings {
        var s = Recorder.Settings()
        s.video.preset = "ultrafast"
        return s
    }

    @Test func recordsClipsWithProgressAndAFilterAndMergesThem() async throws {
        let dir = try TemporaryDirectory()
        let recorder = CameraRecorder(camera: camera(), microphone: ToneSource(), settings: settings())
        recorder.outputURL = dir.url.appendingPathComponent("take.mp4")
        recorder.maxRecordedDuration = MediaTime(seconds: 10)
        recorder.filter = .look(.mono)
        let handed = Atomic<Int>(0)
        let frames = SampleHandlerOutput { _, _ in handed.add(1, ordering: .relaxed) }
        recorder.addPreviewOutput(frames)

        let preview = recorder.previewFrames(.init(format: .rgba, size: PixelSize(width: 160, height: 120)))
        let firstFrame = Task { () -> LiveFrame? in for await frame in preview { return frame }; return nil }
        try await recorder.start()
        try await Task.sleep(for: .milliseconds(500))
        #expect(recorder.isRunning && !recorder.isPaused && !recorder.isRecording, "before the first record(), not paused (p5)")
        let shown = try #require(await firstFrame.value, "preview frames flow before recording")
        let p = shown.pixel(x: 80, y: 90)
        #expect(p.count == 4 && abs(Int(p[0]) - Int(p[2])) <= 8, "the preview frame is filtered (mono) as recorded: \(p)")
        #expect(recorder.progress == 0 && recorder.clips.isEmpty)

        let changed = Flag()
        withObservationTracking { _ = recorder.progress } onChange: { changed.set() }
        try recorder.record()
        #expect(recorder.isRecording)
        try await Task.sleep(for: .milliseconds(1000))
        #expect(changed.isSet, "progress is observed changing")
        try recorder.pause()
        try await Task.sleep(for: .milliseconds(500))
        #expect(recorder.isPaused && !recorder.isRecording)
        #expect(recorder.clips.count == 1)
        let afterFirst = recorder.recordedDuration.seconds
        #expect(afterFirst > 0.7 && afterFirst < 1.4, "\(afterFirst) s in the first clip")
        try await Task.sleep(for: .milliseconds(300))
        #expect(recorder.recordedDuration.seconds == afterFirst, "paused time is not recorded")
        try recorder.resumeRecording()
        try await Task.sleep(for: .milliseconds(1000))
        // Progress is the recorded time over the limit (the time itself depends on the load).
        let progress = recorder.progress, recorded = recorder.recordedDuration.seconds
        #expect(progress > 0.15 && abs(progress - recorded / 10) < 0.02, "progress \(progress) after \(recorded) s of 10")

        let summary = try #require(try await recorder.stop())
        #expect(!recorder.isRunning)
        #expect(summary.clipCount == 2)
        #expect(summary.duration.seconds > 1.6 && summary.duration.seconds < 2.6, "\(summary.duration.seconds) s")
        let probe = try MediaProbe.probe(summary.url)
        #expect(probe.audioStreams.count == 1)
        #expect(abs(probe.duration - summary.duration.seconds) < 0.1)
        let rgb = try MediaProbe.decodeRGB(summary.url, width: 320, height: 240, maxFrames: 10)
        for frame in rgb {
            let c = RGBColor.average(of: frame, width: 320, x: 160, y: 160, radius: 3)
            #expect(abs(Int(c.red) - Int(c.blue)) <= 8, "mono, not blue: \(c)")
        }
        // Under a real-time clock a handler late for a frame loses it (as
        // alwaysDiscardsLateVideoFrames does): on a machine loaded to 9 on 2 cores 1-2 of about
        // 250 samples were, with or without isRunning observed. Not starved is what counts here.
        let got = handed.load(ordering: .relaxed)
        #expect(got > 100 && frames.droppedSamples * 50 <= Int64(got), "\(got) samples handed over, \(frames.droppedSamples) dropped")

        // A second take, one clip of it taken back.
        recorder.outputURL = dir.url.appendingPathComponent("take2.mp4")
        try await recorder.start()
        try recorder.record()
        try await Task.sleep(for: .milliseconds(600))
        try recorder.pause()
        try await Task.sleep(for: .milliseconds(300))
        try recorder.removeLastClip()
        #expect(recorder.clips.isEmpty)
        #expect(recorder.recordedDuration == .zero)
        try recorder.record()
        try await Task.sleep(for: .milliseconds(600))
        let second = try #require(try await recorder.stop())
        #expect(second.clipCount == 1)
        #expect(second.duration.seconds > 0.4 && second.duration.seconds < 0.9, "\(second.duration.seconds) s")

        // A take with nothing recorded writes nothing.
        let empty = dir.url.appendingPathComponent("empty.mp4")
        recorder.outputURL = empty
        try await recorder.start()
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await recorder.stop() == nil)
        #expect(!FileManager.default.fileExists(atPath: empty.path))
    }

    @Test func misuseIsAClearError() async throws {
        let recorder = CameraRecorder(camera: camera(), settings: settings())
        #expect { try recorder.record() } throws: { ($0 as? ReelError)?.code == .notRunning }
        #expect { try recorder.pause() } throws: { ($0 as? ReelError)?.code == .notRunning }
        #expect(try await recorder.stop() == nil)
    }

    @Test func recordingsGoToTheVideosFolderByDefault() {
        #expect(Recorder.defaultOutputDirectory(environment: ["HOME": "/h", "XDG_VIDEOS_DIR": "$HOME/Films"]).path == "/h/Films")
        #expect(Recorder.defaultOutputDirectory(environment: ["HOME": "/h", "XDG_CONFIG_HOME": "/nonexistent"]).path == "/h/Videos")
        #expect(Recorder.datedFileName(container: .mkv, date: Date(timeIntervalSince1970: 0)).hasSuffix(".mkv"))
    }
}
