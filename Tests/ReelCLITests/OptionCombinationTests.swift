import Foundation
import Testing
@testable import ReelCLI
import Reel
import ReelTestSupport

/// Every option value is either honoured or refused as a usage error that says why and what
/// would work; none is accepted and then ignored, or found wrong only when recording starts.
@Suite struct OptionCombinationTests {
    func options(_ args: [String]) throws -> RecordOptions {
        try RecordOptions(ParsedArguments.parse(args, specs: RecordOptions.specs))
    }

    func usageError(_ args: [String]) -> String? {
        do {
            _ = try options(args)
            return nil
        } catch let error as UsageError {
            return error.message
        } catch {
            return "not a usage error: \(error)"
        }
    }

    /// Combinations that are refused, with (part of) the message that says why.
    @Test(arguments: [
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
        #expect(try ValueParser.duration("1e3s", option: "d").seconds == 1000)
        #expect(try options(["--test-pattern", "--max-duration", "1h30m"]).maxDuration == MediaTime(seconds: 5400))
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

}

/// The same, through the `reel` binary: usage errors exit 2 with one line, and the accepted
/// values record what they say.
@Suite struct OptionBinaryTests {
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
}
