internal import CFFmpeg
import ReelCore

/// Draws a frame, or a part of it, scaled into a rectangle of another frame: the pixel work of
/// composing and of digital zoom, through libswscale.
///
/// Owns one `Scaler`, whose context is remade only when the shape of the work changes (formats, sizes), so
/// drawing the same source into the same place every frame allocates nothing. Used from one
/// thread at a time.
public final class FrameScaler {
    private let scaler = Scaler()
    private let flags: Int32
    private let sourceData = UnsafeMutablePointer<UnsafePointer<UInt8>?>.allocate(capacity: 4)
    private let sourceStrides = UnsafeMutablePointer<Int32>.allocate(capacity: 4)
    private let destinationData = UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>.allocate(capacity: 4)
    private let destinationStrides = UnsafeMutablePointer<Int32>.allocate(capacity: 4)

    /// How scaled pixels are computed.
    public enum Quality: Sendable {
        /// Bilinear: fast, what the compositor uses.
        case bilinear
        /// Bicubic: sharper, slower.
        case bicubic
        /// libswscale's fast bilinear: the cheapest, a little softer; for a picture only
        /// looked at (the preview window) or always moving (the zoom that follows the
        /// pointer), never for a still one recorded.
        case fastBilinear
    }

    /// Creates a scaler.
    public init(quality: Quality = .bilinear) {
        switch quality {
        case .bilinear: flags = SWS_BILINEAR
        case .bicubic: flags = SWS_BICUBIC
        case .fastBilinear: flags = SWS_FAST_BILINEAR
        }
        for i in 0..<4 { sourceData[i] = nil; destinationData[i] = nil; sourceStrides[i] = 0; destinationStrides[i] = 0 }
    }

    deinit {
        sourceData.deallocate()
        sourceStrides.deallocate()
        destinationData.deallocate()
        destinationStrides.deallocate()
    }

    /// Draws `crop` of `source` (all of it if `nil`) scaled to fill `rect` of `destination`.
    ///
    /// Rectangles must have even origins and lie inside their frames. The same
    /// format at the same size is copied row by row; anything else goes through libswscale
    /// (RGB becomes limited-range BT.709 YUV, as the encoder does, and BT.709 YUV full-range RGB).
    public func draw(_ source: VideoFrame, crop: PixelRect? = nil, into destination: VideoFrame, at rect: PixelRect) throws {
        let from = crop ?? PixelRect(x: 0, y: 0, width: source.width, height: source.height)
        guard Self.isUsable(from, in: source.size), Self.isUsable(rect, in: destination.size) else {
            throw ReelError(.invalidConfiguration, "cannot draw \(from) of a \(source.size) frame into \(rect) of a \(destination.size) frame",
                            hint: "rectangles need even positions inside their frames")
        }
        withExtendedLifetime((source, destination)) {
            for plane in 0..<source.format.planeCount {
                source.withUnsafePlane(plane) { bytes, stride in
                    let offset = source.format.byteOffset(plane: plane, x: from.x, y: from.y, stride: stride)
                    sourceData[plane] = UnsafePointer((bytes.baseAddress! + offset).assumingMemoryBound(to: UInt8.self))
                    sourceStrides[plane] = Int32(stride)
                }
            }
            for plane in 0..<destination.format.planeCount {
                destination.withUnsafeMutablePlane(plane) { bytes, stride in
                    let offset = destination.format.byteOffset(plane: plane, x: rect.x, y: rect.y, stride: stride)
                    destinationData[plane] = (bytes.baseAddress! + offset).assumingMemoryBound(to: UInt8.self)
                    destinationStrides[plane] = Int32(stride)
                }
            }
        }
        if source.format == destination.format && from.size == rect.size {
            copyPlanes(format: source.format, size: rect.size)
            return
        }
        // Full-range RGB becomes limited-range BT.709 YUV, and back: Reel's YUV is BT.709
        // (what the encoder tags), where libswscale would read it as BT.601 by default.
        let colour: Scaler.Colour? = switch (source.format == .bgra, destination.format == .bgra) {
        case (true, false): Scaler.Colour(source: SWS_CS_ITU709, sourceFullRange: true, destination: SWS_CS_ITU709, destinationFullRange: false)
        case (false, true): Scaler.Colour(source: SWS_CS_ITU709, sourceFullRange: false, destination: SWS_CS_ITU709, destinationFullRange: true)
        default: nil
        }
        let shape = Scaler.Shape(sourceSize: from.size, sourceFormat: VideoEncoder.avPixelFormat(source.format).rawValue,
                                 destinationSize: rect.size, destinationFormat: VideoEncoder.avPixelFormat(destination.format).rawValue,
                                 filter: flags, colour: colour)
        guard scaler.prepare(shape) else {
            throw ReelError(.unsupportedFormat, "cannot scale \(source.format.rawValue) \(from.size) to \(destination.format.rawValue) \(rect.size)")
        }
        withExtendedLifetime((source, destination)) {
            _ = scaler.scale(sourceData, strides: sourceStrides, rows: Int32(from.height), into: destinationData, strides: destinationStrides)
        }
    }

    /// Copies the rows of each plane from the source pointers to the destination pointers.
    private func copyPlanes(format: PixelFormat, size: PixelSize) {
        for plane in 0..<format.planeCount {
            guard let from = sourceData[plane], let to = destinationData[plane] else { continue }
            let rowBytes = format.rowBytes(plane: plane, width: size.width)
            let rows = format.rows(plane: plane, height: size.height)
            let fromStride = Int(sourceStrides[plane]), toStride = Int(destinationStrides[plane])
            if fromStride == toStride && fromStride == rowBytes {
                to.update(from: from, count: rowBytes * rows)
            } else {
                for row in 0..<rows { (to + row * toStride).update(from: from + row * fromStride, count: rowBytes) }
            }
        }
    }

    private static func isUsable(_ rect: PixelRect, in size: PixelSize) -> Bool {
        rect.width >= 2 && rect.height >= 2 && rect.x >= 0 && rect.y >= 0 && rect.x % 2 == 0 && rect.y % 2 == 0
            && rect.x + rect.width <= size.width && rect.y + rect.height <= size.height
    }
}
