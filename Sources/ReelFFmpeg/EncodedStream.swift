internal import CFFmpeg
import ReelCore

/// One stream of encoded packets: what an encoder makes (a recording's video track, an audio
/// track) or what a file holds, described well enough for a sink to write its packets
/// into a container without the encoder.
///
/// A stream is created once, with its codec parameters (the codec and its header), and never
/// changes; every ``EncodedPacket`` refers to its stream, so a sink that receives packets from
/// several streams tells them apart by identity (`===`).
public final class EncodedStream: Sendable, CustomStringConvertible {
    /// What a stream carries.
    public enum Kind: String, Sendable, Hashable {
        /// Encoded video.
        case video
        /// Encoded audio.
        case audio
    }

    /// Whether the stream carries video or audio.
    public let kind: Kind
    /// The stream's position among its producer's streams (the writer's video first, then its
    /// audio tracks in order).
    public let index: Int
    /// A title stored with the stream in files ("Microphone"), if any.
    public let title: String?
    /// The video's frame rate (video only).
    public let frameRate: FrameRate?
    /// The audio's sample rate (audio only).
    public let sampleRate: Int?
    /// The duration of one tick of the stream's timestamps.
    public let timeBase: MediaTime
    /// The codec and its header.
    let parameters: CodecParameters
    /// ``timeBase`` as libavformat takes it.
    let avTimeBase: AVRational

    init(kind: Kind, index: Int, title: String?, parameters: CodecParameters, timeBase: AVRational, frameRate: FrameRate?) {
        self.kind = kind
        self.index = index
        self.title = title
        self.parameters = parameters
        let valid = timeBase.num > 0 && timeBase.den > 0
        avTimeBase = valid ? timeBase : AVRational(num: 1, den: 1)
        self.timeBase = MediaTime(value: Int64(avTimeBase.num), timescale: avTimeBase.den)
        self.frameRate = frameRate
        let rate = Int(parameters.pointer.pointee.sample_rate)
        sampleRate = kind == .audio && rate > 0 ? rate : nil
    }

    /// The stream of the opened encoder `context`.
    convenience init(encoder context: UnsafePointer<AVCodecContext>, index: Int, title: String? = nil) throws {
        let kind: Kind = context.pointee.codec_type == AVMEDIA_TYPE_VIDEO ? .video : .audio
        let rate = context.pointee.framerate
        try self.init(kind: kind, index: index, title: title, parameters: CodecParameters(encoder: context),
                      timeBase: context.pointee.time_base,
                      frameRate: kind == .video && rate.num > 0 && rate.den > 0 ? FrameRate(rate.num, per: rate.den) : nil)
    }

    /// The codec's short name (`h264`, `aac`).
    public var codecName: String { parameters.codecName }

    /// `ticks` of this stream's time base as a time.
    func time(ofTicks ticks: Int64) -> MediaTime { MediaTime(ticks: ticks, avTimeBase) }

    /// `time` in ticks of this stream's time base, rounded to the nearest.
    func ticks(of time: MediaTime) -> Int64 { time.ticks(in: avTimeBase) }

    public var description: String { "\(kind.rawValue) stream \(index) (\(codecName))" }
}
