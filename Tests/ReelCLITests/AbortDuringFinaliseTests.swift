import Foundation
import Testing
import Reel
import ReelTestSupport
@testable import ReelCLI

/// A second stop signal while the first one's stop finalises the file (issue 26): the abort
/// says what is on the disk, and the file is never removed or hidden. It said "aborted before
/// anything was recorded" of a file finalised whole (the compact copy that had taken its
/// name is another file), named the fragmented file at the hidden name the copy swapped it
/// out through, or read a file half way between two steps of an in-place finalise as holding
/// nothing and removed it; and it did not name the --hls folder whose playlist needs
/// `reel recover` too.
///
/// The second signal lands at a chosen point of the finalise every time: reel runs under
/// strace, which holds the finaliser for a while as that system call returns (the step it
/// belongs to is under way), and the test sends the signal while it is held.
@Suite(.serialized, .tags(.realTime)) struct AbortDuringFinaliseTests {
    static let recording = ["--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast"]

    struct Outcome {
        var status: Int32
        var stderr: String
        var url: URL
        /// What is in the folder besides the recording's own output.
        var left: [String]
    }

    /// Records into `dir/name` under strace, which holds the thread that makes the `when`th
    /// `syscall` for 1.5 s as the call returns; the test stops the recording with SIGINT after
    /// 1.5 s, and sends the second SIGINT while that thread is held.
    static func record(_ dir: TemporaryDirectory, _ name: String, _ arguments: [String] = [],
                       secondSignalAt syscall: String, when: Int = 1) throws -> Outcome {
        // With seccomp-bpf only the traced call stops a thread: one stopped for long is held.
        let strace = ["/usr/bin/strace", "-f", "--seccomp-bpf", "-qq", "-o", "/dev/null", "-e", "trace=\(syscall)",
                      "-e", "inject=\(syscall):delay_exit=1500000:when=\(when)"]
        let run = try SignalTests.Run(dir, name: name, arguments: recording + arguments, launcher: strace)
        let reel = try #require(waitForReel(under: run.pid), "reel did not start under strace")
        // 1.5 s after the file holds its first fragment (half a second of media), not after the
        // start, which strace slows on a loaded machine: the file then holds well over the 30
        // frames looked for.
        #expect(waitForAFragment(in: run.url), "no fragment reached \(run.url.lastPathComponent) within 20 s")
        usleep(1_500_000)
        kill(reel, SIGINT)
        #expect(waitForAHeldThread(of: reel), "no thread of reel was held at \(syscall) #\(when)")
        kill(reel, SIGINT)
        let result = run.finish()
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.url.path)
            .filter { $0 != name && !$0.hasSuffix(".err") && !$0.hasSuffix(".out") }
        // strace ends with reel's exit status.
        return Outcome(status: result.status, stderr: result.stderr, url: run.url, left: left)
    }

    /// The reel that strace `tracer` started, once its signals are caught (its `main` ran).
    static func waitForReel(under tracer: pid_t) -> pid_t? {
        let deadline = Date().addingTimeInterval(10)
        let mask: UInt64 = 1 << UInt64(SIGINT - 1)
        while Date() < deadline {
            let children = (try? String(contentsOfFile: "/proc/\(tracer)/task/\(tracer)/children", encoding: .utf8)) ?? ""
            if let pid = children.split(separator: " ").first.flatMap({ pid_t($0) }),
               let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
               ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) ?? "").hasSuffix("/reel"),
               let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigCgt:") }),
               let bits = UInt64(line.split(separator: "\t").last ?? "", radix: 16), bits & mask == mask {
                return pid
            }
            usleep(1000)
        }
        return nil
    }

    /// Waits until the fragmented MP4 at `url` holds a fragment (a `moof` box).
    static func waitForAFragment(in url: URL) -> Bool {
        let deadline = Date().addingTimeInterval(20)
        let moof = Data("moof".utf8)
        while Date() < deadline {
            if let data = try? Data(contentsOf: url), data.range(of: moof) != nil { return true }
            usleep(50_000)
        }
        return false
    }

    /// Waits until a thread of `reel` stays stopped by its tracer (`t` in its stat) across six
    /// looks 0.1 s apart: strace holds it after its call for 1.5 s (a stop for a signal's
    /// delivery, or a call's, is short, though long enough to be seen twice when strace is
    /// starved of the processor).
    static func waitForAHeldThread(of reel: pid_t) -> Bool {
        let deadline = Date().addingTimeInterval(20)
        var looks: [String: Int] = [:]
        while Date() < deadline {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(reel)/task")) ?? []
            let now = Set(tasks.filter { task in
                let stat = (try? String(contentsOfFile: "/proc/\(reel)/task/\(task)/stat", encoding: .utf8)) ?? ""
                // "tid (name) STATE ...": the name may hold spaces and parentheses.
                guard let end = stat.lastIndex(of: ")") else { return false }
                return stat[stat.index(after: end)...].split(separator: " ").first == "t"
            })
            looks = Dictionary(uniqueKeysWithValues: now.map { ($0, (looks[$0] ?? 0) + 1) })
            if looks.values.contains(where: { $0 >= 6 }) { return true }
            usleep(100_000)
        }
        return false
    }

    /// What every abort that came as the finalise ended says: the file is complete, at its
    /// name, with what was recorded, and nothing else is left beside it.
    func expectFinished(_ outcome: Outcome, _ label: String) throws {
        #expect(outcome.status == 130, "\(label): exit \(outcome.status): \(outcome.stderr)")
        #expect(outcome.stderr.contains("reel: aborted as the recording was finished: \(outcome.url.path) holds it"),
                "\(label): \(outcome.stderr)")
        #expect(!outcome.stderr.contains("before anything was recorded") && !outcome.stderr.contains("reel recover"), "\(label): \(outcome.stderr)")
        #expect(Recovery.isFinished(outcome.url), "\(label): the file is not finalised")
        #expect(outcome.left.isEmpty, "\(label): left beside the file: \(outcome.left)")
        #expect((try MediaProbe.probe(outcome.url).videoStreams.first?.frameCount ?? 0) >= 30, "\(label)")
    }

    /// A short recording is finalised by a compact copy that takes the file's place (one
    /// `renameat2` swaps them): an abort as it does says the file is complete (it said
    /// "aborted before anything was recorded", or named the old file at the copy's hidden name).
    @Test func anAbortAsTheFinalisedCopyTakesTheNameSaysTheFileIsComplete() throws {
        let dir = try TemporaryDirectory()
        let outcome = try Self.record(dir, "copied.mp4", secondSignalAt: "renameat2")
        try expectFinished(outcome, "copied")
    }

    /// With --max-duration the index has its room and the file is finalised in place, in seven
    /// steps each made durable: an abort as the last is made says the file is complete (it
    /// said the file keeps what was recorded up to its last fragment, to be recovered).
    @Test func anAbortAsTheLastStepInPlaceEndsSaysTheFileIsComplete() throws {
        let dir = try TemporaryDirectory()
        let outcome = try Self.record(dir, "in-place.mp4", ["--max-duration", "10"], secondSignalAt: "fsync", when: 7)
        try expectFinished(outcome, "in place")
    }

    /// An abort half way through an in-place finalise stops it between two steps: the file
    /// is kept, plays, and `reel recover` completes it (it could be read between two steps as
    /// holding nothing and removed), or, finished by then, is said to be complete.
    @Test(arguments: [2, 3, 4, 5, 6])
    func anAbortHalfWayThroughAnInPlaceFinaliseKeepsTheFile(_ k: Int) throws {
        let dir = try TemporaryDirectory()
        let outcome = try Self.record(dir, "half-\(k).mp4", ["--max-duration", "10"], secondSignalAt: "fsync", when: k)
        let label = "fsync \(k)"
        if outcome.stderr.contains("aborted as the recording was finished") {
            try expectFinished(outcome, label)
            return
        }
        #expect(outcome.status == 130, "\(label): exit \(outcome.status): \(outcome.stderr)")
        #expect(outcome.stderr.contains("keeps what was recorded up to its last complete fragment and plays; "
                                        + "finalise it with: reel recover \"\(outcome.url.path)\""), "\(label): \(outcome.stderr)")
        #expect(outcome.left.isEmpty, "\(label): left beside the file: \(outcome.left)")
        #expect(Recovery.isCutOff(outcome.url), "\(label): said to need recovering, but it does not")
        let recovered = try ReelBinary.run(["recover", outcome.url.path])
        #expect(recovered.status == 0, "\(label): \(recovered.stderr)")
        #expect((try MediaProbe.probe(outcome.url).videoStreams.first?.frameCount ?? 0) >= 30, "\(label)")
    }

    /// An abort of a recording with --hls names the folder, whose playlist has no end, with the
    /// command that ends it, beside the file's (it named only the file).
    @Test func anAbortNamesTheHLSFolderThatNeedsRecovering() throws {
        let dir = try TemporaryDirectory()
        let hls = dir.url.appendingPathComponent("live")
        let run = try SignalTests.Run(dir, name: "with-hls.mp4", arguments: Self.recording + ["--hls", hls.path])
        try run.waitForMain()
        // Once the playlist lists a segment (the first comes about 2 s in, later on a loaded
        // machine): before it, the stream has nothing to end.
        let listed = hls.appendingPathComponent("index.m3u8")
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, !((try? String(contentsOf: listed, encoding: .utf8)) ?? "").contains("#EXTINF") { usleep(50_000) }
        usleep(300_000)
        try run.abort()
        let result = run.finish()
        #expect(SignalTests.Run.aborted.contains(result.status), "exit \(result.status): \(result.stderr)")
        #expect(result.stderr.contains("reel recover \"\(run.url.path)\""), "the file: \(result.stderr)")
        #expect(result.stderr.contains("the --hls folder \(hls.path) has no end yet")
                && result.stderr.contains("end it with: reel recover \"\(hls.path)\""), "the --hls folder: \(result.stderr)")
        let playlist = hls.appendingPathComponent("index.m3u8")
        #expect(PlaylistRecovery.isUnended(playlist), "the playlist said to have no end has one")
        let recovered = try ReelBinary.run(["recover", hls.path])
        #expect(recovered.status == 0, "\(recovered.stderr)")
        #expect(!PlaylistRecovery.isUnended(playlist), "reel recover ended the playlist")
    }
}
