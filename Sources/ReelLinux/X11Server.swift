import ReelCore

/// What an ``X11ScreenSource`` asks of the X server, behind a seam like ``V4L2Driver``:
/// ``SystemX11Server`` talks XCB to a real server, ``ScriptedX11Server`` answers from a script,
/// so the capture logic (frame timing, the fall back from shared memory to copying, the cursor,
/// a screen that changes or goes away) is tested without a server. Damage and window capture
/// add their requests here.
package protocol X11Server: Sendable {
    /// Connects to `display` (`nil`: `$DISPLAY`).
    ///
    /// - Parameter isCancelled: turns true when the source is stopped meanwhile; a connection
    ///   that can wait gives up then (XCB's connects at once or fails, so it does not look).
    /// - Throws: `.sourceUnavailable` when no server answers, `.invalidConfiguration` for a
    ///   name that is not a display name.
    func connect(display: String?, isCancelled: @escaping () -> Bool) throws -> any X11Display
}

/// One connection to an X server. Used by the capture thread, and by whichever thread
/// releases the last frame of a shared-memory buffer; it closes when the last reference goes.
package protocol X11Display: AnyObject, Sendable {
    /// The display's name, e.g. `:0`.
    var name: String { get }

    /// The screen the display name selects, checked to be a 32-bit BGRA screen.
    ///
    /// - Throws: `.sourceUnavailable` for a screen the server does not have,
    ///   `.unsupportedFormat` for one that is not 32-bit BGRA.
    func screen() throws -> X11Screen

    /// Turns cursor images on (XFixes); `false` when the server has none to give.
    func enableCursorImages() -> Bool

    /// Whether the server can put images straight into shared memory (MIT-SHM).
    func supportsSharedMemory() -> Bool

    /// A frame buffer of `byteCount` bytes that the server can write images into, tagged for
    /// ``readImage(_:of:into:atRow:shared:withCursor:)``.
    ///
    /// - Throws: when the system or the server refuses (a remote display cannot share memory).
    func makeSharedFrameBuffer(byteCount: Int) throws -> FrameBuffer

    /// Reads `rect` of the window `root` into `frame` from row `row` on — straight into its
    /// shared buffer when `shared`, by copying otherwise — and, with `withCursor`, the cursor
    /// image, in one round trip. `rect` is as wide as the frame, or `row` is 0.
    func readImage(_ rect: PixelRect, of root: UInt32, into frame: VideoFrame, atRow row: Int, shared: Bool,
                   withCursor: Bool) -> X11ImageReply

    // MARK: Damage (what changed on the screen)

    /// Starts tracking what changes on `root` and everything drawn over it (the DAMAGE
    /// extension, with XFixes regions); `false` when the server cannot.
    func startDamageTracking(of root: UInt32) -> Bool

    /// The rectangles of the screen that changed since the last call: `[]` when nothing did
    /// (found without a round trip when no damage was reported), `nil` when that is not known
    /// (tracking failed: take everything as changed). The first call after
    /// ``startDamageTracking(of:)`` answers what changed since then.
    func takeDamage() -> [PixelRect]?

    /// The cursor image and where the pointer is, in one round trip; `nil` when the server has
    /// none to give (call ``enableCursorImages()`` first).
    func cursorImage() -> X11CursorImage?

    /// Whether the connection has broken (the server went away).
    var hasFailed: Bool { get }

    /// Discards events that have arrived, so the queue never grows.
    func drainEvents()

    // MARK: Windows (window capture)

    /// The top-level client windows of `root`, in stacking order from the bottom: those of
    /// `_NET_CLIENT_LIST`, else the root's children (or, under a window manager that reparents
    /// without EWMH, their children) that carry `WM_STATE`, else the root's mapped children that
    /// have a title (a bare X server such as Xvfb).
    func windows(of root: UInt32) -> [X11WindowInfo]

    /// The window that has the focus: `_NET_ACTIVE_WINDOW`, else the input focus; `nil` when
    /// there is none (the focus is on the root or nowhere).
    func focusedWindow(of root: UInt32) -> UInt32?

    /// Asks for Composite 0.2 or later (required before any Composite request, and the first
    /// version that names a window's pixmap); `false` when the server has none.
    func enableComposite() -> Bool

    /// Redirects `window` to off-screen storage (automatic: the server still shows it), so that
    /// its content is kept even where other windows cover it. `false` when the server refused.
    func redirectWindow(_ window: UInt32) -> Bool

    /// Where `window` is and whether it can be read now (one round trip).
    func windowState(_ window: UInt32, root: UInt32) -> X11WindowState

    /// Names the pixmap that holds `window`'s content now (it covers the border too); `nil`
    /// when the server refused (the window is not viewable). A new one is needed after each
    /// resize or map; the old one keeps the old picture until ``freePixmap(_:)``.
    func nameWindowPixmap(_ window: UInt32) -> UInt32?

    /// Whether the pointer is over `window` (or its window manager's frame) rather than over
    /// another window that covers it or the root.
    func pointerIsOver(_ window: UInt32, root: UInt32) -> Bool

    /// Frees a pixmap named with ``nameWindowPixmap(_:)``.
    func freePixmap(_ pixmap: UInt32)

    /// Grabs the pointer and the keyboard and waits for a click (a crosshair), then answers the
    /// top-level window clicked, or that the click was on the root (the desktop), Escape or
    /// Ctrl-C gave up, the grab was refused or `isCancelled` turned true.
    func pickWindow(of root: UInt32, isCancelled: @escaping () -> Bool) -> X11PickResult

    /// Grabs the pointer and the keyboard and lets the user drag a rectangle on `root` with the
    /// first button (a crosshair; the rectangle drawn as it goes), then answers it in root
    /// coordinates, or that Escape or Ctrl-C gave up, the grab was refused or `isCancelled`
    /// turned true.
    func pickRegion(of root: UInt32, isCancelled: @escaping () -> Bool) -> X11RegionPickResult

    /// The top-level window `id` of `root` even when ``windows(of:)`` does not list it (an
    /// unmapped window where no window manager runs); `nil` when `id` is no top-level window.
    func topLevelWindow(_ id: UInt32, of root: UInt32) -> X11WindowInfo?

    /// The application windows of `root` that ``windows(of:)`` does not list because they are
    /// not shown (unmapped where no window manager runs), so that one named can be said to be
    /// hidden rather than missing.
    func hiddenWindows(of root: UInt32) -> [X11WindowInfo]
}

