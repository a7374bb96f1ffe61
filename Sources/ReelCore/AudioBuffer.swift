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
    /// How each sample is stored.
    public var sampleFormat: SampleFormat
    /// Frames (one sample of every channel) per second.
    public var sampleRate: Int
    /// Channels, interleaved in each frame.
    public var channels: Int

    /// Creates a format; the default is 32-bit float stereo at 48 kHz.
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

    /// Creates a buffer over `data`, which holds whole sample frames of `format`. Throws
    /// `invalidConfiguration` for a format without channels or rate, or data that ends inside
    /// a frame.
    public init(format: AudioFormat, presentationTime: MediaTime, data: [UInt8]) throws {
        guard format.channels > 0, format.sampleRate > 0, format.sampleRate <= Int(Int32.max) else {
            throw ReelError(.invalidConfiguration, "audio of \(format) cannot be held", hint: "give the format at least one channel and a sample rate")
        }
        guard data.count % format.bytesPerFrame == 0 else {
            throw ReelError(.invalidConfiguration, "\(data.count) bytes of \(format) audio end inside a sample frame",
                            hint: "hand over whole frames of \(format.bytesPerFrame) bytes")
        }
        self.init(format: format, presentationTime: presentationTime, wholeFrames: data)
    }

    /// Creates a buffer over `data` that its maker knows holds whole sample frames of a valid
    /// `format` (a source, a decoder, a mixer).
    package init(format: AudioFormat, presentationTime: MediaTime, wholeFrames data: [UInt8]) {
        self.format = format
        self.presentationTime = presentationTime
        self.data = data
    }

    /// A buffer of `frameCount` frames of silence.
    public static func silence(format: AudioFormat, frameCount: Int, at time: MediaTime) -> AudioBuffer {
        AudioBuffer(format: format, presentationTime: time, wholeFrames: [UInt8](repeating: 0, count: frameCount * format.bytesPerFrame))
    }

    /// The number of sample frames.
    public var frameCount: Int { format.bytesPerFrame > 0 ? data.count / format.bytesPerFrame : 0 }

    /// The duration of the buffer.
    public var duration: MediaTime { format.duration(ofFrames: frameCount) }

    /// The presentation time just after the last sample.
    public var endTime: MediaTime { presentationTime + duration }

    /// The frames `range` of this buffer (the part of it the buffer has), as a new buffer with
    /// its own time.
    public func slice(frames range: Range<Int>) -> AudioBuffer {
        let range = range.clamped(to: 0..<frameCount)
        let bpf = format.bytesPerFrame
        let bytes = Array(data[(range.lowerBound * bpf)..<(range.upperBound * bpf)])
        return AudioBuffer(format: format, presentationTime: presentationTime + format.duration(ofFrames: range.lowerBound), wholeFrames: bytes)
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
