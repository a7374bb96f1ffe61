import Foundation
import Testing
import Reel
import ReelTestSupport
@testable import ReelCLI

/// `reel record --replay`, run in real time as a user runs it: it writes nothing until asked,
/// each SIGUSR1 saves the last seconds into a dated file of its own, and Ctrl-C drops the
/// buffer (or, with `--replay-save-on-exit`, saves it once more).
@Suite(.serialized, .tags(.realTime)) struct ReplayCommandTests {
    static let size = (width: 320, height: 240)
    static let recording = ["--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast"]

    /// A `reel record --replay` run with its own home (so that no save can land in a real
    /// videos folder) and replay folder.
    struct Run {
        let process = Process()
        let stdout: URL
        let stderr: URL
        let replays: URL
        let home: URL

        init(_ dir: TemporaryDirectory, arguments: [String], replays: URL? = nil) throws {
            stdout = dir.url.appendingPathComponent("out.jsonl")
            stderr = dir.url.appendingPathComponent("err.txt")
            self.replays = replays ?? dir.url.appendingPathComponent("replays")
            home = dir.url.appendingPathComponent("home")
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
            for file in [stdout, stderr] { _ = FileManager.default.createFile(atPath: file.path, contents: nil) }
            process.executableURL = ReelBinary.url
            process.arguments = ["record"] + ReplayCommandTests.recording + arguments + ["--replay-dir", self.replays.path, "--json"]
            var environment = ProcessInfo.processInfo.environment
            environment["HOME"] = home.path
            environment["XDG_VIDEOS_DIR"] = nil
            process.environment = environment
            process.standardOutput = try FileHandle(forWritingTo: stdout)
            process.standardError = try FileHandle(forWritingTo: stderr)
            process.standardInput = FileHandle.nullDevice
            try process.run()
        }

        /// The JSON events printed so far.
        var events: [[String: Any]] {
            let text = (try? String(contentsOf: stdout, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }

        func events(_ name: String) -> [[String: Any]] { events.filter { $0["event"] as? String == name } }

        /// Frames the recording reported dropped (its last `finished` or `progress` event): in
        /// real time, a loaded machine may drop some, each counted.
        var dropped: Int { (events("finished").last ?? events("progress").last)?["dropped"] as? Int ?? 0 }

        /// Waits until `condition` holds; a run that never gets there (a hang, not slowness: the
        /// guard is a minute) is recorded as an issue.
        func wait(for what: String, until condition: () -> Bool) {
            let deadline = Date().addingTimeInterval(60)
            while !condition() && process.isRunning && Date() < deadline { usleep(50_000) }
            if !condition() { Issue.record("never saw \(what); stderr: \((try? String(contentsOf: stderr, encoding: .utf8)) ?? "")") }
        }

        /// Waits until the recording has `seconds` of media (its progress events say so).
        func waitForRecorded(_ seconds: Double) {
            wait(for: "\(seconds) s recorded") {
                events("progress").contains { ($0["duration"] as? Double ?? 0) >= seconds }
            }
        }

        /// Stops it with `signo` and waits for the end.
        func stop(_ signo: Int32 = SIGINT) -> Int32 {
            kill(process.processIdentifier, signo)
            let deadline = Date().addingTimeInterval(60)
            while process.isRunning && Date() < deadline { usleep(20_000) }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                Issue.record("reel did not end after the stop")
            }
            process.waitUntilExit()
            return process.terminationStatus
        }

        var errors: String { (try? String(contentsOf: stderr, encoding: .utf8)) ?? "" }

        var savedFiles: [URL] {
            ((try? FileManager.default.contentsOfDirectory(atPath: replays.path)) ?? []).sorted().map { replays.appendingPathComponent($0) }
        }
    }

    /// Checks a saved replay: it plays, holds `seconds` up to one keyframe interval (2 s) more,
    /// has sound, and its frames are one unbroken run of the test pattern's counter. Returns
    /// its counters.
    func checkReplay(_ url: URL, seconds: Double) throws -> [Int64] {
        try checkReplay(url, seconds: seconds, reportedDropped: 0)
    }

    /// As ``checkReplay(_:seconds:)``, where the recording reported `reportedDropped` frames
    /// dropped (a loaded machine, in real time): the save may miss up to that many, each one
    /// a gap of the counter that the recording counted, and no more.
    func checkReplay(_ url: URL, seconds: Double, reportedDropped: Int) throws -> [Int64] {
        let probe = try MediaProbe.probe(url)
        #expect(probe.videoStreams.count == 1 && probe.audioStreams.count == 1, "\(url.lastPathComponent): video and sound")
        #expect(probe.duration >= seconds - 0.05 && probe.duration <= seconds + 2 + 0.05,
                "\(url.lastPathComponent) lasts \(probe.duration) s: \(seconds) s and at most one keyframe interval more")
        let counters = try MediaProbe.decodeLuma(url, width: Self.size.width, height: Self.size.height).map { $0.counter ?? -1 }
        let pairs = zip(counters, counters.dropFirst())
        let breaks = pairs.filter { $1 != $0 + 1 }.map { "\($0) then \($1)" }
        let missing = pairs.filter { $1 > $0 + 1 }.reduce(0) { $0 + Int($1.1 - $1.0 - 1) }
        let repeated = pairs.contains { $1 <= $0 }
        #expect(!counters.isEmpty)
        #expect(!repeated && missing <= reportedDropped,
                "frames missing or repeated in \(url.lastPathComponent) (\(reportedDropped) reported dropped): \(breaks.prefix(5))")
        // The frames, and the slots of those dropped, fill the file.
        #expect(abs(Double(counters.count + missing) / 30 - probe.duration) < 0.1, "the frames fill the file")
        return counters
    }

    @Test func eachSIGUSR1SavesTheLastSecondsAndCtrlCWritesNothingMore() throws {
        let dir = try TemporaryDirectory()
        let run = try Run(dir, arguments: ["--replay", "5"])
        run.waitForRecorded(6)
        #expect(run.savedFiles.isEmpty, "nothing is written until a save is asked for")
        for n in 1...3 {
            if n > 1 { run.waitForRecorded(6 + Double(n - 1) * 2.5) }
            kill(run.process.processIdentifier, SIGUSR1)
            run.wait(for: "save \(n)") { run.events("saved").count >= n }
        }
        let saved = run.events("saved")
        #expect(run.stop() == 0)
        let files = run.savedFiles
        #expect(files.count == 3, "three saves, and Ctrl-C writes nothing more: \(files.map(\.lastPathComponent))")
        #expect(Set(saved.compactMap { $0["file"] as? String }) == Set(files.map(\.path)), "each saved event names its file")
        #expect(run.events("finished").first?["file"] == nil, "no recording file")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: run.home.path)) ?? []).isEmpty, "nothing in the home folder")
        var previousLast: Int64 = -1
        for (event, file) in zip(saved, files) {
            let counters = try checkReplay(file, seconds: 5, reportedDropped: run.dropped)
            let duration = event["duration"] as? Double ?? 0
            #expect(abs(duration - Double(counters.count + EveryFrame.missing(in: counters)) / 30) < 0.05, "the event's duration is the file's")
            #expect((counters.last ?? -1) > previousLast, "each save ends later than the one before")
            previousLast = counters.last ?? -1
        }
    }

    @Test func saveOnExitWritesOneAtTheEnd() throws {
        let dir = try TemporaryDirectory()
        let run = try Run(dir, arguments: ["--replay", "3", "--replay-save-on-exit"])
        run.waitForRecorded(4)
        #expect(run.savedFiles.isEmpty)
        #expect(run.stop() == 0)
        let files = run.savedFiles
        #expect(files.count == 1)
        #expect(run.events("saved").count == 1)
        if let file = files.first { _ = try checkReplay(file, seconds: 3, reportedDropped: run.dropped) }
    }

    @Test func aSpilledBufferLivesInUnnamedFilesOfTheReplayFolder() throws {
        let dir = try TemporaryDirectory()
        let run = try Run(dir, arguments: ["--replay", "3", "--replay-spill", "--replay-save-on-exit"])
        run.waitForRecorded(4)
        // The buffer's bytes are in a file of the replay folder, mapped, with no name.
        let maps = (try? String(contentsOfFile: "/proc/\(run.process.processIdentifier)/maps", encoding: .utf8)) ?? ""
        let spillMaps = maps.split(separator: "\n").filter { $0.contains(run.replays.path + "/") && $0.hasSuffix("(deleted)") }
        #expect(!spillMaps.isEmpty, "a spill file of the replay folder is mapped: \(maps.split(separator: "\n").filter { $0.contains(dir.url.path) })")
        #expect(run.savedFiles.isEmpty, "nothing visible in the folder until a save")
        #expect(run.stop() == 0, "\(run.errors)")
        #expect(run.savedFiles.count == 1)
        if let file = run.savedFiles.first { _ = try checkReplay(file, seconds: 3, reportedDropped: run.dropped) }
    }

    @Test func replayBesideAFileRecordsTheWholeSession() throws {
        let dir = try TemporaryDirectory()
        let full = dir.url.appendingPathComponent("full.mp4")
        let run = try Run(dir, arguments: ["--replay", "2", "-o", full.path])
        run.waitForRecorded(3.5)
        kill(run.process.processIdentifier, SIGUSR1)
        run.wait(for: "the save") { run.events("saved").count == 1 }
        #expect(run.stop() == 0)
        let whole = try MediaProbe.decodeLuma(full, width: Self.size.width, height: Self.size.height).map { $0.counter ?? -1 }
        #expect((whole.first ?? 99) < 15, "the file holds the session from its start")
        #expect(Double(whole.count) / 30 >= 3.5)
        if let file = run.savedFiles.first {
            let replay = try checkReplay(file, seconds: 2, reportedDropped: run.dropped)
            #expect(replay.allSatisfy(whole.contains), "the replay's frames are the file's: one encode")
        }
    }
}

