/// A video codec Reel can encode.
public enum VideoCodec: String, Sendable, Hashable, CaseIterable {
    case h264, hevc, vp9, av1

    /// Parses a codec name as users write it (`h264`, `x264`, `avc`, `hevc`, `h265`, `vp9`, `av1`).
    public init?(name: String) {
        switch name.lowercased() {
        case "h264", "x264", "avc", "libx264": self = .h264
        case "hevc", "h265", "x265", "libx265": self = .hevc
        case "vp9", "libvpx-vp9": self = .vp9
        case "av1", "libaom-av1", "libsvtav1": self = .av1
        default: return nil
        }
    }

    /// The encoder presets the codec understands (x264/x265 names; empty when it has none).
    public var presets: [String] {
        switch self {
        case .h264, .hevc:
            return ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow", "placebo"]
        case .vp9, .av1:
            return []
        }
    }
}

/// An audio codec Reel can encode.
public enum AudioCodec: String, Sendable, Hashable, CaseIterable {
    case aac, opus

    /// Parses a codec name (`aac`, `opus`).
    public init?(name: String) {
        switch name.lowercased() {
        case "aac": self = .aac
        case "opus", "libopus": self = .opus
        default: return nil
        }
    }
}

/// A file container.
public enum Container: String, Sendable, Hashable, CaseIterable {
    case mp4, mov, mkv

    /// Parses a container name (`mp4`, `mov`, `mkv`, `matroska`).
    public init?(name: String) {
        switch name.lowercased() {
        case "mp4", "m4v": self = .mp4
        case "mov", "qt", "quicktime": self = .mov
        case "mkv", "matroska": self = .mkv
        default: return nil
        }
    }

    /// The container a file name's extension implies, if any.
    public init?(pathExtension: String) {
        self.init(name: pathExtension)
    }

    /// The usual file extension.
    public var fileExtension: String { rawValue }

    /// The audio codec that suits the container best.
    public var defaultAudioCodec: AudioCodec { .aac }

    /// Whether the container can hold the codec.
    public func canHold(_ codec: VideoCodec) -> Bool {
        switch (self, codec) {
        case (.mkv, _): return true
        case (_, .h264), (_, .hevc): return true
        case (.mp4, .vp9), (.mp4, .av1): return true
        case (.mov, _): return false
        }
    }

    /// Whether the container can hold the audio codec.
    public func canHold(_ codec: AudioCodec) -> Bool {
        switch (self, codec) {
        case (.mov, .opus): return false
        default: return true
        }
    }
}

/// How a video encoder spends bits.
public enum RateControl: Sendable, Hashable, CustomStringConvertible {
    /// Constant quality (x264's CRF; lower is better, 0–51).
    case crf(Int)
    /// An average bit rate in bits per second.
    case bitRate(Int)

    public var description: String {
        switch self {
        case .crf(let q): return "CRF \(q)"
        case .bitRate(let b): return "\(b / 1000) kb/s"
        }
    }
}

/// Settings of a video track, in the spirit of `AVVideoSettings`.
public struct VideoSettings: Sendable, Hashable {
    /// The codec.
    public var codec: VideoCodec
    /// The output size; `nil` keeps the source's size.
    public var size: PixelSize?
    /// The frame rate of the recording.
    public var frameRate: FrameRate
    /// The encoder preset (`veryfast` by default for H.264/HEVC).
    public var preset: String?
    /// Quality or bit rate.
    public var rateControl: RateControl
    /// Frames between keyframes; `nil` means two seconds' worth.
    public var keyframeInterval: Int?
    /// The codec profile (`baseline`, `main`, `high`), if one is wanted.
    public var profile: String?

    public init(codec: VideoCodec = .h264, size: PixelSize? = nil, frameRate: FrameRate = FrameRate(30),
                preset: String? = nil, rateControl: RateControl = .crf(23), keyframeInterval: Int? = nil,
                profile: String? = nil) {
        self.codec = codec
        self.size = size
        self.frameRate = frameRate
        self.preset = preset
        self.rateControl = rateControl
        self.keyframeInterval = keyframeInterval
        self.profile = profile
    }

    /// The keyframe interval in frames.
    public var effectiveKeyframeInterval: Int {
        keyframeInterval ?? max(1, Int((frameRate.framesPerSecond * 2).rounded()))
    }

    /// The preset to use: the one asked for, else `veryfast` where the codec has presets.
    public var effectivePreset: String? {
        preset ?? (codec.presets.isEmpty ? nil : "veryfast")
    }

    /// Checks the settings for values that make no sense.
    public func validate() throws {
        if let preset, !codec.presets.isEmpty, !codec.presets.contains(preset) {
            throw ReelError(.invalidConfiguration, "unknown preset '\(preset)' for \(codec.rawValue)",
                            hint: "use one of: \(codec.presets.joined(separator: ", "))")
        }
        if preset != nil, codec.presets.isEmpty {
            throw ReelError(.invalidConfiguration, "\(codec.rawValue) takes no preset")
        }
        if let size, size.width < 16 || size.height < 16 || size.width > 8192 || size.height > 8192 {
            throw ReelError(.invalidConfiguration, "video size \(size) is out of range", hint: "use 16x16 to 8192x8192")
        }
        if frameRate.framesPerSecond > 240 || frameRate.framesPerSecond < 0.1 {
            throw ReelError(.invalidConfiguration, "frame rate \(frameRate) is out of range", hint: "use 1 to 240 fps")
        }
        switch rateControl {
        case .crf(let q) where q < 0 || q > 63:
            throw ReelError(.invalidConfiguration, "CRF \(q) is out of range", hint: "use 0 (lossless) to 51")
        case .bitRate(let b) where b < 10_000:
            throw ReelError(.invalidConfiguration, "bit rate \(b) b/s is too low", hint: "use at least 10k")
        default: break
        }
        if let k = keyframeInterval, k < 1 {
            throw ReelError(.invalidConfiguration, "keyframe interval \(k) must be at least 1 frame")
        }
    }
}

/// Settings of an audio track.
public struct AudioSettings: Sendable, Hashable {
    /// The codec.
    public var codec: AudioCodec
    /// The sample rate of the track.
    public var sampleRate: Int
    /// The channel count of the track.
    public var channels: Int
    /// The bit rate in bits per second.
    public var bitRate: Int

    public init(codec: AudioCodec = .aac, sampleRate: Int = 48_000, channels: Int = 2, bitRate: Int = 160_000) {
        self.codec = codec
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitRate = bitRate
    }

    /// Checks the settings for values that make no sense.
    public func validate() throws {
        if ![8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 88200, 96000].contains(sampleRate) {
            throw ReelError(.invalidConfiguration, "audio sample rate \(sampleRate) is not supported", hint: "use 44100 or 48000")
        }
        if codec == .opus && sampleRate != 48000 {
            throw ReelError(.invalidConfiguration, "Opus needs a 48000 Hz sample rate")
        }
        if channels < 1 || channels > 2 {
            throw ReelError(.invalidConfiguration, "\(channels) audio channels are not supported", hint: "use 1 or 2")
        }
        if bitRate < 8_000 || bitRate > 512_000 {
            throw ReelError(.invalidConfiguration, "audio bit rate \(bitRate) b/s is out of range", hint: "use 8k to 512k")
        }
    }
}
