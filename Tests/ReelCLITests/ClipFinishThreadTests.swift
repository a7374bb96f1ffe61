import Foundation
import Glibc
import Testing
import Reel
import ReelTestSupport

/// In clip mode a pause finishes the clip (its last writes, the finalise's syncs, its place):
/// on a thread of its own, not the recorder's, which goes on taking samples (issue 28: no disk
/// I/O on the recorder's thread; a resume soon after a pause waited for the clip before it).
@Suite(.serialized, .tags(.realTime)) struct ClipFinishThreadTests {
    /// `reel record --pause-mode clips` of the test pattern into `url` under `strace -f -y`
    /// tracing `syscalls` into `log` (with strace's `options` too: a path, an injection), and
    /// reel's process id once it has one.
    struct Traced {
        let strace = Process()
        var reel: pid_t = 0

        init(url: URL, log: URL, syscalls: String, options: [String] = []) throws {
            strace.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
            strace.arguments = ["-f", "-qq", "-ttt", "-y", "-o", log.path, "-e", "trace=\(syscalls)"] + options + [
                                ReelBinary.url.path, "record", "--test-pattern", "--size", "320x240", "--pause-mode", "clips", "-o", url.path]
            strace.standardError = FileHandle.nullDevice
            strace.standardOutput = FileHandle.nullDevice
            strace.standardInput = FileHandle.nullDevice
            try strace.run()
            let deadline = Date().addingTimeInterval(60)
            while reel == 0 && Date() < deadline {
                let children = (try? String(contentsOfFile: "/proc/\(strace.processIdentifier)/task/\(strace.processIdentifier)/children",
                                            encoding: .utf8)) ?? ""
                // Once it runs reel: strace's first child may be one it makes at its start to
                // try ptrace out, gone a moment later (signalled, reel would have run on).
                if let child = children.split(separator: " ").first.flatMap({ pid_t($0) }),
                   let command = try? String(contentsOfFile: "/proc/\(child)/cmdline", encoding: .utf8), command.hasPrefix(ReelBinary.url.path) {
                    reel = child
                }
                usleep(20_000)
            }
        }

        /// Ends both at once (a test that fails leaves neither running: strace let go ends,
        /// its tracee runs on).
        func kill() {
            if reel > 0 { Glibc.kill(reel, SIGKILL) }
            if strace.isRunning { Glibc.kill(strace.processIdentifier, SIGKILL) }
        }

        /// reel's threads by name.
        func threads() -> [String: Set<String>] {
            var names: [String: Set<String>] = [:]
            for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(reel)/task")) ?? [] {
                let name = ((try? String(contentsOfFile: "/proc/\(reel)/task/\(task)/comm", encoding: .utf8)) ?? "")
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                names[name, default: []].insert(task)
            }
            return names
        }

        /// Waits until `file` exists (the recording began, its signals caught).
        func waitFor(_ file: URL) throws {
            let deadline = Date().addingTimeInterval(60)
            while !FileManager.default.fileExists(atPath: file.path) && Date() < deadline { usleep(20_000) }
            try #require(FileManager.default.fileExists(atPath: file.path), "recording began")
        }

        /// "TID SECONDS.MICROS call(…) = …" lines of the log before `time` whose call is one of
        /// `calls` and that name `matching` (a path, shown by `-y`): (thread, call, line).
        static func calls(in log: URL, before time: Double, _ calls: [String], matching: [String]) throws -> [(tid: String, call: String, line: String)] {
            try String(contentsOf: log, encoding: .utf8).split(separator: "\n").compactMap { line in
                let parts = line.split(separator: " ", maxSplits: 2)
                guard parts.count == 3, let at = Double(parts[1]), at < time,
                      let call = calls.first(where: { parts[2].hasPrefix("\($0)(") }),
                      matching.contains(where: { parts[2].contains($0) }) else { return nil }
                return (String(parts[0]), call, String(parts[2]))
            }
        }
    }

    @Test func aPauseFinishesItsClipOffTheRecordersThread() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("clips.mp4"), log = dir.url.appendingPathComponent("strace")
        let traced = try Traced(url: url, log: log, syscalls: "fsync,fdatasync")
        defer { traced.kill() }
        try #require(traced.reel > 0)
        let reel = traced.reel
        // Recording (clip 1's file made), its signals caught.
        try traced.waitFor(dir.url.appendingPathComponent("clips.clips/clip-001.mp4"))
        usleep(2_000_000)
        kill(reel, SIGUSR1)             // pause: clip 1 is finished
        usleep(1_500_000)
        kill(reel, SIGUSR1)             // resume
        usleep(1_500_000)
        let named = traced.threads()
        let recorder = try #require(named["reel.recorder"], "the recorder's thread: \(named.keys.sorted())")
        let beforeTheStop = Date().timeIntervalSince1970
        kill(reel, SIGINT)
        traced.strace.waitUntilExit()
        #expect(traced.strace.terminationStatus == 0)

        // "TID SECONDS.MICROS fsync(FD</path>) = 0" of a clip's file (or its finalised copy),
        // until the stop (which merges the clips on the recorder's thread, its work then).
        let calls = try Traced.calls(in: log, before: beforeTheStop, ["fsync", "fdatasync"], matching: ["clip-"])
        #expect(calls.count >= 2, "clip 1's finish made its syncs before the stop: \(calls)")
        let onTheRecorder = calls.filter { recorder.contains($0.tid) }
        #expect(onTheRecorder.isEmpty, "\(onTheRecorder.count) of \(calls.count) syncs of a clip's file on the recorder's thread")
        #expect(calls.contains { named["reel.clips"]?.contains($0.tid) == true }, "made by the clips' finishing thread")
        let probe = try MediaProbe.probe(url)
        #expect((probe.videoStreams.first?.frameCount ?? 0) >= 90)
    }

    /// The rest of a clip's disk work is off the recorder's thread too: its file made (open,
    /// header), the manifest written where it starts and where it is listed finished (a temporary
    /// file, its syncs, the rename). Over several pauses, none of it is on `reel.recorder`.
    @Test func noClipFileNorManifestIsWrittenOnTheRecordersThread() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("clips.mp4"), log = dir.url.appendingPathComponent("strace")
        let syscalls = ["openat", "creat", "write", "pwrite64", "writev", "fsync", "fdatasync", "rename", "renameat", "renameat2",
                        "unlink", "unlinkat", "ftruncate"]
        let traced = try Traced(url: url, log: log, syscalls: syscalls.joined(separator: ","))
        defer { traced.kill() }
        try #require(traced.reel > 0)
        try traced.waitFor(dir.url.appendingPathComponent("clips.clips/clip-001.mp4"))
        // Three pauses, each long enough for its clip to be finished, and a resume after each.
        for _ in 0..<3 {
            usleep(1_500_000)
            kill(traced.reel, SIGUSR1)
            usleep(1_000_000)
            kill(traced.reel, SIGUSR1)
        }
        usleep(1_500_000)
        let named = traced.threads()
        let recorder = try #require(named["reel.recorder"], "the recorder's thread: \(named.keys.sorted())")
        let beforeTheStop = Date().timeIntervalSince1970
        kill(traced.reel, SIGINT)
        traced.strace.waitUntilExit()
        #expect(traced.strace.terminationStatus == 0)

        // Until the stop (whose merge is the recorder's work then): a clip file's, the
        // manifest's (`reel-clips.json`, through `.reel-clips.json.PID.new`) or the folder's
        // (its sync after the manifest's rename).
        let calls = try Traced.calls(in: log, before: beforeTheStop, syscalls,
                                     matching: ["/clip-", "reel-clips.json", "clips.clips>", "clips.clips\""])
        let onTheRecorder = calls.filter { recorder.contains($0.tid) }
        let counts = Dictionary(grouping: onTheRecorder, by: \.call).mapValues(\.count)
        #expect(onTheRecorder.isEmpty, "\(onTheRecorder.count) of \(calls.count) calls on the recorder's thread: \(counts.sorted { $0.key < $1.key }); first: \(onTheRecorder.first?.line ?? "")")
        // Made and listed on one clips' thread, finished (and listed so) on the other.
        let opening = named["reel.clips.open"] ?? [], clips = (named["reel.clips"] ?? []).union(opening)
        let opens = calls.filter { $0.call == "openat" && $0.line.contains("/clip-00") && $0.line.contains("O_CREAT") }
        #expect(opens.count >= 4, "the four clips' files were made: \(opens.map(\.line))")
        #expect(opens.allSatisfy { opening.contains($0.tid) }, "by the clips' opening thread")
        let renames = calls.filter { $0.call.hasPrefix("rename") && $0.line.contains("reel-clips.json") }
        #expect(renames.count >= 6, "the manifest was written as clips began and were finished: \(renames.count)")
        #expect(renames.allSatisfy { clips.contains($0.tid) }, "by the clips' threads")
        let probe = try MediaProbe.probe(url)
        #expect((probe.videoStreams.first?.frameCount ?? 0) >= 120)
    }

    /// The system call numbers of fsync, fdatasync and the renames (`rename`, `renameat`,
    /// `renameat2`): a clip's finish ends with them (finalised in place: its syncs; finalised
    /// into a copy: the copy's rename over the clip's name).
