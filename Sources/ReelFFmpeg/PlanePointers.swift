import ReelCore

/// The plane pointers and strides of a 4:2:0 frame being written, in the four-entry C arrays
/// libswscale and `av_image_copy` take: allocated once by their owner, pointed at each new
/// frame by ``point(at:)``.
final class PlanePointers {
    let planes = UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>.allocate(capacity: 4)
    let strides = UnsafeMutablePointer<Int32>.allocate(capacity: 4)

    deinit {
        planes.deallocate()
        strides.deallocate()
    }

    /// Points the arrays at the three planes of `frame` (yuv420p, which its producer is about
    /// to fill); the fourth entry is empty.
    func point(at frame: VideoFrame) {
        for plane in 0..<3 {
            frame.withUnsafeMutablePlane(plane) { bytes, stride in
                planes[plane] = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
                strides[plane] = Int32(stride)
            }
        }
        planes[3] = nil
        strides[3] = 0
    }
}
