import Foundation
import Testing
import Reel
import ReelTestSupport

/// In clip mode a pause finishes the clip (its last writes, the finalise's syncs, its place):
/// on a thread of its own, not the recorder's, which goes on taking samples (issue 28: no disk
/// I/O on the recorder's thread; a resume soon after a pause waited for the clip before it).
@Suite(.serialized, .tags(.realTime)) struct ClipFinishThreadTests {
    @Test func aPauseFinishesItsClipOffTheRecordersThread() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("clips.mp4"), log = dir.url.appendingPathComponent("strace")
        let strace = Process()
        strace.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
        strace.arguments = ["-f", "-qq", "-ttt", "-y", "-o", log.path, "-e", "trace=fsync,fdatasync",
                            ReelBinary.url.path, "record", "--test-pattern", "--size", "320x240", "--pause-mode", "clips", "-o", url.path]
        strace.standardError = FileHandle.nullDevice
        strace.standardOutput = FileHandle.nullDevice
        strace.standardInput = FileHandle.nullDevice
        try strace.run()
        defer { if strace.isRunning { strace.terminate() } }
        var reel: pid_t = 0
        let deadline = Date().addingTimeInterval(60)
        while reel == 0 && Date() < deadline {
            let children = (try? String(contentsOfFile: "/proc/\(strace.processIdentifier)/task/\(strace.processIdentifier)/children",
                                        encoding: .utf8)) ?? ""
            reel = children.split(separator: " ").first.flatMap { pid_t($0) } ?? 0
            usleep(20_000)
        }
        try #require(reel > 0)
        // A test that fails leaves neither running: strace let go ends, its tracee runs on.
        defer {
            kill(reel, SIGKILL)
            if strace.isRunning { kill(strace.processIdentifier, SIGKILL) }
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
        // Recording (clip 1's file made), its signals caught.
        let clip1 = dir.url.appendingPathComponent("clips.clips/clip-001.mp4")
        while !FileManager.default.fileExists(atPath: clip1.path) && Date() < deadline { usleep(20_000) }
        try #require(FileManager.default.fileExists(atPath: clip1.path), "recording began")
        usleep(2_000_000)
        kill(reel, SIGUSR1)             // pause: clip 1 is finished
        usleep(1_500_000)
        kill(reel, SIGUSR1)             // resume
        usleep(1_500_000)
        let named = threads()
        let recorder = try #require(named["reel.recorder"], "the recorder's thread: \(named.keys.sorted())")
        let beforeTheStop = Date().timeIntervalSince1970
        kill(reel, SIGINT)
        strace.waitUntilExit()
        #expect(strace.terminationStatus == 0)

        // "TID SECONDS.MICROS fsync(FD</path>) = 0" of a clip's file (or its finalised copy),
        // until the stop (which merges the clips on the recorder's thread, its work then). The
        // clips' list (reel-clips.json) is still written where a clip starts and is listed.
        let calls = try String(contentsOf: log, encoding: .utf8).split(separator: "\n").compactMap { line -> (tid: String, at: Double)? in
            let parts = line.split(separator: " ", maxSplits: 2)
            guard parts.count == 3, parts[2].hasPrefix("fsync(") || parts[2].hasPrefix("fdatasync("), parts[2].contains("clip-"),
                  let at = Double(parts[1]) else { return nil }
            return (String(parts[0]), at)
        }.filter { $0.at < beforeTheStop }
        #expect(calls.count >= 2, "clip 1's finish made its syncs before the stop: \(calls)")
        let onTheRecorder = calls.filter { recorder.contains($0.tid) }
        #expect(onTheRecorder.isEmpty, "\(onTheRecorder.count) of \(calls.count) syncs of a clip's file on the recorder's thread")
        #expect(calls.contains { named["reel.clips"]?.contains($0.tid) == true }, "made by the clips' finishing thread")
        let probe = try MediaProbe.probe(url)
        #expect((probe.videoStreams.first?.frameCount ?? 0) >= 90)
    }
}
