import Foundation
import Synchronization
import Testing
@testable import Reel
import ReelTestSupport

/// The test camera with some of its frames lost before they reach the session (a camera's
/// driver that dropped them): the frames numbered in `lost` never come.
final class LossyCamera: CameraSource, @unchecked Sendable {
    let name = "lossy camera"
    var kind: SampleKind { .video }
    let zoom = ZoomControl()
    let lost: Set<Int64>
    private let pattern = TestPatternSource(size: PixelSize(width: 160, height: 120), frameRate: FrameRate(30), beeps: .never, name: "camera")

    init(lost: Set<Int64>) { self.lost = lost }

    func prepare() throws -> SourceFormat { try pattern.prepare() }

    func start(_ context: SourceContext) throws {
        let lost = self.lost
        try pattern.start(SourceContext(id: context.id, clock: context.clock, origin: context.origin, deliver: { sample in
            if case .video(let frame) = sample, lost.contains(frame.sequenceNumber) { return }
            context.deliver(sample)
        }, report: context.report))
    }

    func stop() { pattern.stop() }
}

/// What a stranger porting a NextLevel-style clip camera found (issue 29, port 4), on a
/// stepped manual clock: progress at a clip boundary, each clip's dropped frames, the preview
/// stream across stops, a take at a taken name, removing clips when there are none, and what
/// an abort leaves of the clip being recorded.
extension CameraRecorderTakeTests {
    /// The lowest `recordedDuration` and `progress` read while a watcher polls them.
    final class Lowest: Sendable {
        private let values = Mutex<(recorded: MediaTime, progress: Double, reads: Int)?>(nil)
        /// Whether the watcher goes on reading.
        let watching = Atomic<Bool>(true)
        func note(_ recorded: MediaTime, _ progress: Double) {
            values.withLock { v in
                guard let old = v else { v = (recorded, progress, 1); return }
                v = (min(old.recorded, recorded), min(old.progress, progress), old.reads + 1)
            }
        }
        var now: (recorded: MediaTime, progress: Double, reads: Int)? { values.withLock { $0 } }
    }

    /// Moves the stepped clock a picture at a time up to `time`, giving the recorder a moment
    /// at each (a progress ring's reads then fall between any two of its steps).
    func step(_ clock: ManualClock, to time: MediaTime) async throws {
        while clock.now() < time {
            clock.advance(by: MediaTime(value: 1, timescale: 30))
            try await Task.sleep(for: .milliseconds(15))
        }
    }

