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
}
