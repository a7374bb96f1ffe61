import ReelCore
import Synchronization

/// The resources of one running screen capture: the display connection, the frame pool and the
/// cursor state, and what to do with each of the server's answers. Used only by the capture
/// thread, except ``method``.
final class X11Capture: @unchecked Sendable {
    /// What one grab gave.
    typealias Outcome = GrabOutcome

    private var display: (any X11Display)?
    private var pool: FramePool?
    private let root: UInt32
    private let rect: PixelRect
    private let capacity: Int
    private var drawsCursor: Bool
    private let methodState = Atomic<UInt8>(0)

    /// Sets up a capture of `rect` of the window `root`: shared-memory frames when the server
    /// and `allowsSharedMemory` allow, copied frames otherwise.
    init(display: any X11Display, root: UInt32, rect: PixelRect, drawsCursor: Bool, allowsSharedMemory: Bool,
         capacity: Int) {
        self.display = display
        self.root = root
        self.rect = rect
        self.capacity = capacity
        self.drawsCursor = drawsCursor && display.enableCursorImages()
        if allowsSharedMemory, let pool = Self.makeSharedPool(display: display, rect: rect, capacity: capacity) {
            self.pool = pool
            methodState.store(X11ScreenSource.CaptureMethod.sharedMemory.rawValue, ordering: .relaxed)
        } else {
            useCopying()
        }
    }

    /// How frames are read now.
    var method: X11ScreenSource.CaptureMethod? {
        X11ScreenSource.CaptureMethod(rawValue: methodState.load(ordering: .relaxed))
    }

    /// Releases the pool (detaching the free shared-memory buffers) and the connection; frames
    /// still held downstream keep their segment and the connection until they go.
    func close() {
        pool = nil
        display = nil
    }

    /// A pool of shared-memory frames, all allocated up front, or `nil` when the server cannot
    /// share memory with us.
    private static func makeSharedPool(display: any X11Display, rect: PixelRect, capacity: Int) -> FramePool? {
        guard display.supportsSharedMemory() else { return nil }
        let stride = rect.width * 4
        let pool = FramePool(format: .bgra, size: rect.size, capacity: capacity, strides: [stride], offsets: [0],
                             byteCount: stride * rect.height) { byteCount in
            try? display.makeSharedFrameBuffer(byteCount: byteCount)
        }
        // Allocate every buffer now, so the loop never creates segments and a refusal shows at once.
        var frames: [VideoFrame] = []
        for _ in 0..<capacity {
            guard let frame = pool.makeFrame() else { break }
            frames.append(frame)
        }
        return frames.isEmpty ? nil : pool
    }

    private func useCopying() {
        pool = FramePool(format: .bgra, size: rect.size, capacity: capacity)
        methodState.store(X11ScreenSource.CaptureMethod.copy.rawValue, ordering: .relaxed)
    }

    /// Reads the region into a pooled frame stamped with `presentationTime` and `sequenceNumber`.
    /// With `waitForBuffer` (a clock that is not real time) it waits for a free frame rather
    /// than dropping one.
    func grab(presentationTime: MediaTime, sequenceNumber: Int64, waitForBuffer: Bool = false) -> Outcome {
        guard let display, let pool else { return .lost(ReelError(.notRunning, "the screen capture has stopped")) }
        display.drainEvents()
        let buffer = waitForBuffer
            ? pool.makeFrameWaiting(presentationTime: presentationTime, sequenceNumber: sequenceNumber)
            : pool.makeFrame(presentationTime: presentationTime, sequenceNumber: sequenceNumber)
        guard let frame = buffer else { return .noBuffer }
        let shared = method == .sharedMemory
        switch display.readImage(rect, of: root, into: frame, shared: shared, withCursor: drawsCursor) {
        case .captured(let cursor):
            if let cursor { cursor.blend(into: frame, origin: (rect.x, rect.y)) }
            return .frame(frame)
        case .refused(let errorCode):
            if display.hasFailed {
                return .lost(ReelError(.sourceUnavailable, "the X server at \(display.name) went away",
                                       hint: "restart the recording once the display is back"))
            }
            if shared {
                // The server refused the shared segment after all: read by copying from now on.
                useCopying()
                return grab(presentationTime: presentationTime, sequenceNumber: sequenceNumber, waitForBuffer: waitForBuffer)
            }
            return .lost(ReelError(.sourceUnavailable,
                                   "reading region \(rect) of the screen at \(display.name) failed (X error \(errorCode.map(String.init) ?? "?"))",
                                   hint: "the screen may have changed size; choose a region inside it"))
        }
    }
}
