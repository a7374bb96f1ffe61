import Foundation
import Synchronization
import Testing
import Reel
import ReelTestSupport

/// A video source that opens but fails to start (a device taken by another program meanwhile).
final class FailingToStartSource: CaptureSource {
    let name = "flaky camera"
    var kind: SampleKind { .video }
    func prepare() throws -> SourceFormat { .video(size: PixelSize(width: 320, height: 240), pixelFormat: .yuv420p, frameRate: FrameRate(30)) }
    func start(_ context: SourceContext) throws { throw ReelError(.busy, "the camera was taken by another program") }
    func stop() {}
}

/// A video source that opens and starts but never delivers.
final class SilentVideoSource: CaptureSource {
    let name = "silent camera"
    var kind: SampleKind { .video }
    func prepare() throws -> SourceFormat { .video(size: PixelSize(width: 320, height: 240), pixelFormat: .yuv420p, frameRate: FrameRate(30)) }
    func start(_ context: SourceContext) throws {}
    func stop() {}
}

/// Overwriting replaces a file only with a recording that has something in it: a recording
/// that fails to start or records nothing leaves the old file as it was.
@Suite struct OverwriteTests {
    func precious(in dir: TemporaryDirectory) throws -> URL {
        let url = dir.url.appendingPathComponent("precious.mp4")
        try Data("an earlier recording".utf8).write(to: url)
        return url
    }

    @Test func aRecordingThatFailsToStartLeavesTheOldFile() async throws {
        let dir = try TemporaryDirectory()
        let url = try precious(in: dir)
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(FailingToStartSource())
        let recorder = Recorder(url: url, settings: Recorder.Settings(overwrite: true))
        try session.addOutput(recorder)
        await #expect(throws: ReelError.self) { try await session.start() }
        #expect(try Data(contentsOf: url) == Data("an earlier recording".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path) == ["precious.mp4"], "nothing left behind")
    }

    @Test func aRecordingOfNothingLeavesTheOldFile() async throws {
        let dir = try TemporaryDirectory()
        let url = try precious(in: dir)
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(SilentVideoSource())
        let recorder = Recorder(url: url, settings: Recorder.Settings(overwrite: true))
        try session.addOutput(recorder)
        try await session.start()
        await session.stop()
        await #expect { try await recorder.result() } throws: { ($0 as? ReelError)?.code == .nothingRecorded }
        #expect(try Data(contentsOf: url) == Data("an earlier recording".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path) == ["precious.mp4"], "nothing left behind")
    }

    /// Records `seconds` of the tone beside a camera that never delivers, then stops.
    func toneWithoutPicture(for seconds: Double, into url: URL) async throws -> Recorder {
        let clock = ManualClock(mode: .stepped)
        let session = CaptureSession(clock: clock)
        try session.addInput(SilentVideoSource())
        try session.addInput(ToneSource())
        let recorder = Recorder(url: url, settings: Recorder.Settings(overwrite: true))
        try session.addOutput(recorder)
        try await session.start()
        clock.advance(to: MediaTime(seconds: seconds + 0.2))
        // Time for the tone to reach the recorder (a video recording's progress counts frames,
        // and none come).
        try await Task.sleep(for: .milliseconds(seconds >= 1 ? 1500 : 500))
        // The tone's thread sleeps on the stepped clock: keep it moving (a frame's time at a
        // time) until the stop has gone through.
        let stopped = Atomic(false)
        let stopping = Task { await session.stop(); stopped.store(true, ordering: .sequentiallyConsistent) }
        while !stopped.load(ordering: .sequentiallyConsistent) {
            clock.advance(by: MediaTime(value: 1, timescale: 50))
            try await Task.sleep(for: .milliseconds(20))
        }
        await stopping.value
        return recorder
    }

