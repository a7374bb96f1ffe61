import Foundation
import Synchronization
import Reel
internal import CSDL2

/// A window that shows what a session captures — the composed picture with its filters, or
/// one source: the preview of a camera app, as an output. Over the picture it can show a
/// status bar (a recording indicator, the elapsed time, the size written, dropped frames and a
/// progress bar toward the recording's limit), a record button, and a message of the app's
/// (an error view).
///
/// ```swift
/// let preview = PreviewWindow(settings: .init(title: "Camera"))
/// preview.onKey = { key in if key == .stop { Task { await session.stop() } } }
/// try session.addOutput(preview)
/// try await session.start()
/// preview.show(PreviewWindow.Status(state: .recording, elapsed: .zero))
/// preview.message = "The camera was unplugged"
/// ```
///
/// A plain preview shows the picture alone: the status bar appears with
/// ``Settings/showsStatus`` or at the first ``show(_:)``, and ``hideStatus()`` takes it away.
///
/// The window never slows capture: ``consume(_:)`` only keeps the newest picture, and the
/// window's own thread draws it at the display's pace (at most ``Settings/maximumRate`` times a
/// second), skipping pictures that came in between (``picturesSkipped``). Drawing is SDL2's,
/// with YUV pictures uploaded as textures as they are (BT.709, as Reel records them).
/// Opening the window needs a display (`$DISPLAY`, or `$WAYLAND_DISPLAY` through XWayland):
/// without one, adding it to a starting session fails with a clear error, and
/// ``isAvailable(display:)`` and ``unavailability(display:)`` tell beforehand.
public final class PreviewWindow: CaptureOutput {
    /// Called on the window's thread for each key pressed and for the window being closed
    /// (``Key/stop``). Keys that come while it is not set (a window closed at once, before
    /// the app set it) are kept, and handed to it when it is set, on the thread setting it.
    public var onKey: (@Sendable (Key) -> Void)? {
        get { state.withLock { $0.onKey } }
        set {
            let kept = state.withLock { s -> [Key] in
                s.onKey = newValue
                guard newValue != nil else { return [] }
                defer { s.keptKeys = [] }
                return s.keptKeys
            }
            for key in kept { newValue?(key) }
        }
    }

    /// The handler for `key`, or `nil` after keeping the key for a handler yet to be set.
    private static func handler(for key: Key, in s: inout State) -> (@Sendable (Key) -> Void)? {
        if s.onKey == nil { s.keptKeys.append(key) }
        return s.onKey
    }

    struct State {
        var delaySum = 0.0
        var delayMax = 0.0
        var delayCount = 0
        var clock: (any MediaClock)?
        var origin = MediaTime.zero
        var onKey: (@Sendable (Key) -> Void)?
        var newest: VideoFrame?
        var status: Status?
        /// The recorder whose recording the status bar follows (`showStatus(of:)`), held
        /// weakly, and how its status is read.
        weak var followed: (AnyObject & Sendable)?
        var readFollowed: (@Sendable (AnyObject & Sendable) -> Status?)?
        var message: String?
        var running = false
        var stopping = false
        var source: SourceID?
        var shown: Int64 = 0
        var skipped: Int64 = 0
        var closed = false
        var stopSent = false
        var loss: Loss?
        /// Keys that came while no ``onKey`` was set.
        var keptKeys: [Key] = []
    }
    private let settings: Settings
    let state = Mutex(State())
    private let filterControl = VideoFilterControl()
    private let wake = NSCondition()
    private let finished = DispatchSemaphore(value: 0)

    /// A preview window; it opens when the session starts.
    public init(settings: Settings = Settings()) {
        self.settings = settings
        if settings.showsStatus { state.withLock { $0.status = Status(state: .idle, elapsed: .zero) } }
    }

    /// Pictures drawn so far.
    public var picturesShown: Int64 { state.withLock { $0.shown } }

    /// The session clock's reading at session time zero (on `HostClock`, `CLOCK_MONOTONIC`),
    /// once the window was prepared: a picture of presentation time `t` was taken at
    /// `clockOrigin + t`, which lets an observer outside tell how late the window shows it.
    public var clockOrigin: MediaTime { state.withLock { $0.origin } }
    /// Pictures that came while one was being drawn and were never drawn (newer ones were).
    public var picturesSkipped: Int64 { state.withLock { $0.skipped } }
    /// How long the pictures drawn so far took from capture to the screen.
    public var displayDelay: DisplayDelay {
        state.withLock { s in
            DisplayDelay(pictures: s.delayCount, mean: s.delayCount == 0 ? 0 : s.delaySum / Double(s.delayCount), maximum: s.delayMax)
        }
    }

