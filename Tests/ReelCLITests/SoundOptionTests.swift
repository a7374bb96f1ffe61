import Foundation
import Testing
@testable import ReelCLI
import Reel
import ReelTestSupport

/// `--audio-offset`, `--audio-filter` and `--denoise` as `reel record` parses them.
@Suite struct SoundOptionTests: ParsesRecordOptions {
    @Test func eachSourceGetsItsOffsetAndFiltersInOrder() throws {
        let both = try options(["--mic", "--tone", "--audio-offset", "200", "--denoise", "--audio-filter", "mic:highpass=f=80"])
        #expect(both.sound[.mic]?.offset == MediaTime(value: 200, timescale: 1000))
        #expect(both.sound[.tone]?.offset == MediaTime(value: 200, timescale: 1000))
        #expect(both.sound[.mic]?.filters.map(\.graph) == [AudioFilter.denoise.graph, "highpass=f=80"])
        #expect(both.sound[.tone]?.filters.isEmpty == true)
        let one = try options(["--mic", "--tone", "--audio-offset", "tone:-150ms", "--audio-filter", "afftdn=nr=12:nf=-50"])
        #expect(one.sound[.tone]?.offset == MediaTime(value: -150, timescale: 1000))
        #expect(one.sound[.mic]?.offset ?? .zero == .zero)
        #expect(one.sound[.mic]?.filters.map(\.graph) == ["afftdn=nr=12:nf=-50"])
        #expect(one.sound[.tone]?.filters.map(\.graph) == ["afftdn=nr=12:nf=-50"])
    }

    @Test func whatCannotApplyIsRefusedClearly() {
        #expect(usageError(["--test-pattern", "--audio-offset", "200"])?.contains("give --mic, --app-audio or --tone") == true)
        #expect(usageError(["--tone", "--audio-offset", "mic:200"])?.contains("give --mic as well") == true)
        #expect(usageError(["--tone", "--audio-offset", "soon"])?.contains("milliseconds") == true)
        #expect(usageError(["--tone", "--audio-offset", "20000"])?.contains("-10000 to 10000") == true)
        #expect(usageError(["--tone", "--audio-offset", "100", "--audio-offset", "tone:50"])?.contains("given twice") == true)
        #expect(usageError(["--tone", "--denoise"])?.contains("give --mic as well") == true)
        #expect(usageError(["--tone", "--audio-filter", "nosuchfilter"])?.contains("nosuchfilter") == true)
    }
}

/// `--audio-offset` in a recording: the beeps move against the flashes by the offset.
@Suite(.serialized, .tags(.realTime)) struct SoundOptionCommandTests {
    @Test func audioOffsetMovesTheBeepAgainstTheFlash() throws {
        let dir = try TemporaryDirectory()
        var said: [String] = []
        for ms in [0, 200] {
            let url = dir.url.appendingPathComponent("offset\(ms).mp4")
            let r = try ReelBinary.run(["record", "--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast", "--duration", "6",
                                        "--faster-than-real-time", "--audio-offset", String(ms), "-o", url.path])
            #expect(r.status == 0, "\(r.stderr)")
            let (median, all) = try StreamSyncTests.offset(url)
            said.append("--audio-offset \(ms): beeps minus flashes \(String(format: "%+.1f", median * 1000)) ms (\(all.count) beeps)")
            #expect(all.count >= 4, "\(said)")
            #expect(abs(median - Double(ms) / 1000) <= 1024.0 / 48_000, "\(said)")
        }
        print(said.joined(separator: "\n"))
    }
}