/// What goes wrong around `--replay` is said at once, and loses no replay that could be saved.
extension ReplayCommandTests {
    @Test func saveOnExitStillSavesWhenTheFilesDiskFills() throws {
        let dir = try TemporaryDirectory()
        let disk = try SmallDisk(size: "8M")
        let full = disk.url.appendingPathComponent("whole.mp4")
        let run = try Run(dir, arguments: ["--replay", "2", "--replay-save-on-exit", "--min-free", "0", "-o", full.path])
        run.waitForRecorded(2.5)
        // Then the -o disk fills (the replay folder is on another disk).
        _ = try Subprocess.run(["dd", "if=/dev/zero", "of=\(disk.url.path)/filler", "bs=64k"])
        // The recording ends for the disk: finished with what reached it (the index's spare
        // room given back, exit 3), or, when that room was not enough, failed (exit 1).
        run.wait(for: "the end for the disk") { !run.events("failed").isEmpty || !run.events("finished").isEmpty }
        run.process.waitUntilExit()
        if let finished = run.events("finished").first {
            #expect(run.process.terminationStatus == 3, "ended for the disk: \(run.errors)")
            #expect(finished["ending"] as? String == "lowDiskSpace" && finished["complete"] as? Bool == false, "\(finished)")
        } else {
            #expect(run.process.terminationStatus == 1, "the recording failed: \(run.errors)")
            #expect(run.events("failed").first?["code"] as? String == "insufficientStorage")
        }
        #expect(run.events("saved").count == 1, "the replay buffer was saved all the same: \(run.errors)")
        if let file = run.savedFiles.first { _ = try checkReplay(file, seconds: 2, reportedDropped: run.dropped) }
        #expect(FileManager.default.fileExists(atPath: full.path), "what reached the full disk is kept")
    }

