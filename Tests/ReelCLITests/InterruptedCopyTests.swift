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
        #expect(said().contains("what it was made from is kept: run the command again to finish it"), "\(said())")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix(".cut.") }.isEmpty, "no copy left")
        #expect(try Data(contentsOf: url) == before, "the recording as it was")
        // Run again, it finishes.
        let again = try ReelBinary.run(["recover", url.path] + output)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(!Recovery.isCutOff(elsewhere ? out.appendingPathComponent("cut.mp4") : url))
    }

    /// An in-place recovery (of a recording larger than its index's room: no copy) interrupted
    /// says so, and with `--json` ends with an `interrupted` event (s46 #3: exit 130, not a
    /// word, no last event). Run again, it finishes.
    @Test func ctrlCDuringAnInPlaceRecoverSaysSo() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("large.mp4")
        let events = dir.url.appendingPathComponent("events")
        let recording = try await RecoverCommandTests.startRecording(url, events: events, seconds: 2.5, size: "640x480",
                                                                     options: ["--crf", "0", "--filter", "noise=alls=20:allf=t"])
        kill(recording.processIdentifier, SIGKILL)
        recording.waitUntilExit()
        try #require(Recovery.isCutOff(url))
        let output = dir.url.appendingPathComponent("out")
        let (strace, reel, said) = try AbortWaitingForAStepTests.heldInAnFsync(
            ["-e", "trace=fsync", "-e", "inject=fsync:delay_enter=8000000:when=1"],
            reel: ["recover", url.path, "--json"], errors: dir.url.appendingPathComponent("err"), output: output)
        defer {
            kill(reel, SIGKILL)
            if strace.isRunning { kill(strace.processIdentifier, SIGKILL) }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).filter { $0.hasPrefix(".large.") }.isEmpty,
                "finished where it is, no copy")
        kill(reel, SIGINT)
        strace.waitUntilExit()
        #expect(strace.terminationStatus == SIGINT, "ended as Ctrl-C ends it: \(strace.terminationStatus) \(said())")
        #expect(said().contains("reel: interrupted by SIGINT while working on large.mp4: run the command again to finish it"),
                "\(said())")
        let lines = try String(contentsOf: output, encoding: .utf8).split(separator: "\n")
        let last = try #require(lines.last.flatMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] })
        #expect(last["event"] as? String == "interrupted" && last["signal"] as? String == "SIGINT" && last["file"] as? String == "large.mp4",
                "\(lines)")
        #expect((last["removedCopies"] as? [String])?.isEmpty == true, "\(last)")
        let again = try ReelBinary.run(["recover", url.path])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(!Recovery.isCutOff(url))
        #expect(try MediaProbe.probe(url).duration > 1.5)
    }
}