    /// A stop before the first frame of a video recording, with a moment of sound in: nothing
    /// was recorded (it was saved, with success, as a file without a picture, one time in
    /// thirty at 0.19 s), and the old file stays.
    @Test func aMomentOfSoundWithoutAPictureIsNothingRecorded() async throws {
        let dir = try TemporaryDirectory()
        let recorder = try await toneWithoutPicture(for: 0.3, into: dir.url.appendingPathComponent("new.mp4"))
        await #expect { try await recorder.result() } throws: { ($0 as? ReelError)?.code == .nothingRecorded }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path) == [], "no file without a picture")
        // Over an old file, the old file stays.
        let old = try precious(in: dir)
        let again = try await toneWithoutPicture(for: 0.3, into: old)
        await #expect { try await again.result() } throws: { ($0 as? ReelError)?.code == .nothingRecorded }
        #expect(try Data(contentsOf: old) == Data("an earlier recording".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path) == ["precious.mp4"], "nothing left behind")
    }

    /// Sound for longer, while the camera never delivered, is kept (in a new file; it does
    /// not replace an old one): it is what was recorded.
    @Test func secondsOfSoundWithoutAPictureAreKept() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("sound.mp4")
        let recorder = try await toneWithoutPicture(for: 2, into: url)
        let summary = try await recorder.result()
        #expect(summary.frames == 0)
        let probe = try MediaProbe.probe(url)
        #expect(probe.audioStreams.count == 1 && probe.duration >= 1.9, "\(probe.duration) s")
    }

    @Test func aRecordingReplacesTheOldFileOnceItHoldsSomething() async throws {
        let dir = try TemporaryDirectory()
        let url = try precious(in: dir)
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240)))
        var settings = Recorder.Settings(overwrite: true)
        settings.video.preset = "ultrafast"
        settings.maxRecordedDuration = MediaTime(seconds: 1)
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        #expect(summary.url == url)
        #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == 30)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path) == ["precious.mp4"])
    }

    @Test func aFrameLogIsReplacedOnlyByOneWithRows() async throws {
        let dir = try TemporaryDirectory()
        let log = dir.url.appendingPathComponent("frames.csv")
        try Data("an earlier log".utf8).write(to: log)
        let session = CaptureSession(clock: ManualClock())
        let source = FailingToStartSource()
        try session.addInput(source)
        try session.addOutput(FrameLog(url: log, overwrite: true))
        await #expect(throws: ReelError.self) { try await session.start() }
        #expect(try Data(contentsOf: log) == Data("an earlier log".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path) == ["frames.csv"], "nothing left behind")

        let next = CaptureSession(clock: ManualClock())
        let pattern = TestPatternSource(size: PixelSize(width: 320, height: 240))
        try next.addInput(pattern)
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        settings.maxRecordedDuration = MediaTime(seconds: 0.5)
        let recorder = Recorder(url: dir.url.appendingPathComponent("x.mp4"), settings: settings)
        try next.addOutput(recorder)
        try next.addOutput(FrameLog(url: log, overwrite: true, recorder: recorder), connectedTo: [pattern])
        try await next.start()
        _ = try await recorder.result()
        await next.stop()
        let rows = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
        #expect(rows.filter { $0.hasSuffix(",yes") }.count == 15)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted() == ["frames.csv", "x.mp4"])
    }

    /// Copying a file to finalise it goes through a name of its own, never one a file has.
    @Test func finalisingByCopyingLeavesOtherFilesAlone() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("short.mp4")
        let bystander = dir.url.appendingPathComponent(".short.finalising.mp4")
        try Data("not Reel's".utf8).write(to: bystander)
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240)))
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        // Stopped after half a second: far smaller than the space kept for an hour's index, so
        // it is finalised by copying.
        for await event in recorder.events { if case .progress = event { break } }
        await session.stop()
        let summary = try await recorder.result()
        #expect(try Data(contentsOf: bystander) == Data("not Reel's".utf8))
        #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == Int(summary.frames))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted() == [".short.finalising.mp4", "short.mp4"])
    }
}
