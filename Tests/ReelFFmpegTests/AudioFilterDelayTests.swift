import Foundation
import Testing
import ReelCore
import ReelFFmpeg

/// How much an audio graph delays its sound, measured on a burst of white noise through a
/// separate instance (the figures the ffmpeg command-line tool gives for the same filters).
@Suite struct AudioFilterDelayTests {
    static let mono = AudioFormat(sampleFormat: .f32, sampleRate: 48_000, channels: 1)

    @Test(arguments: [("alimiter=attack=80", 80.0), ("afftdn", 25), ("afftdn=nr=30:nf=-20:tn=1:fo=2", 25), ("afftfilt", 64),
                      ("firequalizer", 10), ("highpass", 0), ("highpass=f=80,loudnorm", 0), ("loudnorm", 0), ("dynaudnorm", 0),
                      ("acompressor", 0), ("anull", 0)])
    func aGraphsDelayIsMeasured(_ graph: String, _ milliseconds: Double) throws {
        let start = Date()
        let measured = try AudioFilterDelay.measure(graph, format: Self.mono)
        let cost = Date().timeIntervalSince(start) * 1000
        print(String(format: "%@: delay %.2f ms (peak %.3f, %.1f× the next), measured in %.0f ms",
                     graph, Double(measured.lag) / 48, measured.peak, measured.clarity, cost))
        let frames = try #require(measured.frames, "\(graph): the peak is clear (\(measured))")
        #expect(abs(Double(frames) / 48 - milliseconds) <= 1, "\(graph): \(Double(frames) / 48) ms, not \(milliseconds) ms")
    }

    /// In another format the delay is in that format's samples.
    @Test func theDelayIsInTheFormatsSamples() throws {
        let format = AudioFormat(sampleFormat: .s16, sampleRate: 44_100, channels: 2)
        let frames = try #require(try AudioFilterDelay.measure("alimiter=attack=80", format: format).frames)
        #expect(abs(frames - 3528) <= 44, "\(frames) samples at 44.1 kHz")
    }

    /// A filter that smears time (a narrow bandpass, a low lowpass) has no clear peak: it counts as not
    /// delaying, and is not refused.
    @Test(arguments: ["bandpass=f=1000:width_type=h:w=50", "lowpass=f=100"])
    func aGraphWithoutAClearPeakCountsAsOnTime(_ graph: String) throws {
        let measured = try AudioFilterDelay.measure(graph, format: Self.mono)
        #expect(measured.frames == nil, "\(graph): \(measured)")
        #expect(AudioFilterDelay.frames(of: graph, format: Self.mono) == 0)
        #expect(try AudioFilterGraph(filters: [try AudioFilter(graph: graph)], format: Self.mono).delay == 0)
    }

    /// A second of tone through `alimiter=attack=80`, in pieces as a source gives it, then
    /// drained: every sample comes out, each at its own time.
    @Test func everySampleComesOutOnTime() throws {
        let graph = try AudioFilterGraph(filters: [try AudioFilter(graph: "alimiter=attack=80")], format: Self.mono)
        #expect(abs(graph.delay - 3840) <= 2, "\(graph.delay)")
        let origin = MediaTime(value: 5, timescale: 1)
        var out: [AudioBuffer] = []
        for start in stride(from: 0, to: 48_000, by: 480) {
            let samples = (start..<(start + 480)).map { Float(0.3 * sin(2 * Double.pi * 1000 * Double($0) / 48_000)) }
            let buffer = try AudioBuffer(format: Self.mono, presentationTime: origin + MediaTime(value: Int64(start), timescale: 48_000),
                                         data: samples.withUnsafeBytes { [UInt8]($0) })
            out += try graph.process(buffer)
        }
        out += try graph.drain()
        #expect(out.reduce(0) { $0 + $1.frameCount } == 48_000)
        #expect(out.first?.presentationTime == origin)
        for (a, b) in zip(out, out.dropFirst()) { #expect(a.endTime == b.presentationTime, "pieces follow each other") }
        let samples = out.flatMap { $0.floatSamples() }
        // On time: the limiter leaves a tone below its limit as it is, sample for sample.
        let expected = (0..<48_000).map { Float(0.3 * sin(2 * Double.pi * 1000 * Double($0) / 48_000)) }
        let worst = zip(samples, expected).map { abs($0 - $1) }.max() ?? 1
        #expect(worst < 0.01, "the largest difference from the tone given: \(worst)")
    }
}
