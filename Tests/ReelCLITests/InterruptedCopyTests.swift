import Foundation
import Testing
import Reel
import ReelTestSupport

/// A command other than `record` ended by a stop signal while it writes a copy under a hidden
/// name removes the copy and says so: what it was made from is still there. Before, Ctrl-C
/// during `reel recover -o` exited silently and left `.NAME.recovering-….mp4`, as large as the
/// recording, beside the output: the space a nearly full disk needs.
@Suite(.serialized, .tags(.realTime)) struct InterruptedCopyTests {
    /// With `-o` (the copy beside the output) and in place (a small recording is finished on a
    /// copy that then takes its place).
    @Test(arguments: [true, false])
    func ctrlCDuringARecoverRemovesItsUnfinishedCopy(elsewhere: Bool) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("cut.mp4")
        try await RecoverCommandTests.cutOff(url)
        let before = try Data(contentsOf: url)
        let out = dir.url.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let output = elsewhere ? ["-o", out.path] : []
        let folder = elsewhere ? out : dir.url
        // The copy's sync before it takes its name is held 8 s: the copy is made, not placed.
        let (strace, reel, said) = try AbortWaitingForAStepTests.heldInAnFsync(
            ["-e", "trace=fsync", "-e", "inject=fsync:delay_enter=8000000:when=1"],
            reel: ["recover", url.path] + output, errors: dir.url.appendingPathComponent("err"))
        defer {
            kill(reel, SIGKILL)
            if strace.isRunning { kill(strace.processIdentifier, SIGKILL) }
        }
        let hidden = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix(".cut.") }
        #expect(hidden.count == 1, "the copy, hidden: \(hidden)")
        kill(reel, SIGINT)
        strace.waitUntilExit()
        #expect(strace.terminationStatus == SIGINT, "ended as Ctrl-C ends it: \(strace.terminationStatus) \(said())")
        #expect(said().contains("reel: interrupted by SIGINT: removed the unfinished copy \(folder.path)/\(hidden.first ?? "?")"), "\(said())")
        #expect(said().contains("what it was made from is as it was: run the command again to finish it"), "\(said())")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix(".cut.") }.isEmpty, "no copy left")
        #expect(try Data(contentsOf: url) == before, "the recording as it was")
        // Run again, it finishes.
        let again = try ReelBinary.run(["recover", url.path] + output)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(!Recovery.isCutOff(elsewhere ? out.appendingPathComponent("cut.mp4") : url))
    }
}
