import Foundation
import Testing
import Reel
import ReelTestSupport

/// What `reel record` promises about its file, kept by the library for a `ScreenRecorder`
/// (on Xvfb) and a `CameraRecorder` user: a file moved or deleted while recorded is finalised
/// where it went or copied back (as `MovedFileTests` checks of `reel`), an abort says where the
/// recording is and leaves it recoverable (`reel`'s second Ctrl-C), and a full disk keeps
/// what was written (`CrashTests`, `ClipRecoveryTests`).
@Suite(.serialized, .tags(.realTime)) struct RecordingFileSafetyTests {
    func settings() -> Recorder.Settings {
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        return settings
    }

    /// A recording of the test pattern and tone into `name` on `disk` (its free-space guard
    /// off), started; its file and its result to come.
    func startRecording(_ name: String, on disk: SmallDisk, _ session: CaptureSession) async throws -> (Recorder, URL, Task<RecordingSummary, Error>) {
        try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30)))
        try session.addInput(ToneSource())
        var settings = settings()
        settings.minimumFreeSpace = nil
        let container = try #require(Container(pathExtension: (name as NSString).pathExtension))
        settings.video.codec = container.defaultVideoCodec
        settings.audio.codec = container.defaultAudioCodec
        let url = disk.url.appendingPathComponent(name)
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        return (recorder, url, Task { try await recorder.result() })
    }

    /// A screen recording into `name` with `change` done to its file 1.5 s in, and 1 s more.
    func recordScreen(_ dir: TemporaryDirectory, _ name: String, change: (URL) throws -> Void) async throws -> (ScreenRecorder, URL) {
        let xvfb = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let screen = ScreenRecorder(configuration: .init(display: xvfb.display))
        let url = dir.url.appendingPathComponent(name)
        try await screen.startRecording(to: url, settings: settings())
        try await Task.sleep(for: .milliseconds(1500))
        try change(url)
        try await Task.sleep(for: .seconds(1))
        return (screen, url)
    }

    /// What a copy of `file` taken now holds once recovered (what the process would leave if
    /// it ended now): its video frames.
    func framesRecovered(from file: URL, in dir: TemporaryDirectory) throws -> Int {
        let copy = dir.url.appendingPathComponent("copy-" + file.lastPathComponent)
        try? FileManager.default.removeItem(at: copy)
        try FileManager.default.copyItem(at: file, to: copy)
        _ = try Recovery.recover(copy)
        return try MediaProbe.probe(copy).videoStreams.first?.frameCount ?? 0
    }

    @Test func aScreenRecordingMovedWhileRecordedIsFinalisedWhereItWent() async throws {
        let dir = try TemporaryDirectory()
        let moved = dir.url.appendingPathComponent("sub/renamed.mp4")
        try FileManager.default.createDirectory(at: moved.deletingLastPathComponent(), withIntermediateDirectories: true)
        let (screen, url) = try await recordScreen(dir, "moving.mp4") { try FileManager.default.moveItem(at: $0, to: moved) }
        let summary = try await screen.stopRecording()
        #expect(summary.url.path == moved.path)
        #expect(!FileManager.default.fileExists(atPath: url.path))
        #expect(Recovery.isFinished(moved))
        #expect((try MediaProbe.probe(moved).videoStreams.first?.frameCount ?? 0) >= 30)
    }

    @Test func aScreenRecordingDeletedWhileRecordedIsCopiedBack() async throws {
        let dir = try TemporaryDirectory()
        let (screen, url) = try await recordScreen(dir, "deleted.mp4") { try FileManager.default.removeItem(at: $0) }
        let summary = try await screen.stopRecording()
        #expect(summary.url.path == url.path)
        #expect(Recovery.isFinished(url))
        #expect((try MediaProbe.probe(url).videoStreams.first?.frameCount ?? 0) >= 30)
    }

    /// Aborted after a rename and a new file put at the name: the user's file is untouched,
    /// and the report names where the recording went (`reel` says "(x.mp4 was moved there while
    /// recorded) keeps what was recorded").
    @Test func anAbortAfterAMoveNamesWhereTheRecordingIs() async throws {
        let dir = try TemporaryDirectory()
        let moved = dir.url.appendingPathComponent("moved.mp4"), precious = Data("someone else's".utf8)
        let (screen, url) = try await recordScreen(dir, "x.mp4") { url in
            try FileManager.default.moveItem(at: url, to: moved)
            try precious.write(to: url)
        }
        let report = try #require(screen.abortRecording())
        #expect(report.outcome == .kept(moved, .moved(from: url)), "\(report)")
        #expect(report.recoveryTarget == moved)
        #expect(try Data(contentsOf: url) == precious)
        #expect(try framesRecovered(from: moved, in: dir) > 0)
        _ = try? await screen.stopRecording()
        #expect(try Data(contentsOf: url) == precious)
    }

    /// Aborted after the file was deleted: what the open file holds is copied back first.
    @Test func anAbortAfterADeleteCopiesTheRecordingBack() async throws {
        let dir = try TemporaryDirectory()
        let (screen, url) = try await recordScreen(dir, "gone.mp4") { try FileManager.default.removeItem(at: $0) }
        let report = try #require(screen.abortRecording())
        #expect(report.outcome == .kept(url, .copiedBack(deletedFrom: url)), "\(report)")
        #expect(try framesRecovered(from: url, in: dir) > 0)
        _ = try? await screen.stopRecording()
    }

    /// The disk fills under a screen recording (its free-space guard off): the room of the
    /// file's index reservation that its index does not need goes back to the disk, so what
    /// was recorded reaches it; the recording ends there for the disk (or at the stop, if that
    /// came first), finalised with every frame it recorded. (The stop said the disk was full,
    /// and the file kept what had reached the disk before.)
    @Test func aScreenRecordingOnAFullDiskKeepsWhatWasWritten() async throws {
        let disk = try SmallDisk(size: "2m")
        let xvfb = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let screen = ScreenRecorder(configuration: .init(display: xvfb.display))
        var settings = settings()
        settings.minimumFreeSpace = nil
        let url = disk.url.appendingPathComponent("full.mp4")
        try await screen.startRecording(to: url, settings: settings)
        try await Task.sleep(for: .milliseconds(1500))
        // Everything left on the disk taken by someone else's file.
        _ = try Subprocess.run(["sh", "-c", "cat /dev/zero > '\(disk.url.appendingPathComponent("filler").path)'"])
        try await Task.sleep(for: .seconds(1.5))
        let summary = try await screen.stopRecording()
        #expect(summary.ending == .lowDiskSpace || summary.ending == .requested, "\(summary.ending)")
        #expect(Recovery.isFinished(url), "finalised")
        let frames = try MediaProbe.probe(url).videoStreams.first?.frameCount ?? 0
        #expect(frames >= 60 && frames == Int(summary.frames), "every frame recorded is in the file: \(frames) of \(summary.frames)")
    }

    /// The disk fills while a recording goes on (something else took the space; no minimum
    /// free space to stop it first): the room of the file's index reservation that its index
    /// does not need goes back to the disk, and the recording ends there for the disk
    /// (`lowDiskSpace`), finalised as at a stop with every frame recorded. (It failed, its
    /// file finalised in place with what had reached the disk, saying how much was lost; before
    /// that, with the advice to run a recovery.)
    @Test func aDiskThatFillsWhileRecordingEndsTheRecordingWithNothingLost() async throws {
        let disk = try SmallDisk(size: "20m")
        let session = CaptureSession()
        let (recorder, url, outcome) = try await startRecording("full.mp4", on: disk, session)
        try await Task.sleep(for: .seconds(2))
        let free = try FileManager.default.attributesOfFileSystem(forPath: disk.url.path)[.systemFreeSize] as? Int ?? 0
        try Data(count: max(0, free - 20_000)).write(to: disk.url.appendingPathComponent("filler"))
        // The recording ends by itself once the disk is full; stopped after 15 s if it did not
        // (then it would say so as a stop's, and fail below).
        for _ in 0..<150 where recorder.isRecording { try await Task.sleep(for: .milliseconds(100)) }
        let endedByItself = !recorder.isRecording
        await session.stop()
        let summary = try await outcome.value
        #expect(endedByItself && summary.ending == .lowDiskSpace && !summary.isWhole, "\(summary.ending)")
        #expect(Recovery.isFinished(url), "finalised")
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter)
        #expect(counters.count >= 60 && counters.count == Int(summary.frames), "\(counters.count) frames of \(summary.frames)")
        #expect(zip(counters, counters.dropFirst()).allSatisfy { a, b in a.flatMap { a in b.map { $0 > a } } == true }, "\(counters)")
        #expect(abs(try MediaProbe.probe(url).duration - summary.duration.seconds) < 0.1, "\(summary.duration)")
    }

    /// An MKV (or any file without an index reservation) whose disk another program fills:
    /// the disk keeps room ahead of the file, so what was taken goes into it, the recording
    /// ends by itself for the disk (noticed at the next top-up of the room, a moment later)
    /// and is finished with every frame, and the room no write used goes back. It failed on
    /// its first write past the disk's end (exit 1 `failed`), unfinished, what waited to be
    /// written lost (issue 26, F1 of the stranger pass); then it went on into its 8 MB of room
    /// for a minute as if the disk had room.
    @Test(arguments: ["mkv", "webm"])
    func aFileWithoutAnIndexReservationOnADiskThatFillsKeepsEveryFrame(ext: String) async throws {
        let disk = try SmallDisk(size: "20m")
        let session = CaptureSession()
        let (recorder, url, outcome) = try await startRecording("full.\(ext)", on: disk, session)
        try await Task.sleep(for: .seconds(2))
        let free = try FileManager.default.attributesOfFileSystem(forPath: disk.url.path)[.systemFreeSize] as? Int ?? 0
        let filler = disk.url.appendingPathComponent("filler")
        _ = try Subprocess.run(["dd", "if=/dev/zero", "of=\(filler.path)", "bs=64k", "count=\(free / 65536 + 16)"])
        let left = try FileManager.default.attributesOfFileSystem(forPath: disk.url.path)[.systemFreeSize] as? Int ?? -1
        #expect(left < 65536, "the disk is full: \(left) bytes free")
        // It ends by itself for the disk; stopped after 15 s if it did not (and fails below).
        for _ in 0..<150 where recorder.isRecording { try await Task.sleep(for: .milliseconds(100)) }
        let endedByItself = !recorder.isRecording
        await session.stop()
        let summary = try await outcome.value
        #expect(endedByItself && summary.ending == .lowDiskSpace, "\(summary.ending)")
        #expect(Recovery.isFinished(url), "finished")
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter)
        #expect(counters.count >= 50 && counters.count == Int(summary.frames), "\(counters.count) frames of \(summary.frames)")
        #expect(zip(counters, counters.dropFirst()).allSatisfy { a, b in a.flatMap { a in b.map { $0 > a } } == true }, "\(counters)")
        #expect(abs(try MediaProbe.probe(url).duration - summary.duration.seconds) < 0.1, "\(summary.duration)")
        // The room kept and not used is the disk's again.
        var info = stat()
        #expect(stat(url.path, &info) == 0)
        #expect(Int64(info.st_blocks) * 512 <= Int64(info.st_size) + 65536, "\(info.st_blocks * 512) bytes on the disk for \(info.st_size)")
    }

    /// A camera take is recorded in clips: an abort leaves them in their folder, which the
    /// report names (`reel record --pause-mode clips` says "the recording is in the clips in").
    @Test func anAbortedCameraTakeIsInItsClips() async throws {
        let dir = try TemporaryDirectory()
        let camera = TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30))
        let recorder = CameraRecorder(camera: camera, settings: settings())
        let url = dir.url.appendingPathComponent("take.mp4")
        recorder.outputURL = url
        try await recorder.start()
        try recorder.record()
        try await Task.sleep(for: .milliseconds(2500))
        let report = try #require(recorder.abort())
        let folder = RecordingSession.defaultFolder(for: url)
        #expect(report.outcome == .clips(folder: folder), "\(report)")
        #expect(report.recoveryTarget == folder)
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("clip-001.mp4").path))
        #expect(!FileManager.default.fileExists(atPath: url.path))
        _ = try? await recorder.stop()
    }

    /// The disk fills under a camera take: the error says where the clips are and how to
    /// merge them, and the first clip keeps what was written (as `reel record --pause-mode
    /// clips` on a full disk).
    @Test func aCameraTakeOnAFullDiskKeepsItsClip() async throws {
        let disk = try SmallDisk(size: "900k")
        var settings = settings()
        settings.video.rateControl = .crf(0)
        settings.minimumFreeSpace = nil
        let camera = TestPatternSource(size: PixelSize(width: 1280, height: 720), frameRate: FrameRate(30))
        let recorder = CameraRecorder(camera: camera, settings: settings)
        let url = disk.url.appendingPathComponent("full.mp4")
        recorder.outputURL = url
        recorder.maxRecordedDuration = MediaTime(seconds: 60)
        try await recorder.start()
        try recorder.record()
        var failure: ReelError?
        for _ in 0..<200 where failure == nil {
            try await Task.sleep(for: .milliseconds(100))
            if !recorder.isRecording {
                do { _ = try await recorder.stop() } catch let error as ReelError { failure = error }
                break
            }
        }
        if failure == nil { do { _ = try await recorder.stop() } catch let error as ReelError { failure = error } }
        let error = try #require(failure)
        let folder = RecordingSession.defaultFolder(for: url)
        #expect(error.code == .insufficientStorage, "\(error)")
        #expect(error.hint?.contains(folder.path) == true, "\(error)")
        let clip = folder.appendingPathComponent("clip-001.mp4")
        #expect(Recovery.isCutOff(clip) || Recovery.isFinished(clip), "\(clip.path)")
    }
}
