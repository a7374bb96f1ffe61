import Foundation
import Synchronization

/// Memory for one frame, owned by a ``FramePool`` and returned to it when the last
/// ``VideoFrame`` that refers to it goes away.
package final class FrameBuffer: @unchecked Sendable {
    package let bytes: UnsafeMutableRawPointer
    package let byteCount: Int
    /// A tag the allocator may use to find its own bookkeeping (e.g. an SHM segment id).
    package let tag: UInt64
    fileprivate weak var pool: FramePool?
    fileprivate let release: @Sendable (UnsafeMutableRawPointer) -> Void

    package init(bytes: UnsafeMutableRawPointer, byteCount: Int, tag: UInt64 = 0,
                 release: @escaping @Sendable (UnsafeMutableRawPointer) -> Void) {
        self.bytes = bytes
        self.byteCount = byteCount
        self.tag = tag
        self.release = release
    }

    deinit {
        if let pool {
            pool.recycle(bytes: bytes, byteCount: byteCount, tag: tag, release: release)
        } else {
            release(bytes)
        }
    }
}

/// What a source knows of a picture against the pictures before it, so that work done for an
/// earlier picture can be kept (an encoder converts only the rows that changed, or nothing).
package struct PictureIdentity: Sendable, Equatable {
    /// Equal ids mean equal pixels. Unique within the process.
    package var id: UInt64
    /// The picture this one was made from by changing ``changedRows``; `nil` when unknown.
    package var base: UInt64?
    /// The rows (sorted, disjoint, at even boundaries) that differ from the ``base`` picture;
    /// every other row is the same.
    package var changedRows: [Range<Int>]

    /// A picture with its changes against `base`.
    package init(id: UInt64, base: UInt64?, changedRows: [Range<Int>]) {
        self.id = id
        self.base = base
        self.changedRows = changedRows
    }

    private static let counter = Atomic<UInt64>(0)

    /// A new id, never given before in this process.
    package static func newID() -> UInt64 { counter.add(1, ordering: .relaxed).newValue }
}

/// One video frame: pixels in a ``PixelFormat``, with planes and strides, and a presentation
/// time on the session clock.
///
/// Frames come from a pool, so capturing allocates nothing per frame: when the last copy of a
/// frame goes away its memory returns to the pool. A frame is a value; its pixels are shared
/// between copies and, once its producer has handed it on, only read, through
/// ``withUnsafePlane(_:_:)``.
public struct VideoFrame: Sendable {
    /// The pixel layout.
    public let format: PixelFormat
    /// The size in pixels.
    public let size: PixelSize
    /// Bytes from one row to the next, per plane.
    public let strides: [Int]
    /// Byte offset of each plane in the buffer.
    package let offsets: [Int]
    package let buffer: FrameBuffer
    /// The presentation time on the session clock.
    public var presentationTime: MediaTime
    /// The index of this frame among those its source produced (counting dropped ones).
    public var sequenceNumber: Int64
    /// When the source captured the frame, on the session clock (not counted from the
    /// session's start), if the source knows it better than its presentation time says: a
    /// camera driver's timestamp, a network frame's arrival.
    public var captureTime: MediaTime?
    /// What the source knows of this picture against the ones before it (a damage-aware
    /// screen capture): `nil` when it knows nothing, which consumers take as "all new".
    package var identity: PictureIdentity?
    /// A zoom left for the encoder to make (the zoom that follows the pointer): the picture is
    /// this rectangle of the pixels (even origin and size, inside them), scaled to ``size``;
    /// `nil` (what every source makes) when the pixels are the picture. Only an output that
    /// converts the picture anyway (``DeferredViewTaker``) is handed such a frame: its encoder
    /// crops, scales and converts in one pass instead of two. Everything else is handed the
    /// picture scaled (`ViewResolver`).
    package var view: PixelRect?

    package init(format: PixelFormat, size: PixelSize, strides: [Int], offsets: [Int], buffer: FrameBuffer,
                 presentationTime: MediaTime = .zero, sequenceNumber: Int64 = 0) {
        self.format = format
        self.size = size
        self.strides = strides
        self.offsets = offsets
        self.buffer = buffer
        self.presentationTime = presentationTime
        self.sequenceNumber = sequenceNumber
    }