    /// A save holds the moment it was asked: what the encoder still held then (its lookahead,
    /// about 0.6 s) is waited for, not left out.
    @Test func aSaveHoldsTheMomentItWasAskedFor() throws {
        let dir = try TemporaryDirectory()
        let run = try Run(dir, arguments: ["--replay", "20"])
        run.waitForRecorded(3)
        // The recording had at least this much when the save was asked.
        let asked = run.events("progress").compactMap { $0["duration"] as? Double }.max() ?? 0
        kill(run.process.processIdentifier, SIGUSR1)
        run.wait(for: "the save") { run.events("saved").count == 1 }
        #expect(run.stop() == 0, "\(run.errors)")
        let saved = run.events("saved").first?["duration"] as? Double ?? 0
        #expect(saved >= asked, "saved \(saved) s of the \(asked) s recorded when asked")
    }

    @Test func aReplayFolderRemovedWhileRecordingIsMadeAgainForTheSave() throws {
        let dir = try TemporaryDirectory()
        let run = try Run(dir, arguments: ["--replay", "2"])
        run.waitForRecorded(2.5)
        // Another reel that made it and saved nothing, or the user, removes the empty folder.
        #expect(rmdir(run.replays.path) == 0)
        kill(run.process.processIdentifier, SIGUSR1)
        run.wait(for: "the save") { run.events("saved").count == 1 }
        #expect(run.stop() == 0, "\(run.errors)")
        if let file = run.savedFiles.first { _ = try checkReplay(file, seconds: 2, reportedDropped: run.dropped) }
    }

