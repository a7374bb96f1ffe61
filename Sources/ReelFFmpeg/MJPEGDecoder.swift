internal import CFFmpeg
import ReelCore

/// Decodes the JPEG frames of MJPEG cameras (libavcodec's `mjpeg` decoder) into `yuv420p`
/// frames from its own pool, converting with libswscale.
///
/// JPEG stores full-range Y′CbCr (0–255); Reel's frames are limited range (Y 16–235, Cb/Cr
/// 16–240), so the conversion compresses the range rather than copying samples. Pictures of
/// another size than the one the decoder was made for are scaled to it. Data that does not
/// decode is an `.invalidMedia` error, never a crash.
///
/// Owns one `AVCodecContext`, one `Packet`, one `AVFrame` and one `Scaler`. Used from
/// one thread at a time (the camera's capture thread).
public final class MJPEGDecoder: CompressedFrameDecoder {
    /// Makes an ``MJPEGDecoder`` for V4L2 cameras (`V4L2CameraSource(decoderFactory:)`).
    public static let factory: CompressedFrameDecoderFactory = { format, size in
        switch format {
        case .mjpeg: return try MJPEGDecoder(size: size)
        }
    }

    /// The size of the frames delivered.
    public let size: PixelSize
    private let pool: FramePool
    private let context: UnsafeMutablePointer<AVCodecContext>
    private let packetOwner: Packet
    private var packet: UnsafeMutablePointer<AVPacket> { packetOwner.pointer }
    private let picture: UnsafeMutablePointer<AVFrame>
    private let scaler = Scaler()
    /// Where each decoded picture is converted to: allocated once, not per frame.
    private let target = PlanePointers()

    /// Creates a decoder for frames of `size`, with a pool of `poolCapacity` output frames.
    ///
    /// - Throws: `.unsupportedFormat` when this FFmpeg has no MJPEG decoder,
    ///   `.invalidConfiguration` for a size that is not even.
    public init(size: PixelSize, poolCapacity: Int = 8) throws {
        guard size.width > 0, size.height > 0, size.width % 2 == 0, size.height % 2 == 0 else {
            throw ReelError(.invalidConfiguration, "cannot decode MJPEG into \(size) frames", hint: "use an even size")
        }
        FFmpeg.silenceLibraryLogging()
        guard let codec = avcodec_find_decoder(AV_CODEC_ID_MJPEG) else {
            throw ReelError(.unsupportedFormat, "this FFmpeg has no MJPEG decoder", hint: "install libavcodec with its JPEG decoder")
        }
        guard let context = avcodec_alloc_context3(codec) else {
            throw ReelError(.encodingFailed, "cannot allocate an MJPEG decoder")
        }
        guard let packetOwner = try? Packet(), let picture = av_frame_alloc() else {
            var c: UnsafeMutablePointer<AVCodecContext>? = context
            avcodec_free_context(&c)
            throw ReelError(.encodingFailed, "cannot allocate an MJPEG decoder")
        }
        self.size = size
        self.context = context
        self.packetOwner = packetOwner
        self.picture = picture
        self.pool = FramePool(format: .yuv420p, size: size, capacity: poolCapacity)
        context.pointee.width = Int32(size.width)
        context.pointee.height = Int32(size.height)
        context.pointee.thread_count = 1
        try FFmpeg.check(avcodec_open2(context, codec, nil), "cannot open the MJPEG decoder", code: .unsupportedFormat)
    }

