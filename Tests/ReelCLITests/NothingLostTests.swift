import Foundation
import Testing
import Reel
import ReelTestSupport

/// Nothing lost: every command that writes or replaces a file (`record`, `merge`, `recover`,
/// clips, `--keep-clips`, `--each-source`, `--frame-log`) is pointed at what a user may have
/// there — a file of their own, a folder, its own input, a file another reel is recording —
/// and killed at each stage; then the next run comes. No byte a user recorded is lost,
/// replaced or hidden.
@Suite(.serialized, .tags(.realTime)) struct NothingLostTests {
    /// Files every case starts from: two finished recordings and one cut off by a kill.
    struct Fixtures: Sendable {
        let dir: TemporaryDirectory
        let a: URL, b: URL, cut: URL

        init() throws {
            dir = try TemporaryDirectory()
            a = dir.url.appendingPathComponent("a.mp4")
            b = dir.url.appendingPathComponent("b.mp4")
            cut = dir.url.appendingPathComponent("cut.mp4")
            for url in [a, b] {
                let r = try ReelBinary.run(["record", "--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast",
                                            "--faster-than-real-time", "--duration", "1", "-o", url.path])
                #expect(r.status == 0, "\(r.stderr)")
            }
            // A recording killed mid-way: fragmented, not finalised.
            let killed = try Subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=fsync",
                                             "-e", "inject=fsync:signal=SIGKILL:when=1", ReelBinary.url.path, "record",
                                             "--test-pattern", "--tone", "--size", "320x240", "--faster-than-real-time",
                                             "--duration", "2", "-o", cut.path])
            #expect(killed.status == SIGKILL, "\(killed.stderr)")
            #expect(Recovery.isCutOff(cut))
        }

        func path(_ name: String) -> URL { dir.url.appendingPathComponent(name) }
    }

    /// A command that writes one file, given that file's path.
    struct Writer: CustomStringConvertible, Sendable {
        let description: String
        let arguments: @Sendable (Fixtures, URL) -> [String]
        /// The files it reads (an output equal to one must be refused).
        let inputs: @Sendable (Fixtures) -> [URL]
    }

    static let quick = ["--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast", "--faster-than-real-time", "--duration", "0.5"]

    static let writers: [Writer] = [
        Writer(description: "record", arguments: { _, out in ["record"] + quick + ["-o", out.path] }, inputs: { _ in [] }),
        Writer(description: "record --camera=FILE", arguments: { f, out in
            ["record", "--camera=\(f.a.path)", "--duration", "0.5", "-o", out.path]
        }, inputs: { f in [f.a] }),
        Writer(description: "merge", arguments: { f, out in ["merge", f.a.path, f.b.path, "-o", out.path] }, inputs: { f in [f.a, f.b] }),
        Writer(description: "recover -o", arguments: { f, out in ["recover", f.cut.path, "-o", out.path] }, inputs: { f in [f.cut] }),
        Writer(description: "record --frame-log", arguments: { f, out in
            ["record"] + quick + ["-o", f.path("log-\(UUID().uuidString).mp4").path, "--frame-log", out.path]
        }, inputs: { _ in [] }),
    ]

    static func bytes(_ url: URL) -> Data? { try? Data(contentsOf: url) }

    @Test func anExistingFileIsNeverReplacedUnasked() throws {
        let f = try Fixtures()
        for writer in Self.writers {
            let mine = f.path("mine-\(writer.description.filter(\.isLetter)).mp4")
            try Data("the user's own bytes".utf8).write(to: mine)
            let r = try ReelBinary.run(writer.arguments(f, mine))
            #expect(r.status != 0, "\(writer): \(r.stderr)")
            #expect(r.stderr.contains("already exists"), "\(writer): \(r.stderr)")
            #expect(Self.bytes(mine) == Data("the user's own bytes".utf8), "\(writer) replaced the user's file")
        }
    }

    @Test func anOutputThatIsAnInputIsRefusedEvenWithOverwrite() throws {
        let f = try Fixtures()
        for writer in Self.writers {
            for input in writer.inputs(f) {
                let before = Self.bytes(input)
                let link = f.path("link-\(UUID().uuidString).mp4")
                try FileManager.default.createSymbolicLink(at: link, withDestinationURL: input)
                for target in [input, link] {
                    let r = try ReelBinary.run(writer.arguments(f, target) + ["--overwrite"])
                    #expect(r.status != 0, "\(writer) -o \(target.lastPathComponent): \(r.stderr)")
                    #expect(Self.bytes(input) == before, "\(writer) wrote over its own input \(input.lastPathComponent)")
                }
            }
        }
    }

    @Test func aFolderIsNeverWrittenOver() throws {
        let f = try Fixtures()
        for writer in Self.writers {
            let folder = f.path("folder-\(writer.description.filter(\.isLetter))")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let keep = folder.appendingPathComponent("keep.mp4")
            try Data("kept".utf8).write(to: keep)
            let r = try ReelBinary.run(writer.arguments(f, folder) + ["--overwrite"])
            // A recording may put a dated file in it; nothing else may touch it.
            #expect(Self.bytes(keep) == Data("kept".utf8), "\(writer): \(r.stderr)")
            var isFolder: ObjCBool = false
            #expect(FileManager.default.fileExists(atPath: folder.path, isDirectory: &isFolder) && isFolder.boolValue)
            if r.status != 0 { #expect(r.stderr.contains("folder"), "\(writer): \(r.stderr)") }
        }
    }

    @Test func aFileBeingRecordedIsNeitherReplacedNorRecoveredNorMerged() async throws {
        let f = try Fixtures()
        let live = f.path("live.mp4")
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast", "--duration", "4", "--json", "-o", live.path]
        let events = f.path("live.jsonl")
        _ = FileManager.default.createFile(atPath: events.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: events)
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Wait until its first fragment is on disk: it looks cut off to anyone who reads it.
        let deadline = Date().addingTimeInterval(10)
        while !Recovery.isCutOff(live) && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(Recovery.isCutOff(live))

        var attempts: [(String, CommandResult)] = []
        for writer in Self.writers {
            attempts.append((writer.description, try ReelBinary.run(writer.arguments(f, live) + ["--overwrite"])))
        }
        attempts.append(("recover in place", try ReelBinary.run(["recover", live.path])))
        attempts.append(("recover -o", try ReelBinary.run(["recover", live.path, "-o", f.path("copy.mp4").path])))
        attempts.append(("merge from it", try ReelBinary.run(["merge", live.path, f.a.path, "-o", f.path("m.mp4").path])))
        for (what, r) in attempts {
            #expect(r.status != 0, "\(what) touched a file being recorded: \(r.stderr)")
            // (A frame log is refused sooner: it never replaces a video file at all.)
            #expect(r.stderr.contains("being recorded") || r.stderr.contains("is a video file, not a frame log"), "\(what): \(r.stderr)")
        }
        // Another recording in the folder does not suggest recovering it.
        let other = try ReelBinary.run(["record"] + Self.quick + ["-o", f.path("other.mp4").path])
        #expect(other.status == 0 && !other.stderr.contains("live.mp4"), "\(other.stderr)")

        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let counters = try MediaProbe.decodeLuma(live, width: 320, height: 240).compactMap(\.counter)
        // Every frame captured: with five reel processes started beside it on a loaded machine, the
        // real-time source may miss a few, which the recording counts as dropped (117 of 120 and
        // nothing said of the 3 in a .ci/run rehearsal, three suites side by side).
        let finished = try String(contentsOf: events, encoding: .utf8).split(separator: "\n")
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }.last { $0["event"] as? String == "finished" }
        let dropped = finished?["dropped"] as? Int ?? -1
        #expect(counters.count + dropped == 120 && zip(counters, counters.dropFirst()).allSatisfy { $1 > $0 },
                "the running recording kept every frame it captured: \(counters.count), \(dropped) reported dropped")
    }

    /// `--overwrite` replaces the old file only once the new recording has a part that plays
    /// on the disk: killed before that, the old file is there as it was.
    @Test func anOverwriteKilledEarlyKeepsTheOldFile() async throws {
        let f = try Fixtures()
        let old = Self.bytes(f.a)
        for delay in [0.2, 0.5, 0.8, 1.1, 1.6] {
            let process = Process()
            process.executableURL = ReelBinary.url
            process.arguments = ["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "-o", f.a.path, "--overwrite"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            try await Task.sleep(for: .seconds(delay))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            if Self.bytes(f.a) == old { continue }
            // Replaced: then by a recording that plays.
            let frames = try MediaProbe.probe(f.a).videoStreams.first?.frameCount ?? 0
            #expect(frames > 0, "killed after \(delay) s: the old file was replaced by one with no frames")
            let decode = try Subprocess.run(["ffmpeg", "-v", "error", "-i", f.a.path, "-f", "null", "-"])
            #expect(decode.status == 0, "killed after \(delay) s: \(decode.stderr)")
            return
        }
    }

    /// A clip recording killed while its clips are removed after the merge: the merged file
    /// holds it all, and recover and the next recording say so rather than send the user round.
    @Test func killedWhileRemovingMergedClips() throws {
        let f = try Fixtures()
        let url = f.path("x.mp4")
        let folder = f.path("x.clips")
        let r = try Subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=unlink,unlinkat",
                                    "-e", "inject=unlink,unlinkat:signal=SIGKILL:when=2", ReelBinary.url.path, "record",
                                    "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "--faster-than-real-time",
                                    "--duration", "1", "--pause-mode", "clips", "-o", url.path])
        #expect(r.status == SIGKILL, "\(r.stderr)")
        #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == 30)
        guard FileManager.default.fileExists(atPath: folder.path) else { return }
        let recover = try ReelBinary.run(["recover", folder.path])
        #expect(recover.stderr.contains("merged into \(url.path) already"), "\(recover.stderr)")
        let again = try ReelBinary.run(["record"] + Self.quick + ["--pause-mode", "clips", "-o", url.path, "--overwrite"])
        #expect(again.stderr.contains("merged into it already") || again.status == 0, "\(again.stderr)")
    }

    /// A clip recording killed just after its merged file took its name (before the manifest
    /// said merged): recover sees the file holds every frame of the clips and finishes the
    /// recorder's work, rather than ask for a second copy elsewhere.
    @Test func killedJustAfterTheMergedFileTookItsName() throws {
        let f = try Fixtures()
        let url = f.path("y.mp4")
        let folder = f.path("y.clips")
        let r = try Subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=unlink,unlinkat",
                                    "-e", "inject=unlink,unlinkat:signal=SIGKILL:when=1", ReelBinary.url.path, "record",
                                    "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "--faster-than-real-time",
                                    "--duration", "1", "--pause-mode", "clips", "-o", url.path])
        #expect(r.status == SIGKILL, "\(r.stderr)")
        #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == 30)
        try #require(FileManager.default.fileExists(atPath: folder.path), "killed before the clips went")
        let recover = try ReelBinary.run(["recover", folder.path])
        #expect(recover.status == 0, "\(recover.stderr)")
        #expect(recover.output.contains("Recovered \(url.path) from 1 clip"), "\(recover.output)")
        #expect(!FileManager.default.fileExists(atPath: folder.path), "the clips went, as the recorder would have removed them")
        #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == 30)
    }

    /// A clip recording cut off before its merge keeps its name: a new recording into that
    /// file is refused (its clips would be left with nowhere to go), and recover merges them.
    @Test func aCutOffClipRecordingKeepsItsName() async throws {
        let f = try Fixtures()
        let url = f.path("takes.mp4")
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "--pause-mode", "clips", "-o", url.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try await Task.sleep(for: .seconds(1.5))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let folder = f.path("takes.clips")
        #expect(FileManager.default.fileExists(atPath: folder.path))
        for extra in [[String](), ["--overwrite"]] {
            let again = try ReelBinary.run(["record"] + Self.quick + ["-o", url.path] + extra)
            #expect(again.status == 1 && again.stderr.contains("never merged"), "\(extra): \(again.stderr)")
            #expect(!FileManager.default.fileExists(atPath: url.path))
        }
        // Another kind of file of that name is free, unless it too wants that clips folder.
        let other = f.path("takes.mkv")
        let plain = try ReelBinary.run(["record"] + Self.quick + ["-o", other.path])
        #expect(plain.status == 0, "\(plain.stderr)")
        let clipped = try ReelBinary.run(["record"] + Self.quick + ["--pause-mode", "clips", "-o", f.path("takes.mov").path])
        #expect(clipped.status == 1 && clipped.stderr.contains("a recording of takes.mp4 that was never merged"), "\(clipped.stderr)")
        // -o FOLDER keeps the name and changes the place.
        let elsewhere = f.path("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        let recovered = try ReelBinary.run(["recover", folder.path, "-o", elsewhere.path])
        #expect(recovered.status == 0, "\(recovered.stderr)")
        #expect((try MediaProbe.probe(elsewhere.appendingPathComponent("takes.mp4")).videoStreams.first?.frameCount ?? 0) > 0)
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test func aKilledRecordingSurvivesTheNextRun() throws {
        let f = try Fixtures()
        let before = Self.bytes(f.cut)
        // The same command again: refused, the cut-off file is named, not replaced.
        let again = try ReelBinary.run(["record"] + Self.quick + ["-o", f.cut.path])
        #expect(again.status != 0 && Self.bytes(f.cut) == before, "\(again.stderr)")
        // A recording beside it points at it, and recover brings it back.
        let beside = try ReelBinary.run(["record"] + Self.quick + ["-o", f.path("beside.mp4").path])
        #expect(beside.stderr.contains("reel recover \"\(f.cut.path)\""), "\(beside.stderr)")
        let frames = try MediaProbe.probe(f.cut).videoStreams.first?.frameCount ?? 0
        let recovered = try ReelBinary.run(["recover", f.cut.path])
        #expect(recovered.status == 0, "\(recovered.stderr)")
        #expect(!Recovery.isCutOff(f.cut))
        #expect((try MediaProbe.probe(f.cut).videoStreams.first?.frameCount ?? 0) >= frames)
        // Recovering it again is nothing to do.
        let twice = try ReelBinary.run(["recover", f.cut.path])
        #expect(twice.status == 0, "\(twice.stderr)")
    }

    /// A merge or a recovery killed at each of its writes leaves the inputs as they were, no
    /// half-written file under the output's name, and nothing that stops the next run.
    @Test(arguments: ["merge", "recover -o", "recover in place"])
    func killedWhileWritingThenRunAgain(_ command: String) throws {
        let f = try Fixtures()
        let out = f.path("out.mp4")
        func arguments() -> [String] {
            switch command {
            case "merge": return ["merge", f.a.path, f.b.path, "-o", out.path]
            case "recover -o": return ["recover", f.cut.path, "-o", out.path]
            default: return ["recover", f.cut.path]
            }
        }
        let inputs = command == "merge" ? [f.a, f.b] : [f.cut]
        let before = inputs.map(Self.bytes)
        let cutFrames = try MediaProbe.probe(f.cut).videoStreams.first?.frameCount ?? 0
        for k in [1, 2, 3, 5, 8, 13, 40] {
            let r = try Subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=write,pwrite64,rename,renameat,renameat2,fsync",
                                        "-e", "inject=write,pwrite64,rename,renameat,renameat2,fsync:signal=SIGKILL:when=\(k)",
                                        ReelBinary.url.path] + arguments())
            if command == "recover in place" {
                // In place, the file may be finished or still cut off, but it always plays every frame it held.
                let frames = try MediaProbe.probe(f.cut).videoStreams.first?.frameCount ?? 0
                #expect(frames >= cutFrames, "killed at write \(k): \(frames) of \(cutFrames) frames")
                let decode = try Subprocess.run(["ffmpeg", "-v", "error", "-i", f.cut.path, "-f", "null", "-"])
                #expect(decode.status == 0, "killed at write \(k): \(decode.stderr)")
            } else {
                #expect(inputs.map(Self.bytes) == before, "killed at write \(k): an input changed")
                if FileManager.default.fileExists(atPath: out.path) {
                    // Only ever a complete file under the output's name.
                    #expect(r.status == 0 || !Recovery.isCutOff(out), "killed at write \(k)")
                    let decode = try Subprocess.run(["ffmpeg", "-v", "error", "-i", out.path, "-f", "null", "-"])
                    #expect(decode.status == 0 && decode.stderr.isEmpty, "killed at write \(k): \(decode.stderr)")
                    try FileManager.default.removeItem(at: out)
                }
            }
        }
        // The next run, with nothing killed, does its work.
        let next = try ReelBinary.run(arguments())
        #expect(next.status == 0, "\(next.stderr)")
        if command == "recover in place" {
            #expect(!Recovery.isCutOff(f.cut))
        } else {
            #expect(FileManager.default.fileExists(atPath: out.path))
        }
    }

    @Test func eachSourceAndKeepClipsNeverWriteOverFilesInTheirFolder() throws {
        let f = try Fixtures()
        for (option, name) in [("--each-source", "01-test-red.mp4"), ("--keep-clips", "clip-001.mp4")] {
            let folder = f.path("folder\(option)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let theirs = folder.appendingPathComponent(name)
            try Data("an earlier session's file".utf8).write(to: theirs)
            let r = try ReelBinary.run(["record", "--camera=test:red", "--camera=test:blue", "--size", "320x240", "--preset", "ultrafast",
                                        "--faster-than-real-time", "--duration", "0.5", option, folder.path,
                                        "-o", f.path("main\(option).mp4").path])
            #expect(Self.bytes(theirs) == Data("an earlier session's file".utf8), "\(option): \(r.stderr)")
        }
    }
}
