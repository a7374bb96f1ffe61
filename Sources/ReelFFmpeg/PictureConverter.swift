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
        let shape = Scaler.Shape(sourceSize: PixelSize(width: Int(key.0), height: Int(key.1)), sourceFormat: key.2,
                                 destinationSize: size, destinationFormat: AV_PIX_FMT_YUV420P.rawValue,
                                 filter: same ? SWS_POINT : SWS_BICUBIC, colour: nil)
        guard scaler.prepare(shape) else {
            throw ReelError(.unsupportedFormat, "cannot convert \(key.0)x\(key.1) pictures of pixel format \(key.2) to yuv420p \(size)")
        }
        target.point(at: out)
        let height = frame.pointee.height
        // Already yuv420p of the right size (most cameras and files): a plain copy of the
        // planes, without swscale's plumbing.
        let plainCopy = key.2 == AV_PIX_FMT_YUV420P.rawValue && key.0 == Int32(size.width) && key.1 == Int32(size.height)
            && frame.pointee.color_range != AVCOL_RANGE_JPEG
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
}