/// What a click for ``X11Display/pickWindow(of:isCancelled:)`` found.
package enum X11PickResult: Sendable, Equatable {
    /// The top-level window with this id (or the window clicked, when no client is found in it).
    case window(UInt32)
    /// The click was on the root window: the desktop, no window.
    case root
    /// Escape or Ctrl-C gave up.
    case givenUp
    /// The pointer could not be grabbed (another program holds it).
    case notGrabbed
    /// Given up before a click (the recording was stopped, or the connection failed).
    case cancelled
}

/// What a drag for ``X11Display/pickRegion(of:isCancelled:)`` found.
package enum X11RegionPickResult: Sendable, Equatable {
    /// The rectangle dragged, in the root window's coordinates.
    case region(PixelRect)
    /// Escape or Ctrl-C gave up.
    case givenUp
    /// The pointer or the keyboard could not be grabbed (another program holds it).
    case notGrabbed
    /// Given up before a drag (the caller cancelled, or the connection failed).
    case cancelled
}

/// A top-level window as ``X11Display/windows(of:)`` lists it.
package struct X11WindowInfo: Sendable, Equatable {
    /// The window's id.
    package var id: UInt32
    /// `_NET_WM_NAME`, else `WM_NAME` (empty when it has none).
    package var title: String
    /// The `WM_CLASS` class (e.g. `Firefox`), empty when it has none.
    package var className: String
    /// The `WM_CLASS` instance (e.g. `Navigator`), empty when it has none.
    package var instanceName: String
    /// Its position on the screen and its size (without the border).
    package var frame: PixelRect
    /// Whether it is mapped (shown) now.
    package var isMapped: Bool
    /// The process that shows it, as it says (`_NET_WM_PID`), or `nil` when it does not.
    package var processID: Int32?

    /// Describes a window.
    package init(id: UInt32, title: String, className: String = "", instanceName: String = "", frame: PixelRect,
                 isMapped: Bool = true, processID: Int32? = nil) {
        self.processID = processID
        self.id = id
        self.title = title
        self.className = className
        self.instanceName = instanceName
        self.frame = frame
        self.isMapped = isMapped
    }

    /// `0x400007`: how X tools write window ids.
    package var hexID: String { "0x" + String(id, radix: 16) }

    /// The title in quotes, or `(no title)` for a window without one.
    package var quotedTitle: String { title.isEmpty ? "(no title)" : "\"\(title)\"" }
}

