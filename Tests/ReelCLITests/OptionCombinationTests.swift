import Foundation
import Testing
@testable import ReelCLI
import Reel
import ReelTestSupport

/// Every option value is either honoured or refused as a usage error that says why and what
/// would work; none is accepted and then ignored, or found wrong only when recording starts.
@Suite struct OptionCombinationTests: ParsesRecordOptions {
    /// Combinations that are accepted.
    @Test(arguments: [
        ["--codec", "vp9", "--format", "mkv", "--preset", "veryslow"],
        ["--codec", "av1", "--format", "mkv", "--preset", "ultrafast"],
        ["--codec", "vp9", "--format", "mkv", "--crf", "63"],
        ["--codec", "av1", "--crf", "0"],
        ["--codec", "h264", "--crf", "51"],
        ["--codec", "hevc", "--profile", "main10"],
        ["--codec", "hevc", "--profile", "main"],
        ["--profile", "baseline"],
        ["--profile", "high10"],
        ["--codec", "vp9", "--format", "mkv", "--profile", "2"],
        ["--codec", "av1", "--format", "mkv", "--profile", "main"],
        ["--bitrate", "10k"],
        ["--bitrate", "500M"],
        ["--keyframe-interval", "1", "--codec", "vp9", "--format", "mkv"],
        ["--size", "16x16"],
        ["--size", "8192x8192"],
        ["--tone", "--audio-codec", "opus", "--format", "mkv", "--audio-bitrate", "512k"],
        ["--tone", "--audio-codec", "opus", "--format", "mkv", "--audio-bitrate", "8k"],
        ["--tone", "--audio-bitrate", "24k"],
        ["--tone", "--audio-bitrate", "256k"],
        ["--tone", "--mic", "--mix-audio"],
        ["--camera=test", "--zoom", "2"],
        ["--screen", "--camera=test", "--zoom", "2"],
        ["--camera=test", "--camera=test:red", "--layout", "grid"],
    ])
    func accepted(_ args: [String]) {
        let full = args.contains("--screen") || args.contains { $0.hasPrefix("--camera") } ? args : ["--test-pattern"] + args
        #expect(usageError(full) == nil, "\(full)")
    }

