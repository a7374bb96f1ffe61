import Foundation
internal import CFFmpeg
import ReelCore

/// The facts of one video or audio stream of a clip that decide whether clips can be joined.
struct StreamFacts {
    enum Kind { case video, audio }
    var kind: Kind
    /// The stream's index in its file.
    var index: Int
    var codecID: AVCodecID
    var width: Int32 = 0
    var height: Int32 = 0
    var pixelFormat: Int32 = -1
    var sampleRate: Int32 = 0
    /// The lowest audio sample rate a clip may have (telephone sound is 8000 Hz).
    static let lowestSampleRate: Int32 = 1000
    var channels: Int32 = 0
    var layout: String = ""
    /// Samples per packet for codecs with a fixed frame size (AAC: 1024), else 0.
    var frameSize: Int32 = 0
    var bitRate: Int64 = 0
    var extradata: [UInt8] = []
    var timeBase: AVRational
    var frameRate: AVRational = AVRational(num: 0, den: 1)
    /// How many frames decoding runs ahead of presentation (B-frame reordering).
    var videoDelay: Int = 0
    /// Packets the file says the stream has (0 when it does not say).
    var packetCount: Int64
    var title: String?

    var codecName: String { cString(avcodec_get_name(codecID)) }

    var videoCodec: VideoCodec? {
        switch codecID {
        case AV_CODEC_ID_H264: return .h264
        case AV_CODEC_ID_HEVC: return .hevc
        case AV_CODEC_ID_VP9: return .vp9
        case AV_CODEC_ID_AV1: return .av1
        default: return nil
        }
    }

    var audioCodec: AudioCodec? {
        switch codecID {
        case AV_CODEC_ID_AAC: return .aac
        case AV_CODEC_ID_OPUS: return .opus
        case AV_CODEC_ID_FLAC: return .flac
        case AV_CODEC_ID_PCM_S16LE: return .pcm
        default: return nil
        }
    }

    /// "H.264 video", "AAC audio".
    var codecLabel: String {
        let names = ["h264": "H.264", "hevc": "HEVC", "vp9": "VP9", "av1": "AV1", "aac": "AAC", "opus": "Opus", "flac": "FLAC", "pcm_s16le": "PCM"]
        return "\(names[codecName] ?? codecName) \(kind == .video ? "video" : "audio")"
    }

    var pixelFormatName: String {
        guard let name = av_get_pix_fmt_name(AVPixelFormat(rawValue: pixelFormat)) else { return "unknown" }
        return cString(name)
    }

    var size: PixelSize { PixelSize(width: Int(width), height: Int(height)) }

    init(_ stream: UnsafeMutablePointer<AVStream>, kind: Kind) {
        let par = stream.pointee.codecpar.pointee
        self.kind = kind
        index = Int(stream.pointee.index)
        codecID = par.codec_id
        timeBase = stream.pointee.time_base
        packetCount = stream.pointee.nb_frames
        bitRate = par.bit_rate
        if par.extradata_size > 0, let data = par.extradata {
            extradata = Array(UnsafeBufferPointer(start: data, count: Int(par.extradata_size)))
        }
        if let entry = av_dict_get(stream.pointee.metadata, "title", nil, 0) ?? av_dict_get(stream.pointee.metadata, "handler_name", nil, 0) {
            let value = cString(entry.pointee.value)
            if !["SoundHandler", "VideoHandler", ""].contains(value) { title = value }
        }
        switch kind {
        case .video:
            width = par.width
            height = par.height
            pixelFormat = par.format
            let avg = stream.pointee.avg_frame_rate, real = stream.pointee.r_frame_rate
            frameRate = avg.num > 0 && avg.den > 0 ? avg : real
            videoDelay = Int(min(max(par.video_delay, 0), 16))
        case .audio:
            sampleRate = par.sample_rate
            var layout = par.ch_layout
            channels = layout.nb_channels
            // A file that gives only a channel count (an MP4 without a channel layout box) means
            // the usual layout for that count: "2 channels" is stereo, as an MKV or MOV says.
            var usual = AVChannelLayout()
            defer { av_channel_layout_uninit(&usual) }
            if layout.order == AV_CHANNEL_ORDER_UNSPEC, channels > 0 {
                av_channel_layout_default(&usual, channels)
            }
            var text = [CChar](repeating: 0, count: 64)
            let described = usual.nb_channels > 0 ? av_channel_layout_describe(&usual, &text, text.count)
                                                  : av_channel_layout_describe(&layout, &text, text.count)
            if described >= 0 { self.layout = cString(text) }
            if par.codec_id == AV_CODEC_ID_AAC {
                frameSize = par.frame_size > 0 ? par.frame_size : Self.aacFrameSize(extradata)
            }
        }
    }

    /// Samples per AAC packet from the AudioSpecificConfig: 1024 (or 960) for the plain object
    /// types; 0 (unknown) for SBR and PS, whose packets decode to twice as many.
    static func aacFrameSize(_ config: [UInt8]) -> Int32 {
        guard config.count >= 2 else { return 0 }
        var bits = config.flatMap { byte in (0..<8).map { (byte >> (7 - $0)) & 1 } }[...]
        func read(_ n: Int) -> Int? {
            guard bits.count >= n else { return nil }
            defer { bits = bits.dropFirst(n) }
            return bits.prefix(n).reduce(0) { $0 << 1 | Int($1) }
        }
        guard var objectType = read(5) else { return 0 }
        if objectType == 31 { objectType = 32 + (read(6) ?? 0) }
        guard [1, 2, 3, 4, 6, 17, 19, 20, 21, 22, 23].contains(objectType), let rateIndex = read(4) else { return 0 }
        if rateIndex == 15 { _ = read(24) }
        guard read(4) != nil, let shortFrames = read(1) else { return 0 }
        return shortFrames == 1 ? 960 : 1024
    }

    /// The length of one frame when the time base cannot count it exactly, else `nil`: a coarse
    /// time base (Matroska's milliseconds), whose rounding would add up from clip to clip. A fine
    /// one (MP4's, 10,000 ticks a second or more) rounds by less than 0.1 ms a clip, and its
    /// frame rate as read is often an average (an MP4's frames over its duration: a clip that
    /// lost frames, or ends a few ticks after its last frame), no grid to put frames on.
    var inexactFrameDuration: MediaTime? {
        guard kind == .video, frameRate.num > 0, frameRate.den > 0, timeBase.num > 0 else { return nil }
        guard Int64(timeBase.den) / Int64(timeBase.num) < 10_000 else { return nil }
        let exact = (Int64(timeBase.den) * Int64(frameRate.den)) % (Int64(timeBase.num) * Int64(frameRate.num)) == 0
        return exact ? nil : MediaTime(value: Int64(frameRate.den), timescale: frameRate.num)
    }

    /// The length of one frame in ticks of `timeBase`, when the frame rate is known.
    var frameDurationTicks: Int64 {
        guard kind == .video, frameRate.num > 0, frameRate.den > 0 else { return 0 }
        return max(1, av_rescale_q(1, AVRational(num: frameRate.den, den: frameRate.num), timeBase))
    }
}