    /// A progress ring read as often as it can be, from the pause that ends a clip until a
    /// moment into the next, never steps back: the clip being finished is counted until it is
    /// listed, and the next clip counts on from it.
    @Test func progressNeverDipsAtAClipBoundary() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock)
        try await recorder.startRecording(limit: 10)
        clock.advance(to: MediaTime(seconds: 1))
        let first = try await settled { recorder.recordedDuration }
        #expect(first.seconds > 0.9, "\(first.seconds) s in the first clip")

        let lowest = Lowest()
        let watcher = Task.detached {
            while lowest.watching.load(ordering: .relaxed) {
                lowest.note(recorder.recordedDuration, recorder.progress)
                try? await Task.sleep(for: .milliseconds(1))
            }
        }
        try recorder.pause()
        try await step(clock, to: MediaTime(seconds: 1.5))
        #expect(try await eventually { recorder.clips.count == 1 }, "the first clip is listed")
        try recorder.record()
        try await step(clock, to: MediaTime(seconds: 2))
        let both = try await settled { recorder.recordedDuration }
        lowest.watching.store(false, ordering: .relaxed)
        await watcher.value

        let seen = try #require(lowest.now)
        #expect(seen.reads > 50, "\(seen.reads) reads")
        // The pause falls on the next picture's slot: a frame either way, never a clip.
        let floor = first.seconds - 1.0 / 30 - 0.001
        #expect(seen.recorded.seconds >= floor, "recordedDuration dipped to \(seen.recorded.seconds) s from \(first.seconds) s")
        #expect(seen.progress >= floor / 10, "progress dipped to \(seen.progress) from \(first.seconds / 10)")
        #expect(both.seconds > first.seconds + 0.4, "the second clip counts on: \(both.seconds) s")
        _ = try await stop(recorder, clock)
    }

    /// Each clip says what it lost, and the merged file's summary counts the clips it holds: a
    /// clip taken back takes its drops with it (it said 7 lost, 5 of them in the clip undone).
    @Test func aClipSaysWhatItDroppedAndTheMergedFileCountsTheClipsKept() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        // Frames 10–11 in the first clip (0–1 s), 45–49 in the second (1.2–2 s).
        let recorder = CameraRecorder(camera: LossyCamera(lost: [10, 11, 45, 46, 47, 48, 49]), settings: settings, clock: clock)
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
        #expect(recorder.clips.map(\.frameDrops.total) == [2, 5])

        #expect(try recorder.removeLastClip())
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 2.6))
        _ = try await settled { recorder.recordedDuration }
        // The merge after the undo refused the clip after the one undone about once in eight
        // runs under load ("its frames would be decoded before the previous clip's last"): the
        // first clip's end was put on a grid of its average frame rate, before its last frame
        // (see ClipLengthTests).
        let summary = try #require(try await stop(recorder, clock))
        #expect(recorder.clips.map(\.droppedFrames) == [2, 0], "\(recorder.clips.map(\.droppedFrames))")
        #expect(summary.clipCount == 2)
        #expect(summary.droppedFrames == 2, "the merged file lost 2 frames, not those of the clip undone: \(summary.droppedFrames)")
        #expect(summary.frameDrops.total == 2)
    }

    /// An app's preview loop is written once: the stream goes on across a stop and the next
    /// start, as an `AVCaptureVideoDataOutput`'s delegate is called again (it ended at the stop).
    @Test(.timeLimit(.minutes(1))) func previewFramesFlowAcrossAStopAndTheNextStart() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock)
        var frames = recorder.previewFrames(.init(format: .gray)).makeAsyncIterator()
        try await recorder.start()
        clock.advance(to: MediaTime(seconds: 0.5))
        #expect(await frames.next() != nil, "pictures before the stop")
        #expect(try await stop(recorder, clock) == nil)

        try await recorder.start()
        clock.advance(by: MediaTime(seconds: 0.5))
        // One picture of the first run may wait in the stream; the next is the new run's.
        let waiting = await frames.next(), next = await frames.next()
        #expect(waiting != nil && next != nil, "the stream ended at the stop")
        _ = try await stop(recorder, clock)
    }

    /// The next take at the name of the last one's file is refused with what to do (it said
    /// "already exists" and to allow overwriting): a new file for the take, given as
    /// `AVCaptureMovieFileOutput` users give one, with `startRecording(to:)`.
    @Test func aTakeAtATakenNameSaysWhatToDo() async throws {
        let (dir, clock, recorder) = try await recordingASecond(into: "one.mp4")
        let first = try #require(try await recorder.stopRecording())
        func saysWhatToDo(_ error: any Error, previous: Bool) -> Bool {
            guard let error = error as? ReelError, error.code == .fileExists, let hint = error.hint else { return false }
            return error.message.contains("previous take") == previous && hint.contains("set outputURL to a new file")
                && !hint.contains("overwrit")
        }
        #expect { try recorder.record() } throws: { saysWhatToDo($0, previous: true) }
        #expect(recorder.isRunning && recorder.canRecord, "the camera runs on")
        #expect(FileManager.default.fileExists(atPath: first.url.path))

        // As the error says, or as AVCaptureMovieFileOutput takes a URL for each recording.
        try recorder.startRecording(to: dir.url.appendingPathComponent("two.mp4"))
        #expect(recorder.isRecording && recorder.currentOutputURL?.lastPathComponent == "two.mp4")
        #expect { try recorder.startRecording(to: dir.url.appendingPathComponent("three.mp4")) } throws: { error in
            (error as? ReelError).map { $0.code == .alreadyRunning && $0.message.contains("two.mp4") } ?? false
        }
        try await step(clock, to: MediaTime(seconds: 1.5))
        let second = try #require(try await stop(recorder, clock))
        #expect(second.url.lastPathComponent == "two.mp4")

        // start() after stop() with the name of an earlier take's file: it writes nothing, so
        // capture starts (p5 F4: it threw, and an AVFoundation port never reached its
        // startRecording(to:) with a new file); record(), where a file would be written, refuses.
        recorder.outputURL = first.url
        try await recorder.start()
        #expect(recorder.isRunning && recorder.canRecord && !recorder.isRecording && !recorder.isPaused)
        #expect { try recorder.record() } throws: { saysWhatToDo($0, previous: false) }
        // Given to startRecording(to:), the error says to give it another (not outputURL), and nothing changes.
        #expect { try recorder.startRecording(to: second.url) } throws: { error in
            guard let error = error as? ReelError, error.code == .fileExists, let hint = error.hint else { return false }
            return hint.contains("give startRecording(to:) a new file") && !hint.contains("outputURL")
        }
        #expect(recorder.outputURL == first.url && recorder.isRunning && !recorder.isRecording)
        try recorder.startRecording(to: dir.url.appendingPathComponent("three.mp4"))
        #expect(recorder.isRecording)
        try await step(clock, to: clock.now() + MediaTime(seconds: 1))
        let third = try #require(try await stop(recorder, clock))
        #expect(third.url.lastPathComponent == "three.mp4")
        for summary in [first, second] {
            let probed = try MediaProbe.probe(summary.url)
            #expect(abs(probed.duration - summary.duration.seconds) < 0.07, "\(summary.url.lastPathComponent) is as it was")
        }
    }

    /// Removing the last clip when there is none does nothing, as removing all does (it threw
    /// `invalidConfiguration`, and before the first take `notRunning`); removing all takes the
    /// clip being finished after a pause too, as removing the last does.
    @Test func removingClipsWhenThereAreNoneIsNoError() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock)
        #expect(try recorder.removeLastClip() == false, "before the first take")
        recorder.removeAllClips()
        try await recorder.start()
        #expect(try recorder.removeLastClip() == false, "a take with no clip")
        recorder.removeAllClips()

        try recorder.record()
        clock.advance(to: MediaTime(seconds: 1))
        _ = try await settled { recorder.recordedDuration }
        try recorder.pause()
        recorder.removeAllClips()
        #expect(recorder.recordedDuration == .zero, "the clip in flight goes at once: \(recorder.recordedDuration.seconds) s")
        clock.advance(to: MediaTime(seconds: 1.5))
        _ = try await settled { recorder.clips.count }
        #expect(recorder.clips.isEmpty, "the clip in flight was removed once finished")
        #expect(try recorder.removeLastClip() == false)
        #expect(try await stop(recorder, clock) == nil, "nothing was kept")
        #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("take.mp4").path))
    }

    /// Removing every clip of a take at its limit opens it again, as removing the last does.
    @Test func removingAllClipsAtTheLimitOpensTheTakeAgain() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock)
        try await recorder.startRecording(limit: 1)
        clock.advance(to: MediaTime(seconds: 1.5))
        #expect(try await eventually { recorder.hasReachedLimit && recorder.clips.count == 1 })
        recorder.removeAllClips()
        #expect(!recorder.hasReachedLimit && recorder.canRecord, "the take is open again")
        #expect(recorder.progress == 0 && recorder.recordedDuration == .zero)
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 2))
        _ = try await settled { recorder.recordedDuration }
        let summary = try #require(try await stop(recorder, clock))
        #expect(summary.clipCount == 1)
    }

    /// Moves the stepped clock a picture at a time, up to `time`, until `condition` holds (the
    /// encoder holds a few pictures before its first packet makes the clip's file); whether it
    /// came to hold.
    func stepped(_ clock: ManualClock, upTo time: MediaTime, until condition: () -> Bool) async throws -> Bool {
        while !condition() && clock.now() < time {
            clock.advance(by: MediaTime(value: 1, timescale: 30))
            for _ in 0..<20 where !condition() { try await Task.sleep(for: .milliseconds(10)) }
        }
        return condition()
    }

    /// The clip files in `folder`.
    func clipFiles(in folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasPrefix("clip-") }.sorted()
    }

    /// An abort a moment into a clip, before any part of it reached the disk, leaves no clip
    /// file that holds no sample (it left an empty, undecodable `clip-002.mp4`); the clips that
    /// hold the recording stay, and recover.
    @Test func anAbortLeavesNoClipWithoutASample() async throws {
        let (dir, clock, recorder) = try await recordingASecond(into: "aborted.mp4")
        try recorder.pause()
        clock.advance(to: MediaTime(seconds: 1.5))
        #expect(try await eventually { recorder.clips.count == 1 })
        try recorder.record()
        let folder = dir.url.appendingPathComponent("aborted.clips", isDirectory: true)
        #expect(try await stepped(clock, upTo: MediaTime(seconds: 1.8)) { clipFiles(in: folder) == ["clip-001.mp4", "clip-002.mp4"] },
                "the second clip's file is made: \(clipFiles(in: folder))")
        let report = try #require(recorder.abort())
        guard case .clips(let left) = report.outcome else { Issue.record("the abort left \(report.outcome)"); return }
        #expect(left.standardizedFileURL.path == folder.standardizedFileURL.path)
        #expect(clipFiles(in: folder) == ["clip-001.mp4"], "\(clipFiles(in: folder))")
        let recovered = try RecordingSession.recover(folder: folder)
        #expect(recovered.clipCount == 1 && recovered.skippedClips.isEmpty && recovered.missingClips.isEmpty,
                "\(recovered.clipCount) clips, skipped \(recovered.skippedClips), missing \(recovered.missingClips)")
        #expect(recovered.videoFrames >= 29)
        _ = try await stop(recorder, clock)
    }

    /// An abort before the first clip held a sample leaves nothing: no clip, no folder, and the
    /// report says nothing reached the disk; the next take records at the name.
    @Test func anAbortBeforeAnythingReachedTheDiskLeavesNothing() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock, name: "aborted.mp4")
        try await recorder.start()
        try recorder.record()
        let folder = dir.url.appendingPathComponent("aborted.clips", isDirectory: true)
        #expect(try await stepped(clock, upTo: MediaTime(seconds: 0.3)) { clipFiles(in: folder) == ["clip-001.mp4"] },
                "the clip's file is made: \(clipFiles(in: folder))")
        let report = try #require(recorder.abort())
        #expect(report.outcome == .nothingReachedTheDisk(removedFile: true), "\(report.outcome)")
        #expect(!FileManager.default.fileExists(atPath: folder.path), "\(clipFiles(in: folder))")
        #expect(RecordingSession.unmergedRecordings(in: dir.url).isEmpty)

        try recorder.record()
        try await step(clock, to: MediaTime(seconds: 1))
        let summary = try #require(try await stop(recorder, clock))
        #expect(summary.url.lastPathComponent == "aborted.mp4")
    }
}
