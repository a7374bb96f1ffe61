internal import CFFmpeg
import ReelCore

/// The one owner of a libswscale context in ReelFFmpeg: converts pictures of one shape (sizes,
/// pixel formats, filter, colour handling) into another, remaking its `SwsContext` only when the
/// shape changes, so converting frame after frame allocates nothing.
///
/// ``PictureConverter``, ``MJPEGDecoder``, ``FrameScaler`` and ``VideoEncoder`` each hold one and
/// describe what they convert as a ``Shape``. Used from one thread at a time.
final class Scaler {
    /// How the colours of the source are read and written (`sws_setColorspaceDetails`); `nil`
    /// in a ``Shape`` keeps libswscale's defaults.
    struct Colour: Equatable {
        /// The source's YUV coefficients (`SWS_CS_ITU709`, `SWS_CS_ITU601`).
        var source: Int32
        /// Whether source samples span 0–255 (JPEG, RGB) rather than 16–235.
        var sourceFullRange: Bool
        /// The destination's YUV coefficients.
        var destination: Int32
        /// Whether destination samples span 0–255.
        var destinationFullRange: Bool
    }

    /// One conversion: from pictures of a size and pixel format to another, with a scaling filter.
    struct Shape: Equatable {
        var sourceSize: PixelSize
        /// An `AVPixelFormat` raw value.
        var sourceFormat: Int32
        var destinationSize: PixelSize
        /// An `AVPixelFormat` raw value.
        var destinationFormat: Int32
        /// `SWS_POINT`, `SWS_BILINEAR`, `SWS_BICUBIC`.
        var filter: Int32
        var colour: Colour?
    }

    private var context: OpaquePointer?
    /// What the context converts, if there is one.
    private(set) var shape: Shape?

    /// A scaler that has no context yet: the first ``prepare(_:)`` makes it.
    init() {}

    deinit { sws_freeContext(context) }

    /// Makes the context convert `shape`, keeping the current one when it already does.
    ///
    /// - Returns: `false` when libswscale cannot convert that shape; the scaler then has no
    ///   context until a shape it can convert comes.
    func prepare(_ shape: Shape) -> Bool {
        if context != nil && self.shape == shape { return true }
        sws_freeContext(context)
        context = nil
        self.shape = nil
        guard let made = sws_getContext(Int32(shape.sourceSize.width), Int32(shape.sourceSize.height), AVPixelFormat(rawValue: shape.sourceFormat),
                                        Int32(shape.destinationSize.width), Int32(shape.destinationSize.height),
                                        AVPixelFormat(rawValue: shape.destinationFormat), shape.filter, nil, nil, nil) else {
            return false
        }
        if let colour = shape.colour {
            sws_setColorspaceDetails(made, sws_getCoefficients(colour.source), colour.sourceFullRange ? 1 : 0,
                                     sws_getCoefficients(colour.destination), colour.destinationFullRange ? 1 : 0, 0, 1 << 16, 1 << 16)
        }
        context = made
        self.shape = shape
        return true
    }

    /// Converts the first `rows` rows of the source planes into the destination planes, in the
    /// shape last prepared. Returns the rows written (0 or less: nothing, or no context).
    func scale(_ source: UnsafePointer<UnsafePointer<UInt8>?>, strides sourceStrides: UnsafePointer<Int32>, rows: Int32,
               into destination: UnsafePointer<UnsafeMutablePointer<UInt8>?>, strides destinationStrides: UnsafePointer<Int32>) -> Int32 {
        guard let context else { return 0 }
        return sws_scale(context, source, sourceStrides, 0, rows, destination, destinationStrides)
    }

