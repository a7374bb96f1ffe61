import ReelCore
import Synchronization

/// One window of an X11 display, captured at a steady frame rate through the Composite
/// extension: the window is redirected off screen (automatically, so it is still shown) and
/// its own pixmap is read with MIT-SHM, so the recording shows the window's content even where
/// other windows cover it or it is partly off the screen, and moving it changes nothing.
///
/// The frames are BGRA at the window's size when the capture starts (made even). When the
/// window is resized its pixmap is named again and the picture is scaled into that size
/// (``WindowResizeMode``). While the window is minimised or hidden the last picture is repeated
/// (``SourceEvent/interrupted(_:)`` says so, ``SourceEvent/resumed`` when it is back); when it
/// is closed the source is lost (``SourceEvent/lost(_:)``), as a screen whose X server goes away
/// is. The cursor is drawn in only where it is over the window.
///
/// ```swift
/// let window = X11WindowSource(display: ":0", window: .name("firefox"))
/// let format = try window.prepare()   // .video(size: the window's size, pixelFormat: .bgra, …)
/// ```
public final class X11WindowSource: CaptureSource {
    /// "window 0x400007 \"Title\"" once prepared, "the window named \"firefox\"" before.
    public var name: String { chosen.withLock { $0 }.map { "window \($0.window.hexID) \($0.window.quotedTitle)" } ?? "\(selector)" }
    /// Always `.video`.
    public var kind: SampleKind { .video }
    /// The display as given (`nil` means `$DISPLAY`).
    public let display: String?
    /// Which window is recorded.
    public let selector: X11WindowSelector
    /// What a resize does to the picture.
    public let resizeMode: WindowResizeMode
    /// The rate at which frames are captured.
    public let frameRate: FrameRate
    /// Whether the mouse cursor is drawn in (only where it is over the window).
    public let drawsCursor: Bool
    private let allowsSharedMemory: Bool
    private let server: any X11Server
    private let thread = CaptureThread<X11WindowCapture>(threadName: "reel.x11window")
    /// The window chosen by the first ``prepare()`` (a click or the focus is asked only once)
    /// and the recording's size.
    private let chosen = Mutex<(window: X11WindowInfo, size: PixelSize)?>(nil)
    /// Set by ``stop()``, so that a ``prepare()`` waiting for a click gives up.
    private let preparing = Atomic<Bool>(false)

    /// Creates a source for a window of `display` (`nil`: `$DISPLAY`).
    ///
    /// - Parameters:
    ///   - display: an X display name such as `:0`; `nil` uses `$DISPLAY`.
    ///   - window: which window: the focused one, by id, by name, or the one clicked.
    ///   - resizeMode: how a window resized while recording is put into the recording's size.
    ///   - frameRate: the capture rate.
    ///   - drawsCursor: whether to draw the mouse cursor in while it is over the window.
    public convenience init(display: String? = nil, window: X11WindowSelector = .focused, resizeMode: WindowResizeMode = .fit,
                            frameRate: FrameRate = FrameRate(30), drawsCursor: Bool = true) {
        self.init(display: display, window: window, resizeMode: resizeMode, frameRate: frameRate, drawsCursor: drawsCursor,
                  allowsSharedMemory: true, server: SystemX11Server())
    }

    /// Creates a source on a given server (a ``ScriptedX11Server`` in tests).
    package init(display: String?, window: X11WindowSelector, resizeMode: WindowResizeMode, frameRate: FrameRate,
                 drawsCursor: Bool, allowsSharedMemory: Bool = true, server: any X11Server) {
        self.display = display
        self.selector = window
        self.resizeMode = resizeMode
        self.frameRate = frameRate
        self.drawsCursor = drawsCursor
        self.allowsSharedMemory = allowsSharedMemory
        self.server = server
    }

