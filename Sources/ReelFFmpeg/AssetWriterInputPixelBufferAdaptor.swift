import ReelCore

/// Appends frames to an ``AssetWriterInput``, as `AVAssetWriterInputPixelBufferAdaptor`, and
/// gives reusable frame memory to draw them into (``pixelBufferPool``). The input itself takes
/// frames of any format and size; the adaptor names the calls ported code makes.
public final class AssetWriterInputPixelBufferAdaptor: Sendable {
    /// The format and size of the frames an app will append, as the adaptor's
    /// `sourcePixelBufferAttributes` (`kCVPixelBufferPixelFormatTypeKey`,
    /// `kCVPixelBufferWidthKey`, `kCVPixelBufferHeightKey`): what the ``pixelBufferPool`` makes.
    public struct SourcePixelBufferAttributes: Sendable, Hashable {
        /// The pixel format of the frames (`kCVPixelBufferPixelFormatTypeKey`).
        public var pixelFormat: PixelFormat
        /// Their size; `nil` for the input's size.
        public var size: PixelSize?
        /// The most frames of the pool that exist at once (see ``PixelBufferPool/capacity``).
        public var poolCapacity: Int

        /// Frames of `pixelFormat` and `size` (`nil`: the input's), from a pool of at most
        /// `poolCapacity`.
        public init(pixelFormat: PixelFormat, size: PixelSize? = nil, poolCapacity: Int = 6) {
            self.pixelFormat = pixelFormat
            self.size = size
            self.poolCapacity = poolCapacity
        }
    }

    /// The input frames go to.
    public let assetWriterInput: AssetWriterInput
    /// The frames the app will append, as given when made (`nil`: the input's own format and size).
    public let sourcePixelBufferAttributes: SourcePixelBufferAttributes?
    /// The pool, if the input and the attributes make one.
    private let pool: PixelBufferPool?

    /// An adaptor appending to `input`, as
    /// `AVAssetWriterInputPixelBufferAdaptor(assetWriterInput:sourcePixelBufferAttributes:)`.
    /// Frames of any format and size are taken; `attributes` says what the
    /// ``pixelBufferPool`` makes: by default frames of the input's own format (YUV 4:2:0) and
    /// size, which are encoded without a conversion.
    public init(assetWriterInput input: AssetWriterInput, sourcePixelBufferAttributes attributes: SourcePixelBufferAttributes? = nil) {
        assetWriterInput = input
        sourcePixelBufferAttributes = attributes
        if let track = input.videoTrack {
            let format = attributes?.pixelFormat ?? track.inputFormat
            pool = try? PixelBufferPool(format: format, size: attributes?.size ?? track.inputSize,
                                        capacity: attributes?.poolCapacity ?? 6)
        } else {
            pool = nil
        }
    }

    /// Reusable frame memory of the ``sourcePixelBufferAttributes``' format and size, as
    /// `AVAssetWriterInputPixelBufferAdaptor.pixelBufferPool`: `nil` until the input's writer
    /// is writing (as Apple's is until `startWriting()`), and for an input that takes no video
    /// or attributes that make no frames (an odd size for a 4:2:0 format, a capacity below 1).
    /// A frame drawn from it, appended and let go of returns its memory for the next.
    public var pixelBufferPool: PixelBufferPool? {
        guard let writer = assetWriterInput.writer, writer.status == .writing else { return nil }
        return pool
    }

    /// Appends `frame` at source time `time`: ``AssetWriterInput/append(_:withPresentationTime:)``.
    @discardableResult
    public func append(_ frame: VideoFrame, withPresentationTime time: MediaTime) -> Bool {
        assetWriterInput.append(frame, withPresentationTime: time)
    }
}
