import Foundation
import Testing
@testable import ReelCLI
import Reel
import ReelTestSupport

/// How the progress of long work is drawn: a bar with the percent and the time left.
@Suite struct WorkProgressLineTests {
    @Test func theBarSaysThePercentAndTheTimeLeft() {
        let half = WorkProgress(stage: .merging, completedUnitCount: 50, totalUnitCount: 100, elapsed: MediaTime(seconds: 12))
        #expect(WorkProgressView.line(half, width: 10) == "merging  [#####-----]  50%  about 12 s left")
        let early = WorkProgress(stage: .reencoding, completedUnitCount: 0, totalUnitCount: 100, elapsed: .zero)
        #expect(WorkProgressView.line(early, subject: "a.mp4", width: 4) == "encoding again a.mp4  [----]   0%")
        let done = WorkProgress(stage: .recovering, completedUnitCount: 100, totalUnitCount: 100, elapsed: MediaTime(seconds: 3))
        #expect(WorkProgressView.line(done, width: 4) == "recovering  [####] 100%")
        #expect(WorkProgressView.timeLeft(150) == "about 3 min left")
        let json = WorkProgressView.json(half, file: "x.mp4")
        #expect(json["event"] as? String == "progress" && json["stage"] as? String == "merging")
        #expect(json["fraction"] as? Double == 0.5 && json["remaining"] as? Double == 12 && json["file"] as? String == "x.mp4")
        #expect(WorkProgressView.json(early)["remaining"] == nil)
    }
}

/// `reel merge`, `reel recover` and the merge of clips at a recording's stop show a progress
/// bar on a terminal (a pseudo-terminal made by `script`), `progress` events with `--json`,
/// and nothing extra when standard error is not a terminal.
@Suite(.serialized, .tags(.realTime)) struct WorkProgressCommandTests {
    /// Runs `reel` with `arguments` on a pseudo-terminal: its exit status and everything it wrote there.
    static func onATerminal(_ arguments: [String], in dir: URL) throws -> (status: Int32, text: String) {
        let command = ([ReelBinary.url.path] + arguments).map(Shell.quoted).joined(separator: " ")
        let r = try Subprocess.run(["script", "-q", "-e", "-c", command, "/dev/null"], currentDirectory: dir)
        return (r.status, r.output)
    }

    /// Records `seconds` of the test pattern, faster than real time, into `url`.
    static func clip(_ url: URL, seconds: Int, size: String = "320x240") throws {
        let r = try ReelBinary.run(["record", "--test-pattern", "--tone", "--size", size, "--preset", "ultrafast",
                                    "--duration", "\(seconds)", "--faster-than-real-time", "-o", url.path])
        #expect(r.status == 0, "\(r.stderr)")
    }

    static func events(_ output: String) -> [[String: Any]] {
        output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    @Test func mergeShowsABarOnATerminalOnly() throws {
        let dir = try TemporaryDirectory()
        let a = dir.url.appendingPathComponent("a.mp4"), b = dir.url.appendingPathComponent("b.mp4")
        try Self.clip(a, seconds: 2)
        try Self.clip(b, seconds: 2, size: "160x120")
        let shown = try Self.onATerminal(["merge", a.path, b.path, "--reencode", "-o", "tty.mp4"], in: dir.url)
        #expect(shown.status == 0, "\(shown.text)")
        #expect(shown.text.contains("\r\u{1B}[2Kencoding again  [------------------------]   0%"), "\(shown.text)")
        #expect(shown.text.contains("[########################] 100%\r\n"), "the bar ends complete, on a line of its own: \(shown.text)")
        #expect(shown.text.contains("Saved \(dir.url.path)/tty.mp4"))

        let piped = try ReelBinary.run(["merge", a.path, b.path, "--reencode", "-o", dir.url.appendingPathComponent("pipe.mp4").path])
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(piped.stderr.isEmpty, "nothing extra off a terminal: \(piped.stderr)")
        #expect(!piped.output.contains("%"))

        let json = try ReelBinary.run(["merge", a.path, b.path, "--reencode", "--json", "-o", dir.url.appendingPathComponent("json.mp4").path])
        let events = Self.events(json.output)
        let progress = events.filter { $0["event"] as? String == "progress" }
        #expect(progress.first?["fraction"] as? Double == 0)
        #expect(progress.last?["fraction"] as? Double == 1)
        #expect(progress.allSatisfy { $0["stage"] as? String == "reencoding" && ($0["total"] as? Int ?? 0) > 0 })
        #expect(events.last?["event"] as? String == "merged")
    }

    @Test func recoverShowsABarOnATerminal() async throws {
        let dir = try TemporaryDirectory()
        let cut = dir.url.appendingPathComponent("cut.mp4")
        try await RecoverCommandTests.cutOff(cut)
        let shown = try Self.onATerminal(["recover", cut.path, "-o", "copy.mp4"], in: dir.url)
        #expect(shown.status == 0, "\(shown.text)")
        #expect(shown.text.contains("\r\u{1B}[2Krecovering cut.mp4  [------------------------]   0%"), "\(shown.text)")
        #expect(shown.text.contains("recovering cut.mp4  [########################] 100%\r\n"), "\(shown.text)")
        #expect(shown.text.contains("Recovered \(dir.url.path)/copy.mp4"))

        let json = try ReelBinary.run(["recover", cut.path, "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let events = Self.events(json.output)
        #expect(events.first?["event"] as? String == "progress" && events.first?["stage"] as? String == "recovering")
        #expect(events.contains { $0["event"] as? String == "progress" && $0["fraction"] as? Double == 1 && $0["file"] as? String == "cut.mp4" })
        #expect(events.last?["event"] as? String == "recovered" && events.last?["file"] as? String == cut.path, "\(json.output)")
        #expect(!json.stderr.contains("%"))
    }

    @Test func theClipsMergedAtTheStopShowABar() throws {
        let dir = try TemporaryDirectory()
        let args = ["record", "--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast", "--duration", "2",
                    "--faster-than-real-time", "--pause-mode", "clips"]
        let shown = try Self.onATerminal(args + ["-o", "clips.mp4"], in: dir.url)
        #expect(shown.status == 0, "\(shown.text)")
        #expect(shown.text.contains("merging the clips  ["), "\(shown.text)")
        #expect(shown.text.contains("] 100%"), "\(shown.text)")

        let json = try ReelBinary.run(args + ["--json", "-o", dir.url.appendingPathComponent("events.mp4").path])
        #expect(json.status == 0, "\(json.stderr)")
        let events = Self.events(json.output)
        let merging = events.filter { $0["event"] as? String == "progress" && $0["stage"] as? String == "merging" }
        #expect(merging.first?["fraction"] as? Double == 0 && merging.last?["fraction"] as? Double == 1, "\(json.output)")
        let finished = try #require(events.firstIndex { $0["event"] as? String == "finished" })
        #expect(events.lastIndex { $0["stage"] as? String == "merging" }! < finished, "the merge comes before finished")

        let piped = try ReelBinary.run(args + ["-o", dir.url.appendingPathComponent("piped.mp4").path])
        #expect(piped.status == 0 && !piped.stderr.contains("merging"), "\(piped.stderr)")
    }
}
