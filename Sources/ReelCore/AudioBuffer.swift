/// How audio samples are stored.
public enum SampleFormat: String, Sendable, Hashable {
    /// Signed 16-bit integers, interleaved.
    case s16
    /// 32-bit floats in -1...1, interleaved.
    case f32

    /// Bytes per sample of one channel.
    public var bytesPerSample: Int { self == .s16 ? 2 : 4 }
}

/// The format of an audio stream: sample type, rate and channel count.
public struct AudioFormat: Sendable, Hashable, CustomStringConvertible {
    public var sampleFormat: SampleFormat
    public var sampleRate: Int
    public var channels: Int

    public init(sampleFormat: SampleFormat = .f32, sampleRate: Int = 48_000, channels: Int = 2) {
        self.sampleFormat = sampleFormat
        self.sampleRate = sampleRate
        self.channels = channels
    }

    /// Bytes per frame (one sample of every channel).
    public var bytesPerFrame: Int { sampleFormat.bytesPerSample * channels }

    /// The duration of `frames` sample frames.
    public func duration(ofFrames frames: Int) -> MediaTime { MediaTime(value: Int64(frames), timescale: Int32(sampleRate)) }

    public var description: String { "\(sampleRate) Hz \(channels) ch \(sampleFormat.rawValue)" }
}

/// A run of interleaved audio samples with the presentation time of its first sample.
///
/// The samples are held in a contiguous Swift array (copy-on-write, so passing a buffer on
/// does not copy it).
public struct AudioBuffer: Sendable {
    /// The format of the samples.
    public let format: AudioFormat
    /// The presentation time of the first sample on the session clock.
    public var presentationTime: MediaTime
    /// The interleaved sample bytes.
    public private(set) var data: [UInt8]

    /// Creates a buffer over `data`, which holds whole sample frames of `format`.
    public init(format: AudioFormat, presentationTime: MediaTime, data: [UInt8]) {
        precondition(data.count % format.bytesPerFrame == 0, "audio data must hold whole frames")
        self.format = format
        self.presentationTime = presentationTime
        self.data = data
    }

    /// A buffer of `frameCount` frames of silence.
    public static func silence(format: AudioFormat, frameCount: Int, at time: MediaTime) -> AudioBuffer {
        AudioBuffer(format: format, presentationTime: time, data: [UInt8](repeating: 0, count: frameCount * format.bytesPerFrame))
    }

    /// The number of sample frames.
    public var frameCount: Int { data.count / format.bytesPerFrame }

    /// The duration of the buffer.
    public var duration: MediaTime { format.duration(ofFrames: frameCount) }

    /// The presentation time just after the last sample.
    public var endTime: MediaTime { presentationTime + duration }

    /// The frames `range` of this buffer, as a new buffer with its own time.
    public func slice(frames range: Range<Int>) -> AudioBuffer {
        let bpf = format.bytesPerFrame
        let bytes = Array(data[(range.lowerBound * bpf)..<(range.upperBound * bpf)])
        return AudioBuffer(format: format, presentationTime: presentationTime + format.duration(ofFrames: range.lowerBound), data: bytes)
    }

    /// Calls `body` with the raw interleaved bytes.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try data.withUnsafeBytes(body)
    }

    /// The samples as floats in -1...1, interleaved (converts s16).
    public func floatSamples() -> [Float] {
        switch format.sampleFormat {
        case .f32:
            return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        case .s16:
            return data.withUnsafeBytes { raw in raw.bindMemory(to: Int16.self).map { Float($0) / 32768 } }
        }
    }
}
