import Foundation
import Synchronization
import Testing
import Reel
import ReelTestSupport

/// Audio filters that delay their sound (`alimiter` looks ahead by its attack, `afftdn` by its
/// window) are compensated: recorded through a session, a second of sound with a tone in it
/// comes out as long as it went in, its tone starting where it starts unfiltered (it was 80 ms
/// late through `alimiter=attack=80`, 25 ms through `afftdn`); filters that are on time stay so.
@Suite struct FilterDelayTests {
    /// Where the tone starts in `samples` (seconds): the first millisecond whose loudness is
    /// above a third of the tone's steady loudness.
    static func onset(_ samples: [Float]) -> Double? {
        let window = 48
        let loudness = stride(from: 0, to: samples.count - window, by: 1).lazy.map { start in
            (start, samples[start..<(start + window)].reduce(0) { $0 + Double($1) * Double($1) } / Double(window))
        }
        let steady = samples.count > 36_000 ? ToneAnalysis.rms(of: Array(samples[24_000..<33_600])) : 0
        guard steady > 0.01 else { return nil }
        return loudness.first { $0.1.squareRoot() > steady / 3 }.map { Double($0.0) / 48_000 }
    }

    /// Records `OneSecondOfTone` through `filters` into a WAV file: its samples.
    static func record(_ filters: [AudioFilter], into dir: TemporaryDirectory, name: String) async throws -> [Float] {
        let url = dir.url.appendingPathComponent("\(name).wav")
        let session = CaptureSession(clock: ManualClock())
        let tone = OneSecondOfTone()
        try session.addInput(tone)
        try #require(session.connection(for: tone)).audioFilters = filters
        let recorder = Recorder(url: url, settings: Recorder.Settings(audio: AudioSettings(codec: .pcm, channels: 1)))
        try session.addOutput(recorder)
        try await session.start()
        try await tone.delivered()
        await session.stop()
        let summary = try await recorder.result()
        #expect(summary.shortfalls.isEmpty, "\(name): \(summary.shortfalls)")
        return try MediaProbe.decodeAudio(url)
    }

    @Test(arguments: ["alimiter=attack=80", "afftdn", "highpass", "highpass,loudnorm", "firequalizer"])
    func aFilteredToneStartsWhereItStartedUnfilteredAndIsAsLong(_ graph: String) async throws {
        let dir = try TemporaryDirectory()
        let plain = try await Self.record([], into: dir, name: "plain")
        let filtered = try await Self.record([try AudioFilter(graph: graph)], into: dir, name: "filtered")
        let before = try #require(Self.onset(plain), "the tone in the unfiltered recording")
        let after = try #require(Self.onset(filtered), "the tone through \(graph)")
        print(String(format: "%@: the tone starts %+.2f ms from where it started unfiltered; %d samples (unfiltered %d)",
                     graph, (after - before) * 1000, filtered.count, plain.count))
        #expect(plain.count == 48_000, "the unfiltered recording has every sample")
        #expect(filtered.count == plain.count, "\(graph): \(filtered.count) samples, \(plain.count) unfiltered")
        #expect(abs(after - before) <= 0.002, "\(graph): the tone starts \((after - before) * 1000) ms from where it started unfiltered")
        // The end is there: the tone stops where it stopped (not cut by what the filter held).
        let tail = ToneAnalysis.power(of: Array(filtered[(48_000 * 7 / 10)..<(48_000 * 79 / 100)]), sampleRate: 48_000, frequency: 1000)
        let middle = ToneAnalysis.power(of: Array(filtered[(48_000 * 5 / 10)..<(48_000 * 59 / 100)]), sampleRate: 48_000, frequency: 1000)
        #expect(tail > middle / 4, "\(graph): the tone's last tenth is there (\(tail) against \(middle))")
    }

    /// The beeps of the test tone through `alimiter=attack=80` (it looks 80 ms ahead) stay with
    /// the test pattern's flashes in a movie, within an audio frame (they were 80 ms after).
    @Test func aDelayingFilterKeepsTheSoundWithThePictures() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("limited.mp4")
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30)))
        let tone = ToneSource()
        try session.addInput(tone)
        try #require(session.connection(for: tone)).audioFilters = [try AudioFilter(graph: "alimiter=attack=80")]
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        try await SoundStageTests.record(session, into: url, settings: settings)
        let (median, count) = try SoundStageTests.beepsMinusFlashes(url)
        print(String(format: "alimiter=attack=80: beeps minus flashes %+.1f ms (%d beeps)", median * 1000, count))
        #expect(count >= 4 && abs(median) <= SoundStageTests.audioFrame, "beeps minus flashes \(median * 1000) ms (\(count) beeps)")
    }

    /// `denoise` (afftdn with its options) is compensated like plain `afftdn`.
    @Test func theDenoiseFilterIsOnTime() async throws {
        let dir = try TemporaryDirectory()
        let plain = try await Self.record([], into: dir, name: "plain")
        let denoised = try await Self.record([.denoise], into: dir, name: "denoised")
        let before = try #require(Self.onset(plain)), after = try #require(Self.onset(denoised))
        #expect(denoised.count == plain.count && abs(after - before) <= 0.002, "\(denoised.count) samples, \((after - before) * 1000) ms")
    }
}

/// A microphone that gives exactly one second of sound, at once and then nothing: silence, a
/// 1 kHz tone (amplitude 0.3) from 0.3 s to 0.8 s, silence; mono, 48 kHz.
final class OneSecondOfTone: CaptureSource, @unchecked Sendable {
    let name = "one second of tone"
    let kind = SampleKind.micAudio
    let format = AudioFormat(sampleFormat: .f32, sampleRate: 48_000, channels: 1)
    private let done = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let finished = Atomic<Bool>(false)

    func prepare() throws -> SourceFormat { .audio(format) }

    func start(_ context: SourceContext) throws {
        let format = self.format
        Thread { [self] in
            for start in stride(from: 0, to: 48_000, by: 480) {
                let samples = (start..<(start + 480)).map { n -> Float in
                    n >= 14_400 && n < 38_400 ? Float(0.3 * sin(2 * Double.pi * 1000 * Double(n) / 48_000)) : 0
                }
                let time = MediaTime(value: Int64(start), timescale: 48_000)
                if let buffer = try? AudioBuffer(format: format, presentationTime: time, data: samples.withUnsafeBytes { [UInt8]($0) }) {
                    context.deliver(.audio(buffer))
                }
            }
            finished.store(true, ordering: .releasing)
            done.withLock { $0.take() }?.resume()
        }.start()
    }

    /// Returns once the second of sound has been delivered.
    func delivered() async throws {
        await withCheckedContinuation { continuation in
            let now = done.withLock { waiting -> Bool in
                if finished.load(ordering: .acquiring) { return true }
                waiting = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    func stop() {}
}
