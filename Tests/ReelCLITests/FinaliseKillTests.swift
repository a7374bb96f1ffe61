import Foundation
import Testing
import Reel
import ReelTestSupport

/// `reel record` killed with SIGKILL at every step of finalising in place. The finaliser makes
/// each step durable with an fsync before the next; strace kills the process when it enters the
/// k-th fsync, so the file holds that step's writes and nothing after (as a crash leaves it).
/// Every such file plays all its frames, and `reel recover` finishes the job.
@Suite(.serialized, .tags(.realTime)) struct FinaliseKillTests {
    /// The fsyncs of one in-place finalise: what the recording wrote (before the steps, so
    /// that an abort never waits for it), the index's contents, its header, the new index in
    /// force, the old one retired, the fragment headers retired, the final track IDs, the `mvex`.
    static let syncs = 8

    static func record(_ url: URL, killAtSync k: Int?) throws -> CommandResult {
        var command = ["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=fsync"]
        if let k { command += ["-e", "inject=fsync:signal=SIGKILL:when=\(k)"] }
        command += [ReelBinary.url.path, "record", "--test-pattern", "--tone", "--size", "320x240", "--faster-than-real-time",
                    "--duration", "2", "--max-duration", "2", "-o", url.path]
        return try Subprocess.run(command)
    }

    static func topLevelTypes(_ url: URL) throws -> [String] {
        let data = try Data(contentsOf: url)
        var types: [String] = []
        var offset = 0
        while offset + 8 <= data.count {
            let size = Int(data[offset..<(offset + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            types.append(String(decoding: data[(offset + 4)..<(offset + 8)], as: UTF8.self))
            guard size >= 8 else { break }
            offset += size
        }
        return types
    }

    @Test func aFinaliseDoesExactlyItsSyncs() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("whole.mp4")
        let r = try Self.record(url, killAtSync: Self.syncs + 1)
        #expect(r.status == 0, "no more fsyncs than the finaliser's: \(r.stderr)")
        #expect(!Recovery.isCutOff(url))
        let types = try Self.topLevelTypes(url)
        #expect(!types.contains("moof") && types.contains("moov"), "\(types)")
        #expect(types.dropFirst().first == "free", "the old index, blanked: finalised in place, not copied")
    }

    @Test(arguments: 1...syncs)
    func killedWhileFinalisingStillPlaysAndRecovers(_ k: Int) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("killed-\(k).mp4")
        let r = try Self.record(url, killAtSync: k)
        // strace ends by the tracee's signal: Foundation reports the signal number.
        #expect(r.status == SIGKILL, "killed at fsync \(k): status \(r.status) \(r.stderr)")

        let probe = try MediaProbe.probe(url)
        #expect(probe.videoStreams.first?.frameCount == 60, "killed at fsync \(k)")
        #expect(probe.audioStreams.count == 1)
        let decode = try Subprocess.run(["ffmpeg", "-v", "error", "-i", url.path, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.stderr.isEmpty, "killed at fsync \(k): \(decode.stderr)")
        #expect(try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter) == (0..<60).map { Int64($0) })

        if k == Self.syncs {
            // Killed on the last fsync: every write was made; the file is finished already.
            #expect(!Recovery.isCutOff(url))
        } else {
            #expect(Recovery.isCutOff(url), "killed at fsync \(k)")
            let recovered = try ReelBinary.run(["recover", url.path])
            #expect(recovered.status == 0, "\(recovered.stderr)")
            #expect(recovered.output.contains("finalised in place"), "\(recovered.output)")
        }
        let types = try Self.topLevelTypes(url)
        #expect(!types.contains("moof") && types.filter { $0 == "moov" }.count == 1, "\(types)")
        #expect((types.firstIndex(of: "moov") ?? .max) < (types.firstIndex(of: "mdat") ?? 0))
        let finished = try MediaProbe.probe(url)
        #expect(abs((finished.videoStreams.first?.duration ?? 0) - 2.0) < 0.001)
        #expect(abs((finished.audioStreams.first?.duration ?? 0) - 2.0) < 0.025)
        #expect(try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter) == (0..<60).map { Int64($0) })
    }
}

/// A double Ctrl-C while the stop finalises aborts, and the abort waits for the finalise step
/// under way (so that what it says of the file stays true). A step's sync can hang (a dead
/// network disk): the abort then says what it waits for, and a third Ctrl-C ends reel at once
/// (the signal thread waited inside the abort, and the third was never read).
@Suite(.serialized, .tags(.realTime)) struct AbortWaitingForAStepTests {
    /// `fsync`'s system call number.
#if arch(x86_64)
    static let SYS_fsync = 74
#else
    static let SYS_fsync = 82  // aarch64
#endif

    /// The threads of `pid` inside `fsync`.
    static func inFsync(_ pid: pid_t) -> Bool {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.contains { task in
            (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/syscall", encoding: .utf8))?.hasPrefix("\(SYS_fsync) ") == true
        }
    }

    /// Runs `reel` with `arguments` under strace with `tracing` (its options: which calls, what
    /// is injected), stderr into `errors`, and waits (up to `seconds`) until reel is inside an
    /// fsync: strace, reel's pid and what reel says. A test that fails leaves neither running
    /// when it kills both in a `defer` (strace let go ends; its tracee runs on).
    static func heldInAnFsync(_ tracing: [String], reel arguments: [String], errors: URL, output: URL? = nil,
                              within seconds: TimeInterval = 30) throws -> (Process, pid_t, () -> String) {
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        if let output { _ = FileManager.default.createFile(atPath: output.path, contents: nil) }
        let strace = Process()
        strace.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
        strace.arguments = ["-f", "-qq", "-o", "/dev/null"] + tracing + [ReelBinary.url.path] + arguments
        strace.standardError = try FileHandle(forWritingTo: errors)
        strace.standardOutput = try output.map { try FileHandle(forWritingTo: $0) } ?? FileHandle.nullDevice
        strace.standardInput = FileHandle.nullDevice
        try strace.run()
        let said = { (try? String(contentsOf: errors, encoding: .utf8)) ?? "" }
        var reel: pid_t = 0
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let children = (try? String(contentsOfFile: "/proc/\(strace.processIdentifier)/task/\(strace.processIdentifier)/children",
                                        encoding: .utf8)) ?? ""
            if let child = children.split(separator: " ").first.flatMap({ pid_t($0) }), Self.inFsync(child) {
                reel = child
                break
            }
            usleep(20_000)
        }
        if reel == 0 { kill(strace.processIdentifier, SIGKILL) }
        try #require(reel > 0, "reel reached the delayed sync: \(said())")
        return (strace, reel, said)
    }

    /// `reel record` of 2 s into `url`, its finalise's first step's sync (the second fsync)
    /// held 8 s, once reel is inside that sync (see ``heldInAnFsync(_:reel:errors:within:)``).
    static func recordHeldInAStep(_ url: URL, errors: URL, arguments: [String] = []) throws -> (Process, pid_t, () -> String) {
        try heldInAnFsync(["-e", "trace=fsync", "-e", "inject=fsync:delay_enter=8000000:when=2"],
                          reel: ["record", "--test-pattern", "--size", "320x240", "--faster-than-real-time",
                                 "--duration", "2", "--max-duration", "2"] + arguments + ["-o", url.path], errors: errors)
    }

    @Test func aThirdSignalLeavesAtOnceWhileTheAbortWaits() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("slow.mp4"), errors = dir.url.appendingPathComponent("err")
        let (strace, reel, said) = try Self.recordHeldInAStep(url, errors: errors)
        // A test that fails leaves neither running: strace let go ends, its tracee runs on.
        defer {
            kill(reel, SIGKILL)
            if strace.isRunning { kill(strace.processIdentifier, SIGKILL) }
        }
        kill(reel, SIGINT)              // already stopping: "press Ctrl-C again to abort"
        usleep(400_000)
        kill(reel, SIGINT)              // the abort: it waits for the step under way
        usleep(1_800_000)
        #expect(strace.isRunning, "the abort waits for the step: \(said())")
        #expect(said().contains("waiting for the file to be left as it plays"), "\(said())")
        let third = Date()
        kill(reel, SIGINT)
        // Ended when it has said so and its main thread has exited (the thread strace holds in
        // the step's sync goes when strace lets it, once the delay is over).
        func ended() -> Bool {
            let stat = (try? String(contentsOfFile: "/proc/\(reel)/stat", encoding: .utf8)) ?? ""
            let state = stat.split(separator: ")").last?.split(separator: " ").first
            return said().contains("aborted without waiting") && (state == nil || state == "Z")
        }
        while !ended() && Date().timeIntervalSince(third) < 10 { usleep(20_000) }
        let took = Date().timeIntervalSince(third)
        #expect(took < 3, "ended \(took) s after the third signal, not when the 8 s step ended")
        strace.waitUntilExit()
        #expect(strace.terminationStatus == 130, "\(said())")
        #expect(said().contains("aborted without waiting: \(url.path) is as a crash now would leave it"), "\(said())")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted() == ["err", "slow.mp4"],
                "no half-made copy or other file left")
        // The file is as a crash before that step leaves it: it plays whole, and recovering finishes it.
        #expect(try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter) == (0..<60).map { Int64($0) })
        let recovered = try ReelBinary.run(["recover", url.path])
        #expect(recovered.status == 0, "\(recovered.stderr)")
        #expect(!Recovery.isCutOff(url))
    }

    /// The disk filled under a recording faster than the room kept ahead of its file (lossless
    /// noisy pictures), and the file is ended in place with what reached the disk. That end's
    /// step (the sizes written and made durable, held here 4 s in its sync) goes through the
    /// file's finalise gate as a stop's finalise does: a double Ctrl-C meanwhile waits for it,
    /// says so, then says the recording was finished. It ran beside the ending: the abort said
    /// at once that the file was left to be recovered while the ending went on changing it.
    @Test func anAbortWaitsForTheEndInPlaceOfAFullDisk() throws {
        let dir = try TemporaryDirectory()
        let disk = try SmallDisk(size: "8M")
        let url = disk.url.appendingPathComponent("fast.mkv"), errors = dir.url.appendingPathComponent("err")
        // Every sync of the file takes 4 s to begin (a recording makes none before its end);
        // reel is held in the end's sync once the disk filled.
        let (strace, reel, said) = try Self.heldInAnFsync(
            ["-e", "trace=fsync", "-P", url.path, "-e", "inject=fsync:delay_enter=4000000"],
            reel: ["record", "--test-pattern", "--tone", "--filter", "noise=alls=2:allf=t", "--size", "1280x720",
                   "--crf", "0", "--preset", "ultrafast", "--duration", "60", "--min-free", "0", "-o", url.path],
            errors: errors, within: 60)
        defer {
            kill(reel, SIGKILL)
            if strace.isRunning { kill(strace.processIdentifier, SIGKILL) }
        }
        kill(reel, SIGINT)              // a stop
        usleep(400_000)
        kill(reel, SIGINT)              // the abort: it waits for the step under way
        usleep(1_800_000)
        #expect(said().contains("waiting for the file to be left as it plays"), "\(said())")
        #expect(!said().contains("reel: aborted"), "the abort waits for the step: \(said())")
        strace.waitUntilExit()
        #expect(strace.terminationStatus == 130, "\(said())")
        #expect(said().contains("reel: aborted as the recording was finished: \(url.path) holds it"), "\(said())")
        // Ended in place with what reached the disk: whole, no frame missing in it (the source's
        // first may come before the recording's start).
        #expect(Recovery.isFinished(url), "\(said())")
        let decoded = try Subprocess.run(["ffmpeg", "-v", "error", "-i", url.path, "-f", "null", "-"])
        #expect(decoded.status == 0 && decoded.stderr.isEmpty, "\(decoded.stderr)")
        let counters = try MediaProbe.decodeLuma(url, width: 1280, height: 720).compactMap(\.counter)
        #expect(counters.count > 5 && zip(counters, counters.dropFirst()).allSatisfy { $1 == $0 + 1 }, "\(counters)")
    }

    /// `reel control abort` sent as a double Ctrl-C's abort begins (which waits for the step
    /// under way) leaves that abort alone: one abort, its words said once when the step is
    /// done, the file left to recover as an abort leaves it. Before, the command ran a second
    /// abort beside the first, and each said what it left. The abort closes the control socket
    /// first: the request is answered, or finds the socket closed; either way its file is
    /// gone while the abort still waits (it was left behind, and a client met a dead socket).
    @Test func anAbortByNameDuringASignalsAbortLeavesItAloneAndTheSocketGoes() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("slow.mp4"), errors = dir.url.appendingPathComponent("err")
        let socket = dir.url.appendingPathComponent("reel.sock")
        let (strace, reel, said) = try Self.recordHeldInAStep(url, errors: errors, arguments: ["--control=\(socket.path)"])
        defer {
            kill(reel, SIGKILL)
            if strace.isRunning { kill(strace.processIdentifier, SIGKILL) }
        }
        let client = try ControlClient(socket)
        kill(reel, SIGINT)
        usleep(400_000)
        kill(reel, SIGINT)              // the abort: it waits for the step under way
        if let reply = try? client.request("abort").reply { #expect(reply["aborting"] as? Bool == true, "\(reply)") }
        usleep(1_000_000)
        #expect(strace.isRunning, "the abort waits for the step: \(said())")
        #expect(!FileManager.default.fileExists(atPath: socket.path), "the socket goes as the abort begins")
        strace.waitUntilExit()
        #expect(strace.terminationStatus == 130, "\(said())")
        #expect(said().components(separatedBy: "aborted").count == 2, "the abort said once: \(said())")
        #expect(said().contains("reel: aborted; \(url.path) keeps what was recorded"), "\(said())")
        #expect(!said().contains("aborted without waiting"), "\(said())")
        #expect(!FileManager.default.fileExists(atPath: socket.path))
        // The step was let finish; the finalise given up after it: the file plays whole and recovers.
        #expect(try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter) == (0..<60).map { Int64($0) })
        let recovered = try ReelBinary.run(["recover", url.path])
        #expect(recovered.status == 0 && !Recovery.isCutOff(url), "\(recovered.stderr)")
    }
}
