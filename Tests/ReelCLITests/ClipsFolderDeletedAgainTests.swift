import Foundation
import Glibc
import Testing
import Reel
import ReelTestSupport

/// A clips folder deleted while recorded is made again at its name and the manifest written
/// there; deleted again as that is done (someone tidying up, over and over), it is made again
/// once more. The manifest's write then followed the folder itself, on the thread already
/// following it, and took that lock again: the recording hung there (a trap at best), and its
/// stop with it.
@Suite(.serialized, .tags(.realTime)) struct ClipsFolderDeletedAgainTests {
    /// The folder's first making again "succeeds" without making it (strace makes the call
    /// return 0), as if it were deleted again at once: the manifest cannot be written, the
    /// folder is made again, and the recording goes on and is merged whole.
    @Test func aFolderDeletedAgainAsItIsMadeAgainIsMadeOnceMore() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("clips.mp4"), log = dir.url.appendingPathComponent("strace")
        let folder = dir.url.appendingPathComponent("clips.clips")
        // The folder is there before the recording (claimed as it is), so that the only calls
        // that make it are the recording's making it again.
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        let traced = try ClipFinishThreadTests.Traced(url: url, log: log, syscalls: "mkdir,mkdirat",
                                                      options: ["-P", folder.path, "-e", "inject=mkdir,mkdirat:retval=0:when=1"])
        defer { traced.kill() }
        try #require(traced.reel > 0)
        try traced.waitFor(folder.appendingPathComponent("clip-001.mp4"))
        usleep(1_000_000)
        try FileManager.default.removeItem(at: folder)          // rm -rf while clip 1 is recorded
        // Followed within a second (and at once where the clip's file needs it).
        let manifest = folder.appendingPathComponent(RecordingSession.manifestName)
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: manifest.path) && Date() < deadline { usleep(50_000) }
        #expect(FileManager.default.fileExists(atPath: manifest.path), "the folder made again, its manifest written")
        usleep(1_500_000)
        kill(traced.reel, SIGINT)
        let stopping = Date()
        while traced.strace.isRunning && Date().timeIntervalSince(stopping) < 30 { usleep(50_000) }
        try #require(!traced.strace.isRunning, "the stop ended")
        #expect(traced.strace.terminationStatus == 0)

        // The folder was made twice: the first call made nothing (strace's), the second did.
        let makes = try String(contentsOf: log, encoding: .utf8).split(separator: "\n").filter { $0.contains("mkdir") }
        #expect(makes.count >= 2 && makes.first?.contains("INJECTED") == true, "\(makes)")
        let probe = try MediaProbe.probe(url)
        #expect((probe.videoStreams.first?.frameCount ?? 0) >= 75, "the clip being recorded, kept: \(probe.videoStreams.first?.frameCount ?? 0) frames")
        #expect(!FileManager.default.fileExists(atPath: folder.path), "the folder made again went once merged")
    }
}
