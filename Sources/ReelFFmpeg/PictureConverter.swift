import Foundation
internal import CFFmpeg
import ReelCore

/// Converts decoded pictures of any size and pixel format into `yuv420p` frames of one size
/// (libswscale, through one ``Scaler``, whose context is remade when the input changes).
final class PictureConverter {
    let size: PixelSize
    private let pool: FramePool
    private let scaler = Scaler()
    private let target = PlanePointers()
    private var destination: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?> { target.planes }
    private var strides: UnsafeMutablePointer<Int32> { target.strides }

    init(size: PixelSize) {
        self.size = size
        pool = FramePool(format: .yuv420p, size: size, capacity: 4)
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
    /// that its producer has not handed on yet (e.g. from a camera's own pool); another frame is
    /// an `.invalidConfiguration` error.
    func convert(_ frame: UnsafeMutablePointer<AVFrame>, into out: VideoFrame) throws {
        guard out.format == .yuv420p && out.size == size else {
            throw ReelError(.invalidConfiguration, "a \(out.format.rawValue) \(out.size) frame cannot take a picture converted to yuv420p \(size)")
        }
        let key = (frame.pointee.width, frame.pointee.height, frame.pointee.format)
        guard key.0 > 0, key.1 > 0, key.2 >= 0 else {
            throw ReelError(.invalidMedia, "a decoded picture has no size or pixel format")
        }
        let same = key.0 == Int32(size.width) && key.1 == Int32(size.height)
        let colour = Self.colour(of: frame)
        let shape = Scaler.Shape(sourceSize: PixelSize(width: Int(key.0), height: Int(key.1)), sourceFormat: key.2,
                                 destinationSize: size, destinationFormat: AV_PIX_FMT_YUV420P.rawValue,
                                 filter: same ? SWS_POINT : SWS_BICUBIC, colour: colour)
        guard scaler.prepare(shape) else {
            throw ReelError(.unsupportedFormat, "cannot convert \(key.0)x\(key.1) pictures of pixel format \(key.2) to yuv420p \(size)")
        }
        target.point(at: out)
        let height = frame.pointee.height
        // Already yuv420p of the right size (most cameras and files): a plain copy of the
        // planes, without swscale's plumbing.
        let plainCopy = key.2 == AV_PIX_FMT_YUV420P.rawValue && key.0 == Int32(size.width) && key.1 == Int32(size.height)
            && colour.source == SWS_CS_ITU709 && !colour.sourceFullRange
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
                            return scaler.scale(source, strides: sourceStrides, rows: height, into: destination, strides: strides)
                        }
                    }
                }
            }
        }
        guard rows > 0 else { throw ReelError(.encodingFailed, "cannot convert a decoded picture") }
    }

    /// How to read the colours of a decoded picture into Reel's frames (limited-range BT.709,
    /// what the encoder tags): by the picture's own matrix and range. A picture that does not
    /// say takes what players assume: BT.709 from 720 rows up, BT.601 below; JPEG's pixel
    /// formats are full range.
    static func colour(of frame: UnsafeMutablePointer<AVFrame>) -> Scaler.Colour {
        let format = AVPixelFormat(rawValue: frame.pointee.format)
        let matrix: Int32
        switch frame.pointee.colorspace {
        case AVCOL_SPC_BT709: matrix = SWS_CS_ITU709
        case AVCOL_SPC_BT470BG, AVCOL_SPC_SMPTE170M: matrix = SWS_CS_ITU601
        case AVCOL_SPC_FCC: matrix = SWS_CS_FCC
        case AVCOL_SPC_SMPTE240M: matrix = SWS_CS_SMPTE240M
        case AVCOL_SPC_BT2020_NCL, AVCOL_SPC_BT2020_CL: matrix = SWS_CS_BT2020
        default: matrix = frame.pointee.height >= 720 ? SWS_CS_ITU709 : SWS_CS_ITU601
        }
        let jpeg = format == AV_PIX_FMT_YUVJ420P || format == AV_PIX_FMT_YUVJ422P || format == AV_PIX_FMT_YUVJ444P
            || format == AV_PIX_FMT_YUVJ440P || format == AV_PIX_FMT_YUVJ411P
        let isRGB = av_pix_fmt_desc_get(format).map { $0.pointee.flags & UInt64(AV_PIX_FMT_FLAG_RGB) != 0 } ?? false
        return Scaler.Colour(source: matrix, sourceFullRange: jpeg || isRGB || frame.pointee.color_range == AVCOL_RANGE_JPEG,
                             destination: SWS_CS_ITU709, destinationFullRange: false)
    }
}
