import Foundation
internal import CFFmpeg
import ReelCore

/// One libavcodec decoder for one stream of an input file.
///
/// Owns exactly one `AVCodecContext` and the `AVFrame` it decodes into; retains the
/// ``InputFile`` whose stream it decodes.
final class Decoder {
    /// What ``receive()`` found.
    enum Output {
        /// A decoded frame is in ``frame`` until the next call.
        case frame
        /// The decoder wants another packet.
        case needsInput
        /// The decoder has been flushed and has nothing more.
        case endOfStream
    }

    let context: UnsafeMutablePointer<AVCodecContext>
    /// The frame that ``receive()`` fills.
    let frame: UnsafeMutablePointer<AVFrame>
    /// The time base of the stream's timestamps.
    let timeBase: AVRational
    private let input: InputFile
    private let what: String

    /// Opens a decoder for stream `index` of `input`.
    init(input: InputFile, stream index: Int) throws {
        self.input = input
        let stream = input.context.pointee.streams[index]!
        let par = stream.pointee.codecpar!
        let name = String(cString: avcodec_get_name(par.pointee.codec_id))
        what = "the \(name) stream of \(input.url.lastPathComponent)"
        guard let codec = avcodec_find_decoder(par.pointee.codec_id) else {
            throw ReelError(.unsupportedFormat, "this FFmpeg cannot decode \(what)")
        }
        guard let context = avcodec_alloc_context3(codec), let frame = av_frame_alloc() else {
            throw ReelError(.encodingFailed, "cannot allocate a decoder for \(what)")
        }
        self.context = context
        self.frame = frame
        self.timeBase = stream.pointee.time_base
        try FFmpeg.check(avcodec_parameters_to_context(context, par), "cannot set up a decoder for \(what)")
        context.pointee.pkt_timebase = stream.pointee.time_base
        context.pointee.thread_count = 0  // as many as there are cores
        try FFmpeg.check(avcodec_open2(context, codec, nil), "cannot open a decoder for \(what)", code: .unsupportedFormat)
    }

    deinit {
        var f: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&f)
        var c: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&c)
    }

    /// Hands the decoder a packet; `nil` starts flushing. Damaged data is an `.invalidMedia` error.
    func send(_ packet: UnsafeMutablePointer<AVPacket>?) throws {
        let r = avcodec_send_packet(context, packet)
        if r == FFmpeg.eagain || r == FFmpeg.eof { return }
        try FFmpeg.check(r, "cannot decode \(what)", code: .invalidMedia)
    }

    /// Takes the next decoded frame out of the decoder, into ``frame``.
    func receive() throws -> Output {
        let r = avcodec_receive_frame(context, frame)
        if r == FFmpeg.eagain { return .needsInput }
        if r == FFmpeg.eof { return .endOfStream }
        try FFmpeg.check(r, "cannot decode \(what)", code: .invalidMedia)
        return .frame
    }

    /// The presentation time of the frame in ``frame``, in ticks of ``timeBase``, if known.
    var frameTimestamp: Int64? {
        let t = frame.pointee.best_effort_timestamp
        if t != FFmpeg.noPTS { return t }
        return frame.pointee.pts != FFmpeg.noPTS ? frame.pointee.pts : nil
    }
}