    @Test func aSaveOnExitThatFailsIsAFailedRun() throws {
        let dir = try TemporaryDirectory()
        // Room for the folder's check (an empty file), not for a replay.
        let disk = try SmallDisk(size: "4k")
        let run = try Run(dir, arguments: ["--replay", "2", "--replay-save-on-exit", "--min-free", "0"], replays: disk.url)
        run.waitForRecorded(2.5)
        #expect(run.stop() == 1, "the save asked for did not happen: \(run.errors)")
        let failed = run.events("saveFailed")
        #expect(failed.count == 1)
        let message = failed.first?["message"] as? String ?? ""
        #expect(message.contains("Reel ") && !message.contains(".replay-"), "the error names the replay, not a hidden file: \(message)")
        #expect(run.savedFiles.isEmpty, "no empty or partial file is left: \(run.savedFiles.map(\.lastPathComponent))")
        // The last event says it too (it said "complete": true).
        let finished = try #require(run.events("finished").first)
        #expect(finished["complete"] as? Bool == false && finished["replaySavesFailed"] as? Int == 1, "\(finished)")
    }

    /// A save asked for with SIGUSR1 that fails: the run fails (exit 1) and its last event,
    /// `finished`, says so after the save's own `saveFailed`.
    @Test func aFailedSaveIsInTheFinishedEvent() throws {
        let dir = try TemporaryDirectory()
        let disk = try SmallDisk(size: "4k")
        let run = try Run(dir, arguments: ["--replay", "2", "--min-free", "0"], replays: disk.url)
        run.waitForRecorded(2.5)
        kill(run.process.processIdentifier, SIGUSR1)
        run.wait(for: "the failed save") { run.events("saveFailed").count == 1 }
        #expect(run.stop() == 1, "\(run.errors)")
        let finished = try #require(run.events("finished").first)
        #expect(finished["complete"] as? Bool == false && finished["replaySavesFailed"] as? Int == 1, "\(finished)")
    }

