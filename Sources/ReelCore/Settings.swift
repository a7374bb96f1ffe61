/// A video codec Reel can encode.
public enum VideoCodec: String, Sendable, Hashable, CaseIterable {
    /// H.264 (AVC) through libx264.
    case h264
    /// HEVC (H.265) through libx265, tagged `hvc1` in MP4 and MOV.
    case hevc
    /// VP9 through libvpx.
    case vp9
    /// AV1 through libaom.
    case av1

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

    /// The encoder presets, fastest first: x264's names for every codec. x264 and x265 take
    /// them as they are; for VP9 and AV1 they are mapped onto the encoders' own speed settings
    /// (real-time or good quality, and a CPU-use level).
    public var presets: [String] { Self.presetNames }

    /// x264's preset names, fastest first.
    public static let presetNames = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow", "placebo"]

    /// The preset used when none is given: `veryfast` for H.264 and HEVC; for VP9 and AV1,
    /// whose encoders are several times slower, their fastest (`ultrafast`, real time), so that
    /// a recording keeps up.
    public var defaultPreset: String {
        switch self {
        case .h264, .hevc: return "veryfast"
        case .vp9, .av1: return "ultrafast"
        }
    }

    /// The profiles the codec can be asked for, as its encoder names them. Reel writes 4:2:0
    /// video, 8-bit unless the profile is a 10-bit one (see ``bitDepth(ofProfile:)``).
    public var profiles: [String] {
        switch self {
        case .h264: return ["baseline", "main", "high", "high10"]
        case .hevc: return ["main", "main10"]
        case .vp9: return ["0", "2"]
        case .av1: return ["main"]
        }
    }

    /// The bits per sample the profile stands for: 10 for `high10`, `main10` and VP9's `2`, else 8.
    public func bitDepth(ofProfile profile: String) -> Int {
        switch (self, profile) {
        case (.h264, "high10"), (.hevc, "main10"), (.vp9, "2"): return 10
        default: return 8
        }
    }

    /// The constant-quality scale (lower is better): 0–51 for x264 and x265, 0–63 for VP9 and AV1.
    public var crfRange: ClosedRange<Int> {
        switch self {
        case .h264, .hevc: return 0...51
        case .vp9, .av1: return 0...63
        }
    }
}

/// An audio codec Reel can encode.
public enum AudioCodec: String, Sendable, Hashable, CaseIterable {
    /// AAC-LC, what every player takes.
    case aac
    /// Opus.
    case opus
    /// FLAC: lossless, compressed (`.flac` files).
    case flac
    /// PCM, 16-bit little-endian: lossless, uncompressed (`.wav` files).
    case pcm

    /// Parses a codec name (`aac`, `opus`, `flac`, `pcm`).
    public init?(name: String) {
        switch name.lowercased() {
        case "aac": self = .aac
        case "opus", "libopus": self = .opus
        case "flac": self = .flac
        case "pcm", "pcm_s16le", "wav": self = .pcm
        default: return nil
        }
    }

    /// The codec's name as people write it (`AAC`, `Opus`, `FLAC`, `PCM`).
    public var displayName: String {
        switch self {
        case .aac: return "AAC"
        case .opus: return "Opus"
        case .flac: return "FLAC"
        case .pcm: return "PCM"
        }
    }

    /// Whether the codec keeps every sample exactly (FLAC, PCM): it has no bit rate to choose.
    public var isLossless: Bool { self == .flac || self == .pcm }

    /// The bit rates (bits per second) the encoder honours for `channels` channels: FFmpeg's
    /// AAC encoder 12k to 128k a channel (it spends no fewer or no more whatever it is asked),
    /// libopus 4k to 256k a channel (what it accepts). A lossless codec spends what the sound
    /// needs and ignores the bit rate: any positive one is accepted.
    public func bitRateRange(channels: Int) -> ClosedRange<Int> {
        let n = Swift.max(channels, 1)
        switch self {
        case .aac: return (12_000 * n)...(128_000 * n)
        case .opus: return (4_000 * n)...(256_000 * n)
        case .flac, .pcm: return 1...Int(Int32.max)
        }
    }
}

