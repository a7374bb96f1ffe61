import Foundation
import Testing
@testable import Reel
import ReelTestSupport

/// Pausing and resuming on a stepped manual clock: the cut falls exactly on frame slots, so a
/// decoded recording shows which frames and which beeps were kept.
@Suite struct PauseTests {
    static let intervals: [(Double, Double)] = [(0, 1), (1.2, 2.2), (2.4, 3.4), (3.6, 4.6), (4.8, 5.8)]

    /// Records the test pattern and tone over `intervals`, pausing between them.
    func recordWithPauses(mode: Recorder.PauseMode, limit: MediaTime? = nil, in dir: TemporaryDirectory,
                          ext: String = "mp4") async throws -> (URL, RecordingSummary, Recorder) {
        let url = dir.url.appendingPathComponent("paused.\(ext)")
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240)))
        try session.addInput(ToneSource())
        var settings = Recorder.Settings(pauseMode: mode)
        settings.video.preset = "ultrafast"
        settings.maxRecordedDuration = limit
        settings.keepsClips = true
        let recorder = Recorder(url: url, settings: settings)
        // A scripted recording: the pauses and resumes are scheduled on the session timeline,
        // so that a clock running faster than real time cuts at exactly known instants.
        for (i, (start, end)) in Self.intervals.enumerated() {
            if i > 0 { recorder.record(at: MediaTime(seconds: start)) }
            recorder.pause(at: MediaTime(seconds: end))
        }
        recorder.record(at: MediaTime(seconds: 7))
        recorder.maxRecordedDuration = limit ?? MediaTime(seconds: 5.5)
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        return (url, summary, recorder)
    }

    /// Checks the five clips (and `extraFrames` of a sixth that starts at 7 s).
    func checkJoins(_ url: URL, expectedClips: Int, extraFrames: Int = 0) throws {
        let frames = try MediaProbe.decodeLuma(url, width: 320, height: 240)
        let expected = Self.intervals.prefix(expectedClips).flatMap { (start, end) in
            Int64((start * 30).rounded())..<Int64((end * 30).rounded())
        } + (210..<(210 + Int64(extraFrames)))
        #expect(frames.map(\.counter) == expected.map { Optional($0) }, "each clip's frames, none missing or repeated")
        let times = try MediaProbe.packetTimes(url)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "timestamps rise strictly")
        let audioTimes = try MediaProbe.packetTimes(url, stream: "a:0")
        #expect(zip(audioTimes, audioTimes.dropFirst()).allSatisfy { $0 < $1 })
        var flashes: [Double] = []
        for i in frames.indices where frames[i].isFlash && (i == 0 || !frames[i - 1].isFlash) { flashes.append(times[i]) }
        let beeps = MediaProbe.beepOnsets(try MediaProbe.decodeAudio(url))
        #expect(flashes.count == expectedClips + (extraFrames > 15 ? 1 : 0))
        #expect(beeps.count == flashes.count)
        for (flash, beep) in zip(flashes, beeps) { #expect(abs(flash - beep) < 0.040, "flash \(flash) beep \(beep)") }
        let probe = try MediaProbe.probe(url)
        #expect(abs(probe.duration - (Double(expectedClips) + Double(extraFrames) / 30)) < 1.0 / 30 + 0.03)
    }

    @Test func singleFileTakesTheGapsOut() async throws {
        let dir = try TemporaryDirectory()
        let (url, summary, _) = try await recordWithPauses(mode: .singleFile, in: dir)
        #expect(summary.frames == 165)
        #expect(summary.clipCount == 6)
        #expect(abs(summary.duration.seconds - 5.5) < 0.001)
        try checkJoins(url, expectedClips: 5, extraFrames: 15)
    }

    @Test func maxRecordedDurationCountsRecordedTimeAcrossPauses() async throws {
        let dir = try TemporaryDirectory()
        let (url, summary, _) = try await recordWithPauses(mode: .singleFile, limit: MediaTime(seconds: 2.5), in: dir)
        #expect(summary.ending == .maxDuration)
        #expect(summary.frames == 75)
        let probe = try MediaProbe.probe(url)
        #expect(abs((probe.videoStreams.first?.duration ?? 0) - 2.5) < 0.001)
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter)
        #expect(counters == (Array(0..<30) + Array(36..<66) + Array(72..<87)).map { Optional(Int64($0)) })
    }

    @Test func maxFileSizeStopsCleanly() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("capped.mp4")
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: PixelSize(width: 640, height: 480)))
        var settings = Recorder.Settings(maxFileSize: 200_000)
        settings.video.rateControl = .crf(0)
        settings.video.preset = "ultrafast"
        settings.maxRecordedDuration = MediaTime(seconds: 600)
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        #expect(summary.ending == .maxFileSize)
        #expect(summary.duration < MediaTime(seconds: 600))
        let counters = try MediaProbe.decodeLuma(url, width: 640, height: 480).map(\.counter)
        #expect(counters == (0..<Int64(counters.count)).map { Optional($0) })
        #expect(Int64(counters.count) == summary.frames)
    }

    @Test func aScheduledPauseIsPausedOnlyFromItsTime() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let session = CaptureSession(clock: clock)
        try session.addInput(TestPatternSource(size: PixelSize(width: 160, height: 120)))
        let recorder = Recorder(url: dir.url.appendingPathComponent("scheduled.mp4"))
        recorder.pause(at: MediaTime(seconds: 1))
        recorder.record(at: MediaTime(seconds: 2))
        #expect(!recorder.isPaused, "not recording yet")
        try session.addOutput(recorder)
        try await session.start()
        #expect(!recorder.isPaused, "the pause is a second away")
        clock.advance(by: MediaTime(seconds: 1))
        #expect(recorder.isPaused)
        clock.advance(by: MediaTime(seconds: 1))
        #expect(!recorder.isPaused)
        try recorder.pause()
        #expect(recorder.isPaused, "a pause now counts at once")
        try recorder.togglePause()
        #expect(!recorder.isPaused)
        await session.stop()
        // What the file holds is not this test's subject: on a stepped clock the source may not
        // have drawn a frame before the stop, and then nothing was recorded.
        do { _ = try await recorder.result() } catch let error as ReelError where error.code == .nothingRecorded {}
        #expect(!recorder.isPaused)
    }

    @Test func pausingWhatIsNotRecordingIsATypedError() async throws {
        let recorder = Recorder(url: URL(fileURLWithPath: "/tmp/never.mp4"))
        #expect { try recorder.pause() } throws: { ($0 as? ReelError)?.code == .notRunning }
        #expect { try recorder.record() } throws: { ($0 as? ReelError)?.code == .notRunning }
    }
}

