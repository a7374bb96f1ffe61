import Foundation
internal import CFFmpeg
import ReelCore

/// Keeps what did not change unchanged, before a picture of a GIF is dithered: each 16×16 block
/// (with its chroma) whose samples all lie within ``tolerance`` of the picture last let through
/// is given that picture's samples again.
///
/// The GIF is made from a lossy intermediate (H.264), whose pictures of a still screen differ by
/// a level or two here and there (a new keyframe every two seconds re-codes everything). Any
/// difference made `paletteuse` dither again the rectangle around all of them, and dithering
/// spreads a difference of one level into a new pattern: a still gradient's GIF re-sent whole
/// pictures, 40 times the size of one made from the screen itself. Held, a still screen's
/// pictures are the same, `paletteuse` redraws nothing, and the GIF encoder writes each as the
/// rectangle that changed with the rest transparent.
///
/// The comparison is with the picture let through, not the one before: a slow change adds up
/// until it shows, nothing drifts.
final class GIFStillHold {
    /// The largest difference of a sample taken for the intermediate's coding noise.
    static let tolerance: Int32 = 3
    /// The side of a block, in luma samples.
    static let block = 16

    private var reference: UnsafeMutablePointer<AVFrame>?

    deinit { av_frame_free(&reference) }

    /// Gives the blocks of `frame` that stayed within the tolerance the reference's samples (and
    /// takes the rest as the new reference). Pictures of a format other than 8-bit planar YUV
    /// go through as they are.
    func apply(to frame: UnsafeMutablePointer<AVFrame>) throws {
        guard let layout = Self.layout(of: frame) else { return }
        guard let reference, reference.pointee.width == frame.pointee.width, reference.pointee.height == frame.pointee.height,
              reference.pointee.format == frame.pointee.format else {
            try keep(frame)
            return
        }
        try FFmpeg.check(av_frame_make_writable(frame), "cannot copy a picture of the GIF")
        let width = Int(frame.pointee.width), height = Int(frame.pointee.height)
        let size = Self.block
        for top in stride(from: 0, to: height, by: size) {
            for left in stride(from: 0, to: width, by: size) {
                let area = (left: left, top: top, width: min(size, width - left), height: min(size, height - top))
                var same = true
                for plane in 0..<layout.planes where same {
                    same = Self.within(frame, reference, plane: plane, area: area, shift: plane == 0 ? (0, 0) : layout.chromaShift)
                }
                // The same: the reference's samples; changed: the new ones become the reference.
                for plane in 0..<layout.planes {
                    Self.copy(from: same ? reference : frame, to: same ? frame : reference, plane: plane, area: area,
                              shift: plane == 0 ? (0, 0) : layout.chromaShift)
                }
            }
        }
    }

    /// How many planes an 8-bit planar YUV `frame` has and how its chroma is subsampled; `nil`
    /// for any other format.
    private static func layout(of frame: UnsafeMutablePointer<AVFrame>) -> (planes: Int, chromaShift: (x: Int, y: Int))? {
        guard let descriptor = av_pix_fmt_desc_get(AVPixelFormat(rawValue: frame.pointee.format)) else { return nil }
        let d = descriptor.pointee
        let flags = UInt64(AV_PIX_FMT_FLAG_RGB) | UInt64(AV_PIX_FMT_FLAG_PAL) | UInt64(AV_PIX_FMT_FLAG_BITSTREAM) | UInt64(AV_PIX_FMT_FLAG_HWACCEL)
        guard d.flags & UInt64(AV_PIX_FMT_FLAG_PLANAR) != 0, d.flags & flags == 0, d.nb_components >= 3 else { return nil }
        // One byte a sample, each component in a plane of its own.
        let components = [d.comp.0, d.comp.1, d.comp.2] + (d.nb_components > 3 ? [d.comp.3] : [])
        guard components.allSatisfy({ $0.depth == 8 && $0.step == 1 && $0.shift == 0 }),
              Set(components.map(\.plane)).count == components.count else { return nil }
        return (components.count, (Int(d.log2_chroma_w), Int(d.log2_chroma_h)))
    }

    /// Whether every sample of `area` (in luma samples) of `plane` differs by no more than the
    /// tolerance between `a` and `b`.
    private static func within(_ a: UnsafeMutablePointer<AVFrame>, _ b: UnsafeMutablePointer<AVFrame>, plane: Int,
                               area: (left: Int, top: Int, width: Int, height: Int), shift: (x: Int, y: Int)) -> Bool {
        let (x0, y0, x1, y1) = bounds(area, shift)
        let strideA = Int(samples(a, plane).stride), strideB = Int(samples(b, plane).stride)
        let pa = samples(a, plane).data, pb = samples(b, plane).data
        for y in y0..<y1 {
            let ra = pa + y * strideA, rb = pb + y * strideB
            for x in x0..<x1 where abs(Int32(ra[x]) - Int32(rb[x])) > tolerance { return false }
        }
        return true
    }

    private static func copy(from source: UnsafeMutablePointer<AVFrame>, to target: UnsafeMutablePointer<AVFrame>, plane: Int,
                             area: (left: Int, top: Int, width: Int, height: Int), shift: (x: Int, y: Int)) {
        let (x0, y0, x1, y1) = bounds(area, shift)
        let from = samples(source, plane), to = samples(target, plane)
        for y in y0..<y1 {
            (to.data + y * Int(to.stride) + x0).update(from: from.data + y * Int(from.stride) + x0, count: x1 - x0)
        }
    }

    /// An area in luma samples as the samples of a plane subsampled by `shift`.
    private static func bounds(_ area: (left: Int, top: Int, width: Int, height: Int), _ shift: (x: Int, y: Int)) -> (Int, Int, Int, Int) {
        let x0 = area.left >> shift.x, y0 = area.top >> shift.y
        let x1 = (area.left + area.width + (1 << shift.x) - 1) >> shift.x
        let y1 = (area.top + area.height + (1 << shift.y) - 1) >> shift.y
        return (x0, y0, x1, y1)
    }

    private static func samples(_ frame: UnsafeMutablePointer<AVFrame>, _ index: Int) -> (data: UnsafeMutablePointer<UInt8>, stride: Int32) {
        withUnsafePointer(to: frame.pointee.data) { data in
            withUnsafePointer(to: frame.pointee.linesize) { sizes in
                let pointers = UnsafeRawPointer(data).assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self)
                let strides = UnsafeRawPointer(sizes).assumingMemoryBound(to: Int32.self)
                return (pointers[index]!, strides[index])
            }
        }
    }

    /// Takes a copy of `frame` as the reference.
    private func keep(_ frame: UnsafeMutablePointer<AVFrame>) throws {
        av_frame_free(&reference)
        guard let copy = av_frame_alloc() else { throw ReelError(.encodingFailed, "cannot allocate a picture: out of memory") }
        reference = copy
        copy.pointee.format = frame.pointee.format
        copy.pointee.width = frame.pointee.width
        copy.pointee.height = frame.pointee.height
        try FFmpeg.check(av_frame_get_buffer(copy, 0), "cannot allocate a picture of the GIF")
        try FFmpeg.check(av_frame_copy(copy, frame), "cannot copy a picture of the GIF")
    }
}
