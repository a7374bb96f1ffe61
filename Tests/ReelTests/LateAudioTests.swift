import Foundation
import Synchronization
import Testing
import Reel
import ReelTestSupport

/// An audio source like a PulseAudio server with a large latency: its first samples are
/// captured at `firstSample` on the session timeline, and it hands them over in large chunks,
/// each `lateness` after its last sample was captured. It plays 440 Hz in the first second of
/// the session and 660 Hz after, so a decoded file shows which audio it begins with.
final class LateChunkAudioSource: CaptureSource {
    let name = "late microphone"
    var kind: SampleKind { .micAudio }
    let format = AudioFormat(sampleFormat: .f32, sampleRate: 48_000, channels: 2)
    let firstSample: MediaTime
    let chunk: MediaTime
    let lateness: MediaTime
    /// The session time up to which audio has been delivered, in samples.
    let deliveredUpTo = Atomic<Int64>(0)
    private let worker = Mutex<WorkerThread?>(nil)

    init(firstSample: MediaTime, chunk: MediaTime, lateness: MediaTime) {
        self.firstSample = firstSample
        self.chunk = chunk
        self.lateness = lateness
    }

    func prepare() throws -> SourceFormat { .audio(format) }

    func start(_ context: SourceContext) throws {
        let format = self.format, chunk = self.chunk, lateness = self.lateness
        let rate = Int32(format.sampleRate)
        let frames = Int(chunk.convertedValue(to: rate))
        let first = firstSample.convertedValue(to: rate)
        worker.withLock { worker in
            worker = WorkerThread(name: "test.late-audio") { [self] thread in
                var next = first
                var bytes = [UInt8](repeating: 0, count: frames * format.bytesPerFrame)
                while !thread.isStopRequested {
                    let pts = MediaTime(value: next, timescale: rate)
                    context.clock.sleep(until: context.origin + pts + chunk + lateness)
                    if thread.isStopRequested { break }
                    bytes.withUnsafeMutableBytes { raw in
                        for i in 0..<frames {
                            let n = next + Int64(i)
                            let frequency: Double = n < Int64(rate) ? 440 : 660
                            let v = Float(0.3 * sin(2 * Double.pi * frequency * Double(n) / Double(rate)))
                            raw.storeBytes(of: v, toByteOffset: i * 8, as: Float.self)
                            raw.storeBytes(of: v, toByteOffset: i * 8 + 4, as: Float.self)
                        }
                    }
                    context.deliver(.audio(AudioBuffer(format: format, presentationTime: pts, wholeFrames: bytes)))
                    next += Int64(frames)
                    deliveredUpTo.store(next, ordering: .releasing)
                }
            }
        }
    }

    func stop() {
        let thread = worker.withLock { w -> WorkerThread? in let t = w; w = nil; return t }
        thread?.requestStop()
        thread?.join()
    }
}

/// Short recordings whose audio comes late and in large chunks are still written, with all
/// of their audio.
@Suite struct LateAudioTests {
    func record(_ sources: [any CaptureSource], limit: MediaTime, in dir: TemporaryDirectory) async throws -> (URL, RecordingSummary) {
        let url = dir.url.appendingPathComponent("late.mp4")
        let session = CaptureSession(clock: ManualClock())
        for source in sources { try session.addInput(source) }
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        settings.maxRecordedDuration = limit
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        return (url, summary)
    }

    /// The first samples arrive after more than the whole recording's length has passed: the
    /// recording begins with them rather than at the session's zero.
    @Test(arguments: [1.0, 1.5])
    func anAudioOnlyRecordingWhoseFirstSamplesComeLate(seconds: Double) async throws {
        let dir = try TemporaryDirectory()
        let source = LateChunkAudioSource(firstSample: MediaTime(seconds: 1.6), chunk: MediaTime(seconds: 0.5),
                                          lateness: MediaTime(seconds: 0.3))
        let (url, summary) = try await record([source], limit: MediaTime(seconds: seconds), in: dir)
        #expect(abs(summary.duration.seconds - seconds) < 0.001)
        let audio = try MediaProbe.decodeAudio(url)
        #expect(abs(Double(audio.count) / 48_000 - seconds) < 0.03, "\(audio.count) samples")
        let power = ToneAnalysis.power(of: Array(audio[4_800..<Int(seconds * 48_000) - 4_800]), sampleRate: 48_000, frequency: 660)
        #expect(power > 0.01, "the tone throughout, not silence")
    }

    /// The video starts after the 3 s that audio is held waiting for it: the held audio is
    /// recorded, not dropped.
    @Test func audioHeldForALateVideoSourceIsKept() async throws {
        let dir = try TemporaryDirectory()
        let audio = LateChunkAudioSource(firstSample: .zero, chunk: MediaTime(seconds: 0.5), lateness: .zero)
        // On the virtual clock, sources run as fast as they can: the frames wait until the
        // audio of their time has been delivered, as a real clock would order them.
        let video = DelayedVideoSource(start: MediaTime(seconds: 4)) { time in
            audio.deliveredUpTo.load(ordering: .acquiring) >= time.convertedValue(to: 48_000)
        }
        let (url, summary) = try await record([video, audio], limit: MediaTime(seconds: 5), in: dir)
        #expect(abs(summary.duration.seconds - 5) < 0.001)
        let samples = try MediaProbe.decodeAudio(url)
        #expect(abs(Double(samples.count) / 48_000 - 5) < 0.05, "\(samples.count) samples")
        let power = ToneAnalysis.power(of: Array(samples[4_800..<43_200]), sampleRate: 48_000, frequency: 440)
        #expect(power > 0.01, "the file begins with the first second of audio")
        let frames = try MediaProbe.decodeLuma(url, width: 320, height: 240)
        #expect(frames.first?.counter == 120, "the first frame came at 4 s")
        // The first picture is shown when it was taken, at 4 s, not stretched back to the start
        // (it was shown from 0 s: 4 s early, the whole first 4 s of the file).
        let times = try MediaProbe.packetTimes(url)
        #expect(times.count > 1 && abs(times[0] - 4) < 0.001 && abs(times[1] - 4 - 1.0 / 30) < 0.001, "in step with the audio: \(times.prefix(2))")
    }
}

/// The test pattern, starting only at `start` on the session timeline (a slow camera).
final class DelayedVideoSource: CaptureSource {
    let name = "slow camera"
    var kind: SampleKind { .video }
    let start: MediaTime
    /// Whether a frame of this time may be delivered yet.
    let mayDeliver: @Sendable (MediaTime) -> Bool
    private let pattern = TestPatternSource(size: PixelSize(width: 320, height: 240))

    init(start: MediaTime, mayDeliver: @escaping @Sendable (MediaTime) -> Bool) {
        self.start = start
        self.mayDeliver = mayDeliver
    }

    func prepare() throws -> SourceFormat { try pattern.prepare() }

    func start(_ context: SourceContext) throws {
        let start = self.start, mayDeliver = self.mayDeliver
        let delayed = SourceContext(id: context.id, clock: context.clock, origin: context.origin,
                                    deliver: { sample in
                                        if case .video(let frame) = sample {
                                            if frame.presentationTime < start { return }
                                            while !mayDeliver(frame.presentationTime) { usleep(1000) }
                                        }
                                        context.deliver(sample)
                                    },
                                    report: context.report)
        try pattern.start(delayed)
    }

    func stop() { pattern.stop() }
}
