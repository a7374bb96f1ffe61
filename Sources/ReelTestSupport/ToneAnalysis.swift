import Foundation
import ReelCore

/// Measures tones in captured or decoded audio, for tests: how much of a signal sits at a
/// frequency (a Goertzel filter), and which of a few candidate frequencies dominates.
public enum ToneAnalysis {
    /// The power of `samples` at `frequency`: the mean square of its sine component, so a sine of
    /// amplitude `A` at that frequency gives about `A² / 2` (0.125 for amplitude 0.5) and other
    /// frequencies give about zero (for windows of a few hundred periods or more).
    ///
    /// - Parameters:
    ///   - samples: mono samples in -1...1.
    ///   - sampleRate: their sample rate in hertz.
    ///   - frequency: the frequency to measure, in hertz.
    public static func power(of samples: [Float], sampleRate: Int, frequency: Double) -> Double {
        guard !samples.isEmpty, sampleRate > 0 else { return 0 }
        // Goertzel: a second-order resonator at the frequency; its final state gives |X(f)|².
        let omega = 2 * Double.pi * frequency / Double(sampleRate)
        let coefficient = 2 * cos(omega)
        var s1 = 0.0, s2 = 0.0
        for sample in samples {
            let s0 = Double(sample) + coefficient * s1 - s2
            s2 = s1
            s1 = s0
        }
        let magnitudeSquared = max(0, s1 * s1 + s2 * s2 - coefficient * s1 * s2)
        let n = Double(samples.count)
        return 2 * magnitudeSquared / (n * n)
    }

    /// The power of `frequency` in `samples` as the mean over windows of about `window` seconds
    /// (``power(of:sampleRate:frequency:)`` in each): for a tone another process plays live
    /// (a PulseAudio player, `ffmpeg -re`), whose underruns on a loaded machine insert a moment
    /// of silence that shifts the tone's phase, and so cancel it out of one long window.
    public static func meanPower(of samples: [Float], sampleRate: Int, frequency: Double, window: Double = 0.25) -> Double {
        let size = max(1, Int(window * Double(sampleRate)))
        let count = max(1, Int((Double(samples.count) / Double(size)).rounded()))
        let length = max(1, samples.count / count)
        let windows = (0..<count).map { i in Array(samples[min(samples.count, i * length)..<(i == count - 1 ? samples.count : (i + 1) * length)]) }
        return windows.reduce(0.0) { $0 + power(of: $1, sampleRate: sampleRate, frequency: frequency) } / Double(count)
    }

    /// The candidate frequency at which `samples` have the most power, or `nil` when there are no
    /// samples or no power at any candidate.
    ///
    /// - Parameters:
    ///   - samples: mono samples in -1...1.
    ///   - sampleRate: their sample rate in hertz.
    ///   - candidates: the frequencies to compare, in hertz.
    public static func dominantFrequency(of samples: [Float], sampleRate: Int, candidates: [Double]) -> Double? {
        var best: (frequency: Double, power: Double)?
        for frequency in candidates {
            let p = power(of: samples, sampleRate: sampleRate, frequency: frequency)
            if p > (best?.power ?? 0) { best = (frequency, p) }
        }
        return best?.frequency
    }

    /// The root-mean-square level of `samples`.
    public static func rms(of samples: [Float]) -> Double {
        guard !samples.isEmpty else { return 0 }
        return (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count)).squareRoot()
    }

    /// Interleaved samples of `channels` channels mixed down to mono (the mean of the channels).
    public static func mono(_ interleaved: [Float], channels: Int) -> [Float] {
        guard channels > 1 else { return interleaved }
        let frames = interleaved.count / channels
        var out = [Float](repeating: 0, count: frames)
        for f in 0..<frames {
            var sum: Float = 0
            for c in 0..<channels { sum += interleaved[f * channels + c] }
            out[f] = sum / Float(channels)
        }
        return out
    }

    /// The audio of `buffers`, one after the other, as mono samples (gaps between buffers are not
    /// filled).
    public static func mono(_ buffers: [AudioBuffer]) -> [Float] {
        var out: [Float] = []
        for buffer in buffers {
            out.append(contentsOf: mono(buffer.floatSamples(), channels: buffer.format.channels))
        }
        return out
    }
}
