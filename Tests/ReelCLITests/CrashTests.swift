import Foundation
import Testing
import Reel
import ReelTestSupport

/// Recordings killed with SIGKILL at many moments — in the first second, mid-fragment, late —
/// always leave a file that ffprobe reads and that decodes to within a second of the kill, and
/// `reel recover` makes each a finalised file with every frame it held.
@Suite(.serialized, .tags(.realTime)) struct CrashTests {
    static let killTimes: [Double] = [0.4, 0.8, 1.1, 1.25, 1.5, 1.75, 2.0, 2.2, 2.45, 2.7,
                                      0.6, 1.9, 2.9, 1.35, 0.95, 1.6, 2.05, 2.6, 1.15, 3.0]

    /// How many of the recordings run at once: each is small (320x240 at ultrafast, about a
    /// tenth of a core), and three side by side take a third of the time of one after another.
    static let atOnce = 3

    @Test func killedRecordingsStayPlayableAndRecover() async throws {
        let dir = try TemporaryDirectory()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (run, killAfter) in Self.killTimes.enumerated() {
                if run >= Self.atOnce { try await group.next() }
                group.addTask { try await Self.killAndRecover(run: run, after: killAfter, in: dir.url) }
            }
            try await group.waitForAll()
        }
    }

    /// Runs `work` on a thread of its own and gives back what it returns.
    static func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }

    /// One recording killed `killAfter` seconds after it started, read, recovered and read again.
    static func killAndRecover(run: Int, after killAfter: Double, in folder: URL) async throws {
        let url = folder.appendingPathComponent("killed-\(run).mp4")
        let events = folder.appendingPathComponent("events-\(run).jsonl")
        _ = FileManager.default.createFile(atPath: events.path, contents: nil)
        // Started, timed and killed on a thread of its own: the test's tasks share two threads,
        // and a wait there would make the other recordings' kills late.
        let killedAt: Double? = try await Self.onThread {
            let process = Process()
            process.executableURL = ReelBinary.url
            process.arguments = ["record", "--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast", "--json", "-o", url.path]
            process.standardOutput = try FileHandle(forWritingTo: events)
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Time zero is when the recording started (the first event), as a user would count.
            var started: Date?
            let deadline = Date().addingTimeInterval(10)
            while started == nil && Date() < deadline {
                if let text = try? String(contentsOf: events, encoding: .utf8), text.contains("\"started\"") { started = Date() }
                else { usleep(5_000) }
            }
            if let zero = started {
                let wait = killAfter - Date().timeIntervalSince(zero)
                if wait > 0 { Thread.sleep(forTimeInterval: wait) }
            }
            // The kill's moment, not the wait's end: on a loaded machine the wait for the exit
            // can take longer than the recording ran (CI: killed 0.4 s in, seen gone 1.07 s in).
            let killed = Date()
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return started.map { killed.timeIntervalSince($0) }
        }
        let recordedAtKill = try #require(killedAt, "run \(run): the recording started")

        // ffprobe reads what was left, and it decodes to within a second of the kill.
        let probe = try MediaProbe.probe(url)
        #expect(probe.formatName.contains("mp4"), "run \(run)")
        let packets = probe.videoStreams.first?.frameCount ?? 0
        // Killed before its first fragment, a file holds its header and no frames yet.
        let frames = packets == 0 ? [] : try MediaProbe.decodeLuma(url, width: 320, height: 240)
        let counters = frames.compactMap(\.counter)
        #expect(counters.count == frames.count, "run \(run): every frame readable")
        // No gap but a frame the recording reported dropped (a loaded machine: three recordings
        // on two cores), by the last event before the kill.
        let dropped = ((try? String(contentsOf: events, encoding: .utf8)) ?? "").split(separator: "\n")
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .compactMap { $0["dropped"] as? Int }.max() ?? 0
        #expect(zip(counters, counters.dropFirst()).allSatisfy { $0 < $1 } && EveryFrame.missing(in: counters) <= dropped,
                "run \(run): no gaps but \(dropped) reported dropped: \(counters)")
        // The time the frames span (a dropped frame's slot is time in the file too).
        let decodedSeconds = Double(counters.count + EveryFrame.missing(in: counters)) / 30
        #expect(decodedSeconds >= recordedAtKill - 1.0, "run \(run): killed after \(recordedAtKill) s, \(decodedSeconds) s decode")

        // reel recover makes it a finalised file with the same frames.
        #expect(Recovery.isCutOff(url) == (counters.count > 0) || counters.isEmpty)
        let recovered = try ReelBinary.run(["recover", url.path])
        if counters.isEmpty {
            return  // killed before the first fragment: nothing to recover, and ffprobe still reads the file
        }
        #expect(recovered.status == 0, "run \(run): \(recovered.stderr)")
        #expect(!Recovery.isCutOff(url))
        let after = try MediaProbe.decodeLuma(url, width: 320, height: 240).compactMap(\.counter)
        #expect(after == counters, "run \(run): the finalised file holds the same frames")
        let finalised = try MediaProbe.probe(url)
        #expect(abs((finalised.videoStreams.first?.duration ?? 0) - decodedSeconds) < 1.0 / 30 + 0.001)
        #expect(finalised.audioStreams.count == 1)
    }

    @Test func recordNoticesCutOffRecordingsInItsFolder() async throws {
        let dir = try TemporaryDirectory()
        let cut = dir.url.appendingPathComponent("cut.mp4")
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "-o", cut.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try await Task.sleep(for: .seconds(2))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let next = try ReelBinary.run(["record", "--test-pattern", "--size", "320x240", "--duration", "0.5",
                                       "-o", dir.url.appendingPathComponent("next.mp4").path])
        #expect(next.status == 0)
        #expect(next.stderr.contains("reel recover \"\(cut.path)\""))
        // A complete file needs nothing, which is no failure.
        let notCut = try ReelBinary.run(["recover", dir.url.appendingPathComponent("next.mp4").path])
        #expect(notCut.status == 0)
        #expect(notCut.stderr.contains("next.mp4 is complete; nothing to do"), "\(notCut.stderr)")
    }

    @Test func aFullDiskEndsWithAClearErrorAndAPlayableFile() throws {
        let mountPoint = try SmallDisk(size: "600k")
        let url = mountPoint.url.appendingPathComponent("full.mp4")
        let r = try ReelBinary.run(["record", "--test-pattern", "--tone", "--size", "1280x720", "--crf", "0", "--preset", "ultrafast",
                                    "--min-free", "0", "--duration", "60", "-o", url.path])
        // Finalised in place with what reached the disk, and ended as a recording the disk
        // stopped (exit 3 and its summary: it failed, exit 1, with the facts in an error).
        #expect(r.status == 3, "\(r.stderr)")
        #expect(r.output.contains("  stopped: the disk is full or nearly full"), "\(r.output)")
        #expect(!r.stderr.contains("error"), "\(r.stderr)")
        #expect(Recovery.isFinished(url), "\(r.stderr)")
        let probe = try MediaProbe.probe(url)
        let frames = try #require(probe.videoStreams.first?.frameCount)
        #expect(frames > 0)
        let counters = try MediaProbe.decodeLuma(url, width: 1280, height: 720).compactMap(\.counter)
        #expect(counters.count > 0)
        // In order, without a gap but a frame or two a loaded machine may drop.
        EveryFrame.expect(counters, frames: counters.count, dropped: 2, "what was kept plays without gaps")
    }

    @Test func theFreeSpaceGuardRefusesToStartOnANearlyFullDisk() throws {
        let mountPoint = try SmallDisk(size: "2M")
        let r = try ReelBinary.run(["record", "--test-pattern", "--duration", "1", "-o", mountPoint.url.appendingPathComponent("x.mp4").path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("MB free"))
    }
}
