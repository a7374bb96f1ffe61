import Foundation
import Testing
import Reel
import ReelTestSupport

/// Clip mode after a crash or an abort: the clips are found, never deleted or overwritten by
/// the next run, and `reel recover` merges them into the file the recording was meant to be.
@Suite(.serialized, .tags(.realTime)) struct ClipRecoveryTests {
    /// A `reel record` running in the background, its JSON events in a file.
    final class Recording {
        let process = Process()
        let events: URL
        let errors: URL

        init(_ arguments: [String], in dir: URL, environment: [String: String] = [:]) throws {
            events = dir.appendingPathComponent("events-\(UUID().uuidString.prefix(6)).jsonl")
            errors = dir.appendingPathComponent("stderr-\(UUID().uuidString.prefix(6)).txt")
            _ = FileManager.default.createFile(atPath: events.path, contents: nil)
            _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
            process.executableURL = ReelBinary.url
            process.arguments = ["record"] + arguments + ["--json"]
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            process.standardOutput = try FileHandle(forWritingTo: events)
            process.standardError = try FileHandle(forWritingTo: errors)
            try process.run()
        }

        /// Waits until the recording has started.
        func started() async throws {
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                if let text = try? String(contentsOf: events, encoding: .utf8), text.contains("\"started\"") { return }
                try await Task.sleep(for: .milliseconds(5))
            }
            Issue.record("the recording did not start")
        }

        func signal(_ signo: Int32) { kill(process.processIdentifier, signo) }

        /// Waits for the process to end; returns its exit status and standard error.
        func end() -> (status: Int32, stderr: String) {
            process.waitUntilExit()
            return (process.terminationStatus, (try? String(contentsOf: errors, encoding: .utf8)) ?? "")
        }
    }

    /// Records in clip mode, pausing and resuming once, then ends the process with `ending`
    /// (SIGKILL, or two SIGINTs a moment apart).
    func recordTwoClipsAndCut(_ url: URL, in dir: URL, ending: [Int32], extra: [String] = [],
                              environment: [String: String] = [:]) async throws -> (status: Int32, stderr: String) {
        let recording = try Recording(["--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast",
                                       "--pause-mode", "clips", "-o", url.path] + extra, in: dir, environment: environment)
        try await recording.started()
        try await Task.sleep(for: .seconds(1.2))
        recording.signal(SIGUSR1)
        try await Task.sleep(for: .seconds(0.6))
        recording.signal(SIGUSR1)
        try await Task.sleep(for: .seconds(1.6))
        for signo in ending {
            recording.signal(signo)
            try await Task.sleep(for: .seconds(0.3))
        }
        return recording.end()
    }

    /// Copies `folder` (as `cp -a` does) into `place`, made first; returns `place`.
    func copy(_ folder: URL, into place: URL) throws -> URL {
        try FileManager.default.createDirectory(at: place, withIntermediateDirectories: true)
        let copied = try Subprocess.run(["cp", "-a", folder.path, place.path])
        #expect(copied.status == 0, "\(copied.stderr)")
        return place
    }

    func files(in folder: URL) -> [String: Int] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return Dictionary(uniqueKeysWithValues: names.map { name in
            (name, ((try? FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(name).path))?[.size] as? Int) ?? -1)
        })
    }

    /// The decoded frame counters of `url` form `runs` runs (one per clip), in order: the
    /// pauses (0.6 s, 18 frames) between them, and within them no gap but a frame or two a
    /// loaded machine may drop (these recordings end by a kill or an abort: no summary reports
    /// the drops).
    func expectRuns(_ url: URL, _ runs: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter)
        #expect(counters.allSatisfy { $0 != nil }, sourceLocation: sourceLocation)
        let values = counters.compactMap { $0 }
        #expect(zip(values, values.dropFirst()).allSatisfy { $0 < $1 }, "in order, none twice: \(values)", sourceLocation: sourceLocation)
        let jumps = zip(values, values.dropFirst()).filter { $1 > $0 + 6 }
        #expect(jumps.count == runs - 1, "\(jumps)", sourceLocation: sourceLocation)
        let dropped = zip(values, values.dropFirst()).filter { $1 <= $0 + 6 }.reduce(0) { $0 + Int($1.1 - $1.0 - 1) }
        #expect(dropped <= 2, "\(dropped) frames missing within the clips: \(values)", sourceLocation: sourceLocation)
        #expect(values.count > 60, "\(values.count) frames", sourceLocation: sourceLocation)
    }

    @Test func killedClipRecordingIsFoundKeptAndRecovered() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("talk.mp4")
        let folder = dir.url.appendingPathComponent("talk.clips")
        _ = try await recordTwoClipsAndCut(url, in: dir.url, ending: [SIGKILL])
        #expect(!FileManager.default.fileExists(atPath: url.path))
        let before = files(in: folder)
        #expect(before.keys.contains("clip-001.mp4") && before.keys.contains("clip-002.mp4"), "\(before)")
        #expect(before.keys.contains("reel-clips.json"), "\(before)")
        #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent(".talk.clips").path))

        // The next clip-mode run to the same name neither removes nor reuses them, and says so.
        let next = try ReelBinary.run(["record", "--test-pattern", "--size", "320x240", "--pause-mode", "clips",
                                       "--duration", "0.5", "-o", url.path])
        #expect(next.status == 1)
        #expect(next.stderr.contains(folder.path) && next.stderr.contains("reel recover"), "\(next.stderr)")
        #expect(files(in: folder) == before, "the clips are untouched")

        // A run to another name in the folder points at them.
        let other = try ReelBinary.run(["record", "--test-pattern", "--size", "320x240", "--duration", "0.5",
                                        "-o", dir.url.appendingPathComponent("other.mp4").path])
        #expect(other.status == 0, "\(other.stderr)")
        #expect(other.stderr.contains("reel recover \"\(folder.path)\""), "\(other.stderr)")

        // reel recover NAME.mp4 finds the clips, recovers the cut-off one and merges them.
        let recovered = try ReelBinary.run(["recover", url.path])
        #expect(recovered.status == 0, "\(recovered.stderr)")
        #expect(recovered.output.contains(url.path), "\(recovered.output)")
        try expectRuns(url, 2)
        #expect(!Recovery.isCutOff(url))
        #expect(try MediaProbe.probe(url).audioStreams.count == 1)
        #expect(!FileManager.default.fileExists(atPath: folder.path), "the clips go once the merged file holds them")
    }

    /// Killed while paused — the next clip's file made ahead for the resume, holding nothing and
    /// listed nowhere — or a moment after the resume (that file being listed, its first packets
    /// on their way): `reel recover` keeps every frame of clip 1, which the pause finished, and
    /// whatever of clip 2 reached the disk, and leaves no folder behind.
    @Test(arguments: [nil, 0.0, 0.15, 0.6] as [Double?])
    func killedDuringAPauseOrAtItsResumeIsRecovered(afterResume: Double?) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("cut.mp4"), folder = dir.url.appendingPathComponent("cut.clips")
        let recording = try Recording(["--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast",
                                       "--pause-mode", "clips", "-o", url.path], in: dir.url)
        try await recording.started()
        try await Task.sleep(for: .seconds(1.2))
        recording.signal(SIGUSR1)                   // pause: clip 1 is finished, clip 2's file made
        try await Task.sleep(for: .seconds(1))
        let manifest = folder.appendingPathComponent("reel-clips.json")
        let listed = (try? String(contentsOf: manifest, encoding: .utf8)) ?? ""
        if let afterResume {
            recording.signal(SIGUSR1)
            try await Task.sleep(for: .seconds(afterResume))
        }
        recording.signal(SIGKILL)
        _ = recording.end()
        // Clip 1 finished and listed so, with its frames.
        struct Listed: Decodable { struct Entry: Decodable { var file: String; var finished: Bool; var frames: Int64? }; var clips: [Entry] }
        let entries = try JSONDecoder().decode(Listed.self, from: Data(listed.utf8)).clips
        let clip1 = try #require(entries.first)
        #expect(entries.count == 1 && clip1.file == "clip-001.mp4" && clip1.finished, "\(listed)")
        let frames = try #require(clip1.frames)
        if afterResume == nil {
            #expect(files(in: folder).keys.contains("clip-002.mp4"), "clip 2's file was made during the pause: \(files(in: folder))")
            #expect(try String(contentsOf: manifest, encoding: .utf8) == listed, "and not listed")
        }

        let recovered = try ReelBinary.run(["recover", url.path])
        #expect(recovered.status == 0, "\(recovered.stderr)")
        let values = try MediaProbe.decodeLuma(url, width: 320, height: 240).compactMap(\.counter)
        #expect(values.count >= Int(frames), "clip 1's \(frames) frames, then what reached the disk of clip 2: \(values)")
        #expect(zip(values, values.dropFirst()).allSatisfy { $0 < $1 }, "in order, none twice: \(values)")
        #expect(zip(values, values.prefix(Int(frames)).dropFirst()).filter { $1 > $0 + 1 }.reduce(0) { $0 + Int($1.1 - $1.0 - 1) } <= 2,
                "clip 1 whole (a loaded machine may drop a frame or two): \(values.prefix(Int(frames)))")
        #expect(!FileManager.default.fileExists(atPath: folder.path), "nothing left behind: \(files(in: folder))")
    }

    /// A clip of the killed recording (one it had finished, or the one it was recording),
    /// deleted before `reel recover`: the rest is merged, the missing clip is named, and the
    /// exit status is 3, not a whole recovery's 0 (the cut-off one was said to have held nothing).
    @Test(arguments: ["clip-001.mp4", "clip-002.mp4"])
    func aMissingClipMakesTheRecoveryIncomplete(_ deleted: String) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("holed.mp4")
        let folder = dir.url.appendingPathComponent("holed.clips")
        _ = try await recordTwoClipsAndCut(url, in: dir.url, ending: [SIGKILL])
        try FileManager.default.removeItem(at: folder.appendingPathComponent(deleted))
        let recovered = try ReelBinary.run(["recover", url.path])
        #expect(recovered.status == 3, "\(recovered.output) \(recovered.stderr)")
        #expect(recovered.output.contains("missing: \(deleted)"), "\(recovered.output)")
        #expect(!recovered.output.contains("cut off before they held anything"), "\(recovered.output)")
        #expect(FileManager.default.fileExists(atPath: url.path))
        // The folder stays as it was (s47 #8: the rest went): the clip put back, all is merged.
        #expect(recovered.output.contains("the clips are kept in"), "\(recovered.output)")
        let kept = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(kept.contains("reel-clips.json") && kept.filter { $0.hasPrefix("clip-") }.count == 1, "\(kept)")
        // Again, the clip still missing: the file there is refused as any file is, not taken
        // for an earlier merge that was cut off (a reviewer: "made … by an earlier merge that
        // was cut off before it said so: … its tidying finished", exit 0, the folder kept).
        let again = try ReelBinary.run(["recover", folder.path])
        #expect(again.status != 0 && again.stderr.contains("already exists"), "\(again.output) \(again.stderr)")
        #expect(!again.output.contains("earlier merge"), "\(again.output)")
    }

    /// The clips folder of a killed recording copied elsewhere is merged beside the copy, under
    /// the recording's name: not into the path its manifest names (s46: `reel recover
    /// COPIED/x.clips` wrote where the original was recorded).
    @Test func aCopiedClipsFolderIsMergedBesideTheCopy() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("moved.mp4")
        let folder = dir.url.appendingPathComponent("moved.clips")
        _ = try await recordTwoClipsAndCut(url, in: dir.url, ending: [SIGKILL])
        let elsewhere = try copy(folder, into: dir.url.appendingPathComponent("copied"))
        let recovered = try ReelBinary.run(["recover", elsewhere.appendingPathComponent("moved.clips").path])
        #expect(recovered.status == 0, "\(recovered.output) \(recovered.stderr)")
        try expectRuns(elsewhere.appendingPathComponent("moved.mp4"), 2)
        #expect(!FileManager.default.fileExists(atPath: url.path), "nothing written where the original was recorded")
        #expect(FileManager.default.fileExists(atPath: folder.path), "the original clips are as they were")
        // Renamed as it was copied (s47 #4): `renamed.clips` gives `renamed.mp4` beside it.
        let renamed = elsewhere.appendingPathComponent("renamed.clips")
        #expect(try Subprocess.run(["cp", "-a", folder.path, renamed.path]).status == 0)
        let again = try ReelBinary.run(["recover", renamed.path])
        #expect(again.status == 0, "\(again.output) \(again.stderr)")
        try expectRuns(elsewhere.appendingPathComponent("renamed.mp4"), 2)
        // In its own place, into the file it was recorded for.
        let own = try ReelBinary.run(["recover", folder.path])
        #expect(own.status == 0, "\(own.output) \(own.stderr)")
        try expectRuns(url, 2)
    }

    /// A clip's finalise killed leaves its unfinished copy in the clips folder
    /// (`.clip-001.finalising-PID-N.mp4`): once the clips are merged and removed, a copy whose
    /// maker is gone goes with them (it kept the folder for ever); one whose maker runs stays.
    @Test func aClipsUnfinishedCopyGoesWithTheClipsWhenItsMakerIsGone() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("copied.mp4")
        let folder = dir.url.appendingPathComponent("copied.clips")
        _ = try await recordTwoClipsAndCut(url, in: dir.url, ending: [SIGKILL])
        let ended = try RecoverCommandTests.numberOfAnEndedProcess()
        let gone = folder.appendingPathComponent(".clip-001.finalising-\(ended)-12.mp4")
        let live = folder.appendingPathComponent(".clip-001.finalising-\(getpid())-34.mp4")
        for copy in [gone, live] { try Data(try Data(contentsOf: folder.appendingPathComponent("clip-001.mp4")).prefix(20_000)).write(to: copy) }
        let recovered = try ReelBinary.run(["recover", folder.path])
        #expect(recovered.status == 0, "\(recovered.output) \(recovered.stderr)")
        try expectRuns(url, 2)
        #expect(!FileManager.default.fileExists(atPath: gone.path), "the dead maker's copy went with the clips")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == [live.lastPathComponent], "a live maker's copy stays, alone")
    }

    /// A copied folder whose recovery stopped short (a clip missing: the folder kept) stays a
    /// copy to the next recovery: the clip put back, `--overwrite` replaces the merge beside
    /// the copy, never the file the original was recorded for (the reviewer of stop 47: the
    /// recovery's own manifest writes made the copy look like the original).
    @Test func aCopiedFolderRecoveredTwiceStaysACopy() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("twice.mp4")
        let folder = dir.url.appendingPathComponent("twice.clips")
        _ = try await recordTwoClipsAndCut(url, in: dir.url, ending: [SIGKILL])
        let elsewhere = try copy(folder, into: dir.url.appendingPathComponent("copied"))
        let copy = elsewhere.appendingPathComponent("twice.clips")
        try FileManager.default.removeItem(at: copy.appendingPathComponent("clip-001.mp4"))
        let first = try ReelBinary.run(["recover", copy.path])
        #expect(first.status == 3, "\(first.output) \(first.stderr)")
        try FileManager.default.copyItem(at: folder.appendingPathComponent("clip-001.mp4"), to: copy.appendingPathComponent("clip-001.mp4"))
        let again = try ReelBinary.run(["recover", copy.path, "--overwrite"])
        #expect(again.status == 0, "\(again.output) \(again.stderr)")
        try expectRuns(elsewhere.appendingPathComponent("twice.mp4"), 2)
        #expect(!FileManager.default.fileExists(atPath: url.path), "nothing written where the original was recorded")
    }

    /// A recovery killed after its merged file took its name and before the manifest said
    /// merged (held by strace just after the hard link that names the file, then SIGKILL): the
    /// next recovery knows the file for the merge it made, checks it and finishes the tidy
    /// (it refused the name as taken, the folder stayed for ever and the advice led to a second
    /// copy elsewhere). Another file under that name, even of the same bytes, is still refused.
    @Test func aRecoveryKilledAfterNamingItsFileIsFinishedByTheNext() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("r.mp4")
        let folder = dir.url.appendingPathComponent("r.clips")
        _ = try await recordTwoClipsAndCut(url, in: dir.url, ending: [SIGKILL])
        let calls = "link,linkat,rename,renameat,renameat2"
        let strace = Process()
        strace.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
        strace.arguments = ["-f", "-qq", "-o", "/dev/null", "-e", "trace=\(calls)", "-P", url.path,
                            "-e", "inject=\(calls):delay_exit=30000000", ReelBinary.url.path, "recover", folder.path]
        strace.standardOutput = FileHandle.nullDevice
        strace.standardError = FileHandle.nullDevice
        try strace.run()
        var reel: pid_t = 0
        defer {
            if reel > 0 { kill(reel, SIGKILL) }
            if strace.isRunning { kill(strace.processIdentifier, SIGKILL) }
        }
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline, !FileManager.default.fileExists(atPath: url.path) { usleep(20_000) }
        let children = (try? String(contentsOfFile: "/proc/\(strace.processIdentifier)/task/\(strace.processIdentifier)/children", encoding: .utf8)) ?? ""
        reel = children.split(separator: " ").first.flatMap { pid_t($0) } ?? 0
        try #require(FileManager.default.fileExists(atPath: url.path) && reel > 0, "the recovery named its file")
        kill(reel, SIGKILL)
        // strace, let go, would wait out its delay: it goes too, once reel is gone.
        var gone = Date().addingTimeInterval(10)
        while Date() < gone, let stat = try? String(contentsOfFile: "/proc/\(reel)/stat", encoding: .utf8),
              !stat.contains(") Z ") && !stat.contains(") X ") { usleep(20_000) }
        kill(strace.processIdentifier, SIGKILL)
        strace.waitUntilExit()
        gone = Date().addingTimeInterval(10)
        while Date() < gone, kill(reel, 0) == 0 { usleep(20_000) }
        let manifest = folder.appendingPathComponent("reel-clips.json")
        #expect(try String(contentsOf: manifest, encoding: .utf8).contains("\"state\" : \"recording\""), "killed before it said merged")
        let frames = try #require(MediaProbe.probe(url).videoStreams.first?.frameCount)

        // The same bytes under the name, another file: refused, untouched.
        let moved = dir.url.appendingPathComponent("r-merged.mp4")
        try FileManager.default.moveItem(at: url, to: moved)
        try FileManager.default.copyItem(at: moved, to: url)
        let copy = try Data(contentsOf: url)
        let refused = try ReelBinary.run(["recover", folder.path])
        #expect(refused.status == 1 && refused.stderr.contains("already exists"), "\(refused.output) \(refused.stderr)")
        #expect(try Data(contentsOf: url) == copy, "the file is untouched")
        #expect(FileManager.default.fileExists(atPath: manifest.path), "the clips stay")

        // The merged file back under its name: the next recovery finishes the first one's work.
        #expect(rename(moved.path, url.path) == 0)
        var before = stat()
        stat(url.path, &before)
        let again = try ReelBinary.run(["recover", folder.path])
        #expect(again.status == 0, "\(again.output) \(again.stderr)")
        #expect(again.output.contains("Recovered \(url.path) from 2 clips") && again.output.contains("\(frames) frames"), "\(again.output)")
        #expect(again.output.contains("earlier merge"), "\(again.output)")
        #expect(!FileManager.default.fileExists(atPath: folder.path), "the clips go, as the first recovery would have removed them")
        var after = stat()
        stat(url.path, &after)
        #expect(after.st_ino == before.st_ino && after.st_size == before.st_size, "the file is kept as it was, not merged again")
        try expectRuns(url, 2)
        #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == frames)
        let hidden = ((try? FileManager.default.contentsOfDirectory(atPath: dir.url.path)) ?? []).filter { $0.hasPrefix(".r.") }
        #expect(hidden.isEmpty, "the killed recovery's second name of the file goes too: \(hidden)")
    }

    /// The clips of a killed recording whose file name is taken by then: `reel recover FOLDER`
    /// leaves the file alone and says so; with `--overwrite` (no `-o`) it replaces the file the
    /// clips were recorded for, as asked.
    @Test func recoveringClipsOverAnExistingFileNeedsOverwrite() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("taken.mp4")
        let folder = dir.url.appendingPathComponent("taken.clips")
        _ = try await recordTwoClipsAndCut(url, in: dir.url, ending: [SIGKILL])
        try Data("keep".utf8).write(to: url)
        let refused = try ReelBinary.run(["recover", folder.path])
        #expect(refused.status == 1 && refused.stderr.contains("already exists"), "\(refused.stderr)")
        #expect(try Data(contentsOf: url) == Data("keep".utf8), "the file is untouched")
        let replaced = try ReelBinary.run(["recover", folder.path, "--overwrite"])
        #expect(replaced.status == 0, "\(replaced.stderr)")
        try expectRuns(url, 2)
        #expect(!FileManager.default.fileExists(atPath: folder.path), "the clips go once the merged file holds them")
    }

    /// An abort while the stop finalises by copying (a short recording's index fits at its
    /// front in a smaller copy; the copy's disk is slow here) removes the unfinished copy (this
    /// process's own, half made: the recording keeps everything) and says how to finish the
    /// recording.
    @Test func anAbortDuringTheFinaliseRemovesTheUnfinishedCopy() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("t.mp4")
        let shim = try SlowDiskTests.buildShim(in: dir.url)
        let recording = try Recording(["--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast", "-o", url.path], in: dir.url,
                                      environment: ["LD_PRELOAD": shim.path, "REEL_SLOW_PATH": dir.url.appendingPathComponent(".t.finalising").path,
                                                    "REEL_SLOW_RATE": "20000"])
        try await recording.started()
        try await Task.sleep(for: .seconds(2))
        recording.signal(SIGINT)
        try await Task.sleep(for: .seconds(1))
        let copies = ((try? FileManager.default.contentsOfDirectory(atPath: dir.url.path)) ?? [])
            .filter { $0.hasPrefix(".t.finalising") }.map { dir.url.appendingPathComponent($0) }
        recording.signal(SIGINT)
        let (status, stderr) = recording.end()
        try #require(!copies.isEmpty, "the stop finalised in place: \(stderr)")
        #expect(status == 130, "\(stderr)")
        #expect(!FileManager.default.fileExists(atPath: copies[0].path), "the half-made copy is left: \(stderr)")
        #expect(stderr.contains("reel recover \"\(url.path)\""), "\(stderr)")
        #expect(try Recovery.recover(url).videoFrames >= 30, "the recording keeps what was recorded")
    }

    /// Clips cut off on a disk that is full by now: `reel recover FOLDER -o ELSEWHERE` merges
    /// them onto another disk (it failed with "no space left to create" the clips folder: it
    /// wrote its bookkeeping there first); the clips stay where they are.
    @Test func clipsOnAFullDiskAreRecoveredElsewhere() async throws {
        let dir = try TemporaryDirectory()
        let disk = try SmallDisk(size: "8M")
        let url = disk.url.appendingPathComponent("full.mp4")
        let folder = disk.url.appendingPathComponent("full.clips")
        _ = try await recordTwoClipsAndCut(url, in: dir.url, ending: [SIGKILL], extra: ["--min-free", "0"])
        // Something else takes what is left of the disk.
        _ = try? Data(count: 8_000_000).write(to: disk.url.appendingPathComponent("filler"))
        let out = dir.url.appendingPathComponent("out.mp4")
        let recovered = try ReelBinary.run(["recover", folder.path, "-o", out.path])
        #expect(recovered.status == 0, "\(recovered.stderr)")
        try expectRuns(out, 2)
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("clip-001.mp4").path), "the clips stay")
    }

    @Test func abortedClipRecordingSaysWhereItIs() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("abort.mp4")
        let folder = dir.url.appendingPathComponent("abort.clips")
        // Writing the merged file is slowed (a slow disk), so that the second interrupt comes
        // while the first is still merging the clips.
        let shim = try SlowDiskTests.buildShim(in: dir.url)
        let (status, stderr) = try await recordTwoClipsAndCut(url, in: dir.url, ending: [SIGINT, SIGINT],
                                                              environment: ["LD_PRELOAD": shim.path, "REEL_SLOW_PATH": dir.url.appendingPathComponent(".abort.merging").path,
                                                                            "REEL_SLOW_RATE": "20000"])
        #expect(status == 130, "\(stderr)")
        #expect(!FileManager.default.fileExists(atPath: url.path))
        #expect(!stderr.contains("\(url.path) keeps"), "\(stderr)")
        #expect(stderr.contains(folder.path) && stderr.contains("reel recover"), "\(stderr)")
        #expect(files(in: folder).keys.contains("clip-001.mp4"))

        // The merged file is never written over an existing one.
        try Data("mine".utf8).write(to: url)
        let refused = try ReelBinary.run(["recover", folder.path])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("already exists"), "\(refused.stderr)")
        #expect(try Data(contentsOf: url) == Data("mine".utf8))
        #expect(files(in: folder).keys.contains("clip-001.mp4"), "the clips stay when the merge is refused")

        let elsewhere = dir.url.appendingPathComponent("merged.mp4")
        let recovered = try ReelBinary.run(["recover", folder.path, "-o", elsewhere.path])
        #expect(recovered.status == 0, "\(recovered.stderr)")
        try expectRuns(elsewhere, 2)
    }

    /// A clip recording stopped by its full disk says where the clips are and how to merge
    /// them, as one the disk stopped (exit 3; it failed with exit 1, saying so on standard
    /// error: see `aClipRecordingItsDiskFillsEndsAsTheDiskStoppedIt`).
    @Test func aClipRecordingThatFailsSaysWhereTheClipsAre() throws {
        let mountPoint = try SmallDisk(size: "900k")
        let url = mountPoint.url.appendingPathComponent("full.mp4")
        let folder = mountPoint.url.appendingPathComponent("full.clips")
        let r = try ReelBinary.run(["record", "--test-pattern", "--size", "1280x720", "--crf", "0", "--preset", "ultrafast",
                                    "--min-free", "0", "--duration", "60", "--pause-mode", "clips", "-o", url.path])
        #expect(r.status == 3, "\(r.stderr)")
        #expect(r.output.contains("Saved the clips in \(folder.path)"), "\(r.output)")
        #expect(r.output.contains("reel recover \"\(folder.path)\""), "\(r.output)")
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("clip-001.mp4").path))
    }

    /// A clip recording whose disk fills ends as one the disk stopped, as a single file's does:
    /// exit 3, "lowDiskSpace", the clip the disk cut off ended where it is (its whole samples),
    /// the clips not merged for want of room and said so, with how to merge them; once there
    /// is room, `reel recover` merges every frame they hold. It failed (exit 1); before that
    /// the recover refused the clip as cut short ("46 of its 47 audio packets").
    @Test func aClipRecordingItsDiskFillsEndsAsTheDiskStoppedIt() throws {
        for json in [true, false] {
            let disk = try SmallDisk(size: "12M")
            let url = disk.url.appendingPathComponent("k.mp4")
            let folder = disk.url.appendingPathComponent("k.clips")
            // Lossless noise: 400 KB a frame, the disk full in about a second.
            let r = try ReelBinary.run(["record", "--test-pattern", "--size", "640x480", "--tone", "--crf", "0", "--preset", "ultrafast",
                                        "--filter", "noise=alls=20:allf=t", "--min-free", "0", "--pause-mode", "clips",
                                        "-o", url.path, "--duration", "8"] + (json ? ["--json"] : []))
            #expect(r.status == 3, "\(r.stderr) \(r.output)")
            let clip = folder.appendingPathComponent("clip-001.mp4")
            #expect(!Recovery.isCutOff(clip), "the clip the disk cut off is ended where it is")
            #expect(!FileManager.default.fileExists(atPath: url.path))
            var frames: Int64 = 0
            if json {
                let events = r.output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                let finished = try #require(events.first { $0["event"] as? String == "finished" }, "\(r.output)")
                #expect(finished["ending"] as? String == "lowDiskSpace" && finished["file"] as? String == folder.path, "\(finished)")
                frames = (finished["frames"] as? NSNumber)?.int64Value ?? 0
                let notMerged = try #require(finished["clipsNotMerged"] as? [String: Any], "\(finished)")
                #expect(notMerged["code"] as? String == "insufficientStorage")
                #expect((notMerged["hint"] as? String)?.contains("reel recover \"\(folder.path)\"") == true, "\(notMerged)")
            } else {
                #expect(r.output.contains("Saved the clips in \(folder.path)"), "\(r.output)")
                #expect(r.output.contains("stopped: the disk is full or nearly full"), "\(r.output)")
                #expect(r.output.contains("not merged: the disk filled while the clips in \(folder.path) were recorded"), "\(r.output)")
                #expect(r.output.contains("reel recover \"\(folder.path)\""), "\(r.output)")
                frames = Int64(try #require(MediaProbe.probe(clip).videoStreams.first?.frameCount))
            }
            #expect(frames >= 15, "the clips keep what reached the disk")
            // Room again: the clips merge into the file, every frame of them.
            #expect(try Subprocess.run(["mount", "-o", "remount,size=64m", disk.url.path]).status == 0)
            let recovered = try ReelBinary.run(["recover", folder.path])
            #expect(recovered.status == 0, "\(recovered.stderr)")
            #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == Int(frames))
            #expect(recovered.output.contains("\(frames) frames"), "\(recovered.output)")
            // Every packet the clips list is in it: nothing was left out of the merge (the clip
            // the disk cut off, recovered by a copy, listed its last sound packet past its end).
            #expect(!recovered.output.contains("left out"), "\(recovered.output)")
        }
    }

    /// A clip recording that `--min-free` stops (the disk nearly full, as the default 100 MB
    /// does) whose clips then have no room to be merged ends as the disk stopped it too: exit
    /// 3, the clips kept and said, not a failure. Only a disk filled to under 8 MiB did so
    /// (a reviewer: with the default `--min-free` the merge's failure was exit 1).
    @Test func aClipRecordingMinFreeStoppedWithNoRoomToMergeEndsAsTheDiskStoppedIt() throws {
        let disk = try SmallDisk(size: "40M")
        let url = disk.url.appendingPathComponent("m.mp4")
        let folder = disk.url.appendingPathComponent("m.clips")
        let r = try ReelBinary.run(["record", "--test-pattern", "--size", "640x480", "--tone", "--crf", "0", "--preset", "ultrafast",
                                    "--filter", "noise=alls=20:allf=t", "--min-free", "10M", "--pause-mode", "clips",
                                    "-o", url.path, "--duration", "20", "--json"])
        #expect(r.status == 3, "\(r.stderr) \(r.output)")
        let events = r.output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let finished = try #require(events.first { $0["event"] as? String == "finished" }, "\(r.output) \(r.stderr)")
        #expect(finished["ending"] as? String == "lowDiskSpace" && finished["file"] as? String == folder.path, "\(finished)")
        #expect(finished["clipsNotMerged"] as? [String: Any] != nil, "\(finished)")
        #expect(!FileManager.default.fileExists(atPath: url.path))
        let frames = (finished["frames"] as? NSNumber)?.int64Value ?? 0
        #expect(frames >= 15)
        #expect(try Subprocess.run(["mount", "-o", "remount,size=128m", disk.url.path]).status == 0)
        let recovered = try ReelBinary.run(["recover", folder.path])
        #expect(recovered.status == 0, "\(recovered.stderr)")
        #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == Int(frames))
    }

    @Test func keepClipsNeverOverwritesAnEarlierSession() throws {
        let dir = try TemporaryDirectory()
        let takes = dir.url.appendingPathComponent("takes")
        let first = try ReelBinary.run(["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "--duration", "0.5",
                                        "--keep-clips", takes.path, "-o", dir.url.appendingPathComponent("first.mp4").path])
        #expect(first.status == 0, "\(first.stderr)")
        let before = files(in: takes)
        #expect(before.keys.contains("clip-001.mp4"))
        let second = try ReelBinary.run(["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "--duration", "0.5",
                                         "--keep-clips", takes.path, "-o", dir.url.appendingPathComponent("second.mp4").path])
        #expect(second.status == 1)
        #expect(second.stderr.contains(takes.path), "\(second.stderr)")
        #expect(files(in: takes) == before, "the earlier session's clips are untouched")
        #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("second.mp4").path))

        // A user's own clip-001.mp4 is not taken either.
        let mine = dir.url.appendingPathComponent("mine")
        try FileManager.default.createDirectory(at: mine, withIntermediateDirectories: true)
        try Data("my own clip".utf8).write(to: mine.appendingPathComponent("clip-001.mp4"))
        let third = try ReelBinary.run(["record", "--test-pattern", "--size", "320x240", "--duration", "0.5",
                                        "--keep-clips", mine.path, "-o", dir.url.appendingPathComponent("third.mp4").path])
        #expect(third.status == 1)
        #expect(try Data(contentsOf: mine.appendingPathComponent("clip-001.mp4")) == Data("my own clip".utf8))
    }

    @Test func recoveringAFolderWithoutClipsSaysSo() throws {
        let dir = try TemporaryDirectory()
        let r = try ReelBinary.run(["recover", dir.url.path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("is a folder without the clips of a recording"), "\(r.stderr)")
    }

    @Test func keepClipsNamingAFileIsAClearError() throws {
        let dir = try TemporaryDirectory()
        let file = dir.url.appendingPathComponent("takes")
        try Data("not a folder".utf8).write(to: file)
        let r = try ReelBinary.run(["record", "--test-pattern", "--duration", "0.5", "--keep-clips", file.path,
                                    "-o", dir.url.appendingPathComponent("x.mp4").path])
        #expect(r.status == 1)
        #expect(!r.stderr.contains("NSCocoaErrorDomain"), "\(r.stderr)")
        #expect(r.stderr.contains("\(file.path) is a file, not a folder"), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "one clear line: \(r.stderr)")
        #expect(try Data(contentsOf: file) == Data("not a folder".utf8))
    }
}