    /// A frame of `format` and `size` made by application code (to append to an
    /// ``AssetWriter``, or to deliver from a source of its own): `draw` fills each plane once,
    /// with its bytes and stride; afterwards the frame is immutable like every other.
    ///
    /// Throws `invalidConfiguration` for a size that is not positive and at most 16384 on each
    /// side, or not even for the formats that halve the chroma (`nv12`, `yuv420p`, `yuyv`).
    public init(format: PixelFormat, size: PixelSize, presentationTime: MediaTime = .zero, sequenceNumber: Int64 = 0,
                draw: (_ plane: Int, _ bytes: UnsafeMutableRawBufferPointer, _ stride: Int) throws -> Void) throws {
        try Self.checkSize(size, of: format)
        let layout = Self.layout(format: format, size: size)
        let bytes = UnsafeMutableRawPointer.allocate(byteCount: layout.byteCount, alignment: 64)
        bytes.initializeMemory(as: UInt8.self, repeating: 0, count: layout.byteCount)
        let buffer = FrameBuffer(bytes: bytes, byteCount: layout.byteCount) { $0.deallocate() }
        self.init(format: format, size: size, strides: layout.strides, offsets: layout.offsets, buffer: buffer,
                  presentationTime: presentationTime, sequenceNumber: sequenceNumber)
        for plane in 0..<format.planeCount {
            try withUnsafeMutablePlane(plane) { try draw(plane, $0, $1) }
        }
    }

    /// Throws `invalidConfiguration` unless app code may make frames of `size` in `format`:
    /// positive and at most 16384 on each side, even for the formats that halve the chroma.
    package static func checkSize(_ size: PixelSize, of format: PixelFormat) throws {
        let limit = 16_384
        guard size.width > 0, size.height > 0, size.width <= limit, size.height <= limit else {
            throw ReelError(.invalidConfiguration, "a frame of \(size) cannot be made", hint: "use sizes from 2x2 to \(limit)x\(limit)")
        }
        if format != .bgra && (size.width % 2 != 0 || size.height % 2 != 0) {
            throw ReelError(.invalidConfiguration, "a \(format) frame needs an even size, not \(size)")
        }
    }

    /// The width in pixels.
    public var width: Int { size.width }
    /// The height in pixels.
    public var height: Int { size.height }

    /// Calls `body` with the bytes of plane `plane` and its stride, to read them.
    ///
    /// The bytes are valid only inside `body`. A frame handed on is immutable, so they are
    /// read-only. A plane that the frame's format does not have comes as an empty buffer with
    /// stride 0.
    public func withUnsafePlane<R>(_ plane: Int, _ body: (UnsafeRawBufferPointer, _ stride: Int) throws -> R) rethrows -> R {
        let (bytes, stride) = planeBytes(plane)
        return try body(UnsafeRawBufferPointer(bytes), stride)
    }

    /// Calls `body` with the writable bytes of plane `plane` and its stride: for the producer
    /// of the frame (a source, a decoder, a scaler drawing into a picture of its own), and only
    /// before it hands the frame on. A plane that the format does not have comes as an empty
    /// buffer with stride 0.
    package func withUnsafeMutablePlane<R>(_ plane: Int, _ body: (UnsafeMutableRawBufferPointer, _ stride: Int) throws -> R) rethrows -> R {
        let (bytes, stride) = planeBytes(plane)
        return try body(bytes, stride)
    }

    /// The bytes of plane `plane` and its stride; empty for a plane the format does not have.
    private func planeBytes(_ plane: Int) -> (UnsafeMutableRawBufferPointer, Int) {
        guard plane >= 0, plane < format.planeCount, plane < strides.count, plane < offsets.count else {
            return (UnsafeMutableRawBufferPointer(start: nil, count: 0), 0)
        }
        let rows = format.rows(plane: plane, height: size.height)
        return (UnsafeMutableRawBufferPointer(start: buffer.bytes + offsets[plane], count: strides[plane] * rows), strides[plane])
    }

    /// A copy of this frame's pixels in a frame of `pool` (of this frame's format and size),
    /// timed and stamped like it; `nil` when the pool has no frame free (`waiting`: after
    /// waiting for one, for a clock that is not real time). For an output that must not keep
    /// its source's pooled buffers while it works.
    package func copied(into pool: FramePool, waiting: Bool = false) -> VideoFrame? {
        guard pool.format == format, pool.size == size,
              var copy = waiting ? pool.makeFrameWaiting(presentationTime: presentationTime, sequenceNumber: sequenceNumber)
                                 : pool.makeFrame(presentationTime: presentationTime, sequenceNumber: sequenceNumber) else {
            return nil
        }
        copy.captureTime = captureTime
        copy.identity = identity
        copyPixels(to: copy)
        return copy
    }

