import Foundation
import Synchronization
import Testing
import Reel
import ReelTestSupport

/// A microphone's sound moved on the timeline and filtered (``CaptureConnection/audioOffset``,
/// ``CaptureConnection/audioFilters``), recorded on a manual clock and measured in the file.
@Suite struct SoundStageTests {
    /// One audio frame of AAC at 48 kHz: how exactly an offset shows in a file.
    static let audioFrame = 1024.0 / 48_000

    /// The median of the beeps' starts minus the flashes' in `url` (seconds), as
    /// `StreamSyncTests` measures it, and how many beeps were paired.
    static func beepsMinusFlashes(_ url: URL) throws -> (median: Double, count: Int) {
        let frames = try MediaProbe.decodeLuma(url, width: 320, height: 240)
        let times = try MediaProbe.frameTimes(url)
        var flashes: [Double] = []
        for i in frames.indices where i < times.count && frames[i].isFlash && (i == 0 || !frames[i - 1].isFlash) { flashes.append(times[i]) }
        let beeps = MediaProbe.beepOnsets(try MediaProbe.decodeAudio(url, onTimeline: true))
        let pairs = beeps.compactMap { beep in flashes.min { abs($0 - beep) < abs($1 - beep) }.map { beep - $0 } }
            .filter { abs($0) < 0.45 }.sorted()
        return (pairs.isEmpty ? .nan : pairs[pairs.count / 2], pairs.count)
    }

