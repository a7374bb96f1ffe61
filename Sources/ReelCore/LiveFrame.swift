/// A video frame converted for application code — a UI to draw, an analysis to run — as a
/// ``LiveFrame/Format`` at a size the application asked for: what `LiveFrames` publishes.
///
/// A live frame is a value that owns its pixels and never changes: reading it on any thread
/// while the capture goes on is safe, and nothing written to a copy of its bytes reaches the
/// recording.
public struct LiveFrame: Sendable {
    /// The pixel layouts a live frame can have.
    public enum Format: String, Sendable, Hashable, CaseIterable {
        /// 8-bit blue, green, red, alpha (255), packed: full-range RGB.
        case bgra
        /// 8-bit red, green, blue, alpha (255), packed: full-range RGB.
        case rgba
        /// An 8-bit luma plane and an interleaved CbCr plane at half resolution: limited-range
        /// BT.709 Y′CbCr, as Reel records. Width and height are even.
        case nv12
        /// One 8-bit plane of full-range luma (0 black, 255 white).
        case gray

        /// How many planes a frame of this format has.
        public var planeCount: Int { self == .nv12 ? 2 : 1 }

        /// Bytes per pixel of the first plane.
        public var bytesPerPixel: Int {
            switch self {
            case .bgra, .rgba: return 4
            case .nv12, .gray: return 1
            }
        }
    }

    /// How a picture is fitted into the size asked for.
    public enum Scaling: String, Sendable, Hashable {
        /// The whole picture, scaled to fit inside the size with its aspect ratio kept: the
        /// frame is as large as fits (no bars), one side equal to the size's.
        case fit
        /// The size filled: the picture scaled to cover it, aspect kept, and its middle cut
        /// out. The frame is exactly the size asked for.
        case fill

        /// The part of a `source`-sized picture to take and the size to scale it to, to fit or
        /// fill `target` (`nil`: all of it, at its own size). Positions and sizes are even when
        /// `evenSize` is (as 4:2:0 pictures need), and at least 2x2; otherwise an odd-sized
        /// picture is taken whole.
        public func layout(source: PixelSize, into target: PixelSize?, evenSize: Bool) -> (crop: PixelRect, size: PixelSize) {
            func even(_ v: Int) -> Int { max(2, v & ~1) }
            func fitted(_ v: Int) -> Int { evenSize ? even(v) : max(2, v) }
            let whole = PixelRect(x: 0, y: 0, width: fitted(source.width), height: fitted(source.height))
            guard let target, target.width > 0, target.height > 0 else {
                return (whole, PixelSize(width: fitted(source.width), height: fitted(source.height)))
            }
            let sw = Double(whole.width), sh = Double(whole.height)
            let tw = Double(target.width), th = Double(target.height)
            switch self {
            case .fit:
                let scale = min(tw / sw, th / sh)
                let size = PixelSize(width: fitted(min(target.width, Int((sw * scale).rounded()))),
                                     height: fitted(min(target.height, Int((sh * scale).rounded()))))
                return (whole, size)
            case .fill:
                let scale = max(tw / sw, th / sh)
                let cw = min(whole.width, even(Int((tw / scale).rounded())))
                let ch = min(whole.height, even(Int((th / scale).rounded())))
                let crop = PixelRect(x: ((whole.width - cw) / 2) & ~1, y: ((whole.height - ch) / 2) & ~1, width: cw, height: ch)
                return (crop, PixelSize(width: fitted(target.width), height: fitted(target.height)))
            }
        }
    }

    /// The pixel layout.
    public let format: Format
    /// The size in pixels.
    public let size: PixelSize
    /// The presentation time of the frame it was made from, on the session clock.
    public let presentationTime: MediaTime
    /// The index of the frame it was made from among those its source produced: a test
    /// pattern's burned-in counter, a gap when frames were left out.
    public let sequenceNumber: Int64
    /// The source whose picture this is (the compositor's, for the composed picture).
    public let source: SourceID
    /// Bytes from one row to the next, per plane.
    public let bytesPerRow: [Int]
    private let offsets: [Int]
    private let bytes: [UInt8]

    /// Makes a frame whose planes `draw` fills once (the converter that makes it); from then
    /// on it is immutable.
    package init(format: Format, size: PixelSize, presentationTime: MediaTime, sequenceNumber: Int64, source: SourceID,
                 draw: (_ planes: [UnsafeMutableRawPointer], _ bytesPerRow: [Int]) throws -> Void) rethrows {
        var strides: [Int] = []
        var offsets: [Int] = []
        var total = 0
        for plane in 0..<format.planeCount {
            let row = plane == 0 ? size.width * format.bytesPerPixel : size.width
            let stride = (row + 31) / 32 * 32
            strides.append(stride)
            offsets.append(total)
            total += stride * (plane == 0 ? size.height : size.height / 2)
        }
        var bytes = [UInt8](repeating: 0, count: total)
        try bytes.withUnsafeMutableBytes { buffer in
            try draw(offsets.map { buffer.baseAddress! + $0 }, strides)
        }
        self.format = format
        self.size = size
        self.presentationTime = presentationTime
        self.sequenceNumber = sequenceNumber
        self.source = source
        self.bytesPerRow = strides
        self.offsets = offsets
        self.bytes = bytes
    }

    /// The width in pixels.
    public var width: Int { size.width }
    /// The height in pixels.
    public var height: Int { size.height }

    /// Calls `body` with the bytes of plane `plane` (read-only) and its bytes per row; a plane
    /// the format does not have comes as an empty buffer with 0 bytes per row.
    public func withUnsafePlane<R>(_ plane: Int, _ body: (UnsafeRawBufferPointer, _ bytesPerRow: Int) throws -> R) rethrows -> R {
        guard plane >= 0, plane < format.planeCount else { return try body(UnsafeRawBufferPointer(start: nil, count: 0), 0) }
        let rows = plane == 0 ? size.height : size.height / 2
        return try bytes.withUnsafeBytes { all in
            try body(UnsafeRawBufferPointer(rebasing: all[offsets[plane]..<(offsets[plane] + bytesPerRow[plane] * rows)]), bytesPerRow[plane])
        }
    }

    /// The components of the pixel at (`x`, `y`), in the format's order: B, G, R, A for
    /// `bgra`; R, G, B, A for `rgba`; Y, Cb, Cr for `nv12`; the luma for `gray`. Empty outside
    /// the frame.
    public func pixel(x: Int, y: Int) -> [UInt8] {
        guard x >= 0, y >= 0, x < width, y < height else { return [] }
        switch format {
        case .bgra, .rgba:
            let at = offsets[0] + y * bytesPerRow[0] + x * 4
            return Array(bytes[at..<(at + 4)])
        case .gray:
            return [bytes[offsets[0] + y * bytesPerRow[0] + x]]
        case .nv12:
            let chroma = offsets[1] + (y / 2) * bytesPerRow[1] + (x / 2) * 2
            return [bytes[offsets[0] + y * bytesPerRow[0] + x], bytes[chroma], bytes[chroma + 1]]
        }
    }
}