    /// Whether the window was taken away under it (its X server gone, its connection closed
    /// or the window destroyed by another program: ``loss`` says which); the window then says
    /// stop, as when it is closed.
    public var lostDisplay: Bool { state.withLock { $0.loss != nil } }

    /// How the window was taken away, if it was (`nil` when it is there, or the user closed it).
    public var loss: Loss? { state.withLock { $0.loss } }

    /// The window was taken away (`loss`): say stop once, and if the window's thread will never
    /// come back (`parks`), let ``finish()`` return without it.
    func displayLost(_ loss: Loss, parks: Bool) {
        let handler = state.withLock { s -> (@Sendable (Key) -> Void)? in
            if s.loss == nil { s.loss = loss }
            s.closed = true
            guard !s.stopSent else { return nil }
            s.stopSent = true
            return Self.handler(for: .stop, in: &s)
        }
        handler?(.stop)
        if parks { finished.signal() }
    }

    /// Whether the user closed the window.
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Filters the picture in the window only (`nil`: none): what is recorded stays as it is.
    /// A filter for everything that sees a source goes on the session
    /// (``Reel/CaptureSession/setVideoFilter(_:for:at:)``). Takes effect at the next picture.
    public func setVideoFilter(_ filter: VideoFilter?) {
        filterControl.setFilter(filter)
    }

    /// The window's own filter.
    public var videoFilter: VideoFilter? { filterControl.filter }

    /// A message of the app's shown over the middle of the picture — why the camera shows
    /// nothing, what went wrong — in white capitals on a dark box, wrapped to the window's
    /// width; `nil` (the default) shows none. Settable from any thread, before or while the
    /// window is open. Capitals, because the window draws with a small built-in bitmap font
    /// (no font files to find on the machine) that has capitals, digits and common punctuation
    /// only; a character it lacks shows as `?`. For text in any case or script, draw your own
    /// view over ``Reel/LiveFrames``.
    public var message: String? {
        get { state.withLock { $0.message } }
        set {
            state.withLock { $0.message = newValue }
            poke()
        }
    }

    /// Whether a window can be opened here (on `display`, else `$DISPLAY` or
    /// `$WAYLAND_DISPLAY`), as `ScreenRecorder.isAvailable`; ``unavailability(display:)``
    /// says why not, with what to do.
    public static func isAvailable(display: String? = nil) -> Bool {
        unavailability(display: display) == nil
    }

    /// Why a window cannot be opened here, `nil` meaning it can: the name read as a yes or no
    /// the other way round. Use ``isAvailable(display:)`` or ``unavailability(display:)``.
    @available(*, deprecated, renamed: "unavailability(display:)",
               message: "it returns why a window cannot be opened (nil: it can); isAvailable(display:) says whether it can")
    public static func canOpen(display: String? = nil) -> ReelError? {
        unavailability(display: display)
    }

    /// Why a window cannot be opened here (on `display`, else `$DISPLAY` or
    /// `$WAYLAND_DISPLAY`), with what to do: no display, or a display SDL2 cannot use; `nil`
    /// when it can (see ``isAvailable(display:)``).
    public static func unavailability(display: String? = nil) -> ReelError? {
        if XDisplayLoss.connectionBroke.load(ordering: .sequentiallyConsistent) {
            return ReelError(.sourceUnavailable, "cannot open another preview window: an earlier one's display went away, or its window was destroyed, in this program",
                             hint: "SDL2 keeps the broken connection; start the program again to show a window")
        }
        let environment = ProcessInfo.processInfo.environment
        let shown = display ?? environment["DISPLAY"] ?? ""
        if shown.isEmpty && (environment["WAYLAND_DISPLAY"] ?? "").isEmpty {
            return ReelError(.sourceUnavailable, "there is no display to open the preview window on ($DISPLAY is not set)",
                             hint: "run it in a desktop session, or set DISPLAY (e.g. DISPLAY=:0)")
        }
        // A display named but not there (a stale DISPLAY after ssh, a server gone): SDL2 would
        // fall back on a driver that draws nowhere.
        if let display { setenv("DISPLAY", display, 1) }
        guard SDL_InitSubSystem(SDL_INIT_VIDEO) == 0 else {
            return ReelError(.sourceUnavailable, "cannot open the preview window: \(String(cString: SDL_GetError()))",
                             hint: "check that DISPLAY names a running X server you may use")
        }
        defer { SDL_QuitSubSystem(SDL_INIT_VIDEO) }
        let driver = SDL_GetCurrentVideoDriver().map { String(cString: $0) } ?? "none"
        guard driver == "x11" || driver == "wayland" else {
            return ReelError(.sourceUnavailable, "cannot open the preview window: no X server answers at DISPLAY=\(shown)",
                             hint: "run it in a desktop session, or set DISPLAY to a running X server (e.g. DISPLAY=:0)")
        }
        return nil
    }