    func recordPatternAndTone(offset: MediaTime, into dir: TemporaryDirectory, name: String) async throws -> URL {
        let url = dir.url.appendingPathComponent("\(name).mp4")
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30)))
        let tone = ToneSource()
        try session.addInput(tone)
        let connection = try #require(session.connection(for: tone))
        #expect(connection.isAudioSupported)
        connection.audioOffset = offset
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        try await Self.record(session, into: url, settings: settings)
        return url
    }

    /// Records six seconds of `session` into `url`.
    static func record(_ session: CaptureSession, into url: URL, settings: Recorder.Settings) async throws {
        var settings = settings
        settings.maxRecordedDuration = MediaTime(value: 6, timescale: 1)
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        _ = try await recorder.result()
        await session.stop()
    }

    @Test func anOffsetMovesTheSoundAgainstThePicturesByItsLength() async throws {
        let dir = try TemporaryDirectory()
        var said: [String] = []
        for ms in [0, 200, -150] {
            let url = try await recordPatternAndTone(offset: MediaTime(value: Int64(ms), timescale: 1000), into: dir, name: "offset\(ms)")
            let (median, count) = try Self.beepsMinusFlashes(url)
            said.append("offset \(ms) ms: beeps minus flashes \(String(format: "%+.1f", median * 1000)) ms (\(count) beeps)")
            #expect(count >= 4, "\(said)")
            #expect(abs(median - Double(ms) / 1000) <= Self.audioFrame, "\(said)")
        }
        print(said.joined(separator: "\n"))
    }

    /// A 1 kHz tone in white noise, as a microphone: ``AudioFilter/denoise`` raises the tone's
    /// signal-to-noise ratio in the file by a clear margin, and leaves the tone itself; also
    /// when the noise is louder than the tone (-19 dBFS: it gained 1.5 dB there before).
    @Test(arguments: [(0.1, 20.0), (0.2, 10.0)])
    func denoiseRaisesAToneAboveWhiteNoise(_ noise: Double, _ gain: Double) async throws {
        let dir = try TemporaryDirectory()
        var snr: [Double] = []
        var tonePower: [Double] = []
        for filters in [[], [AudioFilter.denoise]] {
            let url = dir.url.appendingPathComponent("mic\(filters.count).wav")
            let session = CaptureSession(clock: ManualClock())
            let microphone = NoisyTone(noise: noise)
            try session.addInput(microphone)
            try #require(session.connection(for: microphone)).audioFilters = filters
            try await Self.record(session, into: url, settings: Recorder.Settings(audio: AudioSettings(codec: .pcm, channels: 1)))
            // From the second second on: the filter follows the noise floor from the start.
            let samples = Array(try MediaProbe.decodeAudio(url).dropFirst(48_000))
            #expect(samples.count >= 4 * 48_000)
            let tone = ToneAnalysis.power(of: samples, sampleRate: 48_000, frequency: 1000)
            let all = samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count)
            tonePower.append(tone)
            snr.append(10 * log10(tone / max(all - tone, 1e-12)))
        }
        print(String(format: "denoise (noise ±%.1f): the tone's SNR %.1f dB → %.1f dB (%+.1f dB); the tone's power %.4f → %.4f",
                     noise, snr[0], snr[1], snr[1] - snr[0], tonePower[0], tonePower[1]))
        #expect(snr[1] - snr[0] >= gain, "SNR \(snr[0]) dB → \(snr[1]) dB")
        #expect(tonePower[1] >= tonePower[0] * 0.7, "the tone itself stays: \(tonePower)")
    }

    /// Beeps of a tone with white noise alone between them, the way a voice pauses: what
    /// ``AudioFilter/denoise`` leaves of the noise between the beeps, and of the beeps. afftdn
    /// tracking the noise floor took 0.4 dB off noise at -31 dBFS here (its floor estimate drifted
    /// down to -60 dB), and 3 dB off noise at -45 dBFS.
    @Test(arguments: [(0.05, 25.0), (0.01, 25.0), (0.2, 10.0)])
    func denoiseTakesTheNoiseBetweenBeepsDown(_ noise: Double, _ reduction: Double) async throws {
        let dir = try TemporaryDirectory()
        var between: [Double] = [], beeps: [Double] = []
        let shape = NoisyTone(noise: noise, beeps: true)
        for filters in [[], [AudioFilter.denoise]] {
            let url = dir.url.appendingPathComponent("beeps\(filters.count).wav")
            let session = CaptureSession(clock: ManualClock())
            let microphone = NoisyTone(noise: noise, beeps: true)
            try session.addInput(microphone)
            try #require(session.connection(for: microphone)).audioFilters = filters
            try await Self.record(session, into: url, settings: Recorder.Settings(audio: AudioSettings(codec: .pcm, channels: 1)))
            let samples = try MediaProbe.decodeAudio(url)
            #expect(samples.count >= 5 * 48_000)
            // After the first second; away from the beeps' edges by a tenth of a second.
            func power(where keep: (Double) -> Bool) -> Double {
                let chosen = samples.indices.filter { $0 >= 48_000 && keep(Double($0) / 48_000) }.map { Double(samples[$0]) }
                return chosen.reduce(0) { $0 + $1 * $1 } / Double(max(1, chosen.count))
            }
            between.append(10 * log10(power { !shape.sounds(at: $0 - 0.1) && !shape.sounds(at: $0) && !shape.sounds(at: $0 + 0.1) }))
            let inBeeps = samples.indices.filter { $0 >= 48_000 && shape.sounds(at: Double($0) / 48_000 - 0.1) && shape.sounds(at: Double($0) / 48_000 + 0.1) }
            beeps.append(ToneAnalysis.power(of: inBeeps.map { samples[$0] }, sampleRate: 48_000, frequency: 1000))
        }
        print(String(format: "denoise (noise ±%.2f, beeps): the noise between the beeps %.1f dBFS → %.1f dBFS (%.1f dB less); the beeps' tone %.5f → %.5f",
                     noise, between[0], between[1], between[0] - between[1], beeps[0], beeps[1]))
        #expect(between[0] - between[1] >= reduction, "the noise between beeps \(between[0]) dBFS → \(between[1]) dBFS")
        #expect(beeps[1] >= beeps[0] * 0.8, "the beeps stay: \(beeps)")
    }

    /// RNNoise (``AudioFilter/rnnoise(model:)``) runs the model in the file given: no model
    /// ships with Debian, so the models here are written by the test, every weight zero and
    /// the band gains set by the output layer's bias: one passes every band (the sound keeps
    /// its level), one silences them (the sound is gone). What a real model does to noise is
    /// the model's, and is not claimed here.
    @Test func rnnoiseRunsTheModelInTheFileGiven() async throws {
        let dir = try TemporaryDirectory()
        var power: [Double] = []
        for bias in [nil, 2000, -2000] {
            let url = dir.url.appendingPathComponent("mic\(power.count).wav")
            let session = CaptureSession(clock: ManualClock())
            let microphone = NoisyTone()
            try session.addInput(microphone)
            if let bias {
                let model = dir.url.appendingPathComponent("bias\(bias).rnnn")
                try RNNoiseModelText.write(to: model, gainBias: bias)
                try #require(session.connection(for: microphone)).audioFilters = [try AudioFilter.rnnoise(model: model)]
            }
            try await Self.record(session, into: url, settings: Recorder.Settings(audio: AudioSettings(codec: .pcm, channels: 1)))
            let samples = Array(try MediaProbe.decodeAudio(url).dropFirst(48_000))
            #expect(samples.count >= 4 * 48_000)
            power.append(samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, samples.count)))
        }
        print(String(format: "rnnoise with written models: power %.5f unfiltered, %.5f passing, %.7f silencing", power[0], power[1], power[2]))
        #expect(power[1] > power[0] * 0.5 && power[1] < power[0] * 1.5, "the passing model keeps the level: \(power)")
        #expect(power[2] < power[0] / 100, "the silencing model takes the sound away: \(power)")
    }

    /// The 440 Hz tone's power in `samples` from `start` for `length` seconds.
    static func tonePower(_ samples: [Float], from start: Double, length: Double) -> Double {
        let from = max(0, min(samples.count, Int(start * 48_000)))
        let to = max(from, min(samples.count, from + Int(length * 48_000)))
        return ToneAnalysis.power(of: Array(samples[from..<to]), sampleRate: 48_000, frequency: 440)
    }

    /// Moves the stepped `clock` to `end` in tenths of a second, each step once every source
    /// in `sources` has delivered up to it (within a frame), so that the test pattern and the
    /// tone end together whatever the filters cost.
    static func run(_ clock: ManualClock, to end: MediaTime, _ sources: [WatchedSource]) async throws {
        let step = MediaTime(value: 1, timescale: 10)
        var now = clock.now()
        while now < end {
            now = now + step
            clock.advance(to: now)
            let deadline = Date().addingTimeInterval(30)
            while sources.contains(where: { $0.reached < now - MediaTime(value: 1, timescale: 20) }) {
                guard Date() < deadline else { Issue.record("the sources did not reach \(now.seconds) s"); return }
                try await Task.sleep(for: .milliseconds(2))
            }
        }
    }

    /// `loudnorm` looks seconds ahead: at a stop by hand what it holds is drained into the
    /// file, so the sound runs to the picture's end at the level it had, its beeps with the
    /// flashes (it was the last seconds padded with silence).
    @Test func aFilterThatLooksAheadIsDrainedAtTheStop() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("loudnorm.mp4")
        let clock = ManualClock(mode: .stepped)
        let session = CaptureSession(clock: clock)
        let pattern = WatchedSource(TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30)))
        try session.addInput(pattern)
        let tone = WatchedSource(ToneSource())
        try session.addInput(tone)
        try #require(session.connection(for: tone)).audioFilters = [try AudioFilter(graph: "highpass=f=80,loudnorm")]
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        try await Self.run(clock, to: MediaTime(value: 6, timescale: 1), [pattern, tone])
        await session.stop()
        let summary = try await recorder.result()
        #expect(summary.shortfalls.isEmpty, "\(summary.shortfalls)")
        let samples = try MediaProbe.decodeAudio(url, onTimeline: true)
        let length = Double(samples.count) / 48_000
        let profile = stride(from: 0.0, to: length, by: 0.5).map { String(format: "%.1f s: %.5f", $0, Self.tonePower(samples, from: $0, length: 0.5)) }
        let video = try #require(try MediaProbe.probe(url).videoStreams.first?.duration)
        #expect(video > 5.5 && abs(length - video) < 0.1, "sound \(length) s, picture \(video) s")
        let middle = Self.tonePower(samples, from: 1, length: 1)
        let end = Self.tonePower(samples, from: length - 0.6, length: 0.5)
        #expect(middle > 0.0001, "the tone is heard: \(profile)")
        #expect(end > middle / 10, "the last half second holds the tone: \(profile)")
        let (median, count) = try Self.beepsMinusFlashes(url)
        #expect(count >= 3 && abs(median) <= Self.audioFrame, "beeps minus flashes \(median * 1000) ms (\(count) beeps)")
    }

    /// A recording shorter than what `loudnorm` holds back, stopped by hand, still has its
    /// sound (there was none: the filter had given out nothing yet).
    @Test func aSoundRecordingShorterThanTheLookAheadHasItsSound() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("short.wav")
        let clock = ManualClock(mode: .stepped)
        let session = CaptureSession(clock: clock)
        let tone = WatchedSource(ToneSource())
        try session.addInput(tone)
        try #require(session.connection(for: tone)).audioFilters = [try AudioFilter(graph: "loudnorm")]
        let recorder = Recorder(url: url, settings: Recorder.Settings(audio: AudioSettings(codec: .pcm, channels: 1)))
        try session.addOutput(recorder)
        try await session.start()
        try await Self.run(clock, to: MediaTime(value: 1, timescale: 1), [tone])
        await session.stop()
        let summary = try await recorder.result()
        let samples = try MediaProbe.decodeAudio(url)
        let length = Double(samples.count) / 48_000
        #expect(length >= 0.9 && abs(length - summary.duration.seconds) < 0.05, "\(length) s of sound, \(summary.duration.seconds) s recorded")
        #expect(Self.tonePower(samples, from: length - 0.3, length: 0.25) > 0.0001, "the tone to the end")
    }

    @Test func aGraphLibavfilterRefusesIsAnErrorNamingIt() {
        #expect(throws: ReelError.self) { try AudioFilter(graph: "") }
        let unknown = #expect(throws: ReelError.self) { try AudioFilter(graph: "highpass=f=80,nosuchfilter") }
        #expect(unknown?.message.contains("nosuchfilter") == true, "\(String(describing: unknown))")
        let video = #expect(throws: ReelError.self) { try AudioFilter(graph: "hue=s=0") }
        #expect(video?.code == .invalidConfiguration)
        #expect((try? AudioFilter(graph: "highpass=f=80,loudnorm"))?.graph == "highpass=f=80,loudnorm")
    }
}