    /// The rows of the destination that ranges of the source's rows feed, in the shape last
    /// prepared: each range widened by the scaling filter's reach (rounding outward) and to the
    /// rows ``scale(_:strides:into:rows:)`` can make alone, merged, in order.
    func destinationRows(fedBy sourceRows: [Range<Int>]) -> [Range<Int>] {
        guard let context, let shape else { return [] }
        let from = shape.sourceSize.height, to = shape.destinationSize.height
        let align = max(1, Int(sws_receive_slice_alignment(context)))
        // A destination row reads about from/to source rows around its place, and 4:2:0 chroma
        // one row further each way (at half height): 3 source rows and the ratio, and a
        // destination row more each side, are more than enough.
        let reach = 3 + (from + to - 1) / to
        var rows: [Range<Int>] = []
        for range in sourceRows.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            let low = max(0, (range.lowerBound - reach) * to / from - 1) / align * align
            let high = min(to, ((range.upperBound + reach) * to + from - 1) / from + 1)
            let aligned = low..<min(to, (high + align - 1) / align * align)
            guard !aligned.isEmpty else { continue }
            if let last = rows.last, last.upperBound >= aligned.lowerBound {
                rows[rows.count - 1] = last.lowerBound..<max(last.upperBound, aligned.upperBound)
            } else {
                rows.append(aligned)
            }
        }
        return rows
    }

    /// Converts a whole single-plane source (`plane`, `stride` bytes a row) into only the
    /// destination rows `rows` of `destination` (a frame with buffers of its own, in the
    /// shape's destination format and size), in the shape last prepared: what a whole
    /// conversion writes there, libswscale reading only the source rows they need (its slice
    /// API). The other rows are left as they are. `false` when libswscale refused.
    func scale(_ plane: UnsafePointer<UInt8>, stride: Int, into destination: UnsafeMutablePointer<AVFrame>, rows: [Range<Int>]) -> Bool {
        guard let context, let shape else { return false }
        var frame = av_frame_alloc()
        defer { av_frame_free(&frame) }
        guard let source = frame else { return false }
        // libswscale keeps a reference to the source while it converts: a buffer that frees
        // nothing (the caller keeps the pixels alive meanwhile) spares it a copy.
        let bytes = UnsafeMutablePointer(mutating: plane)
        guard let buffer = av_buffer_create(bytes, stride * shape.sourceSize.height, { _, _ in }, nil, 0) else { return false }
        source.pointee.buf.0 = buffer
        source.pointee.data.0 = bytes
        source.pointee.linesize.0 = Int32(stride)
        source.pointee.width = Int32(shape.sourceSize.width)
        source.pointee.height = Int32(shape.sourceSize.height)
        source.pointee.format = shape.sourceFormat
        guard let placement = Self.sliceRowPlacement else { return false }
        // Each slice into a frame over the destination's buffers (one frame, referenced again
        // for each), its luma moved where this libswscale puts the slice's luma rows (see
        // sliceRowPlacement).
        var slice = av_frame_alloc()
        defer { av_frame_free(&slice) }
        guard let target = slice else { return false }
        for range in rows where !range.isEmpty {
            av_frame_unref(target)
            guard av_frame_ref(target, destination) >= 0 else { return false }
            if placement == .halved, let luma = target.pointee.data.0 {
                target.pointee.data.0 = luma + Int(target.pointee.linesize.0) * (range.lowerBound - range.lowerBound / 2)
            }
            guard sws_frame_start(context, target, source) >= 0 else { return false }
            defer { sws_frame_end(context) }
            guard sws_send_slice(context, 0, UInt32(shape.sourceSize.height)) >= 0,
                  sws_receive_slice(context, UInt32(range.lowerBound), UInt32(range.count)) >= 0 else { return false }
        }
        return true
    }

    /// Where libswscale's slice API puts the luma rows of an output slice: at their rows, or
    /// (FFmpeg 5.1's libswscale) at half their rows, the chroma planes' offset applied to luma
    /// too. Found once by converting a small white picture; `nil` when neither (the slice API
    /// is then not used).
    enum SliceRowPlacement { case exact, halved }
    static let sliceRowPlacement: SliceRowPlacement? = {
        let scaler = Scaler()
        let size = PixelSize(width: 16, height: 16), half = PixelSize(width: 16, height: 8)
        guard scaler.prepare(Shape(sourceSize: half, sourceFormat: AV_PIX_FMT_BGRA.rawValue, destinationSize: size,
                                   destinationFormat: AV_PIX_FMT_YUV420P.rawValue, filter: SWS_FAST_BILINEAR, colour: nil)),
              let context = scaler.context else { return nil }
        var white = [UInt8](repeating: 255, count: 16 * 8 * 4)
        var made = av_frame_alloc(), source = av_frame_alloc()
        defer { av_frame_free(&made); av_frame_free(&source) }
        guard let made, let source else { return nil }
        made.pointee.width = 16; made.pointee.height = 16; made.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        guard av_frame_get_buffer(made, 0) >= 0, let luma = made.pointee.data.0 else { return nil }
        let stride = Int(made.pointee.linesize.0)
        memset(luma, 0, stride * 16)
        return white.withUnsafeMutableBufferPointer { bytes -> SliceRowPlacement? in
            guard let base = bytes.baseAddress, let buffer = av_buffer_create(base, bytes.count, { _, _ in }, nil, 0) else { return nil }
            source.pointee.buf.0 = buffer
            source.pointee.data.0 = base
            source.pointee.linesize.0 = 64
            source.pointee.width = 16; source.pointee.height = 8; source.pointee.format = AV_PIX_FMT_BGRA.rawValue
            guard sws_frame_start(context, made, source) >= 0 else { return nil }
            defer { sws_frame_end(context) }
            guard sws_send_slice(context, 0, 8) >= 0, sws_receive_slice(context, 8, 8) >= 0 else { return nil }
            if luma[8 * stride] != 0 && luma[4 * stride] == 0 { return .exact }
            if luma[4 * stride] != 0 && luma[12 * stride] == 0 { return .halved }
            return nil
        }
    }()
}
