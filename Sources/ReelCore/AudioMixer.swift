/// Mixes several contiguous audio runs (each already laid out by an ``AudioTrackAligner``)
/// into one, summing samples that share a time.
///
/// Inputs arrive at different moments; the mixer emits only what every input has reached,
/// except that an input lagging more than `maxLag` behind the others is padded with silence so
/// one stalled source cannot hold the mix back (or grow memory).
package struct AudioMixer: Sendable {
    /// The format of the mix (always 32-bit float).
    package let format: AudioFormat
    /// How far one input may lag before it is padded with silence.
    package let maxLag: Int
    private var pending: [[Float]]
    /// Samples of each input already covered by padding; they are dropped when they arrive.
    private var owed: [Int]
    private var emitted: Int64 = 0

    /// Creates a mixer of `inputs` inputs into `format` (its sample format is taken as f32).
    package init(inputs: Int, format: AudioFormat, maxLag: MediaTime = MediaTime(value: 1, timescale: 2)) {
        self.format = AudioFormat(sampleFormat: .f32, sampleRate: format.sampleRate, channels: format.channels)
        self.maxLag = Int(maxLag.convertedValue(to: Int32(format.sampleRate)))
        self.pending = Array(repeating: [], count: inputs)
        self.owed = Array(repeating: 0, count: inputs)
    }

    /// Adds contiguous audio for input `input` and returns what can be mixed now.
    /// Throws `invalidConfiguration` for audio at another sample rate (the mixer does not
    /// resample) or for an input it does not have.
    package mutating func add(_ buffer: AudioBuffer, input: Int) throws -> AudioBuffer? {
        guard buffer.format.sampleRate == format.sampleRate, pending.indices.contains(input) else {
            throw ReelError(.invalidConfiguration, "audio at \(buffer.format.sampleRate) Hz cannot be mixed into \(format.sampleRate) Hz (input \(input))",
                            hint: "mix sources of one sample rate")
        }
        let samples = buffer.floatSamples()
        let inChannels = buffer.format.channels, outChannels = format.channels
        let frames = buffer.frameCount
        let skip = min(owed[input], frames)
        owed[input] -= skip
        pending[input].reserveCapacity(pending[input].count + (frames - skip) * outChannels)
        for f in skip..<frames {
            for c in 0..<outChannels {
                let value: Float
                if inChannels == outChannels { value = samples[f * inChannels + c] }
                else if inChannels == 1 { value = samples[f] }
                else { value = (samples[f * inChannels] + samples[f * inChannels + 1]) * 0.5 }
                pending[input].append(value)
            }
        }
        return mix(flush: false)
    }

    /// Mixes everything that is left, padding short inputs with silence.
    package mutating func flush() -> AudioBuffer? { mix(flush: true) }

    private mutating func mix(flush: Bool) -> AudioBuffer? {
        let channels = format.channels
        let counts = pending.map { $0.count / channels }
        guard let most = counts.max() else { return nil }
        var ready = counts.min() ?? 0
        if flush { ready = most }
        else if most - ready > maxLag {
            // Pad the laggards so the mix can move on.
            ready = most - maxLag
        }
        guard ready > 0 else { return nil }
        var out = [Float](repeating: 0, count: ready * channels)
        for i in pending.indices {
            let available = min(pending[i].count, ready * channels)
            for j in 0..<available { out[j] += pending[i][j] }
            pending[i].removeFirst(available)
            owed[i] += ready - available / channels
        }
        for j in out.indices { out[j] = max(-1, min(1, out[j])) }
        let bytes = out.withUnsafeBytes { Array($0) }
        let time = MediaTime(value: emitted, timescale: Int32(format.sampleRate))
        emitted += Int64(ready)
        return AudioBuffer(format: format, presentationTime: time, wholeFrames: bytes)
    }
}