    /// The window recorded, once chosen by ``prepare()`` or ``start(_:)``: with
    /// ``X11WindowSelector/pick``, the one clicked (``X11WindowSelector/id(_:)`` of it records
    /// it again without a click).
    public var windowID: UInt32? { chosen.withLock { $0?.window.id } }

    /// The title of the window recorded (empty when it has none), once chosen.
    public var windowTitle: String? { chosen.withLock { $0?.window.title } }

    /// The process that shows the window recorded, as the window says (`_NET_WM_PID`), once
    /// chosen; `nil` when it does not say. ``ApplicationAudioSource/Selection/processTree(_:)``
    /// of it records the window's application's sound.
    public var processID: Int32? { chosen.withLock { $0?.window.processID } }

    /// Connects, finds the window (waiting for the click with ``X11WindowSelector/pick``),
    /// checks that the server can capture windows and reports the frame format.
    ///
    /// - Throws: `.sourceUnavailable` when no X server answers, no window matches or the server
    ///   has no Composite extension; `.invalidConfiguration` for a name several windows match.
    public func prepare() throws -> SourceFormat {
        preparing.store(true, ordering: .sequentiallyConsistent)
        let (_, _, _, size) = try open(isCancelled: { [self] in !self.preparing.load(ordering: .sequentiallyConsistent) })
        preparing.store(false, ordering: .sequentiallyConsistent)
        return .video(size: size, pixelFormat: .bgra, frameRate: frameRate)
    }

    /// Connects and starts capturing on a dedicated thread, delivering a frame at every slot
    /// of the frame rate on `context.clock`.
    ///
    /// - Throws: what ``prepare()`` throws, or `.alreadyRunning`.
    public func start(_ context: SourceContext) throws {
        let drawsCursor = self.drawsCursor, allowsSharedMemory = self.allowsSharedMemory, rate = frameRate, mode = resizeMode
        try thread.start(sourceName: name, open: { isCancelled in
            let (display, root, window, size) = try open(isCancelled: isCancelled)
            return X11WindowCapture(display: display, window: window, root: root, frameSize: size, mode: mode,
                                    drawsCursor: drawsCursor, allowsSharedMemory: allowsSharedMemory, capacity: X11ScreenSource.poolCapacity)
        }, release: { capture in
            capture.close()
        }) { capture, thread in
            Self.captureLoop(capture: capture, rate: rate, context: context, thread: thread)
        }
    }

    /// Stops capturing and releases the connection (which ends the redirection); a
    /// ``prepare()`` waiting for a click gives up. Safe to call twice.
    public func stop() {
        preparing.store(false, ordering: .sequentiallyConsistent)
        thread.stop()
    }

    /// How many times the running capture has named the window's pixmap.
    package var pixmapsNamed: Int? { thread.current?.pixmapsNamed }

    /// How the running capture reads frames, or `nil` when it is not running.
    package var captureMethod: X11ScreenSource.CaptureMethod? { thread.current?.method }

