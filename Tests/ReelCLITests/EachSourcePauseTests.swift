import Foundation
import Testing
import Reel
import ReelTestSupport

/// `--each-source` files pause with the recording: a user pauses to hide something, and it
/// must be in none of the files the recording writes. They recorded on through every pause
/// (s26 F13: the screen shown only while paused was in DIR/01-screen.mp4).
@Suite(.serialized, .tags(.realTime)) struct EachSourcePauseTests {
    /// The test pattern's burned-in counter tells the frames apart: no frame of the span the
    /// main file left out (its pause) is in the per-source file, which has the same gap.
    @Test(arguments: ["single-file", "clips"])
    func perSourceFilesLeaveThePauseOut(_ mode: String) throws {
        let dir = try TemporaryDirectory()
        let own = dir.url.appendingPathComponent("own")
        let run = try SignalTests.Run(dir, name: "main-\(mode).mp4",
                                      arguments: ["--test-pattern", "--size", "320x240", "--preset", "ultrafast", "--pause-mode", mode,
                                                  "--each-source", own.path, "--json"])
        try run.waitForMain()
        // Each step waits for reel to say it happened, so a loaded machine only makes it slower.
        try waitForEvent("progress", count: 1, in: run)
        usleep(1_000_000)
        run.send(SIGUSR1, after: 0)
        try waitForEvent("paused", count: 1, in: run)
        usleep(1_000_000)
        run.send(SIGUSR1, after: 0)
        try waitForEvent("resumed", count: 1, in: run)
        usleep(1_000_000)
        run.send(SIGINT, after: 0)
        let result = run.finish()
        #expect(result.status == 0 && !result.signalled, "\(result.stderr)")

        let main = try MediaProbe.decodeLuma(run.url, width: 320, height: 240).compactMap(\.counter)
        // The main file's pause: its largest jump in the counter.
        let jumps = zip(main, main.dropFirst()).map { (from: $0, to: $1) }
        let pause = try #require(jumps.max { $0.to - $0.from < $1.to - $1.from }, "\(main)")
        #expect(pause.to - pause.from >= 15, "the main file has no pause: \(main)")

        let files = try FileManager.default.contentsOfDirectory(atPath: own.path).sorted()
        let file = own.appendingPathComponent(try #require(files.first, "no per-source file"))
        let video = try #require(try MediaProbe.probe(file).videoStreams.first)
        let counters = try MediaProbe.decodeLuma(file, width: video.width ?? 0, height: video.height ?? 0).compactMap(\.counter)
        let shown = counters.filter { $0 > pause.from && $0 < pause.to }
        #expect(shown.isEmpty, "\(file.lastPathComponent) holds \(shown.count) frames of the pause \(pause.from)-\(pause.to): \(counters)")
        // It recorded before and after the pause, as the main file did.
        #expect(counters.contains { $0 <= pause.from } && counters.contains { $0 >= pause.to }, "\(counters)")
        #expect(abs(counters.count - main.count) <= 10, "main \(main.count) frames, \(file.lastPathComponent) \(counters.count)")
    }

    /// A scheduled start (`--delay`) is a pause from zero on the session timeline: the per-source
    /// file begins where the main file does, not at the start of the wait (manual clock).
    @Test func perSourceFilesBeginAtTheScheduledStart() throws {
        let dir = try TemporaryDirectory()
        let own = dir.url.appendingPathComponent("own")
        let url = dir.url.appendingPathComponent("delayed.mp4")
        let r = try ReelBinary.run(["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "--delay", "1",
                                    "--duration", "1", "--faster-than-real-time", "--each-source", own.path, "-o", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        let main = try MediaProbe.decodeLuma(url, width: 320, height: 240).compactMap(\.counter)
        #expect(main.count == 30 && (main.first ?? 0) >= 29, "\(main)")
        let files = try FileManager.default.contentsOfDirectory(atPath: own.path)
        let file = own.appendingPathComponent(try #require(files.first, "no per-source file"))
        #expect(try MediaProbe.decodeLuma(file, width: 320, height: 240).compactMap(\.counter) == main)
    }

    /// Waits (at most 20 s) until reel's `--json` output has `count` events named `name`.
    private func waitForEvent(_ name: String, count: Int, in run: SignalTests.Run) throws {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let text = (try? String(contentsOf: run.stdout, encoding: .utf8)) ?? ""
            if text.components(separatedBy: "\"event\":\"\(name)\"").count - 1 >= count { return }
            if !run.process.isRunning { break }
            usleep(20_000)
        }
        Issue.record("no \(name) event: \((try? String(contentsOf: run.stderr, encoding: .utf8)) ?? "")")
    }
}