#if arch(x86_64)
    static let finishingCalls = [74, 75, 82, 264, 316]
#else
    static let finishingCalls = [82, 83, 38, 276]  // aarch64
#endif

    /// Whether a thread of `pid` is inside one of `calls` (numbers).
    static func inside(_ pid: pid_t, _ calls: [Int]) -> Bool {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.contains { task in
            let syscall = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/syscall", encoding: .utf8)) ?? ""
            return syscall.split(separator: " ").first.flatMap { Int($0) }.map(calls.contains) ?? false
        }
    }

    /// A resumed clip's packets reach its file while the clip before it is still being finished
    /// (a slow disk's syncs, a long clip's finalise): clip 1's finish is held in its last step
    /// here (10 s, under strace: its syncs or its copy's rename over its name), and meanwhile clip 2 is listed in the manifest and its frames
    /// are on the disk. A kill then loses none of them: `reel recover` keeps clip 1 (cut off in
    /// its finish) and clip 2 as far as it was recorded. They waited in memory until clip 1 was
    /// finished (its listing queued behind that finish on the one clips' thread): a kill lost
    /// them all, and past the memory bound the recorder waited, dropping frames.
    @Test func aResumedClipIsWrittenWhileTheClipBeforeIsFinished() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("clips.mp4"), log = dir.url.appendingPathComponent("strace")
        let folder = dir.url.appendingPathComponent("clips.clips")
        let clip1 = folder.appendingPathComponent("clip-001.mp4"), clip2 = folder.appendingPathComponent("clip-002.mp4")
        let calls = "fsync,fdatasync,rename,renameat,renameat2"
        let traced = try Traced(url: url, log: log, syscalls: calls, options: ["-P", clip1.path, "-e", "inject=\(calls):delay_enter=10000000"])
        defer { traced.kill() }
        try #require(traced.reel > 0)
        try traced.waitFor(clip1)
        usleep(1_500_000)
        kill(traced.reel, SIGUSR1)      // pause: clip 1's finish is held
        let deadline = Date().addingTimeInterval(8)
        while !Self.inside(traced.reel, Self.finishingCalls) && Date() < deadline { usleep(20_000) }
        try #require(Self.inside(traced.reel, Self.finishingCalls), "clip 1's finish reached its held step")
        let held = Date()
        usleep(1_000_000)               // a pause the frame counter shows (30 frames)
        func size() -> Int { (try? FileManager.default.attributesOfItem(atPath: clip2.path)[.size] as? Int) ?? 0 }
        let made = size()               // clip 2's file, made ahead: its header
        kill(traced.reel, SIGUSR1)      // resume: clip 2
        usleep(3_000_000)
        let manifest = (try? String(contentsOf: folder.appendingPathComponent("reel-clips.json"), encoding: .utf8)) ?? ""
        let written = size()
        let stillHeld = Self.inside(traced.reel, Self.finishingCalls) && Date().timeIntervalSince(held) < 9.5
        traced.kill()
        traced.strace.waitUntilExit()
        try #require(stillHeld, "clip 1's finish was held all along: the test shows nothing otherwise")
        #expect(manifest.contains("clip-002.mp4"), "clip 2 listed while clip 1 was being finished: \(manifest)")
        #expect(made > 0 && written > made, "clip 2's frames on the disk while clip 1 was being finished: \(made) then \(written) bytes")

        let recovered = try ReelBinary.run(["recover", url.path])
        #expect(recovered.status == 0, "\(recovered.stderr)")
        let values = try MediaProbe.decodeLuma(url, width: 320, height: 240).compactMap(\.counter)
        #expect(zip(values, values.dropFirst()).allSatisfy { $0 < $1 }, "in order, none twice: \(values)")
        let pause = try #require(values.indices.dropLast().first { values[$0 + 1] > values[$0] + 15 }, "two clips: \(values)")
        #expect(pause + 1 >= 30, "clip 1's frames: \(values)")
        #expect(values.count - (pause + 1) >= 45, "clip 2's frames (3 s recorded, fragments of 0.5 s): \(values)")
    }
}
