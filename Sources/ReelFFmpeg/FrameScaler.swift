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
    /// ``draw(_:intoPacked:order:stride:size:)``'s second step: 4:2:0 at the drawn size to packed RGB.
    private var converter: Scaler?
    /// ``draw(_:intoPacked:order:stride:size:)``'s picture between its two steps.
    private var intermediate: VideoFrame?
    /// Where ``draw(_:intoPacked:order:stride:size:)`` makes a picture whose rows it cannot make in place.
    private var packedScratch: (memory: UnsafeMutableRawPointer?, bytes: Int) = (nil, 0)
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
        packedScratch.memory?.deallocate()
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

    /// The byte order of packed 32-bit RGB pixels in memory (a window's framebuffer).
    package enum PackedOrder: Sendable {
        /// Blue, green, red, then alpha or padding (SDL's `RGB888` / `ARGB8888` on little-endian).
        case bgra
        /// Red, green, blue, then alpha or padding (SDL's `BGR888` / `ABGR8888` on little-endian).
        case rgba
    }

    /// Draws all of `source` scaled to `size` into packed 32-bit RGB pixels at `pixels`, rows
    /// `stride` bytes apart: memory the caller owns (the preview window's framebuffer), so the
    /// picture is made where it is shown, with no copy after. BT.709 YUV becomes full-range
    /// RGB, as ``draw(_:crop:into:at:)`` makes BGRA.
    ///
    /// Nothing outside the picture's rows (`size.width` pixels each) is written.
    package func draw(_ source: VideoFrame, intoPacked pixels: UnsafeMutableRawPointer, order: PackedOrder, stride: Int, size: PixelSize) throws {
        // libswscale's SIMD writes whole blocks of pixels: a row whose width is not a multiple
        // of 16 would be written past its end (over the next row's start, or past the memory's
        // end for the last row). Such a picture is made in memory of its own, with the room,
        // and its rows copied.
        guard size.width % 16 != 0 else { return try drawPacked(source, into: pixels, order: order, stride: stride, size: size) }
        let scratchStride = (size.width + 15) / 16 * 16 * 4
        let needed = scratchStride * size.height
        if packedScratch.bytes < needed {
            packedScratch.memory?.deallocate()
            packedScratch = (UnsafeMutableRawPointer.allocate(byteCount: needed, alignment: 64), needed)
        }
        guard let scratch = packedScratch.memory else { return }
        try drawPacked(source, into: scratch, order: order, stride: scratchStride, size: size)
        for row in 0..<size.height {
            (pixels + row * stride).copyMemory(from: scratch + row * scratchStride, byteCount: size.width * 4)
        }
    }

    private func drawPacked(_ source: VideoFrame, into pixels: UnsafeMutableRawPointer, order: PackedOrder, stride: Int, size: PixelSize) throws {
        let from = PixelRect(x: 0, y: 0, width: source.width, height: source.height)
        guard Self.isUsable(from, in: source.size), size.width >= 2, size.height >= 2, stride >= size.width * 4 else {
            throw ReelError(.invalidConfiguration, "cannot draw a \(source.size) frame into \(size) pixels \(stride) bytes apart",
                            hint: "draw into at least 2x2 pixels")
        }
        let destinationFormat = order == .bgra ? AV_PIX_FMT_BGRA.rawValue : AV_PIX_FMT_RGBA.rawValue
        // 4:2:0 scaled and made RGB in one pass takes libswscale's general path, a third
        // dearer than scaling the planes and then converting at the same size, which has a
        // SIMD converter of its own (1280x720 into 960x540, FFmpeg 5.1).
        if source.format == .yuv420p && source.size != size && size.width % 2 == 0 && size.height % 2 == 0 {
            if intermediate?.size != size { intermediate = try VideoFrame(format: .yuv420p, size: size) { _, _, _ in } }
            if let intermediate {
                try draw(source, into: intermediate, at: PixelRect(x: 0, y: 0, width: size.width, height: size.height))
                let converter = self.converter ?? Scaler()
                self.converter = converter
                try convert(intermediate, with: converter, into: pixels, format: destinationFormat, stride: stride)
                return
            }
        }
        let colour: Scaler.Colour? = source.format == .bgra
            ? nil : Scaler.Colour(source: SWS_CS_ITU709, sourceFullRange: false, destination: SWS_CS_ITU709, destinationFullRange: true)
        let shape = Scaler.Shape(sourceSize: from.size, sourceFormat: VideoEncoder.avPixelFormat(source.format).rawValue,
                                 destinationSize: size, destinationFormat: destinationFormat, filter: flags, colour: colour)
        guard scaler.prepare(shape) else {
            throw ReelError(.unsupportedFormat, "cannot scale \(source.format.rawValue) \(from.size) to packed RGB \(size)")
        }
        scalePacked(source, with: scaler, into: pixels, stride: stride)
    }

    /// Converts 4:2:0 `picture` at its size into packed RGB at `pixels` (BT.709, full range).
    private func convert(_ picture: VideoFrame, with converter: Scaler, into pixels: UnsafeMutableRawPointer, format: Int32, stride: Int) throws {
        let shape = Scaler.Shape(sourceSize: picture.size, sourceFormat: AV_PIX_FMT_YUV420P.rawValue, destinationSize: picture.size,
                                 destinationFormat: format, filter: flags,
                                 colour: Scaler.Colour(source: SWS_CS_ITU709, sourceFullRange: false, destination: SWS_CS_ITU709, destinationFullRange: true))
        guard converter.prepare(shape) else { throw ReelError(.unsupportedFormat, "cannot convert yuv420p \(picture.size) to packed RGB") }
        scalePacked(picture, with: converter, into: pixels, stride: stride)
    }

    /// Runs `scaler` (prepared) on all of `picture` into one packed plane at `pixels`.
    private func scalePacked(_ picture: VideoFrame, with scaler: Scaler, into pixels: UnsafeMutableRawPointer, stride: Int) {
        withExtendedLifetime(picture) {
            for plane in 0..<4 { sourceData[plane] = nil; sourceStrides[plane] = 0; destinationData[plane] = nil; destinationStrides[plane] = 0 }
            for plane in 0..<picture.format.planeCount {
                picture.withUnsafePlane(plane) { bytes, planeStride in
                    sourceData[plane] = UnsafePointer(bytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    sourceStrides[plane] = Int32(planeStride)
                }
            }
            destinationData[0] = pixels.assumingMemoryBound(to: UInt8.self)
            destinationStrides[0] = Int32(stride)
            _ = scaler.scale(sourceData, strides: sourceStrides, rows: Int32(picture.height), into: destinationData, strides: destinationStrides)
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