    public func prepare(sources: [SourceDescriptor], clock: any MediaClock, origin: MediaTime) throws {
        if let problem = Self.unavailability(display: settings.display) { throw problem }
        // With the composed picture among the sources, show it; else the first picture source.
        let video = sources.filter { $0.kind == .video }
        guard let shown = video.first(where: { $0.id == Compositor.outputID }) ?? video.first else {
            throw ReelError(.invalidConfiguration, "the preview window has no picture to show", hint: "add a screen, camera or test pattern")
        }
        let opened = DispatchSemaphore(value: 0)
        let failure = OpenFailure()
        let thread = Thread { [self] in
            run(opened: opened, failure: failure)
        }
        thread.name = "reel.preview"
        state.withLock { s in
            s.source = shown.id
            s.clock = clock
            s.origin = origin
            s.delaySum = 0
            s.delayMax = 0
            s.delayCount = 0
            s.stopping = false
            s.closed = false
            s.stopSent = false
            s.keptKeys = []
            s.running = true
        }
        thread.start()
        opened.wait()
        if let error = failure.error {
            state.withLock { $0.running = false }
            throw error
        }
    }

    public func consume(_ sample: SourcedSample) {
        guard case .video(let frame) = sample.sample else { return }
        let taken = state.withLock { s -> Bool in
            guard s.running, s.source == sample.source else { return false }
            if s.newest != nil { s.skipped += 1 }
            s.newest = frame
            return true
        }
        if taken { poke() }
    }

    public func sourceEvent(_ event: SourceEvent, from source: SourceID) {}

    /// Wakes the window's thread.
    func poke() {
        wake.lock(); wake.signal(); wake.unlock()
    }