/// Clip mode: one file per clip, merged into the recorder's file at the end.
@Suite struct ClipSessionTests {
    @Test func fiveClipsMergeWithoutReencoding() async throws {
        let dir = try TemporaryDirectory()
        let (url, summary, recorder) = try await PauseTests().recordWithPauses(mode: .clips, in: dir)
        let session = try #require(recorder.recordingSession)
        #expect(session.clips.count == 6)
        #expect(session.clips.prefix(5).allSatisfy { abs($0.duration.seconds - 1) < 0.001 && $0.frameCount == 30 && $0.hasAudio })
        #expect(abs(session.totalDuration.seconds - 5.5) < 0.001)
        #expect(summary.frames == 165)
        #expect(summary.url == url)
        try PauseTests().checkJoins(url, expectedClips: 5, extraFrames: 15)
        // Clips were kept (keepsClips) in the session's folder, untouched by the merge.
        for clip in session.clips { #expect(FileManager.default.fileExists(atPath: clip.url.path)) }
    }

    /// An undo pressed right after a pause, while the take just ended is still being finished
    /// (its clip not yet in `clips`), removes that take, not the one before: what a camera
    /// app's undo button does. The recorder tells the session at the pause (`takeEnded`).
    @Test func anUndoRightAfterAPauseRemovesTheTakeJustEnded() throws {
        let dir = try TemporaryDirectory()
        let session = RecordingSession(folder: dir.url)
        func take(_ n: Int) throws -> Clip {
            let url = dir.url.appendingPathComponent("clip-00\(n).mp4")
            try PatternFile.write(url, settings: VideoSettings(preset: "ultrafast"))
            return Clip(url: url, duration: MediaTime(seconds: 1), frameCount: 8, hasAudio: false)
        }
        let first = try take(1)
        session.takeEnded()
        try session.append(first)
        let second = try take(2)
        session.takeEnded()
        try session.removeLastClip()                  // before take 2's clip is finished
        #expect(session.clips.map(\.url) == [first.url], "take 1 stays; take 2 is not in the list")
        try session.append(second)                   // take 2's clip is finished: it goes
        #expect(session.clips.map(\.url) == [first.url])
        #expect(!FileManager.default.fileExists(atPath: second.url.path))
        #expect(FileManager.default.fileExists(atPath: first.url.path))
        // With no take being finished, undo removes the last clip as before.
        try session.removeLastClip()
        #expect(session.clips.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: first.url.path))
    }

    @Test func clipsCanBeRemovedMutedAndMergedAgain() async throws {
        let dir = try TemporaryDirectory()
        let (_, _, recorder) = try await PauseTests().recordWithPauses(mode: .clips, in: dir)
        let session = try #require(recorder.recordingSession)
        try session.removeLastClip()
        #expect(session.clips.count == 5)
        let removed = session.clips[3].url
        try session.removeClip(at: 3)
        #expect(!FileManager.default.fileExists(atPath: removed.path))
        #expect(session.clips.count == 4)
        try session.setMutedOnMerge(true, at: 1)
        let merged = dir.url.appendingPathComponent("remerged.mp4")
        let result = try session.merge(to: merged)
        #expect(result.videoFrames == 120)
        #expect(abs(result.duration.seconds - 4) < 1.0 / 30 + 0.001)
        let audio = try MediaProbe.decodeAudio(merged)
        func power(_ from: Double, _ to: Double) -> Double {
            ToneAnalysis.power(of: Array(audio[Int(from * 48_000)..<Int(to * 48_000)]), sampleRate: 48_000, frequency: 440)
        }
        #expect(power(0.1, 0.9) > 0.001, "clip 1 has its tone")
        #expect(power(1.1, 1.9) < 0.0001, "clip 2 is muted but keeps its place")
        #expect(power(2.1, 2.9) > 0.001, "clip 3 has its tone")
        session.removeAllClips()
        #expect(session.clips.isEmpty)
        #expect { try session.merge(to: dir.url.appendingPathComponent("empty.mp4")) } throws: { ($0 as? ReelError)?.code == .nothingRecorded }
    }
}

/// Clip folders: visible, described by a manifest until merged, never reused, and recoverable.
@Suite struct ClipFolderTests {
    @Test func theSummaryCountsTheClipsOnceTheyAreMergedAndRemoved() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("counted.mp4")
        let summary = try await recordClips(to: url).result()
        #expect(summary.clipCount == 3)
        #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("counted.clips").path))
    }