    /// Copies this frame's pixels into `target`, a frame of the same format and size that its
    /// producer has not handed on yet.
    package func copyPixels(to target: VideoFrame) {
        guard target.format == format, target.size == size else { return }
        for plane in 0..<format.planeCount {
            let rowBytes = format.rowBytes(plane: plane, width: width)
            withUnsafePlane(plane) { source, sourceStride in
                target.withUnsafeMutablePlane(plane) { destination, targetStride in
                    guard let from = source.baseAddress, let to = destination.baseAddress else { return }
                    if sourceStride == targetStride {
                        to.copyMemory(from: from, byteCount: min(source.count, destination.count))
                    } else {
                        for row in 0..<format.rows(plane: plane, height: height) {
                            (to + row * targetStride).copyMemory(from: from + row * sourceStride, byteCount: rowBytes)
                        }
                    }
                }
            }
        }
    }

    /// Paints `rect` (the whole frame if `nil`; even origin and size) a solid `color`. YUV
    /// formats take the colour as it is; BGRA gets its BT.709 RGB equivalent (grey levels only
    /// are exact). For the frame's producer only, before it hands the frame on.
    package func fill(_ rect: PixelRect? = nil, with color: YUVColor) {
        let r = rect ?? PixelRect(x: 0, y: 0, width: width, height: height)
        guard r.width > 0, r.height > 0 else { return }
        switch format {
        case .yuv420p:
            fillPlane(0, rect: r, bytesPerRow: r.width, rows: r.height) { $0.update(repeating: color.y, count: $1) }
            fillPlane(1, rect: r, bytesPerRow: r.width / 2, rows: r.height / 2) { $0.update(repeating: color.cb, count: $1) }
            fillPlane(2, rect: r, bytesPerRow: r.width / 2, rows: r.height / 2) { $0.update(repeating: color.cr, count: $1) }
        case .nv12:
            fillPlane(0, rect: r, bytesPerRow: r.width, rows: r.height) { $0.update(repeating: color.y, count: $1) }
            fillPlane(1, rect: r, bytesPerRow: r.width, rows: r.height / 2) { line, n in
                for i in stride(from: 0, to: n, by: 2) { line[i] = color.cb; line[i + 1] = color.cr }
            }
        case .yuyv:
            fillPlane(0, rect: r, bytesPerRow: r.width * 2, rows: r.height) { line, n in
                for i in stride(from: 0, to: n, by: 4) {
                    line[i] = color.y; line[i + 1] = color.cb; line[i + 2] = color.y; line[i + 3] = color.cr
                }
            }
        case .bgra:
            let level = UInt8(max(0, min(255, (Double(Int(color.y) - 16) * 255 / 219).rounded())))
            fillPlane(0, rect: r, bytesPerRow: r.width * 4, rows: r.height) { line, n in
                for i in stride(from: 0, to: n, by: 4) { line[i] = level; line[i + 1] = level; line[i + 2] = level; line[i + 3] = 255 }
            }
        }
    }

    private func fillPlane(_ plane: Int, rect: PixelRect, bytesPerRow: Int, rows: Int,
                           _ body: (UnsafeMutablePointer<UInt8>, Int) -> Void) {
        withUnsafeMutablePlane(plane) { bytes, stride in
            guard let start = bytes.baseAddress else { return }
            let base = start.assumingMemoryBound(to: UInt8.self) + format.byteOffset(plane: plane, x: rect.x, y: rect.y, stride: stride)
            for row in 0..<rows { body(base + row * stride, bytesPerRow) }
        }
    }

    /// Computes tightly aligned strides and offsets for a frame layout.
    package static func layout(format: PixelFormat, size: PixelSize, alignment: Int = 32) -> (strides: [Int], offsets: [Int], byteCount: Int) {
        var strides: [Int] = []
        var offsets: [Int] = []
        var total = 0
        for plane in 0..<format.planeCount {
            let row = format.rowBytes(plane: plane, width: size.width)
            let stride = (row + alignment - 1) / alignment * alignment
            strides.append(stride)
            offsets.append(total)
            total += stride * format.rows(plane: plane, height: size.height)
        }
        return (strides, offsets, total)
    }
}

