#if canImport(Glibc)
import Glibc
#endif
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
    private let server: any X11Server
    private let thread = CaptureThread<X11Capture>(threadName: "reel.x11")
    /// The connection ``prepare()`` (or the pick of ``pickingRegion(display:frameRate:drawsCursor:isCancelled:)``)
    /// made, kept until the capture takes it over or ``stop()``: an X server started without
    /// `-noreset` (a bare Xvfb) resets when its last client leaves, and a new connection made
    /// meanwhile fails or is cut.
    private let kept = Mutex<(any X11Display)?>(nil)

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

    /// Creates a source on a given server (a ``ScriptedX11Server`` in tests), which may be kept
    /// from using shared memory (to test the copying path).
    package init(display: String?, region: PixelRect?, frameRate: FrameRate, drawsCursor: Bool,
                 allowsSharedMemory: Bool = true, server: any X11Server) {
        self.display = display
        self.region = region
        self.frameRate = frameRate
        self.drawsCursor = drawsCursor
        self.allowsSharedMemory = allowsSharedMemory
        self.server = server
        let shown = (try? X11Connection.resolveDisplay(display)) ?? "$DISPLAY"
        self.name = region.map { "screen \(shown) \($0)" } ?? "screen \(shown)"
    }

    /// Creates a source that may be kept from using shared memory (to test the copying path).
    package convenience init(display: String?, region: PixelRect?, frameRate: FrameRate, drawsCursor: Bool,
                             allowsSharedMemory: Bool) {
        self.init(display: display, region: region, frameRate: frameRate, drawsCursor: drawsCursor,
                  allowsSharedMemory: allowsSharedMemory, server: SystemX11Server())
    }

    /// Connects to the display, checks that its screen is a 32-bit one and that the region
    /// lies inside it, and reports the frame format. The connection is kept for ``start(_:)``
    /// (or let go by ``stop()``), so that the server is never left without this client between
    /// the two.
    ///
    /// - Throws: `.sourceUnavailable` when no X server answers, `.invalidConfiguration` for a
    ///   region outside the screen, `.unsupportedFormat` for a screen that is not 32-bit.
    public func prepare() throws -> SourceFormat {
        let (connection, _, rect) = try open(isCancelled: { false }, keeping: true)
        kept.withLock { $0 = connection }
        return .video(size: rect.size, pixelFormat: .bgra, frameRate: frameRate)
    }

    /// Connects and starts capturing on a dedicated thread, delivering a frame at every slot
    /// of the frame rate on `context.clock`.
    ///
    /// - Throws: what ``prepare()`` throws, or `.alreadyRunning`.
    public func start(_ context: SourceContext) throws {
        let drawsCursor = self.drawsCursor, allowsSharedMemory = self.allowsSharedMemory, rate = frameRate
        // Connecting and setting up the buffers happen outside any lock; a stop meanwhile
        // closes the connection.
        try thread.start(sourceName: name, open: { isCancelled in
            let (display, root, rect) = try open(isCancelled: isCancelled, keeping: false)
            return X11Capture(display: display, root: root, rect: rect, drawsCursor: drawsCursor,
                              allowsSharedMemory: allowsSharedMemory, capacity: Self.poolCapacity)
        }, release: { capture in
            capture.close()
        }) { capture, thread in
            Self.captureLoop(capture: capture, rate: rate, context: context, thread: thread)
        }
    }

    /// Stops capturing, waits for the capture thread and releases the connection and the
    /// buffers that no frame holds any more. Safe to call twice.
    public func stop() {
        thread.stop()
        kept.withLock { $0 = nil }
    }

    /// How the running capture reads frames, or `nil` when it is not running.
    package var captureMethod: CaptureMethod? {
        thread.current?.method
    }

    /// Keeps `connection` (the one a region was picked on) for ``prepare()`` and the capture.
    func keep(_ connection: any X11Display) {
        kept.withLock { $0 = connection }
    }

    /// Connects (or takes the connection kept, unless it broke: leaves it kept when `keeping`)
    /// and validates: the connection, the root window and the rectangle to capture.
    private func open(isCancelled: @escaping () -> Bool, keeping: Bool) throws -> (any X11Display, UInt32, PixelRect) {
        let held = kept.withLock { kept -> (any X11Display)? in
            defer { if !keeping { kept = nil } }
            return kept
        }
        let connection = try held.flatMap { $0.hasFailed ? nil : $0 } ?? server.connect(display: display, isCancelled: isCancelled)
        let screen = try connection.screen()
        let bounds = PixelRect(x: 0, y: 0, width: screen.size.width, height: screen.size.height)
        let rect = region ?? bounds
        guard rect.width > 0, rect.height > 0 else {
            throw ReelError(.invalidConfiguration, "region \(rect) is empty",
                            hint: "give a region of at least 1x1 pixels")
        }
        if let (problem, hint) = rect.placement(on: bounds.size) {
            throw ReelError(.invalidConfiguration, problem, hint: hint)
        }
        return (connection, screen.root, rect)
    }

    /// The capture thread: sleep to each slot, grab, stamp, deliver; skip slots that passed.
    private static func captureLoop(capture: X11Capture, rate: FrameRate, context: SourceContext, thread: WorkerThread) {
        defer { capture.close() }
        ConstantRateCapture.run(rate: rate, context: context, thread: thread) { pts, index in
            capture.grab(presentationTime: pts, sequenceNumber: index, waitForBuffer: !context.clock.isRealTime)
        }
    }
}

extension X11ScreenSource {
    /// Blends a cursor image in premultiplied ARGB (as XFixes delivers it: alpha in the top
    /// byte, colours already multiplied by it) over a BGRA frame with its top left corner at
    /// `(left, top)`, clipped to the frame. The frame's alpha bytes are left as they are. Only
    /// a BGRA frame (what the screen is captured as) takes a cursor; another is left alone.
    package static func blendCursor(_ pixels: UnsafePointer<UInt32>, width cursorWidth: Int, height cursorHeight: Int,
                                    left: Int, top: Int, into frame: VideoFrame) {
        guard frame.format == .bgra else { return }
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
