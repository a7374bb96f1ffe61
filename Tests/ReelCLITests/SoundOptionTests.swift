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

    @Test func denoiseTakesAnRNNoiseModelFileAndRefusesABadOneBeforeRecording() throws {
        let dir = try TemporaryDirectory()
        let model = dir.url.appendingPathComponent("voice.rnnn")
        try RNNoiseModelText.write(to: model, gainBias: 0)
        let rnnoise = try options(["--mic", "--denoise=rnnoise:\(model.path)"])
        #expect(rnnoise.sound[.mic]?.filters == [try AudioFilter.rnnoise(model: model)])
        #expect(try options(["--mic", "--denoise=afftdn"]).sound[.mic]?.filters == [.denoise])
        let missing = usageError(["--mic", "--denoise=rnnoise:\(dir.url.path)/none.rnnn"])
        #expect(missing?.contains("--denoise: cannot read the RNNoise model") == true && missing?.contains(".rnnn") == true, "\(missing ?? "accepted")")
        try "not a model".write(to: model, atomically: true, encoding: .utf8)
        #expect(usageError(["--mic", "--denoise=rnnoise:\(model.path)"])?.contains("is not an RNNoise model") == true)
        #expect(usageError(["--mic", "--denoise=rnnoise"])?.contains("=rnnoise:MODEL") == true)
        #expect(usageError(["--mic", "--denoise=hard"])?.contains("=rnnoise:MODEL") == true)
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

    /// A WAV or FLAC holds one audio track (the library's rule): two sources are a usage error
    /// that names --mix-audio, not FFmpeg's "Invalid argument" when the file is made.
    @Test func twoSourcesIntoAFileOfOneTrackNeedMixing() throws {
        let dir = try TemporaryDirectory()
        for ext in ["wav", "flac"] {
            let path = dir.url.appendingPathComponent("two.\(ext)").path
            let message = usageError(["--tone", "--mic", "-o", path])
            #expect(message?.contains(".\(ext) files hold one audio track, and there are 2 audio sources") == true, "\(message ?? "accepted")")
            #expect(message?.contains("--mix-audio") == true && message?.contains("mixesAudio") == false, "\(message ?? "accepted")")
            #expect(usageError(["--tone", "--mic", "--mix-audio", "-o", path]) == nil)
            #expect(usageError(["--tone", "-o", path]) == nil)
        }
        #expect(usageError(["--tone", "--mic", "-o", dir.url.appendingPathComponent("two.m4a").path]) == nil)
    }

    /// A stranger's finding: `--audio-offset -3000 --duration 2` recorded, then said the tone was
    /// "interrupted" (its sound was all moved before the start). Refused up front, with the range
    /// this recording allows.
    @Test func aNegativeOffsetAsLongAsTheRecordingIsRefusedWithTheRangeAllowed() throws {
        func refusal(_ args: [String]) -> String? {
            do { try options(args).validateCombinations(); return nil } catch { return (error as? UsageError)?.message ?? "\(error)" }
        }
        let message = refusal(["--tone", "--audio-offset", "-3000", "--duration", "2"])
        #expect(message?.contains("none of it would be recorded") == true && message?.contains("between -1999 and 1999") == true,
                "\(message ?? "accepted")")
        #expect(refusal(["--tone", "--audio-offset", "-1500", "--duration", "2"]) == nil)
        #expect(refusal(["--tone", "--audio-offset", "-5000"]) == nil, "no length known: a stop decides")
        // Later by as long (s4-31 finding 3: a silent track said to be complete), and "+200" as
        // the help writes it.
        let later = refusal(["--tone", "--audio-offset", "3000", "--duration", "3"])
        #expect(later?.contains("3 s later") == true && later?.contains("none of it would be recorded") == true, "\(later ?? "accepted")")
        #expect(refusal(["--tone", "--audio-offset", "+200", "--duration", "3"]) == nil)
        #expect(try options(["--tone", "--audio-offset", "+200"]).sound[.tone]?.offset == MediaTime(value: 200_000, timescale: 1_000_000))
    }

    /// A stranger's finding: `--audio-filter atempo=2` was taken, and the recording then ended
    /// with the tone "interrupted", as if the source had failed. Graphs that change the sound's
    /// length are refused at once, saying so; those that only look ahead are not.
    @Test func filtersThatChangeTheSoundsLengthAreRefusedUpFront() throws {
        // atrim=0:1 cut exactly the one second the check gave it, and passed (s4-31 finding 4).
        for graph in ["atempo=2", "asetrate=96000", "atrim=0:0.5", "apad", "volume=0.5,atempo=0.5", "atrim=0:1", "highpass=f=80, [a]atrim=end=2"] {
            let message = usageError(["--tone", "--audio-filter", graph])
            #expect(message?.contains("changes the sound's length") == true, "\(graph): \(message ?? "accepted")")
            #expect(message?.contains("atempo, asetrate") == true, "what to use instead")
        }
        // aecho gives its tail only when the sound ends: no change of length (it was refused).
        for graph in ["loudnorm", "afftdn", "highpass=f=80,lowpass=f=8000", "acompressor", "volume=2", "aecho=0.8:0.9:200:0.3"] {
            #expect(usageError(["--tone", "--audio-filter", graph]) == nil, "\(graph) keeps the length")
        }
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

    /// A filter that looks ahead (`alimiter=attack=80`, 80 ms) leaves the beeps with their
    /// flashes: its delay is taken off (the beeps were 80 ms after the flashes).
    @Test func aDelayingAudioFilterKeepsTheBeepWithTheFlash() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("limited.mp4")
        let r = try ReelBinary.run(["record", "--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast", "--duration", "6",
                                    "--faster-than-real-time", "--audio-filter", "alimiter=attack=80", "-o", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        let (median, all) = try StreamSyncTests.offset(url)
        print(String(format: "--audio-filter alimiter=attack=80: beeps minus flashes %+.1f ms (%d beeps)", median * 1000, all.count))
        #expect(all.count >= 4 && abs(median) <= 1024.0 / 48_000, "beeps minus flashes \(median * 1000) ms (\(all.count) beeps)")
    }
}