/// A file container.
public enum Container: String, Sendable, Hashable, CaseIterable {
    /// MPEG-4 (`.mp4`): fragmented while recording, finalised in place.
    case mp4
    /// QuickTime (`.mov`): as MP4.
    case mov
    /// Matroska (`.mkv`).
    case mkv
    /// MPEG-4 audio (`.m4a`, AAC): sound only; fragmented while recording and finalised in
    /// place, as MP4.
    case m4a
    /// Opus in Ogg (`.opus`): sound only.
    case opus
    /// Ogg (`.ogg`), holding Opus: sound only.
    case ogg
    /// FLAC (`.flac`): sound only, lossless.
    case flac
    /// WAVE (`.wav`), 16-bit PCM: sound only, lossless and uncompressed.
    case wav
    /// WebM (`.webm`): VP9 or AV1 video with Opus sound, what web browsers play. Written as
    /// Matroska is (WebM is a subset of it).
    case webm
    /// An animated GIF (`.gif`): pictures only, 256 colours each. A recording is written into
    /// its ``intermediateContainer`` (crash-safe, as any recording) and made into the GIF at
    /// the stop, with a palette fitted to what was recorded and dithering.
    case gif

    /// Parses a container name (`mp4`, `mov`, `mkv`, `matroska`, `m4a`, `opus`, `ogg`, `flac`,
    /// `wav`, `webm`, `gif`).
    public init?(name: String) {
        switch name.lowercased() {
        case "mp4", "m4v": self = .mp4
        case "mov", "qt", "quicktime": self = .mov
        case "mkv", "matroska": self = .mkv
        case "m4a": self = .m4a
        case "opus": self = .opus
        case "ogg", "oga": self = .ogg
        case "flac": self = .flac
        case "wav", "wave": self = .wav
        case "webm": self = .webm
        case "gif": self = .gif
        default: return nil
        }
    }

    /// The container a file name's extension implies, if any.
    public init?(pathExtension: String) {
        self.init(name: pathExtension)
    }

    /// The usual file extension.
    public var fileExtension: String { rawValue }

    /// Whether the container holds sound only (`.m4a`, `.opus`, `.ogg`, `.flac`, `.wav`).
    public var isAudioOnly: Bool {
        switch self {
        case .mp4, .mov, .mkv, .webm, .gif: return false
        case .m4a, .opus, .ogg, .flac, .wav: return true
        }
    }

    /// The most audio tracks a file of this kind holds: 1 in WAV and FLAC (two audio sources
    /// or more go into one only mixed into one track), 0 in a GIF, no limit (`nil`) in the others.
    public var maximumAudioTracks: Int? {
        switch self {
        case .flac, .wav: return 1
        case .gif: return 0
        case .mp4, .mov, .mkv, .webm, .m4a, .opus, .ogg: return nil
        }
    }

    /// Whether the container is Matroska or its WebM subset: written cluster by cluster, a
    /// Segment without its size until the clean stop.
    public var isMatroska: Bool { self == .mkv || self == .webm }

    /// The container a recording into this one is written in while it records, when the file
    /// is made from that only at the stop: MP4 for a GIF (which cannot be written as pictures
    /// come: its palette is fitted to the whole recording). `nil` for the others, which are
    /// written as they are recorded.
    public var intermediateContainer: Container? { self == .gif ? .mp4 : nil }

    /// Whether a file of this kind keeps chapter markers: MP4, MOV and M4A (a chapter list),
    /// MKV and WebM (Matroska chapters). Ogg, Opus and FLAC files put theirs in a header written
    /// before the recording, WAV and GIF files have no place for them.
    public var holdsChapters: Bool {
        switch self {
        case .mp4, .mov, .m4a, .mkv, .webm: return true
        case .opus, .ogg, .flac, .wav, .gif: return false
        }
    }

    /// The most chapters a file of this kind holds: 255 in MP4, MOV and M4A (a chapter list
    /// counts its chapters in one byte), no limit (`nil`) in MKV and WebM; 0 where it holds none.
    public var maximumChapters: Int? {
        holdsChapters ? (isISOBaseMedia ? 255 : nil) : 0
    }

    /// Whether the container is an ISO base media file (MP4, MOV, M4A): written fragmented
    /// while recording and finalised in place, its index at the front.
    public var isISOBaseMedia: Bool { self == .mp4 || self == .mov || self == .m4a }

    /// The video codec that suits the container best: VP9 for WebM, else H.264 (a GIF's
    /// intermediate recording is H.264).
    public var defaultVideoCodec: VideoCodec { self == .webm ? .vp9 : .h264 }