/// Where a captured window is, as ``X11Display/windowState(_:root:)`` finds it.
package enum X11WindowState: Sendable, Equatable {
    /// Viewable: its content rectangle on the screen (`frame`, without the border) and the
    /// border's width (where the content starts within its pixmap).
    case viewable(frame: PixelRect, border: Int)
    /// Unmapped or minimised (or a parent is): its pixmap cannot be named now.
    case unmapped
    /// Destroyed.
    case gone
}

/// A screen's root window and size.
package struct X11Screen: Sendable, Equatable {
    /// The root window.
    package var root: UInt32
    /// The screen's size in pixels.
    package var size: PixelSize

    /// Describes a screen.
    package init(root: UInt32, size: PixelSize) {
        self.root = root
        self.size = size
    }
}

/// What the server answered to an image request.
package enum X11ImageReply: Sendable {
    /// The image is in the frame; the cursor image when it was asked for and is known.
    case captured(cursor: X11CursorImage?)
    /// The server refused with the X error `errorCode` (`nil`: no error code, e.g. the
    /// connection broke).
    case refused(errorCode: UInt8?)
}

/// The cursor as XFixes gives it: premultiplied ARGB pixels and where it is on the screen.
package struct X11CursorImage: Sendable, Equatable {
    /// The pixels, row by row, `width * height` of them.
    package var pixels: [UInt32]
    /// The image's width in pixels.
    package var width: Int
    /// The image's height in pixels.
    package var height: Int
    /// The pointer's horizontal position on the screen.
    package var x: Int
    /// The pointer's vertical position on the screen.
    package var y: Int
    /// The hot spot's column within the image (the pixel at the pointer's position).
    package var xhot: Int
    /// The hot spot's row within the image.
    package var yhot: Int

    /// Describes a cursor image.
    package init(pixels: [UInt32], width: Int, height: Int, x: Int, y: Int, xhot: Int, yhot: Int) {
        self.pixels = pixels
        self.width = width
        self.height = height
        self.x = x
        self.y = y
        self.xhot = xhot
        self.yhot = yhot
    }
}

extension X11Display {
    /// Reads `rect` of `root` into the top of `frame`.
    func readImage(_ rect: PixelRect, of root: UInt32, into frame: VideoFrame, shared: Bool,
                   withCursor: Bool) -> X11ImageReply {
        readImage(rect, of: root, into: frame, atRow: 0, shared: shared, withCursor: withCursor)
    }
}

extension X11CursorImage {
    /// The rows of the captured rectangle `area` the cursor covers (see ``RowSet/rows(of:in:)``).
    func rows(in area: PixelRect) -> Range<Int> {
        RowSet.rows(of: PixelRect(x: x - xhot, y: y - yhot, width: width, height: height), in: area)
    }

    /// Blends the cursor into `frame`, whose top left corner is at `origin` on the screen (a
    /// region's or a window's): what falls outside the frame is clipped away.
    func blend(into frame: VideoFrame, origin: (x: Int, y: Int)) {
        guard width > 0, height > 0, pixels.count >= width * height else { return }
        pixels.withUnsafeBufferPointer { pixels in
            guard let base = pixels.baseAddress else { return }
            X11ScreenSource.blendCursor(base, width: width, height: height, left: x - xhot - origin.x, top: y - yhot - origin.y,
                                        into: frame)
        }
    }
}