    /// A save that failed on a full disk, asked again once space was freed: when the later save
    /// holds all the failed one would have, nothing asked for is lost, and the run is complete
    /// (exit 0, `"replaySavesMadeGood"`); it exited 1 (issue 26, F3). When the later save comes
    /// too late to hold that moment (the buffer let it go), the run still failed (exit 1).
    /// (A buffer of 10 s asked again a second later holds it all; one of 3 s asked again 4.5 s
    /// later has let the first seconds go.)
    @Test(arguments: [("10", 1.0, true), ("3", 4.5, false)])
    func aFailedSaveMadeGoodByALaterOne(replay: String, wait: Double, madeGood: Bool) throws {
        let dir = try TemporaryDirectory()
        let disk = try SmallDisk(size: "2m")
        let run = try Run(dir, arguments: ["--replay", replay, "--min-free", "0"], replays: disk.url)
        run.waitForRecorded(3)
        let fill = disk.url.appendingPathComponent("fill")
        _ = FileManager.default.createFile(atPath: fill.path, contents: Data(count: 2 << 20))  // as much as goes in
        kill(run.process.processIdentifier, SIGUSR1)
        run.wait(for: "the failed save") { run.events("saveFailed").count == 1 }
        try FileManager.default.removeItem(at: fill)
        usleep(useconds_t(wait * 1_000_000))
        kill(run.process.processIdentifier, SIGUSR1)
        run.wait(for: "the save") { run.events("saved").count == 1 }
        let status = run.stop()
        let finished = try #require(run.events("finished").first)
        if madeGood {
            #expect(status == 0, "\(run.errors)")
            #expect(finished["complete"] as? Bool == true && finished["replaySavesFailed"] == nil, "\(finished)")
            #expect(finished["replaySavesMadeGood"] as? Int == 1, "\(finished)")
        } else {
            #expect(status == 1, "\(run.errors)")
            #expect(finished["complete"] as? Bool == false && finished["replaySavesFailed"] as? Int == 1, "\(finished)")
        }
        #expect(run.savedFiles.count == 1)
    }

    @Test func aReplayFolderThatCannotTakeFilesIsRefusedAtTheStart() throws {
        let dir = try TemporaryDirectory()
        let disk = try SmallDisk(size: "1M")
        #expect(try Subprocess.run(["mount", "-o", "remount,ro", disk.url.path]).status == 0)
        let run = try Run(dir, arguments: ["--replay", "2"], replays: disk.url)
        run.process.waitUntilExit()
        #expect(run.process.terminationStatus == 1)
        #expect(run.errors.contains("read-only") && run.errors.contains("--replay-dir"), "\(run.errors)")
        #expect(run.events("progress").isEmpty, "nothing was recorded")
    }

    @Test func aBadOutputLeavesNoReplayFolder() throws {
        let dir = try TemporaryDirectory()
        let same = dir.url.appendingPathComponent("x.mp4")
        // (--duration: should it record after all, it ends.)
        let run = try Run(dir, arguments: ["--replay", "2", "--duration", "3", "-o", same.path], replays: same)
        run.process.waitUntilExit()
        #expect(run.process.terminationStatus == 2, "a usage error")
        #expect(run.errors.contains("--replay-dir"), "\(run.errors)")
        #expect(!FileManager.default.fileExists(atPath: same.path), "no folder made for a recording that never started")
    }
}

/// On a terminal, `r` saves the replay and `q` stops: reel run on a pseudo-terminal (Python's
/// `pty`, as a user's terminal is), keys typed as a user types them.
extension ReplayCommandTests {
    static let terminalDriver = TerminalScript.start(["\"record\"", "\"--test-pattern\"", "\"--tone\"", "\"--size\"", "\"320x240\"", "\"--preset\"",
                                                      "\"ultrafast\"", "\"--replay\"", "\"2\"", "\"--replay-dir\"", "path"]) + """
        steps = {"recording": read_until(rb"REPLAY 00:00:0[3-9]")}
        os.write(fd, b"r")
        steps["saved"] = read_until(rb"Saved replay")
        os.write(fd, b"q")
        """ + TerminalScript.finish

    @Test func rSavesAndQStopsOnATerminal() throws {
        let dir = try TemporaryDirectory()
        let script = dir.url.appendingPathComponent("terminal.py")
        try Self.terminalDriver.write(to: script, atomically: true, encoding: .utf8)
        let folder = dir.url.appendingPathComponent("replays")
        let run = try Subprocess.run(["python3", script.path, ReelBinary.url.path, folder.path])
        let result = try JSONSerialization.jsonObject(with: run.stdout) as? [String: Any] ?? [:]
        let output = result["output"] as? String ?? run.stderr
        let steps = result["steps"] as? [String: Bool] ?? [:]
        #expect(steps["recording"] == true, "the progress line showed 3 s: \(output)")
        #expect(steps["saved"] == true, "r saved: \(output)")
        #expect(result["status"] as? Int == 0, "q stopped it cleanly: \(output)")
        #expect(output.contains("[r] save replay"), "the line names the key")
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
        #expect(files.count == 1, "one save, and q wrote nothing more: \(files)")
        // In real time on a loaded machine a frame may be dropped; the summary counts it
        // ("dropped   2 frames: …", a line for each reason; it said nothing of them).
        let dropped = output.matches(of: /dropped +(\d+) frames?:/).compactMap { Int($0.1) }.reduce(0, +)
        if let name = files.first { _ = try checkReplay(folder.appendingPathComponent(name), seconds: 2, reportedDropped: dropped) }
    }
}