/// A bounded pool of frame buffers of one format and size.
///
/// `makeFrame()` reuses the memory of frames that have been released. At most `capacity`
/// frames exist at once; when all are in use, `makeFrame()` returns `nil` and the caller drops
/// the frame and counts it, so memory never grows with recording length.
package final class FramePool: Sendable {
    /// The format of the pool's frames.
    package let format: PixelFormat
    /// The size of the pool's frames.
    package let size: PixelSize
    /// The most frames that can exist at once.
    package let capacity: Int

    private struct FreeEntry: @unchecked Sendable {
        let bytes: UnsafeMutableRawPointer
        let byteCount: Int
        let tag: UInt64
        let release: @Sendable (UnsafeMutableRawPointer) -> Void
    }
    private struct State {
        var free: [FreeEntry] = []
        var outstanding = 0
        var closed = false
    }
    private let state: Mutex<State>
    private let released = NSCondition()
    private let strides: [Int]
    private let offsets: [Int]
    private let byteCount: Int
    private let allocate: @Sendable (Int) -> FrameBuffer?

    /// Creates a pool of frames allocated on the heap.
    package convenience init(format: PixelFormat, size: PixelSize, capacity: Int = 8) {
        let layout = VideoFrame.layout(format: format, size: size)
        self.init(format: format, size: size, capacity: capacity, strides: layout.strides, offsets: layout.offsets,
                  byteCount: layout.byteCount) { count in
            let bytes = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 64)
            return FrameBuffer(bytes: bytes, byteCount: count) { $0.deallocate() }
        }
    }

    /// Creates a pool whose memory comes from `allocate` (e.g. shared memory for X11).
    package init(format: PixelFormat, size: PixelSize, capacity: Int, strides: [Int], offsets: [Int], byteCount: Int,
                 allocate: @escaping @Sendable (Int) -> FrameBuffer?) {
        self.format = format
        self.size = size
        self.capacity = capacity
        self.strides = strides
        self.offsets = offsets
        self.byteCount = byteCount
        self.allocate = allocate
        self.state = Mutex(State())
    }

    deinit {
        state.withLock { state in
            for entry in state.free { entry.release(entry.bytes) }
            state.free.removeAll()
        }
    }

    /// How many frames are in use now.
    package var framesInUse: Int { state.withLock { $0.outstanding } }

    /// A frame whose memory is free to write, waiting until one is released when all
    /// `capacity` frames are in use (for sources on a clock that is not real time, where
    /// waiting is backpressure rather than lateness). Returns `nil` if the wait times out.
    package func makeFrameWaiting(presentationTime: MediaTime = .zero, sequenceNumber: Int64 = 0,
                                 timeout: Double = 10) -> VideoFrame? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while true {
            if let frame = makeFrame(presentationTime: presentationTime, sequenceNumber: sequenceNumber) { return frame }
            released.lock()
            if framesInUse >= capacity { _ = released.wait(until: min(deadline, Date(timeIntervalSinceNow: 0.05))) }
            released.unlock()
            if Date() >= deadline { return nil }
        }
    }

    /// A frame whose memory is free to write, or `nil` when all `capacity` frames are in use.
    package func makeFrame(presentationTime: MediaTime = .zero, sequenceNumber: Int64 = 0) -> VideoFrame? {
        let reused: FreeEntry?? = state.withLock { state in
            guard state.outstanding < capacity else { return .none }
            state.outstanding += 1
            return .some(state.free.popLast())
        }
        guard let reused else { return nil }
        let buffer: FrameBuffer
        if let entry = reused {
            buffer = FrameBuffer(bytes: entry.bytes, byteCount: entry.byteCount, tag: entry.tag, release: entry.release)
        } else if let fresh = allocate(byteCount) {
            buffer = fresh
        } else {
            state.withLock { $0.outstanding -= 1 }
            return nil
        }
        buffer.pool = self
        return VideoFrame(format: format, size: size, strides: strides, offsets: offsets, buffer: buffer,
                          presentationTime: presentationTime, sequenceNumber: sequenceNumber)
    }

    fileprivate func recycle(bytes: UnsafeMutableRawPointer, byteCount: Int, tag: UInt64,
                             release: @escaping @Sendable (UnsafeMutableRawPointer) -> Void) {
        let entry = FreeEntry(bytes: bytes, byteCount: byteCount, tag: tag, release: release)
        state.withLock { state in
            state.outstanding -= 1
            state.free.append(entry)
        }
        released.lock()
        released.broadcast()
        released.unlock()
    }
}