    @Test func aManifestNamingFilesOutsideItsFolderIsRefused() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("sneaky.mp4")
        _ = try await recordClips(to: url) { $0.mergesClipsAtEnd = false }
        let folder = dir.url.appendingPathComponent("sneaky.clips")
        let victim = dir.url.appendingPathComponent("victim.mp4")
        try FileManager.default.copyItem(at: folder.appendingPathComponent("clip-001.mp4"), to: victim)
        let manifestURL = folder.appendingPathComponent(RecordingSession.manifestName)
        let text = try String(contentsOf: manifestURL, encoding: .utf8).replacingOccurrences(of: "clip-001.mp4", with: "../victim.mp4")
        try text.write(to: manifestURL, atomically: true, encoding: .utf8)
        #expect { try RecordingSession.recover(folder: folder) } throws: { ($0 as? ReelError)?.code == .invalidMedia }
        #expect(FileManager.default.fileExists(atPath: victim.path))
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    /// A kill right after a resume leaves a clip file the recorder had just made, in no
    /// manifest and holding nothing: the recovery merges the others, removes that one too and
    /// the folder with it (the folder stayed, and blocked the name for ever).
    @Test func anEmptyClipOfNoManifestGoesWithTheRecovery() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("kept.mp4")
        _ = try await recordClips(to: url) { $0.mergesClipsAtEnd = false }
        let folder = dir.url.appendingPathComponent("kept.clips")
        _ = FileManager.default.createFile(atPath: folder.appendingPathComponent("clip-004.mp4").path, contents: Data())
        let recovered = try RecordingSession.recover(folder: folder)
        #expect(recovered.clipCount == 3)
        #expect(!FileManager.default.fileExists(atPath: folder.path), "\((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])")
    }

    /// A clip the recording finished and listed, deleted before the recovery: the others are
    /// merged, and the recovery says which clip is missing (it was only "left out", like an
    /// empty one, and `reel recover` exited 0).
    @Test func aListedClipThatIsGoneIsSaidMissing() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("holed.mp4")
        _ = try await recordClips(to: url) { $0.mergesClipsAtEnd = false }
        let folder = dir.url.appendingPathComponent("holed.clips")
        try FileManager.default.removeItem(at: folder.appendingPathComponent("clip-002.mp4"))
        let recovered = try RecordingSession.recover(folder: folder)
        #expect(recovered.clipCount == 2)
        #expect(recovered.missingClips == ["clip-002.mp4"])
        #expect(recovered.skippedClips == ["clip-002.mp4"])
        #expect(FileManager.default.fileExists(atPath: url.path))
    }

    /// A folder of clips without a manifest that all hold nothing: tidied away, saying so.
    @Test func aFolderOfEmptyClipsIsTidiedAway() throws {
        let dir = try TemporaryDirectory()
        let folder = dir.url.appendingPathComponent("nothing.clips")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: folder.appendingPathComponent("clip-002.mp4").path, contents: Data())
        #expect { try RecordingSession.recover(folder: folder) } throws: { error in
            (error as? ReelError)?.code == .nothingRecorded && ((error as? ReelError)?.hint ?? "").contains("tidied away")
        }
        #expect(!FileManager.default.fileExists(atPath: folder.path))
    }

    func recordClips(to url: URL, settings change: (inout Recorder.Settings) -> Void = { _ in }) async throws -> Recorder {
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240)))
        try session.addInput(ToneSource())
        var settings = Recorder.Settings(pauseMode: .clips)
        settings.video.preset = "ultrafast"
        change(&settings)
        let recorder = Recorder(url: url, settings: settings)
        recorder.pause(at: MediaTime(seconds: 1))
        recorder.record(at: MediaTime(seconds: 1.5))
        recorder.pause(at: MediaTime(seconds: 2.5))
        recorder.record(at: MediaTime(seconds: 3))
        recorder.maxRecordedDuration = MediaTime(seconds: 3)
        try session.addOutput(recorder)
        try await session.start()
        _ = try await recorder.result()
        await session.stop()
        return recorder
    }

    @Test func unmergedClipsAreListedInAManifestAndRecoverIntoTheirFile() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("take.mp4")
        let recorder = try await recordClips(to: url) { $0.mergesClipsAtEnd = false }
        let folder = dir.url.appendingPathComponent("take.clips")
        #expect(recorder.clipsFolder?.path == folder.path)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(names == ["clip-001.mp4", "clip-002.mp4", "clip-003.mp4", RecordingSession.manifestName])
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent(RecordingSession.manifestName))) as? [String: Any]
        #expect(manifest?["target"] as? String == url.path)
        #expect((manifest?["clips"] as? [[String: Any]])?.compactMap { $0["file"] as? String } == ["clip-001.mp4", "clip-002.mp4", "clip-003.mp4"])
        #expect(RecordingSession.unmergedRecordings(in: dir.url) == [folder])
        #expect(RecordingSession.clipsFolder(toRecover: url)?.path == folder.path)

        // A file that appeared at the target is never replaced.
        try Data("mine".utf8).write(to: url)
        #expect { try RecordingSession.recover(folder: folder) } throws: { ($0 as? ReelError)?.code == .fileExists }
        #expect(try Data(contentsOf: url) == Data("mine".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).count == 4)
        try FileManager.default.removeItem(at: url)

        let recovered = try RecordingSession.recover(folder: folder)
        #expect(recovered.url == url)
        #expect(recovered.clipCount == 3)
        #expect(recovered.videoFrames == 90)
        #expect(recovered.removedClips)
        #expect(!FileManager.default.fileExists(atPath: folder.path))
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).compactMap(\.counter)
        #expect(counters == (Array(0..<30) + Array(45..<75) + Array(90..<120)).map { Int64($0) })
    }

    @Test func aFolderWithAnotherRecordingsClipsIsRefusedUntouched() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("again.mp4")
        let folder = dir.url.appendingPathComponent("again.clips")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data("earlier".utf8).write(to: folder.appendingPathComponent("clip-002.mp4"))
        await #expect { _ = try await recordClips(to: url) } throws: { ($0 as? ReelError)?.code == .fileExists }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["clip-002.mp4"])
        #expect(try Data(contentsOf: folder.appendingPathComponent("clip-002.mp4")) == Data("earlier".utf8))
        // With clips kept elsewhere, the recording works, and the folder holds only the clips afterwards.
        let kept = dir.url.appendingPathComponent("kept")
        _ = try await recordClips(to: url) { $0.clipsFolder = kept; $0.keepsClips = true }
        #expect(try FileManager.default.contentsOfDirectory(atPath: kept.path).sorted() == ["clip-001.mp4", "clip-002.mp4", "clip-003.mp4"])
        #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == 90)
    }
}
