import Foundation
import Testing
@testable import Reel
import ReelTestSupport

/// What a camera app ported from NextLevel ran into with clips: the session's clips after the
/// merge, the summary after an undo, and a recording that starts paused.
@Suite struct ClipTakeTests {
    func clipRecorder(_ url: URL, change: (inout Recorder.Settings) -> Void = { _ in }) -> Recorder {
        var settings = Recorder.Settings(pauseMode: .clips)
        settings.video.preset = "ultrafast"
        change(&settings)
        return Recorder(url: url, settings: settings)
    }

    @Test func theSessionStillListsItsClipsAfterTheAutomaticMerge() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("merged.mp4")
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: PixelSize(width: 160, height: 120)))
        let recorder = clipRecorder(url)
        recorder.pause(at: MediaTime(seconds: 1))
        recorder.record(at: MediaTime(seconds: 1.5))
        recorder.maxRecordedDuration = MediaTime(seconds: 2)
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        #expect(summary.clipCount == 2)
        let clips = try #require(recorder.recordingSession).clips
        #expect(clips.count == 2, "the takes merged are still the session's clips")
        #expect(clips.map(\.frameCount) == [30, 30])
        #expect(recorder.recordingSession?.totalDuration == summary.duration)
        #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == 60)
        #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("merged.clips").path),
                "their files went once merged, as asked")
    }

    @Test func anUndoneTakeIsNotInTheSummarysDuration() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("undone.mp4")
        let clock = ManualClock(mode: .stepped)
        let session = CaptureSession(clock: clock)
        try session.addInput(TestPatternSource(size: PixelSize(width: 160, height: 120)))
        let recorder = clipRecorder(url)
        recorder.pause(at: MediaTime(seconds: 1))
        recorder.record(at: MediaTime(seconds: 2))
        recorder.pause(at: MediaTime(seconds: 3.5))
        recorder.record(at: MediaTime(seconds: 4))
        try session.addOutput(recorder)
        try await session.start()
        var events = recorder.events.makeAsyncIterator()
        clock.advance(to: MediaTime(seconds: 3.6))
        var finished = 0
        while finished < 2, let event = await events.next() {
            if case .clipFinished = event { finished += 1 }
        }
        try recorder.recordingSession?.removeLastClip()     // the 1.5 s take goes
        clock.advance(to: MediaTime(seconds: 5))
        // Progress counts the clips that remain: 1 s, and the third take's.
        while let event = await events.next() {
            if case .progress(let p) = event, !p.isPaused, p.duration >= MediaTime(seconds: 1.9) { break }
        }
        await session.stop()
        let summary = try await recorder.result()
        let probed = try MediaProbe.probe(url)
        let fileDuration = try #require(probed.videoStreams.first?.duration)
        #expect(abs(summary.duration.seconds - fileDuration) < 0.001, "summary \(summary.duration.seconds) s, file \(fileDuration) s")
        #expect(summary.frames == probed.videoStreams.first?.frameCount.map(Int64.init))
        #expect(summary.clipCount == 2)
        #expect(recorder.recordingSession?.totalDuration == summary.duration)
    }

    @Test func aRecordingThatStartsPausedBeginsWithClipOne() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("paused.mp4")
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: PixelSize(width: 160, height: 120)))
        let recorder = clipRecorder(url) { $0.mergesClipsAtEnd = false }
        recorder.pause(at: .zero)                 // the camera is on, the record button not pressed yet
        recorder.record(at: MediaTime(seconds: 1))
        recorder.maxRecordedDuration = MediaTime(seconds: 1)
        try session.addOutput(recorder)
        let started = Task { () -> [Int] in
            var indices: [Int] = []
            for await event in recorder.events { if case .clipStarted(let i) = event { indices.append(i) } }
            return indices
        }
        try await session.start()
        _ = try await recorder.result()
        await session.stop()
        #expect(await started.value == [0], "one clip, the first")
        let folder = dir.url.appendingPathComponent("paused.clips")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["clip-001.mp4", RecordingSession.manifestName])
        #expect(recorder.recordingSession?.clips.map(\.url.lastPathComponent) == ["clip-001.mp4"])
        let counters = try MediaProbe.decodeLuma(folder.appendingPathComponent("clip-001.mp4"), width: 160, height: 120).map(\.counter)
        #expect(counters == (30..<60).map { Optional(Int64($0)) })
    }
}