    /// The audio codec that suits the container best (for a GIF, which holds no sound, its
    /// intermediate's).
    public var defaultAudioCodec: AudioCodec {
        switch self {
        case .mp4, .mov, .mkv, .m4a, .gif: return .aac
        case .opus, .ogg, .webm: return .opus
        case .flac: return .flac
        case .wav: return .pcm
        }
    }

    /// Whether the container can hold the codec (for a GIF: whether its intermediate
    /// recording can).
    public func canHold(_ codec: VideoCodec) -> Bool {
        switch (self, codec) {
        case (.mkv, _): return true
        case (.webm, .vp9), (.webm, .av1): return true
        case (.webm, _): return false
        case (.gif, _): return intermediateContainer.map { $0.canHold(codec) } ?? false
        case (.m4a, _), (.opus, _), (.ogg, _), (.flac, _), (.wav, _): return false
        case (_, .h264), (_, .hevc): return true
        case (.mp4, .vp9), (.mp4, .av1): return true
        case (.mov, _): return false
        }
    }

    /// Whether the container can hold the audio codec (a GIF holds none).
    public func canHold(_ codec: AudioCodec) -> Bool {
        switch (self, codec) {
        case (.gif, _): return false
        case (.webm, .opus): return true
        case (.webm, _): return false
        case (.mov, .opus): return false
        case (.mp4, .pcm), (.mov, .pcm), (.mp4, .flac), (.mov, .flac): return false
        case (.mp4, _), (.mov, _), (.mkv, _): return true
        case (.m4a, .aac), (.opus, .opus), (.ogg, .opus), (.flac, .flac), (.wav, .pcm): return true
        case (.m4a, _), (.opus, _), (.ogg, _), (.flac, _), (.wav, _): return false
        }
    }
}

/// How a video encoder spends bits.
public enum RateControl: Sendable, Hashable, CustomStringConvertible {
    /// Constant quality (lower is better; 0–51 for H.264 and HEVC, 0–63 for VP9 and AV1).
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

/// Which pictures of a source a recording keeps.
///
/// A screen whose capture knows what changed (X11 with the DAMAGE extension) marks a picture
/// that repeats the one before; other sources never do, so every mode records them alike.
public enum FrameMode: String, Sendable, Hashable, CaseIterable {
    /// A picture at every slot of the frame rate, repeated ones too (they encode to almost
    /// nothing): what every player and editor expects. `--frame-mode cfr`.
    case constant = "cfr"
    /// Only changed pictures, at most one per slot of the frame rate, and a repeated one at
    /// least once a second (so that players, seeking and live streams always have a recent
    /// picture); timestamps stay on the frame rate's grid. `--frame-mode vfr`.
    case variable = "vfr"
    /// Only changed pictures, at most one per slot of the frame rate, and the last picture
    /// again where the recording ends, so that it lasts as long as it was recorded. A still
    /// screen costs almost nothing. `--frame-mode content`.
    case content = "content"

    /// The longest a ``variable`` recording goes without a picture, in seconds.
    public static let longestVariableGap = 1.0
}

/// Settings of a video track, in the spirit of `AVVideoSettings`.
public struct VideoSettings: Sendable, Hashable {
    /// The codec.
    public var codec: VideoCodec
    /// The output size; `nil` keeps the source's size. Pictures are scaled to it; those whose
    /// size a filter made (a crop, a scale, a pad) and whose shape is another are fitted in with
    /// their aspect kept and black bars around them rather than stretched.
    public var size: PixelSize?
    /// The frame rate of the recording.
    public var frameRate: FrameRate
    /// The encoder preset, one of ``VideoCodec/presets`` (`nil`: the codec's ``VideoCodec/defaultPreset``).
    public var preset: String?
    /// Quality or bit rate.
    public var rateControl: RateControl
    /// Frames between keyframes; `nil` means two seconds' worth.
    public var keyframeInterval: Int?
    /// The codec profile, one of ``VideoCodec/profiles`` (`baseline`, `main`, `high`, `main10`…),
    /// if one is wanted. The encoder stays within it; a 10-bit profile makes 10-bit video.
    public var profile: String?
    /// Which pictures are recorded: one at every slot of the frame rate (``FrameMode/constant``,
    /// the default), or only changed ones (``FrameMode/variable``, ``FrameMode/content``).
    public var frameMode: FrameMode = .constant