/// A microphone that hears a 1 kHz tone (amplitude 0.1) in white noise (uniform, ±0.1: about
/// -25 dBFS, 2 dB below the tone), mono,
/// on the session's clock.
final class NoisyTone: CaptureSource, @unchecked Sendable {
    let name = "noisy tone"
    /// The white noise's amplitude (uniform in ±`noise`; the tone's is 0.1).
    let noise: Double
    /// Whether the tone beeps (its first half second of every two) rather than sounds throughout.
    let beeps: Bool
    init(noise: Double = 0.1, beeps: Bool = false) {
        self.noise = noise
        self.beeps = beeps
    }
    /// Whether the tone sounds at `t` seconds.
    func sounds(at t: Double) -> Bool { !beeps || t.truncatingRemainder(dividingBy: 2) < 0.5 }
    let kind = SampleKind.micAudio
    let format = AudioFormat(sampleFormat: .f32, sampleRate: 48_000, channels: 1)
    private let stopped = Atomic<Bool>(false)
    private let running = Mutex<(any MediaClock)?>(nil)
    private let done = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)

    func prepare() throws -> SourceFormat { .audio(format) }

    func start(_ context: SourceContext) throws {
        running.withLock { $0 = context.clock }
        started.store(true, ordering: .releasing)
        let format = self.format
        Thread { [self] in
            var random = SeededRandom(seed: 31)
            var index: Int64 = 0
            let chunk = 480
            while !stopped.load(ordering: .acquiring) {
                let time = MediaTime(value: index, timescale: 48_000)
                context.clock.sleep(until: context.origin + time + format.duration(ofFrames: chunk))
                if stopped.load(ordering: .acquiring) { break }
                var samples = [Float](repeating: 0, count: chunk)
                for i in 0..<chunk {
                    let t = Double(index + Int64(i)) / 48_000
                    let tone = sounds(at: t) ? 0.1 * sin(2 * Double.pi * 1000 * t) : 0
                    samples[i] = Float(tone + Double.random(in: -noise...noise, using: &random))
                }
                let bytes = samples.withUnsafeBytes { [UInt8]($0) }
                if let buffer = try? AudioBuffer(format: format, presentationTime: time, data: bytes) { context.deliver(.audio(buffer)) }
                index += Int64(chunk)
            }
            done.signal()
        }.start()
    }

    func stop() {
        stopped.store(true, ordering: .releasing)
        running.withLock { $0 }?.wakeSleepers()
        if started.load(ordering: .acquiring) { done.wait() }
    }
}

/// A source as it is, with how far it has delivered (the end of its newest sample) on the
/// session's timeline: a test on a stepped clock waits for it.
final class WatchedSource: CaptureSource, @unchecked Sendable {
    private let inner: any CaptureSource
    private let reachedTicks = Mutex<Int64>(-1)
    var name: String { inner.name }
    var kind: SampleKind { inner.kind }
    /// Where the newest sample ended (video: its time), in session time.
    var reached: MediaTime { MediaTime(value: reachedTicks.withLock { $0 }, timescale: 48_000) }

    init(_ inner: any CaptureSource) { self.inner = inner }

    func prepare() throws -> SourceFormat { try inner.prepare() }

    func start(_ context: SourceContext) throws {
        try inner.start(SourceContext(id: context.id, clock: context.clock, origin: context.origin, deliver: { sample in
            context.deliver(sample)
            let end: MediaTime
            switch sample {
            case .audio(let buffer): end = buffer.endTime
            case .video(let frame): end = frame.presentationTime
            }
            self.reachedTicks.withLock { $0 = end.convertedValue(to: 48_000, rounding: .down) }
        }, report: context.report))
    }

    func stop() { inner.stop() }
}
