import Foundation
import Testing
import Reel
import ReelTestSupport

/// A recording's file renamed, moved or deleted while it is recorded (a file manager, a
/// clean-up script): the stop finalises it where it is now, or, deleted, copies back what was
/// recorded first. Before, the stop failed with "cannot open NAME" and left the moved file
/// unfinalised, and a deleted one vanished with the process. Its folder made unwritable while
/// it is recorded: the file is finalised in place.
@Suite(.serialized, .tags(.realTime)) struct MovedFileTests {
    static let recording = ["--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast"]

    /// Starts recording into `name` in `dir` and does `change` to its file 1.5 s in.
    func start(_ dir: TemporaryDirectory, _ name: String, extra: [String] = [], change: (URL) throws -> Void) throws -> SignalTests.Run {
        let run = try SignalTests.Run(dir, name: name, arguments: Self.recording + extra)
        try run.waitForMain()
        usleep(1_500_000)
        try change(run.url)
        return run
    }

    /// Records into `name` in `dir`, does `change` after 1.5 s, stops 1 s later; returns the
    /// result and the file the summary names.
    func record(_ dir: TemporaryDirectory, _ name: String, extra: [String] = [], change: (URL) throws -> Void) throws
        -> (result: (status: Int32, signalled: Bool, stderr: String), saved: URL?, output: String) {
        let run = try start(dir, name, extra: extra, change: change)
        run.send(SIGINT, after: 1000)
        let result = run.finish()
        let output = (try? String(contentsOf: run.stdout, encoding: .utf8)) ?? ""
        let saved = output.split(separator: "\n").first { $0.hasPrefix("Saved ") }.map { URL(fileURLWithPath: String($0.dropFirst(6))) }
        return (result, saved, output)
    }

    /// Every frame, once, in order: the burned-in counters run on without a gap but for the
    /// frames the recording's `summary` says it dropped (a loaded machine may drop one; an
    /// abort prints no summary, and then a frame or two at most).
    func expectWhole(_ url: URL, atLeast frames: Int, summary: String? = nil,
                     sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(Recovery.isFinished(url), "\(url.path) is not finalised", sourceLocation: sourceLocation)
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter)
        #expect(counters.count >= frames && counters.allSatisfy { $0 != nil }, "\(counters)", sourceLocation: sourceLocation)
        let read = counters.compactMap { $0 }
        if let summary {
            let reported = EveryFrame.reported(inSummary: summary)
            EveryFrame.expect(read, frames: reported?.frames, dropped: reported?.dropped, "\(summary)", sourceLocation: sourceLocation)
        } else {
            EveryFrame.expect(read, frames: read.count, dropped: 2, sourceLocation: sourceLocation)
        }
    }

    @Test func aFileRenamedWhileRecordedIsFinalisedAtItsNewName() throws {
        let dir = try TemporaryDirectory()
        let moved = dir.url.appendingPathComponent("sub/renamed.mp4")
        try FileManager.default.createDirectory(at: moved.deletingLastPathComponent(), withIntermediateDirectories: true)
        let (result, saved, output) = try record(dir, "moving.mp4") { try FileManager.default.moveItem(at: $0, to: moved) }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(output.contains("note      \(dir.url.appendingPathComponent("moving.mp4").path) was renamed or moved while it was recorded"), "\(output)")
        #expect(saved?.path == moved.path, "\(saved?.path ?? "no Saved line")")
        #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("moving.mp4").path))
        try expectWhole(moved, atLeast: 60, summary: output)
    }

    /// The folder deleted with the file while it is recorded: nowhere left to write there, so
    /// the recording is saved in the home folder, and the summary says why it is there.
    @Test func aFileDeletedWithItsFolderIsSavedAtHomeAndSaysSo() throws {
        let dir = try TemporaryDirectory()
        let home = dir.url.appendingPathComponent("home"), folder = dir.url.appendingPathComponent("gone")
        for f in [home, folder] { try FileManager.default.createDirectory(at: f, withIntermediateDirectories: true) }
        let out = dir.url.appendingPathComponent("out.txt")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record"] + Self.recording + ["-o", folder.appendingPathComponent("talk.mp4").path]
        process.environment = ProcessInfo.processInfo.environment.merging(["HOME": home.path]) { $1 }
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = FileHandle.nullDevice
        try process.run()
        usleep(2_000_000)
        try FileManager.default.removeItem(at: folder)
        usleep(1_000_000)
        process.interrupt()
        process.waitUntilExit()
        let said = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
        #expect(process.terminationStatus == 0, "\(said)")
        let saved = home.appendingPathComponent("talk.mp4")
        #expect(said.contains("Saved \(saved.path)") && said.contains("\(folder.path) was deleted while it was recorded"), "\(said)")
        try expectWhole(saved, atLeast: 30, summary: said)
    }

    /// The file made immutable while it is recorded (`chattr +i`: every write fails with
    /// EPERM): the error says the file keeps what was recorded and how to finish it, not
    /// "choose a folder you can write to".
    @Test func aFileThatCannotBeWrittenAnyMoreSaysItIsKept() throws {
        let dir = try TemporaryDirectory()
        let (result, _, _) = try record(dir, "frozen.mp4") { url in
            let frozen = try Subprocess.run(["chattr", "+i", url.path])
            try #require(frozen.status == 0, "\(frozen.stderr)")
        }
        let url = dir.url.appendingPathComponent("frozen.mp4")
        _ = try? Subprocess.run(["chattr", "-i", url.path])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("keeps what was recorded") && result.stderr.contains("reel recover"), "\(result.stderr)")
        #expect(!result.stderr.contains("choose a folder you can write to"), "\(result.stderr)")
        let recovered = try ReelBinary.run(["recover", url.path])
        #expect(recovered.status == 0, "\(recovered.stderr)")
    }

    /// The clips folder deleted (`rm -rf`) after a pause, while clip 2 is recorded: it is made
    /// again, clip 2 goes on there and is merged whole, and clip 1 — gone with the folder — is
    /// said lost at once and in the summary (exit 3). Before, clip 2 was rescued to the home
    /// folder without a word and the recording failed pointing at the missing folder.
    @Test func aClipsFolderDeletedWhileRecordedIsMadeAgainAndTheLostClipSaid() throws {
        let dir = try TemporaryDirectory()
        let run = try SignalTests.Run(dir, name: "clips.mp4", arguments: Self.recording + ["--pause-mode", "clips"])
        try run.waitForMain()
        let folder = dir.url.appendingPathComponent("clips.clips")
        run.send(SIGUSR1, after: 1000)          // pause: clip 1 ends
        run.send(SIGUSR1, after: 500)           // resume: clip 2
        usleep(1_000_000)
        try FileManager.default.removeItem(at: folder)
        run.send(SIGINT, after: 1500)
        let result = run.finish()
        let output = (try? String(contentsOf: run.stdout, encoding: .utf8)) ?? ""
        #expect(result.status == 3, "\(result.stderr)")
        #expect(result.stderr.contains("the clips folder \(folder.path) was deleted while recording") && result.stderr.contains("clip-001.mp4"), "\(result.stderr)")
        #expect(output.contains("lost      1 clip deleted while recorded: clip-001.mp4"), "\(output)")
        try expectWhole(run.url, atLeast: 45, summary: output)
        #expect(!FileManager.default.fileExists(atPath: folder.path), "the folder made again went once merged")
    }

    @Test func aFileDeletedWhileRecordedIsCopiedBackAndFinalised() throws {
        let dir = try TemporaryDirectory()
        let (result, saved, output) = try record(dir, "deleted.mp4") { try FileManager.default.removeItem(at: $0) }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(output.contains("note      the file was deleted while it was recorded: all of it was still held, and was copied back"),
                "said, not silent: \(output)")
        let url = dir.url.appendingPathComponent("deleted.mp4")
        #expect(saved?.path == url.path, "\(saved?.path ?? "no Saved line")")
        try expectWhole(url, atLeast: 60, summary: output)
    }

    /// A hard link made to the file and its name then removed: the file's new name is not
    /// known to reel, so it is copied back to its name (it said "cannot open NAME" and left the
    /// linked file fragmented).
    @Test func aFileRelinkedAndUnlinkedWhileRecordedIsCopiedBack() throws {
        let dir = try TemporaryDirectory()
        let link = dir.url.appendingPathComponent("link.mp4")
        let (result, saved, output) = try record(dir, "linked.mp4") { url in
            try FileManager.default.linkItem(at: url, to: link)
            try FileManager.default.removeItem(at: url)
        }
        #expect(result.status == 0, "\(result.stderr)")
        let url = dir.url.appendingPathComponent("linked.mp4")
        #expect(saved?.path == url.path, "\(saved?.path ?? "no Saved line")")
        try expectWhole(url, atLeast: 60, summary: output)
    }

    /// `--overwrite` replaces the file that was at the name when the recording began; one the
    /// user puts there after moving that one away stays, and the recording takes a free name
    /// beside it (the new file would have been replaced when the recording took the name, at
    /// its first cluster).
    @Test func overwriteNeverReplacesAFilePutAtTheNameWhileRecording() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("x.mkv"), moved = dir.url.appendingPathComponent("old.mkv")
        try Data("the file to replace".utf8).write(to: url)
        let mine = Data("put there while recording".utf8)
        // Once the recording has begun (its own file beside the name is there) and before its
        // first cluster (half a second of recording) reaches the disk: it has not taken the name yet.
        let run = try SignalTests.Run(dir, name: "x.mkv", arguments: Self.recording + ["--overwrite"])
        try run.waitForMain()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline,
              !((try? FileManager.default.contentsOfDirectory(atPath: dir.url.path)) ?? []).contains(where: { $0.hasPrefix(".x.new-") }) {
            usleep(5_000)
        }
        try FileManager.default.moveItem(at: url, to: moved)
        try mine.write(to: url)
        run.send(SIGINT, after: 2500)
        let result = run.finish()
        let output = (try? String(contentsOf: run.stdout, encoding: .utf8)) ?? ""
        let saved = output.split(separator: "\n").first { $0.hasPrefix("Saved ") }.map { URL(fileURLWithPath: String($0.dropFirst(6))) }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Data(contentsOf: url) == mine)
        #expect(try Data(contentsOf: moved) == Data("the file to replace".utf8))
        let other = dir.url.appendingPathComponent("x (2).mkv")
        #expect(saved?.path == other.path, "\(saved?.path ?? "no Saved line")")
        #expect((try MediaProbe.probe(other).videoStreams.first?.frameCount ?? 0) >= 60)
    }

    /// A folder in which no file can be made or renamed any more (here made immutable, as
    /// `chmod a-w` does for anyone but root): a short recording, which is finalised by copying
    /// it into a compact file beside it, is finalised in place instead (before, the stop failed
    /// with "cannot write to FOLDER" and left the file unfinalised).
    @Test func aFolderMadeUnwritableWhileRecordingFinalisesInPlace() throws {
        let dir = try TemporaryDirectory()
        defer { _ = try? Subprocess.run(["chattr", "-i", dir.url.path]) }
        let (result, saved, output) = try record(dir, "locked.mp4") { _ in
            let locked = try Subprocess.run(["chattr", "+i", dir.url.path])
            try #require(locked.status == 0, "chattr +i failed: \(locked.stderr)")
        }
        _ = try Subprocess.run(["chattr", "-i", dir.url.path])
        #expect(result.status == 0, "\(result.stderr)")
        let url = dir.url.appendingPathComponent("locked.mp4")
        #expect(saved?.path == url.path, "\(saved?.path ?? "no Saved line")")
        try expectWhole(url, atLeast: 60, summary: output)
    }

    /// The folder made read-only just before the stop (a read-only bind mount over it; as root
    /// `chmod a-w` is no test): the file, whose descriptor reaches it still, holds every frame
    /// recorded and is finalised in place. Before, the stop opened it by its name, failed with
    /// "cannot open …: Read-only file system" (the advice to recover it said twice), exit 1,
    /// and left it fragmented.
    @Test func aFolderMountedReadOnlyAsItStopsKeepsEveryFrame() throws {
        let dir = try TemporaryDirectory()
        let folder = dir.url.appendingPathComponent("sub")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let run = try SignalTests.Run(dir, name: "sub/ro.mp4", arguments: Self.recording)
        try run.waitForMain()
        usleep(2_000_000)
        defer { _ = try? Subprocess.run(["umount", folder.path]) }
        let bound = try Subprocess.run(["mount", "--bind", folder.path, folder.path])
        try #require(bound.status == 0, "mount --bind failed: \(bound.stderr)")
        let readOnly = try Subprocess.run(["mount", "-o", "remount,ro,bind", folder.path])
        try #require(readOnly.status == 0, "remount ro failed: \(readOnly.stderr)")
        run.send(SIGINT, after: 50)
        let result = run.finish()
        let output = (try? String(contentsOf: run.stdout, encoding: .utf8)) ?? ""
        _ = try Subprocess.run(["umount", folder.path])
        #expect(result.status == 0, "\(result.stderr)")
        let url = folder.appendingPathComponent("ro.mp4")
        #expect(output.contains("Saved \(url.path)"), "\(output)")
        // Every frame the summary counts is in the file, in order.
        let said = output.split(separator: "\n").first { $0.contains(" frames, ") }
            .flatMap { $0.split(separator: ",").first { $0.hasSuffix(" frames") } }
            .flatMap { Int($0.split(separator: " ").last { Int($0) != nil } ?? "") }
        try #require(said != nil, "\(output)")
        #expect(Recovery.isFinished(url), "\(url.path) is not finalised")
        // (A loaded machine's capture may miss a frame; the file loses none of those recorded.)
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter)
        #expect(counters.count == said && (said ?? 0) >= 45, "\(counters.count) frames in the file, \(said ?? 0) said")
        #expect(zip(counters, counters.dropFirst()).allSatisfy { a, b in a.flatMap { a in b.map { $0 > a } } == true }, "\(counters)")
    }

    /// Aborts the recording in `name` after `change` (at 1.5 s) and 1 s more: a stop signal
    /// and a second one from another process.
    func abort(_ dir: TemporaryDirectory, _ name: String, change: (URL) throws -> Void) throws -> (status: Int32, stderr: String) {
        let run = try start(dir, name, change: change)
        usleep(1_000_000)
        try run.abort()
        let result = run.finish()
        return (result.status, result.stderr)
    }

    /// An abort after the file was renamed and a new file put at its name: the user's file is
    /// never touched (the abort removed it as an empty recording by its name), and the message
    /// names where the recording is.
    @Test func anAbortAfterARenameLeavesTheNewFileAtTheNameAndNamesTheRecording() throws {
        let dir = try TemporaryDirectory()
        let moved = dir.url.appendingPathComponent("moved.mp4")
        let precious = Data("someone else's".utf8)
        let (status, stderr) = try abort(dir, "x.mp4") { url in
            try FileManager.default.moveItem(at: url, to: moved)
            try precious.write(to: url)
        }
        #expect(SignalTests.Run.aborted.contains(status), "\(status): \(stderr)")
        #expect(try Data(contentsOf: dir.url.appendingPathComponent("x.mp4")) == precious)
        #expect(stderr.contains("\(moved.path) (x.mp4 was moved there while recorded) keeps what was recorded"), "\(stderr)")
        #expect(try ReelBinary.run(["recover", moved.path]).status == 0)
        try expectWhole(moved, atLeast: 30)
    }

    /// An abort after the file was deleted: what the open file holds is copied back first.
    @Test func anAbortAfterADeleteCopiesTheRecordingBack() throws {
        let dir = try TemporaryDirectory()
        let (status, stderr) = try abort(dir, "gone.mp4") { try FileManager.default.removeItem(at: $0) }
        #expect(SignalTests.Run.aborted.contains(status), "\(status): \(stderr)")
        let url = dir.url.appendingPathComponent("gone.mp4")
        #expect(stderr.contains("was deleted while recorded and is copied back"), "\(stderr)")
        #expect(try ReelBinary.run(["recover", url.path]).status == 0)
        try expectWhole(url, atLeast: 30)
    }

    /// A file deleted and its name taken by another: that one stays, the recording goes beside it.
    @Test func aDeletedFileWhoseNameWasTakenIsRescuedBesideIt() throws {
        let dir = try TemporaryDirectory()
        let (result, saved, output) = try record(dir, "taken.mp4") { url in
            try FileManager.default.removeItem(at: url)
            try Data("someone else's".utf8).write(to: url)
        }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Data(contentsOf: dir.url.appendingPathComponent("taken.mp4")) == Data("someone else's".utf8))
        let rescued = dir.url.appendingPathComponent("taken (rescued).mp4")
        #expect(saved?.path == rescued.path, "\(saved?.path ?? "no Saved line")")
        try expectWhole(rescued, atLeast: 60, summary: output)
    }
}