/// `--replay`'s values and the options it cannot go with are usage errors.
@Suite struct ReplayOptionTests: ParsesRecordOptions {
    @Test func parsesTheReplayOptions() throws {
        let o = try options(["--test-pattern", "--replay", "30", "--replay-max-size", "500M", "--replay-dir", "/tmp/r", "--replay-save-on-exit"])
        #expect(o.replay == MediaTime(seconds: 30))
        #expect(o.replayMaxSize == 500_000_000)
        #expect(o.replayDirectory?.path == "/tmp/r")
        #expect(o.replaySavesOnExit)
        #expect(try options(["--test-pattern", "--replay", "30", "--replay-spill"]).replaySpills)
        #expect(!o.writesFile, "no -o: nothing recorded to a file")
        #expect(try options(["--test-pattern", "--replay", "5m", "-o", "/tmp/full.mp4"]).writesFile)
        #expect(try options(["--test-pattern", "--replay", "1h"]).replay == MediaTime(seconds: 3600))
    }

    @Test func refusesBadValuesAndCombinations() {
        for bad in ["0", "-5", "0.5", "3601", "2h", "soon", ""] {
            #expect(usageError(["--test-pattern", "--replay", bad]) != nil, "--replay \(bad)")
        }
        for bad in ["0", "-1M", "lots", "100k"] {
            #expect(usageError(["--test-pattern", "--replay", "30", "--replay-max-size", bad]) != nil, "--replay-max-size \(bad)")
        }
        #expect(usageError(["--test-pattern", "--replay-dir", "/tmp"])?.contains("without --replay") == true)
        #expect(usageError(["--test-pattern", "--replay-save-on-exit"])?.contains("without --replay") == true)
        #expect(usageError(["--test-pattern", "--replay-spill"])?.contains("without --replay") == true)
        #expect(usageError(["--test-pattern", "--replay", "30", "-o", "/tmp/x.mp4", "--replay-dir", "/tmp/x.mp4"])?.contains("--replay-dir") == true)
        // An option whose value is optional takes it with '=': the hint says so.
        #expect(usageError(["--camera", "/dev/video0"])?.contains("--camera=/dev/video0") == true)
        #expect(usageError(["--test-pattern", "--replay", "30", "--pause-mode", "clips"])?.contains("clips") == true)
        #expect(usageError(["--test-pattern", "--replay", "30", "--keep-clips", "/tmp/c"]) != nil)
        #expect(usageError(["--test-pattern", "--replay", "30", "--max-size", "10M"])?.contains("-o") == true)
        #expect(usageError(["--test-pattern", "--replay", "30", "--max-size", "10M", "-o", "/tmp/x.mp4"]) == nil)
        #expect(usageError(["--test-pattern", "--replay", "30", "--faster-than-real-time", "--duration", "5"]) != nil)
    }
}

/// With `--replay`, SIGUSR1 saves instead of pausing, and only while recording.
@Suite(.tags(.realTime)) struct ReplaySignalTests {
    @Test func usr1SavesWhileRecordingWithReplay() {
        var replay = RecordSignalLifecycle(canSwap: false, usr1SavesReplay: true)
        if case .ignore = replay.pauseSignal() {} else { Issue.record("USR1 before the start is ignored") }
        _ = replay.started()
        #expect(replay.pauseSignal() == .saveReplay)
        #expect(replay.stopSignal() == .stop)
        if case .ignore = replay.pauseSignal() {} else { Issue.record("USR1 while stopping is ignored") }
        var plain = RecordSignalLifecycle(canSwap: false)
        _ = plain.started()
        #expect(plain.pauseSignal() == .togglePause)
    }
}
