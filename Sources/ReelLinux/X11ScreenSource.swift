#if canImport(Glibc)
import Glibc
#endif
internal import CXCB
import ReelCore
import Synchronization

/// A screen of an X11 display, or a region of it, captured at a steady frame rate.
///
/// Frames are BGRA at the region's size, read with MIT-SHM straight into pooled shared-memory
/// buffers (no copy on our side), or with a plain `GetImage` copy when the server cannot share
/// memory (a remote display). The mouse cursor is blended in with XFixes when asked.
///
/// ```swift
/// let screen = X11ScreenSource(display: ":0", region: PixelRect(x: 0, y: 0, width: 1280, height: 720))
/// let format = try screen.prepare()   // .video(size: 1280x720, pixelFormat: .bgra, frameRate: 30)
/// ```
public final class X11ScreenSource: CaptureSource {
    /// How frames reach us from the server.
    package enum CaptureMethod: UInt8, Sendable {
        /// `ShmGetImage` into shared-memory frame buffers.
        case sharedMemory = 1
        /// `GetImage` and a copy into heap frame buffers.
        case copy = 2
    }

    /// "screen :0", or "screen :0 1280x720+0+0" for a region.
    public let name: String
    /// Always `.video`.
    public var kind: SampleKind { .video }
    /// The display as given (`nil` means `$DISPLAY`, read when the source is prepared).
    public let display: String?
    /// The part of the screen to capture, or `nil` for the whole screen.
    public let region: PixelRect?
    /// The rate at which frames are captured.
    public let frameRate: FrameRate
    /// Whether the mouse cursor is drawn into the frames.
    public let drawsCursor: Bool
    private let allowsSharedMemory: Bool
    private let running = Mutex<Running?>(nil)

    private struct Running: Sendable {
        let worker: WorkerThread
        let capture: X11Capture
    }

    /// How many frames may be in flight at once (captured and not yet released downstream).
    static let poolCapacity = 5

    /// Creates a source for the default screen of `display` (`nil`: `$DISPLAY`).
    ///
    /// - Parameters:
    ///   - display: an X display name such as `:0`; `nil` uses `$DISPLAY`.
    ///   - region: the rectangle of the screen to capture; `nil` captures the whole screen.
    ///   - frameRate: the capture rate.
    ///   - drawsCursor: whether to draw the mouse cursor into the frames.
    public convenience init(display: String? = nil, region: PixelRect? = nil, frameRate: FrameRate = FrameRate(30),
                            drawsCursor: Bool = true) {
        self.init(display: display, region: region, frameRate: frameRate, drawsCursor: drawsCursor,
                  allowsSharedMemory: true)
    }

    /// Creates a source that may be kept from using shared memory (to test the copying path).
    package init(display: String?, region: PixelRect?, frameRate: FrameRate, drawsCursor: Bool,
                 allowsSharedMemory: Bool) {
        self.display = display
        self.region = region
        self.frameRate = frameRate
        self.drawsCursor = drawsCursor
        self.allowsSharedMemory = allowsSharedMemory
        let shown = (try? X11Connection.resolveDisplay(display)) ?? "$DISPLAY"
        self.name = region.map { "screen \(shown) \($0)" } ?? "screen \(shown)"
    }

    /// Connects to the display, checks that its screen is a 32-bit one and that the region
    /// lies inside it, and reports the frame format.
    ///
    /// - Throws: `.sourceUnavailable` when no X server answers, `.invalidConfiguration` for a
    ///   region outside the screen, `.unsupportedFormat` for a screen that is not 32-bit.
    public func prepare() throws -> SourceFormat {
        let (_, _, rect) = try open()
        return .video(size: rect.size, pixelFormat: .bgra, frameRate: frameRate)
    }

    /// Connects and starts capturing on a dedicated thread, delivering a frame at every slot
    /// of the frame rate on `context.clock`.
    ///
    /// - Throws: what ``prepare()`` throws, or `.alreadyRunning`.
    public func start(_ context: SourceContext) throws {
        try running.withLock { running in
            guard running == nil else { throw ReelError(.alreadyRunning, "\(name) is already running") }
            let (connection, root, rect) = try open()
            let capture = X11Capture(connection: connection, root: root, rect: rect, drawsCursor: drawsCursor,
                                     allowsSharedMemory: allowsSharedMemory, capacity: Self.poolCapacity)
            let rate = frameRate
            let worker = WorkerThread(name: "reel.x11") { thread in
                Self.captureLoop(capture: capture, rate: rate, context: context, thread: thread)
            }
            running = Running(worker: worker, capture: capture)
        }
    }

    /// Stops capturing, waits for the capture thread and releases the connection and the
    /// buffers that no frame holds any more. Safe to call twice.
    public func stop() {
        let current = running.withLock { running -> Running? in
            defer { running = nil }
            return running
        }
        guard let current else { return }
        current.worker.requestStop()
        current.worker.join()
    }

    /// How the running capture reads frames, or `nil` when it is not running.
    package var captureMethod: CaptureMethod? {
        running.withLock { $0?.capture.method }
    }

