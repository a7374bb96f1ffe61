import Foundation
import Testing
import Reel
import ReelTestSupport

/// An abort that comes once the stop has finalised the file (a second Ctrl-C as `reel record`
/// ends: issue 26, #8) reports the recording finished. A short recording is finalised by a
/// compact copy that takes the file's place, another file than the one recorded into: the
/// report said `.nothingRecorded` of it, and `reel record` "aborted before anything was
/// recorded" of a file finalised whole.
@Suite(.serialized, .tags(.realTime)) struct AbortAfterFinaliseTests {
    static func inode(_ url: URL) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: url.path))?[.systemFileNumber] as? Int
    }

    @Test func anAbortAfterACopyingFinaliseSaysTheRecordingIsFinished() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("short.mp4")
        let session = CaptureSession()
        try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30)))
        try session.addInput(ToneSource())
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        try await Task.sleep(for: .milliseconds(1500))
        let recordedInto = try #require(Self.inode(url))
        await session.stop()
        let summary = try await recorder.result()
        #expect(summary.frames >= 30)
        try #require(Self.inode(url) != recordedInto, "finalised by a copy that took the file's place (the case under test)")

        let report = recorder.abort()
        #expect(report.outcome == .finished(url), "\(report)")
        #expect(report.recoveryTarget == nil && report.unfinishedCopies.isEmpty && report.unendedPlaylists.isEmpty)
        #expect(Recovery.isFinished(url))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path) == ["short.mp4"])
    }

    /// An abort before the session prepared the recorder says nothing was recorded, and the
    /// start that comes after it makes no file: a double Ctrl-C as `reel record` started said
    /// "aborted before anything was recorded" and left a header-only file at the name (the start,
    /// on another thread, made it after the words), which the next recording found in its way.
    /// A finalise by a compact copy frees the inode recorded into, and the next file made
    /// takes it (ext4 gives the lowest free inode of the folder's group): another recording's.
    /// The abort of the finished recording looked its finalise up by that identity, gave up
    /// the other recording's finalise and removed its file, header only still.
    @Test func anAbortAfterTheFinaliseLeavesTheNextRecordingOfTheInodeAlone() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("short.mp4"), next = dir.url.appendingPathComponent("next.mp4")
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        func session(into recorder: Recorder) throws -> CaptureSession {
            let session = CaptureSession()
            try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30)))
            try session.addOutput(recorder)
            return session
        }
        let first = Recorder(url: url, settings: settings)
        let one = try session(into: first)
        try await one.start()
        try await Task.sleep(for: .milliseconds(1200))
        let recordedInto = try #require(Self.inode(url))
        await one.stop()
        _ = try await first.result()
        try #require(Self.inode(url) != recordedInto, "finalised by a copy that took the file's place (the case under test)")

        let second = Recorder(url: next, settings: settings)
        let two = try session(into: second)
        try await two.start()
        // On ext4 (this machine's disk) the next file takes the inode the copy freed; where it
        // does not, the abort has no other file to mistake, and the checks below hold all the same.
        let reused = Self.inode(next) == recordedInto
        let report = first.abort()
        #expect(report.outcome == .finished(url), "\(report) (inode reused: \(reused))")
        #expect(FileManager.default.fileExists(atPath: next.path), "the other recording's file is there (inode reused: \(reused))")
        try await Task.sleep(for: .milliseconds(800))
        await two.stop()
        let summary = try await second.result()
        #expect(summary.frames >= 20, "the other recording was finalised (inode reused: \(reused))")
        #expect(Recovery.isFinished(next))
    }

    @Test func anAbortBeforeTheStartLeavesNoFileWhenTheStartComesAfter() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("early.mp4")
        let session = CaptureSession()
        try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30)))
        let recorder = Recorder(url: url, settings: Recorder.Settings())
        try session.addOutput(recorder)
        let report = recorder.abort()
        #expect(report.outcome == .nothingRecorded, "\(report)")
        await #expect(throws: ReelError.self) { try await session.start() }
        await session.stop()
        #expect(!FileManager.default.fileExists(atPath: url.path), "no file after the abort's words")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).isEmpty)
    }
}

/// An abort that comes while the start makes the file and opens the encoders (a double Ctrl-C
/// right as `reel record` starts: `SignalTests.anAbortBeforeTheFirstFragmentLeavesNoFile`
/// failed so once, a header-only file left after "aborted before anything was recorded")
/// waits for the file, then gives it up as an abandoned recording's: nothing is left.
@Suite(.serialized) struct AbortWhilePreparingTests {
    /// A sink whose start holds until it is let go: the recorder's file exists by then (the
    /// file is its encoders' first sink) and the start is not over.
    final class HeldStart: PacketSink, @unchecked Sendable {
        let begun = DispatchSemaphore(value: 0), letGo = DispatchSemaphore(value: 0)
        var policy: SinkPolicy { .optional }
        func add(_ stream: EncodedStream) throws {}
        func begin() throws {
            begun.signal()
            letGo.wait()
        }
        func write(_ packet: EncodedPacket) throws -> SinkFlow { .ok }
        func finish() throws {}
    }

    /// Records into `url` with `settings`, aborts while the start is held in a sink's
    /// `begin()`, and checks the start failed and the abort said nothing was recorded.
    func abortWhileStarting(_ url: URL, _ settings: Recorder.Settings) async throws -> Recorder {
        var settings = settings
        settings.video.preset = "ultrafast"
        let session = CaptureSession()
        try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30)))
        let held = HeldStart()
        let recorder = Recorder(url: url, settings: settings, sinks: [held])
        try session.addOutput(recorder)
        let start = Task { try await session.start() }
        held.begun.wait()
        let abort = Task.detached { recorder.abort() }
        // The abort waits for the start: let the start go only once the abort is under way.
        try await Task.sleep(for: .milliseconds(200))
        held.letGo.signal()
        let report = await abort.value
        await #expect(throws: ReelError.self) { try await start.value }
        await session.stop()
        switch report.outcome {
        case .nothingRecorded, .nothingReachedTheDisk: break
        default: Issue.record("the abort reported \(report.outcome)")
        }
        return recorder
    }

    @Test(arguments: [false, true]) func anAbortWhileTheStartMakesTheFileLeavesNothing(overwrite: Bool) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("early.mp4")
        let earlier = Data("someone's file".utf8)
        if overwrite { try earlier.write(to: url) }
        var settings = Recorder.Settings()
        settings.overwrite = overwrite
        let recorder = try await abortWhileStarting(url, settings)
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.url.path)
        if overwrite {
            #expect(left == ["early.mp4"], "\(left)")
            #expect(try Data(contentsOf: url) == earlier, "the file the recording would have replaced is as it was")
        } else {
            #expect(left.isEmpty, "no file after the abort's words: \(left)")
        }
        await #expect(throws: ReelError.self) { try await recorder.result() }
    }

    /// The same for a GIF (its intermediate is the file made) and in clip mode (the clips'
    /// folder and its list are made at the start): nothing is left, nothing said to recover.
    @Test(arguments: ["early.gif", "clips"]) func anAbortWhileTheStartMakesItsFilesLeavesNothing(_ kind: String) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent(kind == "clips" ? "early.mp4" : kind)
        _ = try await abortWhileStarting(url, Recorder.Settings(pauseMode: kind == "clips" ? .clips : .singleFile))
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.url.path)
        #expect(left.isEmpty, "nothing left: \(left)")
    }
}
