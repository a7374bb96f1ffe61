internal import CFFmpeg
import ReelCore

/// One libavcodec video encoder and the conversion from the source's pixels to its input.
///
/// Owns exactly one `AVCodecContext`, one ``Scaler`` (when the input needs converting), one
/// ``Packet`` and one reusable `AVFrame`. Frames go in through ``send(_:index:)``, packets come
/// out as values through ``receive()``; ``finish()`` flushes.
final class VideoEncoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    let settings: VideoSettings
    let inputFormat: PixelFormat
    let inputSize: PixelSize
    /// The part of each input picture encoded: all of it, or for an odd width or height (a
    /// region or a window of odd size, which 4:2:0 cannot hold) the even part at its top left,
    /// its last column or row left out rather than the picture squeezed into the even size.
    let usedSize: PixelSize
    let outputSize: PixelSize
    /// Where the used part of each picture goes in the output: all of it, or, for a track that
    /// keeps the aspect of pictures of another shape (``AssetWriter/VideoTrack/keepsAspect``),
    /// a centred rectangle with black bars around it that are drawn once and never written over.
    let placement: PixelRect
    /// Whether the pictures fill the output (no bars).
    private var fillsOutput: Bool { placement.size == outputSize }
    /// The encoder's pixel format: 4:2:0, 8-bit, or 10-bit for a 10-bit profile.
    let pixelFormat: AVPixelFormat
    private var frame: UnsafeMutablePointer<AVFrame>
    private let packetOwner: Packet
    private var packet: UnsafeMutablePointer<AVPacket> { packetOwner.pointer }
    private var scaler: Scaler?
    /// Converts only the rows a screen capture says changed (BGRA in, same size out).
    private var rowConverter: RowConverter?
    /// Crops, scales and converts pictures whose zoom is left to the encoder
    /// (``VideoFrame/view``), in one pass.
    private let viewScaler = Scaler()
    /// The grid slot of the last keyframe asked for (frame modes that leave pictures out).
    private var lastForcedKeyframe: Int64?
    /// The picture the encoder's frame holds now, converted (``PictureIdentity/id``).
    private var heldPicture: UInt64?
    /// The picture the encoder's frame holds made through a view (``VideoFrame/view``): the
    /// view and the identity of the source's picture, while both are known.
    private var heldView: (view: PixelRect, picture: UInt64)?
    /// Output rows made through views so far (a whole picture's height each, or the rows a
    /// change fed): what a test reads.
    private(set) var viewRowsMade = 0
    /// The stream of the packets this encoder gives; set once the encoder is open (a
    /// replacement encoder takes over its predecessor's: see `VideoEncoder+Speed.swift`).
    var openedStream: EncodedStream?
    private var finishing = false
    private let sourceData = UnsafeMutablePointer<UnsafePointer<UInt8>?>.allocate(capacity: 4)
    private let sourceStrides = UnsafeMutablePointer<Int32>.allocate(capacity: 4)
    /// The frame's planes at ``placement``'s corner, when the pictures do not fill the output.
    private let placedData = UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>.allocate(capacity: 4)
    /// How many frames the first packet's decoding time lies before its presentation time
    /// (the B-frame reorder delay).
    var decodeDelay: Int64 { Int64(context.pointee.has_b_frames) }

    /// The encoder's time base: one tick per frame.
    var timeBase: AVRational { context.pointee.time_base }

    /// The libavcodec encoder names to try for a codec, best first.
    static func encoderNames(for codec: VideoCodec) -> [String] {
        switch codec {
        case .h264: return ["libx264"]
        case .hevc: return ["libx265"]
        case .vp9: return ["libvpx-vp9"]
        // Not libsvtav1: run as root, SVT-AV1 makes its threads (and so the threads that
        // later inherit from them) SCHED_FIFO 99, which starves everything else on the machine.
        case .av1: return ["libaom-av1"]
        }
    }

    /// The speed setting of libvpx-vp9 and libaom-av1 for a preset: the four fastest presets
    /// use the encoders' real-time mode at CPU-use levels 8 to 5; the six slower ones their
    /// good-quality mode at levels 5 to 0 (the slowest, placebo, is very slow indeed).
    static func speed(forPreset preset: String) -> (realTime: Bool, cpuUsed: Int) {
        let index = VideoCodec.presetNames.firstIndex(of: preset) ?? 0
        return index < 4 ? (true, 8 - index) : (false, 9 - index)
    }

    /// Whether this build of FFmpeg can encode `codec`.
    static func isAvailable(_ codec: VideoCodec) -> Bool {
        encoderNames(for: codec).contains { avcodec_find_encoder_by_name($0) != nil }
    }

    /// Opens an encoder for `settings` taking frames of `inputFormat` and `inputSize`; its
    /// packets belong to stream number `streamIndex` of the owner. `x264Parameters` (libx264
    /// only) are applied after the preset: a replacement encoder pins its header with them.
    /// With `keepsAspect`, pictures of another shape than the output are fitted into it, black
    /// bars around them (see ``placement``), rather than stretched.
    init(settings: VideoSettings, inputFormat: PixelFormat, inputSize: PixelSize, globalHeader: Bool, streamIndex: Int = 0,
         x264Parameters: String? = nil, keepsAspect: Bool = false) throws {
        try settings.validate()
        guard let (name, codec) = Self.encoderNames(for: settings.codec).lazy
            .compactMap({ n in avcodec_find_encoder_by_name(n).map { (n, $0) } }).first else {
            throw ReelError(.unsupportedFormat, "this FFmpeg has no \(settings.codec.rawValue) encoder",
                            hint: LibraryHint.installEncoderOrUseH264)
        }
        guard let context = avcodec_alloc_context3(codec) else {
            throw ReelError(.encodingFailed, "cannot allocate a \(name) encoder")
        }
        self.context = context
        self.settings = settings
        self.inputFormat = inputFormat
        self.inputSize = inputSize
        // 4:2:0 needs even dimensions: an odd picture is cut, not scaled, to them.
        let used = PixelSize(width: max(2, inputSize.width & ~1), height: max(2, inputSize.height & ~1))
        usedSize = used
        var out = settings.size ?? used
        out.width &= ~1
        out.height &= ~1
        self.outputSize = out
        placement = (keepsAspect ? AssetWriter.VideoTrack.placement(of: used, in: out) : nil)
            ?? PixelRect(x: 0, y: 0, width: out.width, height: out.height)
        pixelFormat = settings.bitDepth == 10 ? AV_PIX_FMT_YUV420P10LE : AV_PIX_FMT_YUV420P
        guard let frame = av_frame_alloc(), let packetOwner = try? Packet() else {
            var c: UnsafeMutablePointer<AVCodecContext>? = context
            avcodec_free_context(&c)
            throw ReelError(.encodingFailed, "cannot allocate frames for \(name)")
        }
        self.frame = frame
        self.packetOwner = packetOwner
        sourceData.initialize(repeating: nil, count: 4)
        sourceStrides.initialize(repeating: 0, count: 4)
        placedData.initialize(repeating: nil, count: 4)

        context.pointee.width = Int32(out.width)
        context.pointee.height = Int32(out.height)
        context.pointee.pix_fmt = pixelFormat
        if let formats = codec.pointee.pix_fmts {
            var i = 0
            while formats[i] != AV_PIX_FMT_NONE && formats[i] != pixelFormat { i += 1 }
            if formats[i] == AV_PIX_FMT_NONE {
                // Fully initialised: deinit frees what was allocated.
                throw ReelError(.unsupportedFormat, "this FFmpeg's \(name) cannot encode \(settings.bitDepth)-bit video",
                                hint: "choose an 8-bit profile")
            }
        }
        context.pointee.time_base = AVRational(num: settings.frameRate.per, den: settings.frameRate.frames)
        context.pointee.framerate = AVRational(num: settings.frameRate.frames, den: settings.frameRate.per)
        context.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
        context.pointee.gop_size = Int32(settings.effectiveKeyframeInterval)
        context.pointee.color_range = AVCOL_RANGE_MPEG
        context.pointee.colorspace = AVCOL_SPC_BT709
        context.pointee.color_primaries = AVCOL_PRI_BT709
        context.pointee.color_trc = AVCOL_TRC_BT709
        if globalHeader {
            context.pointee.flags |= Int32(AV_CODEC_FLAG_GLOBAL_HEADER)
        }
        var options: OpaquePointer? = nil
        defer { av_dict_free(&options) }
        let preset = settings.effectivePreset
        let speed = Self.speed(forPreset: preset)
        // Changed pictures only: frames may be seconds apart, so the encoder must hold none
        // back (no B-frames, no lookahead, threads that share a picture rather than one
        // picture each): a picture held for the next ten would be ten seconds late in the
        // file, lost to a crash, and missing from a replay buffer.
        let sparse = settings.frameMode != .constant
        switch name {
        case "libvpx-vp9":
            if sparse { av_dict_set(&options, "lag-in-frames", "0", 0) }
            av_dict_set(&options, "deadline", speed.realTime ? "realtime" : "good", 0)
            av_dict_set(&options, "cpu-used", String(speed.cpuUsed), 0)
            av_dict_set(&options, "row-mt", "1", 0)
        case "libaom-av1":
            if sparse { av_dict_set(&options, "lag-in-frames", "0", 0) }
            av_dict_set(&options, "usage", speed.realTime ? "realtime" : "good", 0)
            av_dict_set(&options, "cpu-used", String(speed.cpuUsed), 0)
        case "libx265":
            av_dict_set(&options, "preset", preset, 0)
            av_dict_set(&options, "x265-params", sparse ? "log-level=error:bframes=0:rc-lookahead=0:frame-threads=1" : "log-level=error", 0)
        default:
            av_dict_set(&options, "preset", preset, 0)
            if sparse { av_dict_set(&options, "tune", "zerolatency", 0) }
            let parameters = (sparse ? ["bframes=0:rc-lookahead=0:sync-lookahead=0:sliced-threads=1"] : []) + (x264Parameters.map { [$0] } ?? [])
            if !parameters.isEmpty { av_dict_set(&options, "x264-params", parameters.joined(separator: ":"), 0) }
        }
        if let profile = settings.profile {
            switch settings.codec {
            case .h264, .hevc: av_dict_set(&options, "profile", profile, 0)
            // VP9's profile follows from the pixel format; AV1's only profile here is main (0).
            case .vp9, .av1: context.pointee.profile = Int32(profile) ?? 0
            }
        }
        switch settings.rateControl {
        case .crf(let q):
            av_dict_set(&options, "crf", String(q), 0)
            if settings.codec == .vp9 { context.pointee.bit_rate = 0 }
        case .bitRate(let b):
            context.pointee.bit_rate = Int64(b)
            context.pointee.rc_max_rate = Int64(b) * 3 / 2
            context.pointee.rc_buffer_size = Int32(clamping: Int64(b) * 2)
        }
        let opened = avcodec_open2(context, codec, &options)
        if opened < 0 {
            // Fully initialised: deinit frees what was allocated.
            throw FFmpeg.error(opened, "cannot open the \(name) encoder with \(settings.rateControl)",
                               code: .invalidConfiguration, hint: "check the preset, profile and quality settings")
        }
        EncoderCensus.noteOpened(video: true)
        openedStream = try EncodedStream(encoder: context, index: streamIndex)
        frame.pointee.format = pixelFormat.rawValue
        frame.pointee.width = Int32(out.width)
        frame.pointee.height = Int32(out.height)
        frame.pointee.color_range = AVCOL_RANGE_MPEG
        frame.pointee.colorspace = AVCOL_SPC_BT709
        try FFmpeg.check(av_frame_get_buffer(frame, 0), "cannot allocate the encoder's frame")
        if placement.size != out {
            // The bars: black once; every picture is drawn inside them (av_frame_make_writable
            // copies them along with the picture when the encoder still holds the buffer).
            var strides = (0..<4).map { i in ptrdiff_t(withUnsafeBytes(of: frame.pointee.linesize) { $0.load(fromByteOffset: i * 4, as: Int32.self) }) }
            try withUnsafeMutableBytes(of: &frame.pointee.data) { raw in
                let planes = raw.baseAddress!.assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self)
                try FFmpeg.check(av_image_fill_black(planes, &strides, pixelFormat, AVCOL_RANGE_MPEG, Int32(out.width), Int32(out.height)),
                                 "cannot draw the encoder's black bars")
            }
        }

        if inputFormat != .yuv420p || inputSize != out || pixelFormat != AV_PIX_FMT_YUV420P {
            // Full-range RGB in, limited-range BT.709 out. YUV input (a camera's YUYV or NV12,
            // a composed picture) is limited range already and keeps its levels.
            let converter = Scaler()
            let shape = Scaler.Shape(sourceSize: used, sourceFormat: Self.avPixelFormat(inputFormat).rawValue,
                                     destinationSize: placement.size, destinationFormat: pixelFormat.rawValue,
                                     filter: used == out ? SWS_POINT : SWS_BICUBIC,
                                     colour: Scaler.Colour(source: SWS_CS_ITU709, sourceFullRange: inputFormat == .bgra,
                                                           destination: SWS_CS_ITU709, destinationFullRange: false))
            guard converter.prepare(shape) else {
                throw ReelError(.unsupportedFormat, "cannot convert \(inputFormat.rawValue) \(inputSize) to \(cString(av_get_pix_fmt_name(pixelFormat))) \(out)")
            }
            scaler = converter
            if used == out, pixelFormat == AV_PIX_FMT_YUV420P {
                rowConverter = RowConverter(width: used.width, sourceFormat: Self.avPixelFormat(inputFormat),
                                            destinationFormat: pixelFormat, colour: shape.colour!)
            }
        }
    }

    deinit {
        sourceData.deallocate()
        sourceStrides.deallocate()
        placedData.deallocate()
        var f: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&f)
        var c: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&c)
    }

    static func avPixelFormat(_ format: PixelFormat) -> AVPixelFormat {
        switch format {
        case .bgra: return AV_PIX_FMT_BGRA
        case .nv12: return AV_PIX_FMT_NV12
        case .yuv420p: return AV_PIX_FMT_YUV420P
        case .yuyv: return AV_PIX_FMT_YUYV422
        }
    }

    /// Throws `.invalidConfiguration` unless `source` is of the encoder's input format and size:
    /// the conversion was set up for those, and other pixels would be read out of bounds.
    func checkFits(_ source: VideoFrame) throws {
        guard source.format != inputFormat || source.size != inputSize else { return }
        let what = source.size != inputSize ? "size changed from \(inputSize) to \(source.size)" : "pixel format is \(source.format.rawValue), not \(inputFormat.rawValue)"
        throw ReelError(.invalidConfiguration, "a video frame does not fit the track: its \(what)",
                        hint: "hand the writer frames of the size and pixel format its video track was configured with, or start a new file for the new size")
    }

    /// The stream of the packets this encoder gives.
    var stream: EncodedStream {
        get throws {
            guard let openedStream else { throw ReelError(.encodingFailed, "the video encoder is not open") }
            return openedStream
        }
    }

    /// Hands `source` to the encoder as frame number `index` (in frame-duration ticks), a
    /// keyframe (IDR) if `keyframe`. Take the packets that come out with ``receive()`` before
    /// sending the next frame.
    ///
    /// - Throws: `.invalidConfiguration` for a frame that does not fit (see ``checkFits(_:)``),
    ///   `.notRunning` after ``finish()``.
    func send(_ source: VideoFrame, index: Int64, keyframe: Bool = false) throws {
        guard !finishing else { throw ReelError(.notRunning, "the video encoder has been finished") }
        try checkFits(source)
        // A frame the encoder let go of is written into in place; one it still holds is copied
        // first (av_frame_make_writable keeps the pixels), so the picture held stays true.
        try FFmpeg.check(av_frame_make_writable(frame), "cannot reuse the encoder's frame")
        let identity = source.identity
        var viewHeld: (view: PixelRect, picture: UInt64)?
        if let view = source.view, convertView(view, of: source) {
            // Zoomed: the view cropped, scaled and converted at once (of a view that held
            // still, only the rows that changed).
            viewHeld = identity.map { (view, $0.id) }
        } else if let identity, identity.id == heldPicture {
            // The same picture again (a still screen): the frame holds it converted already.
        } else if let identity, let base = identity.base, base == heldPicture, let rowConverter,
                  convertRows(identity.changedRows, of: source, with: rowConverter) {
            // Only the rows that changed since the picture the frame holds were converted.
        } else if let rowConverter, convertRows([0..<usedSize.height], of: source, with: rowConverter) {
            // Converted whole, by the converter that converts changed rows (the same bytes).
        } else {
            withPlanes(of: source) { srcData, srcStride in
                if let scaler {
                    withPlacedPlanes { planes in
                        _ = scaler.scale(srcData, strides: srcStride, rows: Int32(usedSize.height),
                                         into: planes, strides: &frame.pointee.linesize.0)
                    }
                } else {
                    av_image_copy(&frame.pointee.data.0, &frame.pointee.linesize.0, srcData, srcStride,
                                  AV_PIX_FMT_YUV420P, Int32(inputSize.width), Int32(inputSize.height))
                }
            }
        }
        heldPicture = source.view == nil ? identity?.id : nil
        heldView = viewHeld
        try sendHeldPicture(index: index, keyframe: keyframe)
    }

    /// Whether the picture at slot `index` will be a keyframe the frame modes ask for (see
    /// ``VideoSettings/keyframeDue(at:after:)``): the one rule the recorder asks too.
    func keyframeDue(at index: Int64) -> Bool {
        settings.frameMode != .constant && settings.keyframeDue(at: index, after: lastForcedKeyframe)
    }

    /// Hands the picture the encoder's frame holds (the last one sent) to the encoder again as
    /// frame number `index`, a keyframe if `keyframe`: what pushes the frames the encoder holds
    /// out of it at a pause, without ending the stream.
    ///
    /// - Throws: `.notRunning` after ``finish()``, or before any frame was sent.
    func sendRepeat(index: Int64, keyframe: Bool) throws {
        guard !finishing else { throw ReelError(.notRunning, "the video encoder has been finished") }
        guard frame.pointee.pts != FFmpeg.noPTS else { throw ReelError(.notRunning, "the video encoder has no picture to repeat") }
        try FFmpeg.check(av_frame_make_writable(frame), "cannot reuse the encoder's frame")
        try sendHeldPicture(index: index, keyframe: keyframe)
    }

    private func sendHeldPicture(index: Int64, keyframe: Bool) throws {
        frame.pointee.pts = index
        frame.pointee.pict_type = AV_PICTURE_TYPE_NONE
        if keyframe || (settings.frameMode != .constant && settings.keyframeDue(at: index, after: lastForcedKeyframe)) {
            frame.pointee.pict_type = AV_PICTURE_TYPE_I
            lastForcedKeyframe = index
        }
        try FFmpeg.check(avcodec_send_frame(context, frame), "the video encoder refused a frame")
    }

    /// Tells the encoder that no more frames come: ``receive()`` gives what it still holds,
    /// then `.endOfStream`. Finishing twice does nothing more.
    func finish() throws {
        guard !finishing else { return }
        finishing = true
        try FFmpeg.check(avcodec_send_frame(context, nil), "the video encoder cannot be flushed")
    }

    /// The next packet, or `.needsInput` (send a frame) or `.endOfStream` (finished and empty).
    func receive() throws -> EncoderOutput {
        let r = avcodec_receive_packet(context, packet)
        if r == FFmpeg.eagain { return .needsInput }
        if r == FFmpeg.eof { return .endOfStream }
        try FFmpeg.check(r, "the video encoder failed")
        // The time base is one frame: a packet the encoder left without a duration (libx264
        // does) lasts one tick, so that its end, which replay windows are measured from, is
        // where the next frame starts rather than where this one does.
        if packet.pointee.duration <= 0 { packet.pointee.duration = 1 }
        return .packet(try EncodedPacket(taking: packet, stream: stream))
    }

    /// Converts `view` of `source` (even, inside it) into the encoder's frame, scaled to the
    /// output size by libswscale's fast bilinear (the zoom moves, which hides its softness);
    /// `false` when that cannot be done (the picture is then encoded whole).
    private func convertView(_ view: PixelRect, of source: VideoFrame) -> Bool {
        guard view.x >= 0, view.y >= 0, view.x % 2 == 0, view.y % 2 == 0, view.width >= 2, view.height >= 2,
              view.x + view.width <= inputSize.width, view.y + view.height <= inputSize.height else { return false }
        let shape = Scaler.Shape(sourceSize: view.size, sourceFormat: Self.avPixelFormat(inputFormat).rawValue,
                                 destinationSize: placement.size, destinationFormat: pixelFormat.rawValue, filter: SWS_FAST_BILINEAR,
                                 colour: Scaler.Colour(source: SWS_CS_ITU709, sourceFullRange: inputFormat == .bgra,
                                                       destination: SWS_CS_ITU709, destinationFullRange: false))
        guard viewScaler.prepare(shape) else { return false }
        if let held = heldView, held.view == view, let identity = source.identity {
            // The view held still: the frame holds its picture made from `held.picture`.
            if identity.id == held.picture { return true }
            let rows = viewScaler.destinationRows(fedBy: rowsOf(identity.changedRows, in: view))
            if identity.base == held.picture, inputFormat == .bgra, fillsOutput, convertViewRows(rows, of: view, in: source) {
                viewRowsMade += rows.reduce(0) { $0 + $1.count }
                return true
            }
        }
        var rows: Int32 = 0
        withPlanes(of: source) { srcData, srcStride in
            for plane in 0..<source.format.planeCount {
                let offset = source.format.byteOffset(plane: plane, x: view.x, y: view.y, stride: Int(srcStride[plane]))
                srcData[plane] = srcData[plane].map { $0 + offset }
            }
            withPlacedPlanes { planes in
                rows = viewScaler.scale(srcData, strides: srcStride, rows: Int32(view.height),
                                        into: planes, strides: &frame.pointee.linesize.0)
            }
        }
        if rows > 0 { viewRowsMade += outputSize.height }
        return rows > 0
    }

    /// `rows` of a picture as rows of `view` of it: those inside it, counted from its top.
    private func rowsOf(_ rows: [Range<Int>], in view: PixelRect) -> [Range<Int>] {
        rows.compactMap { row in
            let inView = ((row.lowerBound - view.y)..<(row.upperBound - view.y)).clamped(to: 0..<view.height)
            return inView.isEmpty ? nil : inView
        }
    }

    /// Makes only the output rows `rows` of `view` of `source` (a BGRA picture) in the
    /// encoder's frame, the rest held: what the whole conversion makes there. `false` when
    /// libswscale refused (convert it all instead).
    private func convertViewRows(_ rows: [Range<Int>], of view: PixelRect, in source: VideoFrame) -> Bool {
        guard !rows.isEmpty else { return true }
        return withExtendedLifetime(source) {
            source.withUnsafePlane(0) { bytes, stride in
                guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return false }
                let corner = base + source.format.byteOffset(plane: 0, x: view.x, y: view.y, stride: stride)
                return viewScaler.scale(UnsafePointer(corner), stride: stride, into: frame, rows: rows)
            }
        }
    }

    /// Converts `rows` of `source` into the encoder's frame; `false` when that failed (convert
    /// it all instead).
    private func convertRows(_ changed: [Range<Int>], of source: VideoFrame, with converter: RowConverter) -> Bool {
        guard changed.allSatisfy({ $0.lowerBound >= 0 && $0.upperBound <= inputSize.height }) else { return false }
        // An odd picture's last row is not encoded.
        let rows = changed.map { $0.clamped(to: 0..<usedSize.height) }.filter { !$0.isEmpty }
        return withExtendedLifetime(source) {
            source.withUnsafePlane(0) { bytes, stride in
                guard let bgra = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return false }
                return withUnsafePointer(to: &frame.pointee.data) { data in
                    data.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { planes in
                        withUnsafePointer(to: &frame.pointee.linesize) { linesize in
                            linesize.withMemoryRebound(to: Int32.self, capacity: 8) { strides in
                                converter.convert(rows: rows, bgra: bgra, bgraStride: stride, into: planes, strides: strides)
                            }
                        }
                    }
                }
            }
        }
    }

    /// The encoder frame's planes pointed at ``placement``'s corner (its whole when the pictures
    /// fill the output), for the duration of `body`: what a scaler draws a picture into.
    private func withPlacedPlanes(_ body: (UnsafePointer<UnsafeMutablePointer<UInt8>?>) -> Void) {
        let placement = placement, fills = fillsOutput
        let wide = pixelFormat == AV_PIX_FMT_YUV420P ? 1 : 2  // bytes a sample
        withUnsafeMutablePointer(to: &frame.pointee.data) { data in
            data.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { planes in
                guard !fills else { return body(planes) }
                // The frame's buffers may have moved (av_frame_make_writable): placed anew each time.
                withUnsafeBytes(of: frame.pointee.linesize) { strides in
                    for plane in 0..<4 {
                        let stride = Int(strides.load(fromByteOffset: plane * 4, as: Int32.self))
                        let (x, y) = plane == 0 ? (placement.x, placement.y) : (placement.x / 2, placement.y / 2)
                        placedData[plane] = planes[plane].map { $0 + y * stride + x * wide }
                    }
                }
                body(placedData)
            }
        }
    }

    /// Points `sourceData`/`sourceStrides` at the planes of `source` for the duration of `body`.
    private func withPlanes(of source: VideoFrame,
                            _ body: (UnsafeMutablePointer<UnsafePointer<UInt8>?>, UnsafeMutablePointer<Int32>) -> Void) {
        withExtendedLifetime(source) {
            for plane in 0..<source.format.planeCount {
                source.withUnsafePlane(plane) { bytes, stride in
                    sourceData[plane] = UnsafePointer(bytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    sourceStrides[plane] = Int32(stride)
                }
            }
            body(sourceData, sourceStrides)
        }
    }
}
