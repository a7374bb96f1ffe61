import Foundation
import Testing
import Reel
import ReelTestSupport

/// Undone clips give their time back to the limit (port2 P2): the limit counts the clips that
/// remain, as ``CameraRecorder/recordedDuration`` and ``CameraRecorder/progress`` do.
extension CameraRecorderTakeTests {
    @Test func undoneClipsDoNotCountTowardTheLimit() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock)
        recorder.maxRecordedDuration = MediaTime(seconds: 2)
        try await recorder.start()

        // A clip undone at once after its pause (still being finished)…
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 1))
        _ = try await settled { recorder.recordedDuration }
        try recorder.pause()
        try recorder.removeLastClip()
        clock.advance(to: MediaTime(seconds: 1.5))
        _ = try await settled { recorder.clips.count }
        // …and one undone once it is listed.
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 2))
        _ = try await settled { recorder.recordedDuration }
        try recorder.pause()
        clock.advance(to: MediaTime(seconds: 2.5))
        #expect(try await eventually { recorder.clips.count == 1 })
        try recorder.removeLastClip()
        #expect(recorder.recordedDuration == .zero)

        // 1.5 s of the 2 s were undone: the next clip may record the whole 2 s.
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 4))
        let recorded = try await settled { recorder.recordedDuration }.seconds
        #expect(recorder.isRecording, "1.5 s into a take whose only clip this is, of a 2 s limit")
        #expect(!recorder.hasReachedLimit)
        #expect(recorded > 1.4 && recorded <= 1.54, "\(recorded) s")
        #expect(abs(recorder.progress - recorded / 2) < 0.001, "progress \(recorder.progress) agrees with \(recorded) s of 2")

        clock.advance(to: MediaTime(seconds: 5))
        #expect(try await eventually { recorder.hasReachedLimit }, "the limit ends the take at 2 s kept")
        let atLimit = recorder.recordedDuration.seconds
        #expect(abs(atLimit - 2) < 0.04, "\(atLimit) s recorded at the limit")
        #expect(recorder.progress == 1)
        let summary = try #require(try await stop(recorder, clock))
        #expect(summary.reachedLimit)
        #expect(summary.clipCount == 1)
        #expect(abs(summary.duration.seconds - 2) < 0.04, "\(summary.duration.seconds) s")
        let probed = try MediaProbe.probe(summary.url)
        #expect(abs(probed.duration - 2) < 0.07, "the merged file lasts \(probed.duration) s")
    }
}

/// An undo while a clip is being recorded removes nothing and says to pause first (p5: it
/// removed the clip finished before, and the merge lost it).
extension CameraRecorderTakeTests {
    @Test func anUndoWhileRecordingRemovesNothing() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock)
        try await recorder.start()
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 1))
        _ = try await settled { recorder.recordedDuration }
        try recorder.pause()
        clock.advance(to: MediaTime(seconds: 1.5))
        #expect(try await eventually { recorder.clips.count == 1 })
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 2))
        _ = try await settled { recorder.recordedDuration }
        #expect(recorder.isRecording)
        let thrown = #expect(throws: ReelError.self) { try recorder.removeLastClip() }
        #expect(thrown?.code == .alreadyRunning && thrown?.hint?.contains("pause()") == true, "\(String(describing: thrown))")
        #expect(recorder.clips.count == 1, "the finished clip stays")
        #expect(FileManager.default.fileExists(atPath: recorder.clips[0].url.path))
        let summary = try #require(try await stop(recorder, clock))
        #expect(summary.clipCount == 2, "both clips merged")
        #expect(abs(summary.duration.seconds - 1.5) < 0.07, "\(summary.duration.seconds) s")
    }
}

