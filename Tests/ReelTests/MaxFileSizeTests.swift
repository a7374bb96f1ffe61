import Foundation
import Testing
import Reel
import ReelTestSupport

/// --max-size is a promise about the finished file: it never exceeds the limit, however small,
/// and holds what fits (not one frame), with and without a duration limit.
@Suite struct MaxFileSizeTests {
    struct Outcome {
        var url: URL
        var summary: RecordingSummary
        var progress: [RecordingProgress]
        var size: Int64
    }

    func record(limit: Int64, duration: Double, container: Container = .mp4, preset: String = "veryfast",
                in dir: TemporaryDirectory) async throws -> Outcome {
        let url = dir.url.appendingPathComponent("capped-\(limit)-\(Int(duration)).\(container.fileExtension)")
        let session = CaptureSession(clock: ManualClock())
        // In step, as on a real clock: unpaced, the tone ran seconds ahead of the pictures on a
        // busy machine, and where the tracks end measured the machine.
        let step = Lockstep()
        try session.addInput(step.pace(TestPatternSource(size: PixelSize(width: 320, height: 240))))
        try session.addInput(step.pace(ToneSource()))
        var settings = Recorder.Settings(container: container, maxFileSize: limit)
        settings.video.preset = preset
        settings.maxRecordedDuration = MediaTime(seconds: duration)
        let recorder = Recorder(url: url, settings: settings)
        let events = Task {
            var progress: [RecordingProgress] = []
            for await event in recorder.events { if case .progress(let p) = event { progress.append(p) } }
            return progress
        }
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        let size = ((try FileManager.default.attributesOfItem(atPath: url.path))[.size] as? NSNumber)?.int64Value ?? -1
        return Outcome(url: url, summary: summary, progress: await events.value, size: size)
    }

    /// `filled`: the part of the limit the file must use at least. The room for the index is
    /// counted at its worst (48 bytes a packet) and, at the start, for the frames in the
    /// encoder's lookahead at the size of the first ones: tiny limits are filled least.
    @Test(arguments: [(40_000 as Int64, 10.0, 0.3), (100_000, 10.0, 0.8), (100_000, 600.0, 0.8), (300_000, 600.0, 0.8),
                      (1_000_000, 3600.0, 0.8)])
    func theFileNeverExceedsTheLimitAndHoldsWhatFits(limit: Int64, duration: Double, filled: Double) async throws {
        let dir = try TemporaryDirectory()
        let o = try await record(limit: limit, duration: duration, in: dir)
        #expect(o.summary.ending == .maxFileSize)
        #expect(o.size <= limit, "\(o.size) bytes for a limit of \(limit)")
        #expect(Double(o.size) >= Double(limit) * filled, "the room is used: \(o.size) of \(limit)")
        #expect(o.summary.bytes == o.size)
        let counters = try MediaProbe.decodeLuma(o.url, width: 320, height: 240).map(\.counter)
        #expect(counters.count > 15, "more than one frame: \(counters.count)")
        #expect(counters == (0..<Int64(counters.count)).map { Optional($0) }, "every frame, in order")
        #expect(Int64(counters.count) == o.summary.frames)
        // Progress counts the media written, not the space kept for the index.
        let first = try #require(o.progress.first)
        #expect(first.bytes < limit / 2, "first progress: \(first.bytes) bytes")
        #expect(o.progress.allSatisfy { $0.bytes <= o.size })
        let probe = try MediaProbe.probe(o.url)
        let video = try #require(probe.videoStreams.first?.duration)
        let audio = try #require(probe.audioStreams.first?.duration)
        #expect(abs(video - audio) < 0.05, "the tracks end together: video \(video), audio \(audio), \(o.url.path)")
    }

    /// Clips of half a second, paused between; a tiny limit has room for the first only.
    @Test(arguments: [(150_000 as Int64, 2), (60_000, 2), (25_000, 1)])
    func mergedClipsKeepTheLimit(limit: Int64, clips: Int) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("clips.mp4")
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240)))
        try session.addInput(ToneSource())
        var settings = Recorder.Settings(maxFileSize: limit, pauseMode: .clips)
        settings.video.preset = "ultrafast"
        settings.maxRecordedDuration = MediaTime(seconds: 600)
        let recorder = Recorder(url: url, settings: settings)
        for i in 0..<20 {
            recorder.pause(at: MediaTime(seconds: Double(i) + 0.5))
            recorder.record(at: MediaTime(seconds: Double(i) + 1))
        }
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        let size = ((try FileManager.default.attributesOfItem(atPath: url.path))[.size] as? NSNumber)?.int64Value ?? -1
        #expect(summary.ending == .maxFileSize)
        #expect(summary.clipCount >= clips)
        #expect(size <= limit && size > limit / 3, "\(size)")
        #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == Int(summary.frames))
    }

    @Test func aMatroskaFileKeepsTheLimitToo() async throws {
        let dir = try TemporaryDirectory()
        let o = try await record(limit: 100_000, duration: 600, container: .mkv, in: dir)
        #expect(o.size <= 100_000, "\(o.size)")
        #expect(o.summary.frames > 15)
    }
}