    /// Combinations that are refused, with (part of) the message that says why.
    @Test(arguments: [
        // Presets: every codec has the same names, and only those.
        (["--codec", "vp9", "--format", "mkv", "--preset", "bogus"],
         "unknown preset 'bogus' for vp9 (use ultrafast, superfast, veryfast, faster, fast, medium, slow, slower, veryslow or placebo)"),
        (["--codec", "av1", "--format", "mkv", "--preset", "good"], "unknown preset 'good' for av1"),
        // Profiles: the codec's own, listed.
        (["--profile", "bogus"], "h264 has no profile 'bogus' (use baseline, main, high or high10)"),
        (["--codec", "hevc", "--profile", "high"], "hevc has no profile 'high' (use main or main10)"),
        (["--codec", "vp9", "--format", "mkv", "--profile", "main"], "vp9 has no profile 'main' (use 0 or 2)"),
        (["--codec", "av1", "--format", "mkv", "--profile", "high"], "av1 has no profile 'high' (use main)"),
        (["--codec", "h264", "--profile", "main10"], "h264 has no profile 'main10'"),
        // Quality: each codec's scale.
        (["--crf", "52"], "--crf must be between 0 and 51 for h264, not 52"),
        (["--codec", "hevc", "--crf", "63"], "--crf must be between 0 and 51 for hevc, not 63"),
        (["--codec", "vp9", "--format", "mkv", "--crf", "64"], "--crf must be between 0 and 63 for vp9, not 64"),
        (["--codec", "av1", "--crf", "-1"], "--crf must be between 0 and 63 for av1, not -1"),
        // Bit rates: a sane range, and never a crash on a huge number.
        (["--bitrate", "1"], "--bitrate must be between 10k and 500M, not 1"),
        (["--bitrate", "9k"], "--bitrate must be between 10k and 500M, not 9k"),
        (["--bitrate", "1e30"], "--bitrate needs a bit rate such as 4M or 160k, not '1e30'"),
        (["--bitrate", "2G"], "--bitrate needs a bit rate such as 4M or 160k, not '2G'"),
        (["--tone", "--audio-bitrate", "1e30"], "--audio-bitrate needs a bit rate such as 4M or 160k, not '1e30'"),
        (["--tone", "--audio-bitrate", "8k"], "--audio-bitrate must be between 24k and 256k for AAC, not 8k"),
        (["--tone", "--audio-bitrate", "320k"], "--audio-bitrate must be between 24k and 256k for AAC, not 320k"),
        (["--tone", "--audio-codec", "opus", "--format", "mkv", "--audio-bitrate", "600k"],
         "--audio-bitrate must be between 8k and 512k for Opus, not 600k"),
        (["--max-size", "2000000T"], "--max-size of '2000000T' is too large"),
        (["--min-free", "99999999999999999999T"], "--min-free of '99999999999999999999T' is too large"),
        // Sizes are decimal numbers with a unit: no hexadecimal or exponent, and binary units too.
        (["--max-size", "1e30"], "--max-size needs a size such as 500M, 2G or 64MiB, not '1e30'"),
        (["--write-buffer", "0x10"], "--write-buffer needs a size such as 500M, 2G or 64MiB, not '0x10'"),
        (["--write-buffer", "1e6"], "--write-buffer needs a size such as 500M, 2G or 64MiB, not '1e6'"),
        (["--write-buffer", "-1M"], "--write-buffer needs a size such as 500M, 2G or 64MiB, not '-1M'"),
        (["--write-buffer", "1.M"], "--write-buffer needs a size such as 500M, 2G or 64MiB, not '1.M'"),
        (["--write-buffer", "64 M"], "--write-buffer needs a size such as 500M, 2G or 64MiB, not '64 M'"),
        (["--max-size", "0.0001"], "--max-size must be at least 1 byte"),
        (["--max-size", "5k"], "--max-size must be at least 64k"),
        (["--duration", "1e-9"], "--duration needs a duration such as 10, 2.5s, 5m, 1h30m or 01:30, not '1e-9'"),
        (["--duration", "01:30:99"], "--duration needs a duration"),
        // Sizes: the stated range is the one that works.
        (["--size", "14x16"], "--size 14x16 is out of range (16x16 to 8192x8192)"),
        (["--size", "8194x100"], "--size 8194x100 is out of range (16x16 to 8192x8192)"),
        // Options that do nothing with the sources given.
        (["--screen", "--zoom", "2"], "--zoom does nothing without a camera, the test pattern or --follow-cursor"),
        (["--screen", "--audio-codec", "opus", "--format", "mkv"], "--audio-codec does nothing without an audio source (--mic, --app-audio or --tone)"),
        (["--screen", "--audio-bitrate", "96k"], "--audio-bitrate does nothing without an audio source"),
        (["--screen", "--mix-audio"], "--mix-audio does nothing without two or more audio sources"),
        (["--screen", "--tone", "--mix-audio"], "--mix-audio does nothing without two or more audio sources"),
        (["--tone", "--codec", "hevc"], "--codec does nothing without a video source (--screen, --camera or --test-pattern)"),
        (["--tone", "--crf", "20"], "--crf does nothing without a video source"),
        (["--tone", "--fps", "60"], "--fps does nothing without a video source"),
        (["--tone", "--size", "640x360"], "--size does nothing without a video source"),
        (["--tone", "--frame-log", "f.csv"], "--frame-log does nothing without a video source"),
        (["--tone", "--each-source", "dir"], "--each-source does nothing without a video source"),
        (["--test-pattern", "--no-cursor"], "--no-cursor does nothing without --screen"),
        (["--test-pattern", "--layout", "grid"], "--layout does nothing without two or more video sources"),
        (["--test-pattern", "--pip-size", "0.3"], "--pip-size does nothing without two or more video sources"),
        // Durations: compound ones in order, nothing else.
        (["--duration", "1m1h"], "--duration needs a duration such as 10, 2.5s, 5m, 1h30m or 01:30, not '1m1h'"),
        (["--duration", "1h1h"], "not '1h1h'"),
        (["--duration", "1h30"], "not '1h30'"),
        (["--duration", "1hm"], "not '1hm'"),
        (["--duration", "h"], "not 'h'"),
        (["--duration", "1.5h30m"], "not '1.5h30m'"),
        (["--duration", "1h-30m"], "not '1h-30m'"),
        (["--duration", "1h 30m"], "not '1h 30m'"),
        (["--duration", "0h0m"], "--duration must be more than zero"),
        (["--fps", "30/0"], "--fps needs a number of frames per second"),
    ])
    func refused(_ args: [String], _ message: String) {
        let sources = ["--screen", "--mic", "--tone", "--test-pattern"]
        let full = args.contains { sources.contains($0) || $0.hasPrefix("--camera") } ? args : ["--test-pattern"] + args
        let error = usageError(full)
        #expect(error?.contains(message) == true, "\(full): got \(error ?? "no error")")
    }

