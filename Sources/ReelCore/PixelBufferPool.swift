/// Reusable frame memory of one pixel format and size, as `CVPixelBufferPool`: an app that
/// draws its own pictures (to append to an ``AssetWriter`` input, or to deliver from a source
/// of its own) takes each frame's memory from the pool instead of allocating it per frame.
///
/// A frame's memory goes back to the pool when the last copy of the ``VideoFrame`` goes away:
/// appended to an asset writer input and let go, it is the next frame's memory. The pool is
/// bounded: at most ``capacity`` frames of it exist at once, and asking for one more throws
/// (as `CVPixelBufferPoolCreatePixelBuffer` fails past its allocation threshold) instead of
/// growing memory with frames that are kept somewhere by mistake.
///
/// The pixels are drawn once, in the `draw` closure of ``makeFrame(presentationTime:sequenceNumber:draw:)``
/// (where `CVPixelBufferLockBaseAddress` and `Unlock` would be); the frame is immutable after
/// it, like every other. Memory that is reused holds the picture drawn into it before: draw
/// every pixel.
public final class PixelBufferPool: Sendable {
    /// The pixel format of the pool's frames.
    public let format: PixelFormat
    /// The size of the pool's frames.
    public let size: PixelSize
    /// The most frames of the pool that exist at once.
    public let capacity: Int
    private let pool: FramePool

    /// A pool of at most `capacity` frames of `format` and `size`; nothing is allocated until a
    /// frame is made.
    ///
    /// - Throws: `.invalidConfiguration` for a capacity below 1, a size that is not positive and
    ///   at most 16384 on each side, or not even for the formats that halve the chroma (`nv12`,
    ///   `yuv420p`, `yuyv`).
    public init(format: PixelFormat, size: PixelSize, capacity: Int = 6) throws {
        try VideoFrame.checkSize(size, of: format)
        guard capacity >= 1 else {
            throw ReelError(.invalidConfiguration, "a pixel buffer pool needs a capacity of at least 1, not \(capacity)")
        }
        self.format = format
        self.size = size
        self.capacity = capacity
        pool = FramePool(format: format, size: size, capacity: capacity)
    }

    /// How many frames of the pool exist now (drawn and not yet let go of everywhere).
    public var framesInUse: Int { pool.framesInUse }

    /// A frame of the pool's memory at `presentationTime`, drawn by `draw` (called once per
    /// plane, with its bytes and stride), as `CVPixelBufferPoolCreatePixelBuffer` followed by
    /// drawing into the locked buffer. The bytes are valid only inside `draw`.
    ///
    /// - Throws: `.limitReached` when all ``capacity`` frames are in use (let go of the frames
    ///   you keep, or make a larger pool); what `draw` throws (the memory then goes back).
    public func makeFrame(presentationTime: MediaTime = .zero, sequenceNumber: Int64 = 0,
                          draw: (_ plane: Int, _ bytes: UnsafeMutableRawBufferPointer, _ stride: Int) throws -> Void) throws -> VideoFrame {
        guard let frame = pool.makeFrame(presentationTime: presentationTime, sequenceNumber: sequenceNumber) else {
            throw ReelError(.limitReached, "all \(capacity) frames of the pixel buffer pool are in use",
                            hint: "let go of the frames you no longer need (an appended frame can go at once), or make a pool with a larger capacity")
        }
        for plane in 0..<format.planeCount {
            try frame.withUnsafeMutablePlane(plane) { try draw(plane, $0, $1) }
        }
        return frame
    }
}
