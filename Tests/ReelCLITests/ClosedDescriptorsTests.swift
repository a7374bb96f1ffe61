import Foundation
import Testing
import Reel
import ReelTestSupport

/// `reel record` started with standard output and error (and input) closed, as a launcher or a
/// daemon may start it: it records as with them on /dev/null. Its first files and pipes took
/// their numbers, so what it printed went into them: with a note to print at the start (a
/// cut-off recording in the folder) it died after 0.4 s with exit 242 and a file of its header
/// alone; with all three closed it recorded and exited 211, its summary read back by the signal
/// pipe as an exit status (issue 26, F12). Run directly and through the installed launcher.
@Suite(.serialized, .tags(.realTime)) struct ClosedDescriptorsTests {
    @Test(arguments: [false, true])
    func aRecordingWithItsOutputsClosedIsWhole(throughTheLauncher: Bool) async throws {
        let dir = try TemporaryDirectory()
        // A recording cut off beside it: reel has a note to print at its start.
        try await RecoverCommandTests.cutOff(dir.url.appendingPathComponent("earlier.mp4"))
        let reel = throughTheLauncher ? try LauncherSignalTests.install(in: dir.url.appendingPathComponent("prefix")) : ReelBinary.url
        for (label, closing) in [("stdout and stderr", ">&- 2>&-"), ("all three", "<&- >&- 2>&-"), ("--json, stdin and stdout", "<&- >&- 2>/dev/null")] {
            let url = dir.url.appendingPathComponent("\(label.filter(\.isLetter)).mp4")
            let json = label.hasPrefix("--json") ? "--json " : ""
            let script = "cd '\(dir.url.path)' && '\(reel.path)' record --test-pattern --tone --size 160x120 --preset ultrafast --duration 2 "
                + "\(json)-o '\(url.path)' \(closing); echo $? > '\(url.path).status'"
            let run = try Subprocess.run(["sh", "-c", script])
            #expect(run.status == 0, "\(label): \(run.stderr)")
            let status = try String(contentsOf: url.appendingPathExtension("status"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(status == "0", "\(label): exit \(status)")
            let probe = try MediaProbe.probe(url)
            #expect(abs(probe.duration - 2) < 0.1, "\(label): \(probe.duration) s")
            #expect(!Recovery.isCutOff(url), "\(label): finalised")
        }
    }
}