    @Test func compoundDurations() throws {
        #expect(try ValueParser.duration("1h30m", option: "d").seconds == 5400)
        #expect(try ValueParser.duration("2m30s", option: "d").seconds == 150)
        #expect(try ValueParser.duration("1h2m3s", option: "d").seconds == 3723)
        #expect(try ValueParser.duration("1h30s", option: "d").seconds == 3630)
        #expect(try ValueParser.duration("1h2.5m", option: "d").seconds == 3750)
        #expect(try ValueParser.duration("90m", option: "d").seconds == 5400)
        // Numbers are written out, as in sizes: an exponent is refused.
        #expect(throws: UsageError.self) { try ValueParser.duration("1e3s", option: "d") }
        #expect(try options(["--test-pattern", "--max-duration", "1h30m"]).maxDuration == MediaTime(seconds: 5400))
    }

    /// Sizes in decimal and binary units, as `df -h`, `ls -h` and people write them.
    @Test func sizesInEveryUnit() throws {
        for (text, bytes) in [("1000", 1000), ("1000B", 1000), ("500k", 500_000), ("500KB", 500_000), ("64M", 64_000_000),
                              ("64MB", 64_000_000), ("64MiB", 64 << 20), ("1.5G", 1_500_000_000), ("2GiB", 2 << 30),
                              ("1T", 1_000_000_000_000), ("0", 0)] as [(String, Int64)] {
            #expect(try ValueParser.size(text, option: "s", allowsZero: true) == bytes, "\(text)")
        }
        #expect(try options(["--test-pattern", "--write-buffer", "16MiB"]).writeBufferSize == 16 << 20)
    }

    /// 29.97 is kept exactly and shown as people write it.
    @Test func fractionalFrameRates() throws {
        let o = try options(["--test-pattern", "--fps", "29.97"])
        #expect(o.frameRate == FrameRate(2997, per: 100))
        #expect(o.frameRate.description == "29.97")
        #expect(try options(["--test-pattern", "--fps", "30000/1001"]).frameRate == FrameRate(30000, per: 1001))
        #expect(try options(["--test-pattern", "--fps", "25.0"]).frameRate == FrameRate(25))
        #expect(FrameRate(30000, per: 1001).description == "30000/1001")
        #expect(FrameRate(24).description == "24")
        #expect(FrameRate(29970, per: 1000).description == "29.97")
        #expect(FrameRate(15, per: 2).description == "7.5")
    }

    /// The preset reaches the settings for every codec; the codecs' defaults.
    @Test func presetsReachEveryCodec() throws {
        for codec in VideoCodec.allCases {
            let o = try options(["--test-pattern", "--codec", codec.rawValue, "--format", "mkv", "--preset", "slow"])
            #expect(o.video.preset == "slow")
            #expect(o.video.effectivePreset == "slow")
        }
        #expect(VideoSettings(codec: .h264).effectivePreset == "veryfast")
        #expect(VideoSettings(codec: .vp9).effectivePreset == "ultrafast")
    }
}