    deinit {
        var f: UnsafeMutablePointer<AVFrame>? = picture
        av_frame_free(&f)
        var c: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&c)
    }

    /// A frame the decoder refused: damaged data, whatever the code (the JPEG decoder gives
    /// -1, which reads as `EPERM`, for some damage: never a permission problem here).
    private static func damaged(_ result: Int32) -> ReelError {
        ReelError(.invalidMedia, "cannot decode an MJPEG frame from the camera: \(FFmpeg.describe(result))", averror: result)
    }

    /// Decodes one JPEG image.
    ///
    /// - Returns: the frame, or `nil` when every pooled frame is still in use.
    /// - Throws: `.invalidMedia` for data that is not a decodable JPEG image.
    public func decode(_ data: UnsafeRawBufferPointer, presentationTime: MediaTime, sequenceNumber: Int64) throws -> VideoFrame? {
        guard let base = data.baseAddress, data.count >= 4, data.count < Int(Int32.max) - 64 else {
            throw ReelError(.invalidMedia, "the camera sent an empty or oversized MJPEG frame (\(data.count) bytes)")
        }
        // A JPEG image starts with the SOI marker; anything else is not one.
        guard data[0] == 0xFF, data[1] == 0xD8 else {
            throw ReelError(.invalidMedia, "the camera sent an MJPEG frame that is not a JPEG image")
        }
        try FFmpeg.check(av_new_packet(packet, Int32(data.count)), "cannot allocate an MJPEG packet")
        defer { av_packet_unref(packet) }
        packet.pointee.data.update(from: base.assumingMemoryBound(to: UInt8.self), count: data.count)
        packet.pointee.flags |= AV_PKT_FLAG_KEY

        let sent = avcodec_send_packet(context, packet)
        if sent < 0 && sent != FFmpeg.eagain {
            throw Self.damaged(sent)
        }
        let received = avcodec_receive_frame(context, picture)
        if received == FFmpeg.eagain {
            throw ReelError(.invalidMedia, "an MJPEG frame from the camera held no complete picture")
        }
        if received < 0 { throw Self.damaged(received) }
        defer { av_frame_unref(picture) }
        guard picture.pointee.width > 0, picture.pointee.height > 0 else {
            throw ReelError(.invalidMedia, "an MJPEG frame from the camera has no size")
        }
        try prepareScaler()
        guard let out = pool.makeFrame(presentationTime: presentationTime, sequenceNumber: sequenceNumber) else { return nil }
        target.point(at: out)
        let height = picture.pointee.height
        let rows = withUnsafePointer(to: &picture.pointee.data) { data in
            data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { source in
                withUnsafePointer(to: &picture.pointee.linesize) { linesize in
                    linesize.withMemoryRebound(to: Int32.self, capacity: 8) { sourceStrides in
                        scaler.scale(source, strides: sourceStrides, rows: height, into: target.planes, strides: target.strides)
                    }
                }
            }
        }
        guard rows > 0 else { throw ReelError(.invalidMedia, "cannot convert a decoded MJPEG picture") }
        return out
    }

    /// Makes the scaler for the decoded picture's size and format, if it changed.
    private func prepareScaler() throws {
        var format = AVPixelFormat(rawValue: picture.pointee.format)
        // Full range is told to libswscale with the yuvj formats: a range given only later with
        // sws_setColorspaceDetails is ignored when source and destination are both yuv420p of
        // one size (the context then just copies planes).
        let fullRange = picture.pointee.color_range != AVCOL_RANGE_MPEG
        if fullRange {
            switch format {
            case AV_PIX_FMT_YUV420P: format = AV_PIX_FMT_YUVJ420P
            case AV_PIX_FMT_YUV422P: format = AV_PIX_FMT_YUVJ422P
            case AV_PIX_FMT_YUV444P: format = AV_PIX_FMT_YUVJ444P
            case AV_PIX_FMT_YUV440P: format = AV_PIX_FMT_YUVJ440P
            case AV_PIX_FMT_YUV411P: format = AV_PIX_FMT_YUVJ411P
            default: break
            }
        }
        let width = picture.pointee.width, height = picture.pointee.height
        let same = width == Int32(size.width) && height == Int32(size.height)
        // JPEG is BT.601 full range; Reel's YUV frames are BT.709 limited range (what the
        // encoder tags its output with).
        let shape = Scaler.Shape(sourceSize: PixelSize(width: Int(width), height: Int(height)), sourceFormat: format.rawValue,
                                 destinationSize: size, destinationFormat: AV_PIX_FMT_YUV420P.rawValue,
                                 filter: same ? SWS_POINT : SWS_BICUBIC,
                                 colour: Scaler.Colour(source: SWS_CS_ITU601, sourceFullRange: fullRange,
                                                       destination: SWS_CS_ITU709, destinationFullRange: false))
        guard scaler.prepare(shape) else {
            throw ReelError(.invalidMedia, "cannot convert \(width)x\(height) MJPEG pictures (pixel format \(format.rawValue)) to yuv420p \(size)")
        }
    }
}
