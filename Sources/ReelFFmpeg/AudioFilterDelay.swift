import Foundation
import Synchronization
import ReelCore

/// How much an audio graph delays its sound, measured once per graph and format on a separate
/// instance of it: a burst of white noise (broadband, so every kind of filter passes some of
/// it) goes through, and the lag at which what comes out is most like it is the delay — taken
/// only when that peak is clear (a filter that smears time, such as a low lowpass or an echo,
/// has none, and counts as not delaying; it is not refused for that).
package enum AudioFilterDelay {
    /// What a measurement found.
    package struct Measurement: Sendable, Equatable {
        /// The lag of the peak, in samples.
        package var lag: Int
        /// How like the burst the sound is at that lag (normalised: 1 is the same shape).
        package var peak: Double
        /// The peak over the highest value more than a millisecond away from it.
        package var clarity: Double
        /// The delay, when the peak is clear.
        package var frames: Int? { peak >= 0.2 && clarity >= 3 ? lag : nil }
    }

    private struct Key: Hashable {
        var text: String
        var format: AudioFormat
    }

    private static let known = Mutex<[Key: Int]>([:])

    /// The longest delay looked for.
    static let longest = 0.5

    /// The delay of the graph `text` for sound of `format` in samples: 0 when it has none, or
    /// when none could be told (measured once, then remembered).
    package static func frames(of text: String, format: AudioFormat) -> Int {
        let key = Key(text: text, format: format)
        if let delay = known.withLock({ $0[key] }) { return delay }
        let delay = (try? measure(text, format: format).frames) ?? 0
        known.withLock { $0[key] = delay }
        return delay
    }

    /// Measures the graph `text` for sound of `format`: a tenth of a second of silence, a fifth
    /// of white noise (the same on every channel), then silence for the longest delay looked
    /// for, and the end of the sound.
    package static func measure(_ text: String, format: AudioFormat) throws -> Measurement {
        let chain = try AudioFilterChain(text: text, format: format)
        let rate = format.sampleRate
        let lags = Int(Double(rate) * longest)
        var probe = [Float](repeating: 0, count: rate / 10 + rate / 5 + lags)
        var random = UInt32(31)
        for i in (rate / 10)..<(rate / 10 + rate / 5) {
            random = random &* 1_664_525 &+ 1_013_904_223
            probe[i] = Float(Int32(bitPattern: random)) / Float(Int32.max) * 0.5
        }
        var heard = [Float](repeating: 0, count: probe.count)
        func place(_ pieces: [AudioFilterChain.Piece]) {
            for piece in pieces {
                let samples = AudioBuffer(format: format, presentationTime: .zero, wholeFrames: piece.bytes).floatSamples()
                for frame in 0..<(samples.count / format.channels) {
                    let at = Int(piece.position) + frame
                    if at >= 0 && at < heard.count { heard[at] = samples[frame * format.channels] }
                }
            }
        }
        var given = 0
        while given < probe.count {
            let count = min(1024, probe.count - given)
            let frames = probe[given..<(given + count)].flatMap { repeatElement($0, count: format.channels) }
            try chain.push(format.bytes(of: frames), at: Int64(given))
            place(try chain.pull())
            given += count
        }
        try chain.end()
        place(try chain.pull(limit: 4 * probe.count + 10 * rate))
        return correlate(probe, heard, lags: lags, near: max(1, rate / 1000))
    }

    /// Where `y` is most like `x` moved later (within `lags`), and how clear that is against
    /// the rest more than `near` samples away.
    static func correlate(_ x: [Float], _ y: [Float], lags: Int, near: Int) -> Measurement {
        var length = 1
        while length < x.count + lags { length *= 2 }
        let energy = Double(x.reduce(0) { $0 + $1 * $1 }) * Double(y.reduce(0) { $0 + $1 * $1 })
        guard energy > 0, let transform = FourierTransform(length: length) else { return Measurement(lag: 0, peak: 0, clarity: 0) }
        let values = transform.crossCorrelation(x, y, lags: lags).map { abs(Double($0)) / energy.squareRoot() }
        let lag = values.indices.max { values[$0] < values[$1] } ?? 0
        let rest = values.indices.lazy.filter { abs($0 - lag) > near }.map { values[$0] }.max() ?? 0
        return Measurement(lag: lag, peak: values[lag], clarity: rest > 0 ? values[lag] / rest : .infinity)
    }
}