    /// Connects and validates: the connection, the root window and the rectangle to capture.
    private func open() throws -> (X11Connection, UInt32, PixelRect) {
        let connection = try X11Connection(display: display)
        guard let screen = connection.defaultScreen else {
            throw ReelError(.sourceUnavailable, "the X server at display \(connection.display) has no screen \(connection.defaultScreenIndex)")
        }
        try connection.checkBGRA(screen: screen)
        let bounds = PixelRect(x: 0, y: 0, width: Int(screen.pointee.width_in_pixels),
                               height: Int(screen.pointee.height_in_pixels))
        let rect = region ?? bounds
        guard rect.width > 0, rect.height > 0 else {
            throw ReelError(.invalidConfiguration, "region \(rect) is empty",
                            hint: "give a region of at least 1x1 pixels")
        }
        guard bounds.contains(rect) else {
            throw ReelError(.invalidConfiguration, "region \(rect) lies outside the \(bounds.size) screen",
                            hint: "choose a region inside the \(bounds.size) screen of display \(connection.display)")
        }
        return (connection, screen.pointee.root, rect)
    }

    /// The capture thread: sleep to each slot, grab, stamp, deliver; skip slots that passed.
    private static func captureLoop(capture: X11Capture, rate: FrameRate, context: SourceContext, thread: WorkerThread) {
        defer { capture.close() }
        // The first frame is the first slot at or after the moment we start.
        var index = rate.frameIndex(at: context.startTime(), rounding: .up)
        while !thread.isStopRequested {
            let pts = rate.time(ofFrame: index)
            context.clock.sleep(until: context.origin + pts)
            if thread.isStopRequested { break }
            switch capture.grab(presentationTime: pts, sequenceNumber: index, waitForBuffer: !context.clock.isRealTime) {
            case .frame(let frame):
                context.deliver(.video(frame))
            case .noBuffer:
                context.report(.droppedFrames(1))
            case .lost(let error):
                context.report(.lost(error))
                return
            }
            index += 1
            // Under a real clock, skip slots that have already passed rather than bursting.
            if context.clock.isRealTime {
                let due = rate.frameIndex(at: context.timelineNow())
                if due > index {
                    context.report(.droppedFrames(Int(due - index)))
                    index = due
                }
            }
        }
    }
}

/// The resources of one running capture: the connection, the frame pool and the cursor
/// state. Used only by the capture thread, except ``method``.
private final class X11Capture: @unchecked Sendable {
    enum Outcome {
        case frame(VideoFrame)
        case noBuffer
        case lost(ReelError)
    }

    private var connection: X11Connection?
    private var pool: FramePool?
    private let root: UInt32
    private let rect: PixelRect
    private let capacity: Int
    private var drawsCursor: Bool
    private let methodState = Atomic<UInt8>(0)