    /// Connects, chooses the window (once) and redirects it.
    private func open(isCancelled: @escaping () -> Bool) throws -> (any X11Display, UInt32, X11WindowInfo, PixelSize) {
        let connection = try server.connect(display: display, isCancelled: isCancelled)
        let screen = try connection.screen()
        guard connection.enableComposite() else {
            throw ReelError(.sourceUnavailable, "the X server at display \(connection.name) has no Composite extension (0.2 or later)",
                            hint: LibraryHint.recordTheScreenInstead)
        }
        let window: X11WindowInfo, size: PixelSize
        if let known = chosen.withLock({ $0 }) {
            (window, size) = known
        } else {
            var windows = connection.windows(of: screen.root)
            var focused: UInt32?
            switch selector {
            case .focused: focused = connection.focusedWindow(of: screen.root)
            case .pick:
                focused = try Self.picked(connection.pickWindow(of: screen.root, isCancelled: isCancelled), display: connection.name)
            case .id, .name: break
            }
            // A window given by id or clicked is found even when it is not listed (unmapped
            // where no window manager runs), so that what is wrong with it can be said.
            let wanted: UInt32? = if case .id(let id) = selector { id } else if case .pick = selector { focused } else { nil }
            if let wanted, !windows.contains(where: { $0.id == wanted }), let found = connection.topLevelWindow(wanted, of: screen.root) {
                windows.append(found)
            }
            // A name no listed window has may be a hidden one's: then that is what is said.
            if case .name = selector, selector.matching(windows).isEmpty {
                windows += selector.matching(connection.hiddenWindows(of: screen.root))
            }
            if case .pick = selector, let focused, !windows.contains(where: { $0.id == focused }) {
                throw ReelError(.sourceUnavailable, "the window clicked on display \(connection.name) (0x\(String(focused, radix: 16))) is no top-level window",
                                hint: X11WindowSelector.listing(windows, prefix: "click inside an application's window, or \(LibraryHint.nameTheWindow)"))
            }
            window = try selector.resolve(in: windows, focused: focused, display: connection.name)
            guard case .viewable(let frame, _) = connection.windowState(window.id, root: screen.root) else {
                throw ReelError(.sourceUnavailable, "window \(window.hexID) \(window.quotedTitle) is not shown (minimised or unmapped)",
                                hint: "show the window, then start the recording")
            }
            size = WindowPictureLayout.recordingSize(for: frame.size)
            chosen.withLock { $0 = (window, size) }
        }
        // A compositing manager may hold the window redirected already: its pixmap can be named all the same.
        _ = connection.redirectWindow(window.id)
        return (connection, screen.root, window, size)
    }

    /// The window a click picked, or why there is none.
    private static func picked(_ result: X11PickResult, display: String) throws -> UInt32 {
        switch result {
        case .window(let id):
            return id
        case .root:
            throw ReelError(.sourceUnavailable, "the click on display \(display) was on the desktop, not on a window",
                            hint: "start again and click inside the window to record, or \(LibraryHint.nameTheWindow)")
        case .givenUp:
            throw ReelError(.sourceUnavailable, "no window was picked on display \(display): Escape or Ctrl-C gave up",
                            hint: "nothing was recorded; start again and click inside the window to record, or \(LibraryHint.nameTheWindow)")
        case .notGrabbed:
            throw ReelError(.sourceUnavailable, "the pointer or the keyboard on display \(display) could not be grabbed to pick a window",
                            hint: "another program holds the pointer (a menu or a drag may be open); close it and start again, or \(LibraryHint.nameTheWindow)")
        case .cancelled:
            throw ReelError(.sourceUnavailable, "no window was picked on display \(display)",
                            hint: "the recording was stopped before a click; to skip the click, \(LibraryHint.nameTheWindow)")
        }
    }

    /// The capture thread: sleep to each slot, grab, stamp, deliver; skip slots that passed.
    private static func captureLoop(capture: X11WindowCapture, rate: FrameRate, context: SourceContext, thread: WorkerThread) {
        defer { capture.close() }
        ConstantRateCapture.run(rate: rate, context: context, thread: thread) { pts, index in
            capture.grab(presentationTime: pts, sequenceNumber: index, waitForBuffer: !context.clock.isRealTime, report: context.report)
        }
    }
}

extension X11WindowSource {
    /// The top-level windows of `display` (`nil`: `$DISPLAY`) and the focused one, for
    /// `reel devices`.
    ///
    /// - Throws: `.sourceUnavailable` when no X server answers.
    package static func listWindows(display: String?, server: any X11Server = SystemX11Server()) throws
        -> (display: String, windows: [X11WindowInfo], focused: UInt32?) {
        let connection = try server.connect(display: display, isCancelled: { false })
        let screen = try connection.screen()
        return (connection.name, connection.windows(of: screen.root), connection.focusedWindow(of: screen.root))
    }
}
