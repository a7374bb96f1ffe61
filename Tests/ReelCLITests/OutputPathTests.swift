import Foundation
import Testing
@testable import ReelCLI
import Reel
import ReelTestSupport

/// Where `reel record` writes: what `-o` may name (a file, a folder), what it refuses
/// (standard output, a device, a pipe, its own input), and dated names that never collide.
@Suite(.serialized, .tags(.realTime)) struct OutputPathTests {
    let quick = ["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "--duration", "0.3"]

    @Test func standardOutputDevicesAndPipesAreRefusedClearly() throws {
        let dir = try TemporaryDirectory()
        let fifo = dir.url.appendingPathComponent("fifo")
        #expect(mkfifo(fifo.path, 0o644) == 0)
        for (target, message) in [("-", "does not write to standard output"), ("/dev/null", "is a device"),
                                  (fifo.path, "is a pipe"), (dir.url.path + "/missing/", "there is no such folder")] {
            let r = try ReelBinary.run(quick + ["-o", target])
            #expect(r.status == 2, "-o \(target): \(r.stderr)")
            #expect(r.stderr.contains(message), "-o \(target): \(r.stderr)")
        }
        // recover and merge refuse them too.
        for target in ["-", "/dev/null", fifo.path] {
            let recover = try ReelBinary.run(["recover", "/nonexistent.mp4", "-o", target])
            #expect(recover.status == 2 && recover.stderr.contains("not a file"), "recover -o \(target): \(recover.stderr)")
            let merge = try ReelBinary.run(["merge", "/nonexistent.mp4", "-o", target])
            #expect(merge.status == 2, "merge -o \(target): \(merge.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: "/dev/null.mp4") && !FileManager.default.fileExists(atPath: "-.mp4"))
        // Nothing was created beside them (no `-.mp4`, no `fifo.mp4`).
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path) == ["fifo"])
        #expect(!FileManager.default.fileExists(atPath: "/dev/null.mp4"))
    }

    /// After a crash, running the same command again names the cut-off recording and how to
    /// recover it (it used to say only "pass --overwrite", which throws the recording away).
    /// A link to nothing as -o is said to be one (it was refused as "already exists", which
    /// nothing did); a name ending in a space is refused (it recorded into "x.mp4 .mp4"). s5 F12.
    @Test func aBrokenLinkAndATrailingSpaceAreSaidForWhatTheyAre() throws {
        let dir = try TemporaryDirectory()
        let link = dir.url.appendingPathComponent("link.mp4")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: dir.url.appendingPathComponent("gone.mp4").path)
        let broken = try ReelBinary.run(quick + ["-o", link.path])
        #expect(broken.status == 1 && broken.stderr.contains("is a link to \(dir.url.path)/gone.mp4, which does not exist"), "\(broken.stderr)")
        #expect(!broken.stderr.contains("already exists"), "\(broken.stderr)")
        let spaced = try ReelBinary.run(quick + ["-o", dir.url.appendingPathComponent("x.mp4 ").path])
        #expect(spaced.status == 2 && spaced.stderr.contains("the name ends with a space"), "\(spaced.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.url.path)
        #expect(names == ["link.mp4"], "\(names)")
    }

    @Test func aCutOffRecordingInTheWayIsNamedWithItsRecovery() throws {
        let dir = try TemporaryDirectory()
        let cut = dir.url.appendingPathComponent("crash.mp4")
        try FileManager.default.copyItem(at: FuzzSeeds.url("reel-cut.mp4"), to: cut)
        let before = try Data(contentsOf: cut)
        let r = try ReelBinary.run(quick + ["-o", cut.path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("cut off") && r.stderr.contains("reel recover"), "\(r.stderr)")
        #expect(try Data(contentsOf: cut) == before)
    }

    /// --overwrite is for the recording: a frame log never replaces a video file.
    @Test func theFrameLogNeverReplacesAVideo() throws {
        let dir = try TemporaryDirectory()
        let video = dir.url.appendingPathComponent("take.mp4")
        try FileManager.default.copyItem(at: FuzzSeeds.url("final.mp4"), to: video)
        let before = try Data(contentsOf: video)
        let r = try ReelBinary.run(quick + ["--frame-log", video.path, "--overwrite", "-o", dir.url.appendingPathComponent("new.mp4").path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("is a video file, not a frame log"), "\(r.stderr)")
        #expect(try Data(contentsOf: video) == before)
    }

    @Test func aFileWithoutAnEndingThatExistsIsNotSiblinged() throws {
        // `-o /dev/stdout` with standard output redirected to a file, or a user's own file.
        let dir = try TemporaryDirectory()
        let plain = dir.url.appendingPathComponent("notes")
        try Data("mine".utf8).write(to: plain)
        let r = try ReelBinary.run(quick + ["-o", plain.path])
        #expect(r.status == 2 && r.stderr.contains("has no .mp4, .mov or .mkv ending"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: plain.path + ".mp4"))
        #expect(try Data(contentsOf: plain) == Data("mine".utf8))
    }

    @Test func aFolderGetsADatedFileAndSameSecondRecordingsDoNotCollide() async throws {
        let dir = try TemporaryDirectory()
        // Two recordings started together into one folder, given as `DIR` and as `DIR/`.
        async let first = Task.detached { try ReelBinary.run(self.quick + ["-o", dir.url.path]) }.value
        async let second = Task.detached { try ReelBinary.run(self.quick + ["-o", dir.url.path + "/"]) }.value
        let results = try await [first, second]
        for r in results { #expect(r.status == 0, "\(r.stderr)") }
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted()
        #expect(names.count == 2, "\(names)")
        for name in names {
            #expect(name.hasPrefix("Reel ") && name.hasSuffix(".mp4"), "\(name)")
            #expect(abs(try MediaProbe.probe(dir.url.appendingPathComponent(name)).duration - 0.3) < 0.05)
        }
    }

    @Test func theVideosFolderFromTheEnvironment() throws {
        let dir = try TemporaryDirectory()
        let videos = dir.url.appendingPathComponent("Films")
        try FileManager.default.createDirectory(at: videos, withIntermediateDirectories: true)
        #expect(OutputLocation.videosDirectory(environment: ["HOME": dir.url.path, "XDG_VIDEOS_DIR": videos.path]).path == videos.path)
        #expect(OutputLocation.videosDirectory(environment: ["HOME": dir.url.path, "XDG_VIDEOS_DIR": "$HOME/Films"]).path == videos.path)
        let r = try ReelBinary.run(Array(quick), environment: ["HOME": dir.url.path, "XDG_VIDEOS_DIR": videos.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: videos.path).count == 1)
    }

    @Test func noOutputMayBeTheFilePlayedAsACamera() throws {
        let dir = try TemporaryDirectory()
        let clip = dir.url.appendingPathComponent("clip.mp4")
        #expect(try ReelBinary.run(quick + ["-o", clip.path]).status == 0)
        let before = try Data(contentsOf: clip)
        let link = dir.url.appendingPathComponent("link.mp4")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: clip)
        for output in [["-o", clip.path], ["-o", link.path], ["-o", dir.url.path + "/./clip.mp4"],
                       ["-o", dir.url.appendingPathComponent("out.mp4").path, "--frame-log", clip.path]] {
            let r = try ReelBinary.run(["record", "--camera=\(clip.path)", "--duration", "0.3", "--overwrite"] + output)
            #expect(r.status == 2, "\(output): \(r.stderr)")
            #expect(r.stderr.contains("is the file played as a camera"), "\(output): \(r.stderr)")
        }
        let log = try ReelBinary.run(quick + ["-o", dir.url.appendingPathComponent("a.mp4").path,
                                              "--frame-log", dir.url.appendingPathComponent("a.mp4").path])
        #expect(log.status == 2 && log.stderr.contains("is the recording's own file"), "\(log.stderr)")
        #expect(try Data(contentsOf: clip) == before, "the camera's file is untouched")
    }

    @Test func theFrameLogIsAFileToo() throws {
        let dir = try TemporaryDirectory()
        let fifo = dir.url.appendingPathComponent("fifo")
        #expect(mkfifo(fifo.path, 0o644) == 0)
        for target in ["-", "/dev/null", fifo.path, dir.url.path] {
            let r = try ReelBinary.run(quick + ["-o", dir.url.appendingPathComponent("x.mp4").path, "--frame-log", target, "--overwrite"])
            #expect(r.status == 2, "--frame-log \(target): \(r.stderr)")
        }
        var info = stat()
        #expect(lstat("/dev/null", &info) == 0 && (info.st_mode & S_IFMT) == S_IFCHR)
        #expect(lstat(fifo.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFIFO)
    }

    @Test func suggestedCommandsSurviveAShell() throws {
        // A file name is one word when the suggested `reel recover …` is pasted into a shell.
        for name in ["plain.mp4", "with space.mp4", "talk $(touch PWNED).mp4", "it's \"quoted\".mp4", "back`tick`.mp4",
                     "bang!.mp4", "new\nline.mp4", "dollar$HOME.mp4", "back\\slash.mp4", "esc\u{1B}[2J it's\\n\t.mp4", "c1\u{9B}é.mp4"] {
            let r = try Subprocess.run(["bash", "-c", "printf %s " + Shell.quoted("/tmp/x/" + name)])
            #expect(r.output == "/tmp/x/" + name, "\(name) came back as \(r.output)")
            // And printed on one line, with nothing a terminal acts on (s43: a newline and an ESC went out raw).
            #expect(!Shell.quoted(name).unicodeScalars.contains(where: Shell.isControl), "\(Shell.quoted(name))")
        }
        #expect(!FileManager.default.fileExists(atPath: "PWNED"))
    }

    @Test func helpOnACommand() throws {
        let r = try ReelBinary.run(["help", "record"])
        #expect(r.status == 0 && r.output.contains("Usage: reel record"), "\(r.output)")
        let bad = try ReelBinary.run(["help", "frobnicate"])
        #expect(bad.status == 2, "\(bad.stderr)")
    }
}

/// The fuzzer's seed files (Tests/Fuzz/seeds): small complete and cut-off recordings.
enum FuzzSeeds {
    static func url(_ name: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fuzz/seeds/\(name)")
    }
}