    init(connection: X11Connection, root: UInt32, rect: PixelRect, drawsCursor: Bool, allowsSharedMemory: Bool,
         capacity: Int) {
        self.connection = connection
        self.root = root
        self.rect = rect
        self.capacity = capacity
        self.drawsCursor = drawsCursor && Self.enableXFixes(connection)
        if allowsSharedMemory, let pool = Self.makeSharedPool(connection: connection, rect: rect, capacity: capacity) {
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
        connection = nil
    }

    /// Asks for the XFixes version (required before any XFixes request); `false` without it.
    private static func enableXFixes(_ connection: X11Connection) -> Bool {
        guard connection.hasExtension("XFIXES") else { return false }
        let cookie = xcb_xfixes_query_version(connection.raw, 4, 0)
        guard let reply = xcb_xfixes_query_version_reply(connection.raw, cookie, nil) else { return false }
        free(reply)
        return true
    }

    /// A pool of shared-memory frames, all allocated up front, or `nil` when the server cannot
    /// share memory with us.
    private static func makeSharedPool(connection: X11Connection, rect: PixelRect, capacity: Int) -> FramePool? {
        guard connection.supportsSharedMemory() else { return nil }
        let stride = rect.width * 4
        let pool = FramePool(format: .bgra, size: rect.size, capacity: capacity, strides: [stride], offsets: [0],
                             byteCount: stride * rect.height) { byteCount in
            try? connection.makeSharedFrameBuffer(byteCount: byteCount)
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
        guard let connection, let pool else { return .lost(ReelError(.notRunning, "the screen capture has stopped")) }
        connection.drainEvents()
        let buffer = waitForBuffer
            ? pool.makeFrameWaiting(presentationTime: presentationTime, sequenceNumber: sequenceNumber)
            : pool.makeFrame(presentationTime: presentationTime, sequenceNumber: sequenceNumber)
        guard let frame = buffer else { return .noBuffer }
        let c = connection.raw
        let x = Int16(rect.x), y = Int16(rect.y), width = UInt16(rect.width), height = UInt16(rect.height)
        let format = UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue)
        let shared = method == .sharedMemory
        // Ask for the image and the cursor together: one round trip for both.
        let shmCookie = shared
            ? xcb_shm_get_image(c, root, x, y, width, height, ~0, format, xcb_shm_seg_t(truncatingIfNeeded: frame.buffer.tag), 0)
            : nil
        let copyCookie = shared ? nil : xcb_get_image(c, format, root, x, y, width, height, ~0)
        let cursorCookie = drawsCursor ? xcb_xfixes_get_cursor_image(c) : nil

        var error: UnsafeMutablePointer<xcb_generic_error_t>?
        var captured = false
        if let shmCookie {
            if let reply = xcb_shm_get_image_reply(c, shmCookie, &error) {
                free(reply)
                captured = true
            }
        } else if let copyCookie {
            if let reply = xcb_get_image_reply(c, copyCookie, &error) {
                copyImage(reply, into: frame)
                free(reply)
                captured = true
            }
        }
        let errorCode = error?.pointee.error_code
        free(error)

        if let cursorCookie {
            if captured, let reply = xcb_xfixes_get_cursor_image_reply(c, cursorCookie, nil) {
                drawCursor(reply, into: frame)
                free(reply)
            } else {
                xcb_discard_reply(c, cursorCookie.sequence)
            }
        }
        if captured { return .frame(frame) }
        if connection.hasFailed {
            return .lost(ReelError(.sourceUnavailable, "the X server at \(connection.display) went away",
                                   hint: "restart the recording once the display is back"))
        }
        if shared {
            // The server refused the shared segment after all: read by copying from now on.
            useCopying()
            return grab(presentationTime: presentationTime, sequenceNumber: sequenceNumber)
        }
        return .lost(ReelError(.sourceUnavailable,
                               "reading region \(rect) of the screen at \(connection.display) failed (X error \(errorCode.map(String.init) ?? "?"))",
                               hint: "the screen may have changed size; choose a region inside it"))
    }

    /// Copies a `GetImage` reply into `frame`, row by row (the frame's stride may be padded).
    private func copyImage(_ reply: UnsafeMutablePointer<xcb_get_image_reply_t>, into frame: VideoFrame) {
        guard let data = xcb_get_image_data(reply) else { return }
        let length = Int(xcb_get_image_data_length(reply))
        let rowBytes = rect.width * 4
        frame.withUnsafeMutablePlane(0) { plane, stride in
            guard let base = plane.baseAddress else { return }
            let rows = min(rect.height, length / rowBytes)
            if stride == rowBytes {
                memcpy(base, data, rows * rowBytes)
            } else {
                for row in 0..<rows {
                    memcpy(base + row * stride, data + row * rowBytes, rowBytes)
                }
            }
        }
    }

    /// Blends the cursor at its position relative to the region.
    private func drawCursor(_ reply: UnsafeMutablePointer<xcb_xfixes_get_cursor_image_reply_t>, into frame: VideoFrame) {
        let info = reply.pointee
        guard let pixels = xcb_xfixes_get_cursor_image_cursor_image(reply) else { return }
        // The image's top left corner in frame coordinates.
        X11ScreenSource.blendCursor(UnsafePointer(pixels), width: Int(info.width), height: Int(info.height),
                                    left: Int(info.x) - Int(info.xhot) - rect.x, top: Int(info.y) - Int(info.yhot) - rect.y,
                                    into: frame)
    }
}

extension X11ScreenSource {
    /// Blends a cursor image in premultiplied ARGB (as XFixes delivers it: alpha in the top
    /// byte, colours already multiplied by it) over a BGRA frame with its top left corner at
    /// `(left, top)`, clipped to the frame. The frame's alpha bytes are left as they are.
    package static func blendCursor(_ pixels: UnsafePointer<UInt32>, width cursorWidth: Int, height cursorHeight: Int,
                                    left: Int, top: Int, into frame: VideoFrame) {
        precondition(frame.format == .bgra, "the cursor is drawn on BGRA frames")
        let x0 = max(0, left), x1 = min(frame.width, left + cursorWidth)
        let y0 = max(0, top), y1 = min(frame.height, top + cursorHeight)
        guard x0 < x1, y0 < y1 else { return }
        frame.withUnsafeMutablePlane(0) { plane, stride in
            guard let base = plane.baseAddress else { return }
            for row in y0..<y1 {
                let source = pixels + (row - top) * cursorWidth + (x0 - left)
                let target = (base + row * stride).assumingMemoryBound(to: UInt32.self) + x0
                for column in 0..<(x1 - x0) {
                    let p = source[column]
                    let alpha = p >> 24
                    if alpha == 0 { continue }
                    if alpha == 255 { target[column] = p; continue }
                    // Premultiplied "over": out = src + dst * (255 - alpha) / 255, per channel.
                    let d = target[column], inverse = 255 - alpha
                    @inline(__always) func over(_ shift: UInt32) -> UInt32 {
                        min(((p >> shift) & 0xFF) + (((d >> shift) & 0xFF) * inverse + 127) / 255, 255) << shift
                    }
                    target[column] = over(0) | over(8) | over(16) | (d & 0xFF00_0000)
                }
            }
        }
    }
}