/// A take ended before its first frame is no failure (port2 P6); an aborted take's clips are
/// said to be there, with how to recover them, to a recording into its name (port2 P4).
extension CameraRecorderTakeTests {
    @Test func aTakeEndedBeforeItsFirstFrameIsNoFailure() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock)
        let told = Told()
        recorder.delegate = told
        try await recorder.start()
        clock.advance(to: MediaTime(seconds: 0.5))
        // The pictures up to now have come (the stepped clock lets no more through).
        try await Task.sleep(for: .milliseconds(500))
        try recorder.record()
        #expect(try await recorder.stopRecording() == nil, "nothing was recorded")
        #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("take.mp4").path))

        try recorder.record()
        clock.advance(to: MediaTime(seconds: 1.5))
        _ = try await settled { recorder.recordedDuration }
        let summary = try #require(try await recorder.stopRecording())
        #expect(abs(summary.duration.seconds - 1) < 0.04, "\(summary.duration.seconds) s")
        var names: [String] = []
        for await event in recorder.events {
            if case .progress = event { continue }
            names.append(Self.name(event))
            if case .mergeFinished = event { break }
        }
        #expect(!names.contains { $0.hasPrefix("failed") }, "\(names)")
        #expect(try await eventually { told.all.contains("merged") })
        #expect(!told.all.contains("failed"), "\(told.all)")
        _ = try await stop(recorder, clock)
    }

    @Test func theClipsOfAnAbortedTakeAreSaidWithHowToRecoverThem() async throws {
        let (dir, clock, recorder) = try await recordingASecond(into: "aborted.mp4")
        try recorder.pause()
        clock.advance(to: MediaTime(seconds: 1.5))
        #expect(try await eventually { recorder.clips.count == 1 })
        let report = try #require(recorder.abort())
        let folder = dir.url.appendingPathComponent("aborted.clips", isDirectory: true)
        guard case .clips(let left) = report.outcome else { Issue.record("the abort left \(report.outcome)"); return }
        #expect(left.standardizedFileURL.path == folder.standardizedFileURL.path)
        let url = dir.url.appendingPathComponent("aborted.mp4")

        func saysTheClips(_ error: any Error) -> Bool {
            guard let error = error as? ReelError else { return false }
            return error.code == .fileExists && error.message.contains("never merged") && !error.message.contains("in use")
                && error.hint?.contains("RecordingSession.recover(folder:)") == true && error.hint?.contains("--") == false
        }
        // A plain recorder into the name is refused before it writes anything…
        #expect { try Recorder(url: url).preflight() } throws: { saysTheClips($0) }
        // …and so is another camera recorder, with the same words (not "in use").
        let second = self.recorder(dir, clock, name: "aborted.mp4")
        await #expect { try await second.start() } throws: { saysTheClips($0) }
        // The aborted recorder's next take too; its stop merges nothing over them.
        #expect { try recorder.record() } throws: { saysTheClips($0) }
        #expect(try await stop(recorder, clock) == nil)
        #expect(!FileManager.default.fileExists(atPath: url.path), "the clips were not merged over the name")
        #expect(RecordingSession.unmergedRecordings(in: dir.url).map(\.lastPathComponent) == ["aborted.clips"])
        let recovered = try RecordingSession.recover(folder: folder)
        #expect(FileManager.default.fileExists(atPath: recovered.url.path))
    }
}

extension CameraRecorderTakeTests {
    /// A recorder on a stepped clock that has recorded a second into `name`, still recording.
    func recordingASecond(into name: String) async throws -> (TemporaryDirectory, ManualClock, CameraRecorder) {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock, name: name)
        try await recorder.start()
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 1))
        _ = try await settled { recorder.recordedDuration }
        return (dir, clock, recorder)
    }
}

/// An aborted take lets its recorder's thread go: nothing stops that recorder (its session runs
/// on for the next take), and its thread waited for samples until the process ended.
extension CameraRecorderTakeTests {
    @Test func anAbortedTakeLetsItsRecordersThreadGo() async throws {
        let (dir, clock, recorder) = try await recordingASecond(into: "aborted.mp4")
        let take = try #require(recorder.takeRecorder)
        #expect(!take.workerHasEnded, "the take records")
        _ = try #require(recorder.abort())

        // The take's recorder ends, without finishing anything: its result says so.
        let ended = CameraRecorderTests.Flag()
        let waiting = Task {
            do { _ = try await take.result() } catch let error as ReelError where error.code == .notRunning { ended.set() } catch {}
        }
        #expect(try await eventually { ended.isSet }, "the aborted take's recorder never ended")
        #expect(try await eventually { take.workerHasEnded }, "its thread is parked")
        waiting.cancel()
        // Its clips are where the abort left them, not merged.
        #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("aborted.mp4").path))
        #expect(RecordingSession.unmergedRecordings(in: dir.url).map(\.lastPathComponent) == ["aborted.clips"])
        #expect(try await stop(recorder, clock) == nil)
    }
}

