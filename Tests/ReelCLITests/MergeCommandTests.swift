import Foundation
import Testing
import Reel
import ReelTestSupport

/// `reel merge`, run as a user runs it: exit codes, one clear line per problem, the summary.
@Suite(.tags(.realTime)) struct MergeCommandTests {
    /// Writes a clip of `frames` test-pattern frames with the tone, counting from `first`.
    func clip(_ url: URL, frames: Int, first: Int64, size: PixelSize = PixelSize(width: 320, height: 240)) throws {
        var video = VideoSettings(codec: .h264, frameRate: FrameRate(30))
        video.preset = "veryfast"
        let writer = try AssetWriter(configuration: AssetWriter.Configuration(
            url: url, video: AssetWriter.VideoTrack(settings: video, inputFormat: .yuv420p, inputSize: size),
            audio: [AssetWriter.AudioTrack(settings: AudioSettings(), inputFormat: AudioFormat())]))
        let pool = FramePool(format: .yuv420p, size: size, capacity: 2)
        let tone = ToneSource()
        for i in 0..<frames {
            let frame = pool.makeFrame()!
            try TestPattern.draw(index: first + Int64(i), flash: false, into: frame)
            try writer.appendVideo(frame, at: FrameRate(30).time(ofFrame: Int64(i)))
            var samples: [Float] = []
            for n in (i * 1600)..<((i + 1) * 1600) { let v = tone.value(atSample: Int64(n)); samples += [v, v] }
            try writer.appendAudio(AudioBuffer(format: AudioFormat(), presentationTime: MediaTime(value: Int64(i * 1600), timescale: 48_000), data: samples.withUnsafeBytes { Array($0) }),
                                   track: 0)
        }
        _ = try writer.finish()
    }

    @Test func helpListsTheOptions() throws {
        let r = try ReelBinary.run(["merge", "--help"])
        #expect(r.status == 0)
        for option in ["--output", "--reencode", "--mute", "--overwrite", "--json"] {
            #expect(r.output.contains(option), "help lists \(option)")
        }
        #expect(try ReelBinary.run(["--help"]).output.contains("merge"))
    }

    @Test(arguments: [
        (["merge"], "no clips to merge"),
        (["merge", "-o", "/tmp/x.mp4"], "no clips to merge"),
        (["merge", "a.mp4", "b.mp4"], "no output file"),
        (["merge", "a.mp4", "b.mp4", "-o", "x.avi"], "unknown file type '.avi'"),
        (["merge", "a.mp4", "b.mp4", "--mute", "3", "-o", "x.mp4"], "--mute must be between 1 and 2"),
        (["merge", "a.mp4", "b.mp4", "--mute", "one", "-o", "x.mp4"], "--mute needs a whole number"),
        (["merge", "a.mp4", "--frobnicate", "-o", "x.mp4"], "unknown option --frobnicate"),
    ])
    func usageErrorsExitWithTwo(_ args: [String], _ message: String) throws {
        let r = try ReelBinary.run(args)
        #expect(r.status == 2)
        #expect(r.stderr.hasPrefix("reel: \(message)"), "got: \(r.stderr)")
    }

    @Test func mergesClipsAndSaysWhatTheFileHolds() throws {
        let dir = try TemporaryDirectory()
        let a = dir.url.appendingPathComponent("a.mp4"), b = dir.url.appendingPathComponent("b.mp4")
        try clip(a, frames: 45, first: 1000)
        try clip(b, frames: 30, first: 2000)
        let out = dir.url.appendingPathComponent("ab.mp4")
        let r = try ReelBinary.run(["merge", a.path, b.path, "--mute", "2", "-o", out.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.output.contains("Saved \(out.path)"))
        #expect(r.output.contains("2.50 s"))
        #expect(r.output.contains("2 clips joined without re-encoding"))
        #expect(r.output.contains("muted: clip 2"))
        #expect(r.output.contains("75 frames"))
        let counters = try MediaProbe.decodeLuma(out, width: 320, height: 240).map(\.counter)
        #expect(counters == ((1000..<1045).map { Int64($0) } + (2000..<2030).map { Int64($0) }).map { Optional($0) })

        // Once more: the output exists now.
        let again = try ReelBinary.run(["merge", a.path, b.path, "-o", out.path])
        #expect(again.status == 1)
        #expect(again.stderr.contains("already exists") && again.stderr.contains("--overwrite"))
        #expect(again.stderr.split(separator: "\n").count == 1, "one clear line: \(again.stderr)")
        let json = try ReelBinary.run(["merge", b.path, a.path, "--overwrite", "--json", "-o", out.path])
        #expect(json.status == 0, "\(json.stderr)")
        // Progress events, then the result.
        let lines = json.output.split(separator: "\n")
        let events = try lines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(events.dropLast().allSatisfy { $0["event"] as? String == "progress" } && events.count >= 3, "\(json.output)")
        let object = try #require(events.last)
        #expect(object["event"] as? String == "merged")
        #expect(object["frames"] as? Int == 75)
        #expect(object["clips"] as? Int == 2)
        #expect(object["file"] as? String == out.path)
    }

    /// A merge killed before its copy took the name left `.NAME.merging-PID-N.mp4`, as large
    /// as the merge: the next merge into that name removes it once its maker is gone, and says
    /// so (s47 #6: never removed nor said); one of a merge still running stays, named.
    @Test func aKilledMergesLeftoverGoesWithTheNextMerge() throws {
        let dir = try TemporaryDirectory()
        let a = dir.url.appendingPathComponent("a.mp4"), b = dir.url.appendingPathComponent("b.mp4")
        try clip(a, frames: 15, first: 0)
        try clip(b, frames: 15, first: 100)
        let ended = try RecoverCommandTests.numberOfAnEndedProcess()
        let gone = dir.url.appendingPathComponent(".ab.merging-\(ended)-1.mp4")
        let live = dir.url.appendingPathComponent(".ab.merging-\(getpid())-2.mp4")
        for copy in [gone, live] { try Data(try Data(contentsOf: a).prefix(10_000)).write(to: copy) }
        let out = dir.url.appendingPathComponent("ab.mp4")
        let r = try ReelBinary.run(["merge", a.path, b.path, "-o", out.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("removed \(gone.path), an unfinished copy left by an interrupted merge whose process is gone"), "\(r.stderr)")
        #expect(r.stderr.contains("\(live.path) is an unfinished copy left by an interrupted merge"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: gone.path) && FileManager.default.fileExists(atPath: live.path))
    }

    @Test func runtimeFailuresExitWithOneAndOneLine() throws {
        let dir = try TemporaryDirectory()
        let a = dir.url.appendingPathComponent("a.mp4"), big = dir.url.appendingPathComponent("big.mp4")
        try clip(a, frames: 20, first: 0)
        try clip(big, frames: 20, first: 100, size: PixelSize(width: 640, height: 480))
        let out = dir.url.appendingPathComponent("out.mp4")

        let missing = try ReelBinary.run(["merge", a.path, dir.url.appendingPathComponent("nope.mp4").path, "-o", out.path])
        #expect(missing.status == 1)
        #expect(missing.stderr.hasPrefix("reel: error: clip 2 (nope.mp4)"), "\(missing.stderr)")
        #expect(missing.stderr.split(separator: "\n").count == 1)

        let differ = try ReelBinary.run(["merge", a.path, big.path, "-o", out.path])
        #expect(differ.status == 1)
        #expect(differ.stderr.contains("clip 2 (big.mp4) is 640x480 but clip 1 is 320x240"), "\(differ.stderr)")
        #expect(differ.stderr.contains("--reencode"))
        #expect(!FileManager.default.fileExists(atPath: out.path))

        let reencoded = try ReelBinary.run(["merge", a.path, big.path, "--reencode", "-o", out.path])
        #expect(reencoded.status == 0, "\(reencoded.stderr)")
        #expect(reencoded.output.contains("encoded again"))
        #expect(try MediaProbe.probe(out).videoStreams.first?.width == 320)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted() == ["a.mp4", "big.mp4", "out.mp4"])
    }
}
