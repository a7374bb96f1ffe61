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

/// Converts decoded pictures of any size and pixel format into `yuv420p` frames of one size
/// (libswscale). Owns one `SwsContext`, remade when the input changes.
final class PictureConverter {
    let size: PixelSize
    private let pool: FramePool
    private var scaler: OpaquePointer?
    private var sourceKey: (Int32, Int32, Int32) = (0, 0, -1)
    private let destination = UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>.allocate(capacity: 4)
    private let strides = UnsafeMutablePointer<Int32>.allocate(capacity: 4)

    init(size: PixelSize) {
        self.size = size
        pool = FramePool(format: .yuv420p, size: size, capacity: 4)
    }

    deinit {
        sws_freeContext(scaler)
        destination.deallocate()
        strides.deallocate()
    }

    /// The picture in `frame`, scaled and converted.
    func convert(_ frame: UnsafeMutablePointer<AVFrame>) throws -> VideoFrame {
        guard let out = pool.makeFrameWaiting(timeout: 5) else {
            throw ReelError(.encodingFailed, "no frame buffer became free for re-encoding")
        }
        try convert(frame, into: out)
        return out
    }

    /// Scales and converts the picture in `frame` into `out`, a `yuv420p` frame of ``size``
    /// that its producer has not handed on yet (e.g. from a camera's own pool).
    func convert(_ frame: UnsafeMutablePointer<AVFrame>, into out: VideoFrame) throws {
        precondition(out.format == .yuv420p && out.size == size, "the converter writes yuv420p frames of \(size)")
        let key = (frame.pointee.width, frame.pointee.height, frame.pointee.format)
        guard key.0 > 0, key.1 > 0, key.2 >= 0 else {
            throw ReelError(.invalidMedia, "a decoded picture has no size or pixel format")
        }
        if scaler == nil || key != sourceKey {
            sws_freeContext(scaler)
            let same = key.0 == Int32(size.width) && key.1 == Int32(size.height)
            scaler = sws_getContext(key.0, key.1, AVPixelFormat(rawValue: key.2), Int32(size.width), Int32(size.height),
                                    AV_PIX_FMT_YUV420P, same ? SWS_POINT : SWS_BICUBIC, nil, nil, nil)
            guard scaler != nil else {
                throw ReelError(.unsupportedFormat, "cannot convert \(key.0)x\(key.1) pictures of pixel format \(key.2) to yuv420p \(size)")
            }
            sourceKey = key
        }
        for plane in 0..<3 {
            out.withUnsafeMutablePlane(plane) { bytes, stride in
                destination[plane] = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
                strides[plane] = Int32(stride)
            }
        }
        destination[3] = nil
        strides[3] = 0
        let height = frame.pointee.height
        // Already yuv420p of the right size (most cameras and files): a plain copy of the
        // planes, without swscale's plumbing.
        let plainCopy = key.2 == AV_PIX_FMT_YUV420P.rawValue && key.0 == Int32(size.width) && key.1 == Int32(size.height)
            && frame.pointee.color_range != AVCOL_RANGE_JPEG
        let rows = withExtendedLifetime(out) {
            withUnsafePointer(to: &frame.pointee.data) { data in
                data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { source in
                    withUnsafePointer(to: &frame.pointee.linesize) { linesize in
                        linesize.withMemoryRebound(to: Int32.self, capacity: 8) { sourceStrides in
                            if plainCopy {
                                av_image_copy(destination, strides, UnsafeMutablePointer(mutating: source),
                                              UnsafeMutablePointer(mutating: sourceStrides), AV_PIX_FMT_YUV420P, key.0, key.1)
                                return height
                            }
                            return sws_scale(scaler, source, sourceStrides, 0, height, destination, strides)
                        }
                    }
                }
            }
        }
        guard rows > 0 else { throw ReelError(.encodingFailed, "cannot convert a decoded picture") }
    }
}

/// Converts decoded audio of any format into interleaved 32-bit float samples of one rate and
/// channel count (libswresample). Owns one `SwrContext`, remade when the input changes.
final class SoundConverter {
    let format: AudioFormat
    private var resampler: OpaquePointer?
    private var sourceKey: (Int32, Int32, String) = (0, -1, "")
    private var scratch: UnsafeMutablePointer<UInt8>?
    private var scratchFrames: Int32 = 0

    init(format: AudioFormat) {
        precondition(format.sampleFormat == .f32, "decoded audio is converted to f32")
        self.format = format
    }

    deinit {
        var s = resampler
        swr_free(&s)
        av_free(scratch)
    }

    /// The audio in `frame`, converted; some samples may stay in the converter until ``flush()``.
    func convert(_ frame: UnsafeMutablePointer<AVFrame>) throws -> [Float] {
        var layout = frame.pointee.ch_layout
        var description = [CChar](repeating: 0, count: 64)
        _ = av_channel_layout_describe(&layout, &description, description.count)
        let key = (frame.pointee.sample_rate, frame.pointee.format, cString(description))
        if resampler == nil || key != sourceKey {
            // A change of format mid-stream: what the old converter holds is dropped (a few ms).
            var s = resampler
            swr_free(&s)
            resampler = nil
            var outLayout = AVChannelLayout()
            av_channel_layout_default(&outLayout, Int32(format.channels))
            defer { av_channel_layout_uninit(&outLayout) }
            var swr: OpaquePointer?
            try FFmpeg.check(swr_alloc_set_opts2(&swr, &outLayout, AV_SAMPLE_FMT_FLT, Int32(format.sampleRate),
                                                 &frame.pointee.ch_layout, AVSampleFormat(rawValue: key.1), key.0, 0, nil),
                             "cannot set up audio conversion to \(format)")
            resampler = swr
            try FFmpeg.check(swr_init(swr), "cannot set up audio conversion to \(format)")
            sourceKey = key
        }
        guard let data = frame.pointee.extended_data else { return [] }
        let planes = UnsafeMutablePointer<UnsafePointer<UInt8>?>(OpaquePointer(data))
        return try run(planes, count: frame.pointee.nb_samples)
    }

    /// What the converter still holds.
    func flush() throws -> [Float] {
        guard resampler != nil else { return [] }
        return try run(nil, count: 0)
    }

    private func run(_ input: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, count: Int32) throws -> [Float] {
        let capacity = swr_get_out_samples(resampler, count) + 64
        if capacity > scratchFrames {
            av_free(scratch)
            scratch = av_malloc(Int(capacity) * format.bytesPerFrame)?.assumingMemoryBound(to: UInt8.self)
            scratchFrames = capacity
        }
        var out: UnsafeMutablePointer<UInt8>? = scratch
        let converted = swr_convert(resampler, &out, capacity, input, count)
        try FFmpeg.check(converted, "audio conversion failed")
        let floats = UnsafeBufferPointer(start: UnsafeRawPointer(scratch!).assumingMemoryBound(to: Float.self),
                                         count: Int(converted) * format.channels)
        return Array(floats)
    }
}