/// A clip removed once the take reached its limit hands its time back and opens the take
/// again, as NextLevel's session does: the take waited at its limit (it used to end there,
/// merged, and `record()` kept throwing `limitReached` after the undo).
extension CameraRecorderTakeTests {
    @Test func anUndoAtTheLimitOpensTheTakeAgain() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock)
        try await recorder.startRecording(limit: 1)
        clock.advance(to: MediaTime(seconds: 1.5))
        #expect(try await eventually { recorder.hasReachedLimit && recorder.clips.count == 1 })
        #expect { try recorder.record() } throws: { ($0 as? ReelError)?.code == .limitReached }

        try recorder.removeLastClip()
        #expect(!recorder.hasReachedLimit && recorder.canRecord && recorder.isPaused,
                "the take is open again: \(recorder.clips.count) clips, \(recorder.recordedDuration.seconds) s, take \(recorder.takeRecorder == nil ? "ended" : "on")")
        #expect(recorder.progress == 0 && recorder.recordedDuration == .zero)
        try recorder.record()
        #expect(recorder.isRecording)
        clock.advance(to: MediaTime(seconds: 2))
        _ = try await settled { recorder.recordedDuration }
        #expect(abs(recorder.recordedDuration.seconds - 0.5) < 0.04, "\(recorder.recordedDuration.seconds) s after the undo")
        // And at the limit again: a whole second kept.
        clock.advance(to: MediaTime(seconds: 3))
        #expect(try await eventually { recorder.hasReachedLimit })
        let summary = try #require(try await stop(recorder, clock))
        #expect(summary.reachedLimit && summary.clipCount == 1)
        #expect(abs(summary.duration.seconds - 1) < 0.04, "\(summary.duration.seconds) s")

        // The events said so: the limit, the take open again (progress below 1), the limit.
        var said: [String] = []
        for await event in recorder.events {
            switch event {
            case .limitReached: said.append("limit")
            case .progress(_, let progress) where said.last == "limit" && progress < 1: said.append("open")
            case .mergeFinished: said.append("merged")
            default: continue
            }
            if said.last == "merged" { break }
        }
        #expect(said == ["limit", "open", "limit", "merged"])
        let probed = try MediaProbe.probe(summary.url)
        #expect(abs(probed.duration - 1) < 0.07, "the merged file lasts \(probed.duration) s")
    }
}

/// A clip's started index is its place among the clips kept, as NextLevel counts its clips
/// after an undo (p5 F7: it counted the undone clips, so `clips[index]` or "Clip \(index + 1)"
/// was wrong after any undo).
extension CameraRecorderTakeTests {
    @Test func aClipStartedAfterAnUndoIsNumberedAmongTheClipsKept() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock)
        let told = Told()
        recorder.delegate = told
        try await recorder.start()
        var now = 0.0
        /// Records a clip of half a second; waits until it is listed, unless `undoAtOnce`
        /// (the undo comes while it is being finished).
        func clip(undoAtOnce: Bool = false) async throws {
            let listed = recorder.clips.count
            try recorder.record()
            now += 0.5
            clock.advance(to: MediaTime(seconds: now))
            _ = try await settled { recorder.recordedDuration }
            try recorder.pause()
            if undoAtOnce { #expect(try recorder.removeLastClip()) }
            now += 0.2
            clock.advance(to: MediaTime(seconds: now))
            #expect(try await eventually { recorder.clips.count == (undoAtOnce ? listed : listed + 1) })
        }
        try await clip()                        // clips[0]
        try await clip()                        // clips[1]
        #expect(try recorder.removeLastClip())
        try await clip()                        // clips[1] again
        try await clip(undoAtOnce: true)        // would be clips[2]; undone while finished
        try await clip()                        // clips[2]
        #expect(try recorder.removeLastClip() && recorder.removeLastClip())
        try await clip()                        // clips[1]
        #expect(recorder.clips.count == 2)
        _ = try await stop(recorder, clock)
        var started: [Int] = []
        for await event in recorder.events {
            if case .clipStarted(let index) = event { started.append(index) }
            if case .mergeFinished = event { break }
        }
        #expect(started == [0, 1, 1, 2, 2, 1], "each clip's index among the clips kept: \(started)")
        #expect(try await eventually { told.all.contains("merged") })
        #expect(told.all.filter { $0.hasPrefix("started") } == started.map { "started \($0)" }, "the delegate is told the same")
    }
}