    public func finish() async {
        let running = state.withLock { s -> Bool in
            s.stopping = true
            s.newest = nil
            return s.running
        }
        poke()
        guard running else { return }
        let finished = self.finished
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread { finished.wait(); done.resume() }.start()
        }
        state.withLock { $0.running = false }
    }

    // MARK: The window's thread

    /// Why the window did not open, set on its thread before it signals.
    private final class OpenFailure: @unchecked Sendable {
        private let lock = NSLock()
        private var value: ReelError?
        var error: ReelError? {
            get { lock.withLock { value } }
            set { lock.withLock { value = newValue } }
        }
    }

    private func run(opened: DispatchSemaphore, failure: OpenFailure) {
        if let display = settings.display { setenv("DISPLAY", display, 1) }
        SDL_SetHint(SDL_HINT_NO_SIGNAL_HANDLERS, "1")
        // Without a GPU (no DRI render node), OpenGL is drawn by the CPU (Mesa's llvmpipe, with
        // threads of its own): SDL's software renderer on the window's own framebuffer does the
        // same for a third of the cost (bench/preview.py). `SDL_RENDER_DRIVER` chooses otherwise.
        let withoutGPU = Self.hasNoGPU && ProcessInfo.processInfo.environment["SDL_RENDER_DRIVER"] == nil
        if withoutGPU {
            SDL_SetHint(SDL_HINT_RENDER_DRIVER, "software")
            SDL_SetHint(SDL_HINT_FRAMEBUFFER_ACCELERATION, "0")
        }
        SDL_SetHint(SDL_HINT_VIDEO_X11_NET_WM_BYPASS_COMPOSITOR, "0")
        guard SDL_InitSubSystem(SDL_INIT_VIDEO) == 0 else {
            let reason = String(cString: SDL_GetError())
            failure.error = ReelError(.sourceUnavailable, "cannot open the preview window: \(reason)",
                                      hint: "check that DISPLAY names a running X server you may use")
            opened.signal()
            return
        }
        // Without a display SDL2 falls back on a driver that draws nowhere ("offscreen"):
        // a preview nobody can see is an error.
        let driver = SDL_GetCurrentVideoDriver().map { String(cString: $0) } ?? "none"
        guard driver == "x11" || driver == "wayland" else {
            SDL_QuitSubSystem(SDL_INIT_VIDEO)
            let display = settings.display ?? ProcessInfo.processInfo.environment["DISPLAY"] ?? ""
            failure.error = ReelError(.sourceUnavailable,
                                      "cannot open the preview window: no X server answers at DISPLAY=\(display) (SDL2 found only its '\(driver)' driver)",
                                      hint: "run it in a desktop session, or set DISPLAY to a running X server (e.g. DISPLAY=:0)")
            opened.signal()
            return
        }
        if driver == "x11" { XDisplayLoss.watch(self) }
        SDL_SetYUVConversionMode(SDL_YUV_CONVERSION_BT709)
        let size = settings.size ?? PixelSize(width: 640, height: 360)
        let undefined = reel_sdl_windowpos_undefined()
        guard let window = SDL_CreateWindow(settings.title, Int32(settings.position?.x ?? Int(undefined)), Int32(settings.position?.y ?? Int(undefined)),
                                            Int32(size.width), Int32(size.height),
                                            SDL_WINDOW_RESIZABLE.rawValue | SDL_WINDOW_SHOWN.rawValue) else {
            let reason = String(cString: SDL_GetError())
            SDL_QuitSubSystem(SDL_INIT_VIDEO)
            failure.error = ReelError(.sourceUnavailable, "cannot open the preview window: \(reason)")
            opened.signal()
            return
        }
        // Without a GPU, the window's own framebuffer: cheaper again than SDL's software renderer.
        let canvas: PreviewCanvas
        // (A driver with no framebuffer of its own, SDL2's Wayland one, gives no surface: the renderer then.)
        if withoutGPU && PreviewCanvas.supportsSurface(of: window) && SDL_GetWindowSurface(window) != nil {
            canvas = PreviewCanvas(.surface(window: window))
        } else if let renderer = Self.makeRenderer(for: window) {
            canvas = PreviewCanvas(.renderer(renderer))
        } else {
            let reason = String(cString: SDL_GetError())
            SDL_DestroyWindow(window)
            SDL_QuitSubSystem(SDL_INIT_VIDEO)
            failure.error = ReelError(.sourceUnavailable, "cannot draw in the preview window: \(reason)")
            opened.signal()
            return
        }
        // All of the window on the screen, scaled down if it is larger.
        PreviewPlacement.fit(window, picture: size, requested: size)
        opened.signal()
        var painter = PreviewPainter(canvas: canvas, showsRecordButton: settings.showsRecordButton)
        var sizedToPicture = settings.size != nil
        let interval = 1.0 / Double(max(1, settings.maximumRate))
        var lastDraw = 0.0
        var current: VideoFrame?
        var drawn: (status: Status?, message: String?)?
        // The window's own filter, on its own thread: it costs capture nothing. It hides
        // nothing from the recording, so one that fails shows the picture as it is.
        let filter = FilterStage(control: filterControl, realTime: true)
        while true {
            let windowChanged = pumpEvents(window: window, painter: painter)
            followStatus()
            let (frame, status, message, stopping) = state.withLock { s -> (VideoFrame?, Status?, String?, Bool) in
                defer { s.newest = nil }
                return (s.newest, s.status, s.message, s.stopping)
            }
            if stopping { break }
            if let frame {
                current = filter.apply(to: frame) ?? frame
                state.withLock { $0.shown += 1 }
                if !sizedToPicture {
                    sizedToPicture = true
                    PreviewPlacement.fit(window, picture: frame.size, requested: nil)
                }
            }
            // Drawn again only for a new picture, a new status or message, or a window event
            // (resized, uncovered): an unchanged window costs nothing.
            if frame != nil || drawn == nil || status != drawn?.status || message != drawn?.message || windowChanged {
                painter.draw(current, status: status, message: message)
                drawn = (status, message)
                if let frame { measureDelay(of: frame) }
                lastDraw = ProcessInfo.processInfo.systemUptime
            }
            // Wait for the next picture, but draw no faster than the display's pace, and look
            // at the window's events at least 20 times a second.
            wake.lock()
            let hasNew = state.withLock { $0.newest != nil || $0.stopping }
            if !hasNew { _ = wake.wait(until: Date(timeIntervalSinceNow: 0.05)) }
            wake.unlock()
            let since = ProcessInfo.processInfo.systemUptime - lastDraw
            if since < interval { Thread.sleep(forTimeInterval: interval - since) }
        }
        current = nil
        if state.withLock({ $0.loss != nil }) {
            // The window was destroyed under it (or its display went): destroying it again would
            // raise an X error after SDL has put Xlib's own handler back, which ends the process
            // (exit 1) while the recording may still be finishing. SDL is left as it is; no
            // other window can be opened in this program (see unavailability(display:)).
            XDisplayLoss.connectionBroke.store(true, ordering: .sequentiallyConsistent)
            finished.signal()
            return
        }
        painter.release()
        if case .renderer(let renderer) = canvas.target { SDL_DestroyRenderer(renderer) }
        SDL_DestroyWindow(window)
        SDL_QuitSubSystem(SDL_INIT_VIDEO)
        finished.signal()
    }

    /// Whether the machine has no GPU that OpenGL could use (no `/dev/dri/renderD*`).
    static var hasNoGPU: Bool {
        let nodes = (try? FileManager.default.contentsOfDirectory(atPath: "/dev/dri")) ?? []
        return !nodes.contains { $0.hasPrefix("renderD") }
    }

    /// SDL2's best renderer for the window, except OpenGL drawn by the CPU (Mesa's llvmpipe,
    /// what a machine without a GPU gets): there SDL's own software renderer does the same
    /// work for less (measured in bench/preview.py). `SDL_RENDER_DRIVER` chooses otherwise.
    private static func makeRenderer(for window: OpaquePointer) -> OpaquePointer? {
        guard let renderer = SDL_CreateRenderer(window, -1, 0) else {
            return SDL_CreateRenderer(window, -1, SDL_RENDERER_SOFTWARE.rawValue)
        }
        guard ProcessInfo.processInfo.environment["SDL_RENDER_DRIVER"] == nil else { return renderer }
        var info = SDL_RendererInfo()
        SDL_GetRendererInfo(renderer, &info)
        let name = info.name.map { String(cString: $0) } ?? ""
        guard name.hasPrefix("opengl"), let address = SDL_GL_GetProcAddress("glGetString") else { return renderer }
        typealias GetString = @convention(c) (UInt32) -> UnsafePointer<UInt8>?
        let getString = unsafeBitCast(address, to: GetString.self)
        let glRenderer = getString(0x1F01).map { String(cString: $0) } ?? ""   // GL_RENDERER
        guard ["llvmpipe", "softpipe", "swrast", "Software Rasterizer"].contains(where: glRenderer.contains) else { return renderer }
        SDL_DestroyRenderer(renderer)
        return SDL_CreateRenderer(window, -1, SDL_RENDERER_SOFTWARE.rawValue)
    }

    private func measureDelay(of frame: VideoFrame) {
        state.withLock { s in
            guard let clock = s.clock, clock.isRealTime else { return }
            let captured = frame.captureTime ?? (s.origin + frame.presentationTime)
            let delay = (clock.now() - captured).seconds
            guard delay >= 0, delay < 60 else { return }
            s.delaySum += delay
            s.delayMax = max(s.delayMax, delay)
            s.delayCount += 1
        }
    }

    /// Handles the window's events; returns whether the window must be drawn again.
    private func pumpEvents(window: OpaquePointer, painter: PreviewPainter) -> Bool {
        var event = SDL_Event()
        var changed = false
        while SDL_PollEvent(&event) != 0 {
            var key: Key?
            switch SDL_EventType(event.type) {
            case SDL_QUIT:
                state.withLock { $0.closed = true }
                key = .stop
            case SDL_WINDOWEVENT where event.window.event == UInt8(SDL_WINDOWEVENT_CLOSE.rawValue):
                state.withLock { $0.closed = true }
                key = .stop
            case SDL_WINDOWEVENT:
                changed = true
            case SDL_KEYDOWN:
                let shift = (UInt32(event.key.keysym.mod) & UInt32(KMOD_SHIFT.rawValue)) != 0
                switch Int(event.key.keysym.sym) {
                case Int(SDLK_r.rawValue): key = .record
                case Int(SDLK_SPACE.rawValue): key = .pause
                case Int(SDLK_RETURN.rawValue), Int(SDLK_KP_ENTER.rawValue), Int(SDLK_q.rawValue), Int(SDLK_ESCAPE.rawValue): key = .stop
                case Int(SDLK_s.rawValue): key = .swap
                case Int(SDLK_f.rawValue): key = .filter
                case Int(SDLK_m.rawValue): key = .marker
                case Int(SDLK_z.rawValue): key = shift ? .zoomOut : .zoomIn
                default: break
                }
            case SDL_MOUSEBUTTONDOWN where event.button.button == UInt8(SDL_BUTTON_LEFT):
                if painter.isOnRecordButton(x: Int(event.button.x), y: Int(event.button.y)) { key = .record }
            default:
                break
            }
            // Stop is said once: closing a window brings both a close and a quit event, and a
            // second stop would abort the recording.
            let handler = state.withLock { s -> (@Sendable (Key) -> Void)? in
                guard let key, !(key == .stop && s.stopSent) else { return nil }
                if key == .stop { s.stopSent = true }
                return Self.handler(for: key, in: &s)
            }
            if let key, let handler { handler(key) }
        }
        _ = window
        return changed
    }
}