/// The same, through the `reel` binary: usage errors exit 2 with one line, and the accepted
/// values record what they say.
@Suite(.tags(.realTime)) struct OptionBinaryTests {
    @Test(arguments: [
        (["--profile", "bogus"], "reel: h264 has no profile 'bogus'"),
        (["--codec", "vp9", "--format", "mkv", "--preset", "bogus"], "reel: unknown preset 'bogus' for vp9"),
        (["--bitrate", "1"], "reel: --bitrate must be between 10k and 500M"),
        (["--bitrate", "1e30"], "reel: --bitrate needs a bit rate"),
        (["--max-size", "2000000T"], "reel: --max-size of '2000000T' is too large"),
        (["--audio-bitrate", "1e30"], "reel: --audio-bitrate needs a bit rate"),
    ])
    func usageErrorsExitWithTwo(_ args: [String], _ message: String) throws {
        let r = try ReelBinary.run(["record", "--test-pattern", "--tone", "--duration", "1", "-o", "/tmp/never-\(UUID()).mp4"] + args)
        #expect(r.status == 2, "\(args): \(r.stderr)")
        #expect(r.stderr.hasPrefix(message), "\(args): \(r.stderr)")
    }

    /// The smallest stated size records, with every codec.
    @Test(arguments: VideoCodec.allCases)
    func theSmallestSizeRecords(_ codec: VideoCodec) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("tiny.mkv")
        let r = try ReelBinary.run(["record", "--test-pattern", "--size", "16x16", "--codec", codec.rawValue, "--preset", "ultrafast",
                                    "--duration", "0.5", "--faster-than-real-time", "-o", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        let video = try #require(try MediaProbe.probe(url).videoStreams.first)
        #expect(video.width == 16 && video.height == 16 && video.frameCount == 15)
    }

    @Test func fractionalFrameRateInTheSummary() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("ntsc.mp4")
        let r = try ReelBinary.run(["record", "--test-pattern", "--size", "160x120", "--fps", "29.97", "--preset", "ultrafast",
                                    "--duration", "1", "--faster-than-real-time", "-o", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.output.contains("160x120 at 29.97 fps"), "\(r.output)")
        let rate = try #require(try MediaProbe.probe(url).videoStreams.first?.frameRate)
        #expect(abs(rate - 29.97) < 0.001)
    }

    /// `--profile main10` writes 10-bit HEVC tagged hvc1 (it used to write 8-bit Main, tagged hev1).
    @Test func hevcMain10RecordsTenBitsTaggedHvc1() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("ten.mp4")
        let r = try ReelBinary.run(["record", "--test-pattern", "--size", "320x240", "--codec", "hevc", "--profile", "main10",
                                    "--preset", "ultrafast", "--duration", "1", "--faster-than-real-time", "-o", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        let video = try #require(try MediaProbe.probe(url).videoStreams.first)
        #expect(video.profile == "Main 10")
        #expect(video.pixelFormat == "yuv420p10le")
        #expect(video.codecTag == "hvc1")
        #expect(video.frameCount == 30)
    }

    /// `--preset` changes what VP9 and AV1 write (the two used to give identical files).
    @Test(arguments: [VideoCodec.vp9, .av1])
    func presetsChangeVP9AndAV1Files(_ codec: VideoCodec) throws {
        let dir = try TemporaryDirectory()
        var digests: [String] = []
        for preset in ["ultrafast", "veryslow"] {
            let url = dir.url.appendingPathComponent("\(preset).mkv")
            let r = try ReelBinary.run(["record", "--test-pattern", "--size", "64x64", "--codec", codec.rawValue, "--preset", preset,
                                        "--duration", "0.2", "--faster-than-real-time", "-o", url.path])
            #expect(r.status == 0, "\(r.stderr)")
            digests.append(try MediaProbe.packetDigest(url))
        }
        #expect(digests[0] != digests[1])
    }
}