    /// Video settings; each argument is the property of the same name. The default is H.264 at
    /// CRF 23, the source's size, 30 fps.
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

    /// The smallest video size every codec encodes.
    public static let minimumSize = PixelSize(width: 16, height: 16)
    /// The largest video size Reel accepts (every codec encodes it, given a few GB of memory).
    public static let maximumSize = PixelSize(width: 8192, height: 8192)
    /// The video bit rates (bits per second) Reel accepts: 10 kb/s to 500 Mb/s.
    public static let bitRateRange = 10_000...500_000_000
    /// The keyframe intervals (frames) Reel accepts.
    public static let keyframeIntervalRange = 1...10_000

    /// Bits per sample: 10 with a 10-bit profile, else 8.
    public var bitDepth: Int { profile.map { codec.bitDepth(ofProfile: $0) } ?? 8 }

    /// The keyframe interval in frames.
    public var effectiveKeyframeInterval: Int {
        keyframeInterval ?? max(1, Int((frameRate.framesPerSecond * 2).rounded()))
    }

    /// Whether the picture at slot `index` of the frame rate's grid must be a keyframe when a
    /// ``frameMode`` leaves pictures out (encoders count keyframe intervals in pictures; these
    /// modes count them in time): the first, and the first a keyframe interval or more after
    /// the keyframe at slot `last`.
    package func keyframeDue(at index: Int64, after last: Int64?) -> Bool {
        guard let last else { return true }
        return index - last >= Int64(effectiveKeyframeInterval)
    }

    /// The preset to use: the one asked for, else the codec's default.
    public var effectivePreset: String {
        preset ?? codec.defaultPreset
    }

    /// Checks the settings for values that make no sense, or that the codec would ignore.
    public func validate() throws {
        if let preset, !codec.presets.contains(preset) {
            throw ReelError(.invalidConfiguration, "unknown preset '\(preset)' for \(codec.rawValue)",
                            hint: "use one of: \(codec.presets.joined(separator: ", "))")
        }
        if let profile, !codec.profiles.contains(profile) {
            throw ReelError(.invalidConfiguration, "\(codec.rawValue) has no profile '\(profile)'",
                            hint: "use one of: \(codec.profiles.joined(separator: ", "))")
        }
        let (low, high) = (Self.minimumSize, Self.maximumSize)
        if let size, size.width < low.width || size.height < low.height || size.width > high.width || size.height > high.height {
            throw ReelError(.invalidConfiguration, "video size \(size) is out of range", hint: "use \(low) to \(high)")
        }
        if frameRate.framesPerSecond > 240 || frameRate.framesPerSecond < 0.1 {
            throw ReelError(.invalidConfiguration, "frame rate \(frameRate) is out of range", hint: "use 1 to 240 fps")
        }
        switch rateControl {
        case .crf(let q) where !codec.crfRange.contains(q):
            throw ReelError(.invalidConfiguration, "CRF \(q) is out of range",
                            hint: "use \(codec.crfRange.lowerBound) to \(codec.crfRange.upperBound) for \(codec.rawValue)")
        case .bitRate(let b) where !Self.bitRateRange.contains(b):
            throw ReelError(.invalidConfiguration, "video bit rate \(b) b/s is out of range", hint: "use 10 kb/s to 500 Mb/s")
        default: break
        }
        if let k = keyframeInterval, !Self.keyframeIntervalRange.contains(k) {
            throw ReelError(.invalidConfiguration, "keyframe interval \(k) is out of range", hint: "use 1 to 10000 frames")
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

    /// Settings of a track; without a `bitRate`, 160 kb/s or the most the codec honours for
    /// `channels` if that is less (128 kb/s for mono AAC).
    public init(codec: AudioCodec = .aac, sampleRate: Int = 48_000, channels: Int = 2, bitRate: Int? = nil) {
        self.codec = codec
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitRate = bitRate ?? min(160_000, codec.bitRateRange(channels: channels).upperBound)
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
        let range = codec.bitRateRange(channels: channels)
        if !range.contains(bitRate) {
            throw ReelError(.invalidConfiguration, "audio bit rate \(bitRate) b/s is out of range for \(codec.displayName)",
                            hint: "use \(range.lowerBound / 1000) to \(range.upperBound / 1000) kb/s for \(channels == 1 ? "mono" : "\(channels) channels")")
        }
    }
}
