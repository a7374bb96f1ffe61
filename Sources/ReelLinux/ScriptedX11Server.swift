import Foundation
import ReelCore
import Synchronization

/// An ``X11Server`` that answers from a script, for testing what ``X11ScreenSource`` does with
/// the answers — frame timing, the cursor, a server that refuses shared memory, a screen that
/// changes size or goes away — without a server.
///
/// Each image request takes the next ``ImageAnswer``; once they are used up, every request is
/// answered with the last picture and ``waitUntilPlayedOut()`` returns. Pictures fill the
/// region with one BGRA pixel value, so a test can tell which answer a frame carries.
package final class ScriptedX11Server: X11Server, @unchecked Sendable {
    /// What a connection attempt meets.
    package enum ConnectAnswer: Sendable {
        /// The server answers.
        case connects
        /// No server at the display.
        case refused
        /// The attempt waits until the source is stopped, then connects anyway (a connection
        /// that completes just after a stop).
        case connectsAfterCancel
    }

    /// What an image request meets.
    package enum ImageAnswer: Sendable {
        /// The region, filled with `pixel` (BGRA as a little-endian `UInt32`).
        case picture(UInt32)
        /// The server refuses with X error `errorCode` (8, BadMatch: the region is no longer
        /// inside the screen).
        case refused(errorCode: UInt8)
        /// The server refuses shared memory from now on (the request fails when shared).
        case sharedMemoryRefused
        /// The connection breaks: the server went away.
        case serverGone
    }

    /// What the captured window is found as, at each state query of a window capture.
    package enum WindowAnswer: Sendable, Equatable {
        /// Shown at `origin` on the screen with `size` (border `border`), its content one BGRA
        /// pixel value.
        case shown(size: PixelSize, pixel: UInt32, origin: PixelPoint = PixelPoint(x: 0, y: 0), border: Int = 0)
        /// Being resized (dragged): the state query finds it `reported` large, but by the time
        /// its pixmap is named it is `actual` large (reading `reported` from it is a BadMatch).
        case resizing(reported: PixelSize, actual: PixelSize, pixel: UInt32)
        /// Minimised or unmapped.
        case hidden
        /// Destroyed.
        case closed
    }

    /// What happens on the screen before one capture slot, for a server that tracks damage
    /// (``init(displayName:screenSize:sharedMemory:cursor:damage:background:)``).
    package struct DamageStep: Sendable {
        /// Rectangles painted, each in one BGRA pixel value, in order.
        package var paints: [(rect: PixelRect, pixel: UInt32)]
        /// What the server reports as changed: the painted rectangles unless given (a test may
        /// report more than was painted, or `nil` as "unknown"); `.some(nil)` is unknown.
        package var reported: [PixelRect]??
        /// Where the pointer moves to (its hot spot), if it moves.
        package var pointer: PixelPoint?

        /// A step.
        package init(paints: [(rect: PixelRect, pixel: UInt32)] = [], reported: [PixelRect]?? = .none, pointer: PixelPoint? = nil) {
            self.paints = paints
            self.reported = reported
            self.pointer = pointer
        }
    }

    /// A point on the screen.
    package struct PixelPoint: Sendable, Equatable {
        /// Its column.
        package var x: Int
        /// Its row.
        package var y: Int
        /// A point.
        package init(x: Int, y: Int) { self.x = x; self.y = y }
    }

    private let condition = NSCondition()
    private let displayName: String
    private let screenSize: PixelSize
    private let sharedMemory: Bool
    private let cursor: X11CursorImage?
    // Guarded by `condition`.
    private var connectAnswers: [ConnectAnswer]
    private var imageAnswers: [ImageAnswer]
    private var lastPixel: UInt32 = 0
    private var refusesSharedMemory = false
    private var failed = false
    private var open = 0
    private var connecting = 0
    private var requests: [(shared: Bool, withCursor: Bool)] = []
    private var playedOut = false
    private let windowList: [X11WindowInfo]
    private let focused: UInt32?
    private let picked: X11PickResult
    private let pickedRegion: X11RegionPickResult
    private let unlistedWindows: [X11WindowInfo]
    private let composite: Bool
    private let pointerOver: Bool
    private var windowAnswers: [WindowAnswer]
    private var windowNow: WindowAnswer?
    private var windowPlayedOut = false
    private var pixmaps: [UInt32: (size: PixelSize, pixel: UInt32)] = [:]
    private var nextPixmap: UInt32 = 1000
    private var named = 0
    private var freed = 0
    private var redirected: [UInt32] = []
    private var reads: [PixelRect] = []
    /// With damage steps: the screen's pixels, row by row.
    private var canvas: [UInt32] = []
    private var damageSteps: [DamageStep]?
    private var tracking = false
    private var canvasReads: [PixelRect] = []
    private var pointer: PixelPoint?

    /// A server for display `displayName` with a screen of `screenSize`.
    ///
    /// - Parameters:
    ///   - sharedMemory: whether it offers MIT-SHM.
    ///   - cursor: the cursor image it shows, if it offers XFixes.
    ///   - connections: what connection attempts meet, in turn (then `.connects`).
    ///   - images: what image requests meet, in turn.
    ///   - windows: the top-level windows it lists.
    ///   - focused: the window that has the focus.
    ///   - unlisted: top-level windows it knows by id but does not list (unmapped, no
    ///     window manager).
    ///   - picked: what a click finds.
    ///   - pickedRegion: what a drag for a region finds.
    ///   - composite: whether it offers the Composite extension.
    ///   - pointerOver: whether the pointer is over the captured window (not another covering it).
    ///   - windowStates: what the captured window is found as at each state query, in turn
    ///     (then the last again).
    package init(displayName: String = ":42", screenSize: PixelSize, sharedMemory: Bool = true,
                 cursor: X11CursorImage? = nil, connections: [ConnectAnswer] = [], images: [ImageAnswer] = [],
                 windows: [X11WindowInfo] = [], unlisted: [X11WindowInfo] = [], focused: UInt32? = nil,
                 picked: X11PickResult = .cancelled, composite: Bool = true,
                 pointerOver: Bool = true, windowStates: [WindowAnswer] = [], pickedRegion: X11RegionPickResult = .cancelled) {
        self.pickedRegion = pickedRegion
        self.pointerOver = pointerOver
        self.windowList = windows
        self.focused = focused
        self.picked = picked
        self.unlistedWindows = unlisted
        self.composite = composite
        self.windowAnswers = windowStates
        self.displayName = displayName
        self.screenSize = screenSize
        self.sharedMemory = sharedMemory
        self.cursor = cursor
        self.connectAnswers = connections
        self.imageAnswers = images
    }

    /// A server whose screen is a picture of `screenSize` filled with `background`, changed
    /// before each capture slot by the next of `damage`, whose DAMAGE extension reports what
    /// each step painted; once the steps are used up, nothing changes any more and
    /// ``waitUntilPlayedOut()`` returns.
    package convenience init(displayName: String = ":42", screenSize: PixelSize, sharedMemory: Bool = true,
                             cursor: X11CursorImage? = nil, damage: [DamageStep], background: UInt32 = 0xFF00_0000) {
        self.init(displayName: displayName, screenSize: screenSize, sharedMemory: sharedMemory, cursor: cursor)
        canvas = Array(repeating: background, count: screenSize.width * screenSize.height)
        damageSteps = damage
        pointer = cursor.map { PixelPoint(x: $0.x, y: $0.y) }
    }

    /// The rectangles read from the screen of a damage-tracking server, in order.
    package var screenReads: [PixelRect] { locked { canvasReads } }

    /// The screen of a damage-tracking server now, row by row.
    package var screenPixels: [UInt32] { locked { canvas } }

    /// How many connections are open now.
    package var openConnections: Int { locked { open } }

    /// For each image request so far: whether it asked for shared memory and for the cursor.
    package var imageRequests: [(shared: Bool, withCursor: Bool)] { locked { requests } }

    /// Waits until every image answer has been used.
    package func waitUntilPlayedOut() {
        condition.lock()
        while !playedOut { condition.wait() }
        condition.unlock()
    }

    /// Waits until every window answer has been used.
    package func waitUntilWindowPlayedOut() {
        condition.lock()
        while !windowPlayedOut { condition.wait() }
        condition.unlock()
    }

    /// How many times a window's pixmap has been named, and how many pixmaps were freed.
    package var pixmapCounts: (named: Int, freed: Int) { locked { (named, freed) } }

    /// The windows redirected, in order.
    package var redirectedWindows: [UInt32] { locked { redirected } }

    /// The rectangles read from window pixmaps, in order.
    package var pixmapReads: [PixelRect] { locked { reads } }

    /// Waits until a connection attempt is waiting to be cancelled.
    package func waitUntilConnecting() {
        condition.lock()
        while connecting == 0 { condition.wait() }
        condition.unlock()
    }

    /// Connects as the next ``ConnectAnswer`` says.
    package func connect(display: String?, isCancelled: @escaping () -> Bool) throws -> any X11Display {
        let answer = locked { connectAnswers.isEmpty ? .connects : connectAnswers.removeFirst() }
        switch answer {
        case .refused:
            throw ReelError(.sourceUnavailable, "no X server at display \(displayName)", hint: "start an X server or set DISPLAY")
        case .connectsAfterCancel:
            locked { connecting += 1; condition.broadcast() }
            while !isCancelled() { usleep(1_000) }
            locked { connecting -= 1 }
        case .connects:
            break
        }
        locked { open += 1 }
        return Display(server: self)
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        condition.lock(); defer { condition.unlock() }
        return try body()
    }

    /// The answer to the next image request.
    fileprivate func answer(shared: Bool, withCursor: Bool) -> ImageAnswer {
        locked {
            requests.append((shared, withCursor))
            while true {
                if failed { return .serverGone }
                if shared && refusesSharedMemory { return .sharedMemoryRefused }
                guard !imageAnswers.isEmpty else {
                    playedOut = true
                    condition.broadcast()
                    return .picture(lastPixel)
                }
                let next = imageAnswers.removeFirst()
                switch next {
                case .picture(let pixel):
                    lastPixel = pixel
                    return next
                case .refused:
                    return next
                case .sharedMemoryRefused:
                    // Refused to a shared request; a copying request goes on to the next answer.
                    refusesSharedMemory = true
                case .serverGone:
                    failed = true
                }
            }
        }
    }

    fileprivate func nextWindowState() -> X11WindowState {
        locked {
            if !windowAnswers.isEmpty {
                windowNow = windowAnswers.removeFirst()
            } else if !windowPlayedOut {
                windowPlayedOut = true
                condition.broadcast()
            }
            if failed { return .gone }
            switch windowNow {
            case .shown(let size, _, let origin, let border)?:
                return .viewable(frame: PixelRect(x: origin.x, y: origin.y, width: size.width, height: size.height), border: border)
            case .resizing(let reported, _, _)?:
                return .viewable(frame: PixelRect(x: 0, y: 0, width: reported.width, height: reported.height), border: 0)
            case .hidden?: return .unmapped
            case .closed?, nil: return .gone
            }
        }
    }

    fileprivate func namePixmap() -> UInt32? {
        locked {
            let size: PixelSize, pixel: UInt32
            switch windowNow {
            case .shown(let shown, let colour, _, let border)?:
                size = PixelSize(width: shown.width + 2 * border, height: shown.height + 2 * border)
                pixel = colour
            case .resizing(_, let actual, let colour)?:
                size = actual
                pixel = colour
            default:
                return nil
            }
            nextPixmap += 1
            named += 1
            pixmaps[nextPixmap] = (size, pixel)
            return nextPixmap
        }
    }

    fileprivate func free(pixmap: UInt32) {
        locked {
            if pixmaps.removeValue(forKey: pixmap) != nil { freed += 1 }
        }
    }

    fileprivate func redirect(_ window: UInt32) { locked { redirected.append(window) } }

    /// A pixmap read: the window's pixel while the pixmap is its current one (the pixel it had
    /// when named once it was resized); BadMatch for a rectangle outside the pixmap, BadPixmap
    /// for one freed or never named.
    fileprivate func readPixmap(_ pixmap: UInt32, rect: PixelRect) -> UInt32? {
        locked {
            reads.append(rect)
            guard let named = pixmaps[pixmap] else { return nil }
            guard rect.x >= 0, rect.y >= 0, rect.x + rect.width <= named.size.width, rect.y + rect.height <= named.size.height else {
                return nil
            }
            if case .shown(let size, let pixel, _, let border)? = windowNow,
               PixelSize(width: size.width + 2 * border, height: size.height + 2 * border) == named.size {
                return pixel
            }
            return named.pixel
        }
    }

    fileprivate func startTracking() -> Bool {
        locked {
            guard damageSteps != nil else { return false }
            tracking = true
            return true
        }
    }

    /// Plays the next damage step and answers what it reports.
    fileprivate func nextDamage() -> [PixelRect]? {
        locked {
            guard tracking, var steps = damageSteps else { return nil }
            guard !steps.isEmpty else {
                playedOut = true
                condition.broadcast()
                return []
            }
            let step = steps.removeFirst()
            damageSteps = steps
            for (rect, pixel) in step.paints {
                for y in max(rect.y, 0)..<min(rect.y + rect.height, screenSize.height) {
                    for x in max(rect.x, 0)..<min(rect.x + rect.width, screenSize.width) { canvas[y * screenSize.width + x] = pixel }
                }
            }
            if let moved = step.pointer { pointer = moved }
            switch step.reported {
            case .none: return step.paints.map(\.rect)
            case .some(let reported): return reported
            }
        }
    }

    /// Copies `rect` of the canvas into `frame` from row `row` on.
    fileprivate func readCanvas(_ rect: PixelRect, into frame: VideoFrame, atRow row: Int) -> Bool {
        locked {
            canvasReads.append(rect)
            guard rect.x >= 0, rect.y >= 0, rect.x + rect.width <= screenSize.width, rect.y + rect.height <= screenSize.height,
                  row + rect.height <= frame.height, rect.width <= frame.width else { return false }
            frame.withUnsafeMutablePlane(0) { plane, stride in
                guard let base = plane.baseAddress else { return }
                for r in 0..<rect.height {
                    let line = (base + (row + r) * stride).assumingMemoryBound(to: UInt32.self)
                    let from = (rect.y + r) * screenSize.width + rect.x
                    canvas.withUnsafeBufferPointer { line.update(from: $0.baseAddress! + from, count: rect.width) }
                }
            }
            return true
        }
    }

    fileprivate var tracksDamage: Bool { locked { damageSteps != nil } }

    /// The cursor image where the pointer is now.
    fileprivate var currentCursor: X11CursorImage? {
        locked {
            guard var image = cursor else { return nil }
            if let pointer { image.x = pointer.x; image.y = pointer.y }
            return image
        }
    }

    fileprivate func isPixmap(_ id: UInt32) -> Bool { locked { id > 1000 && id <= nextPixmap } }

    fileprivate var windows: [X11WindowInfo] { windowList }
    fileprivate var focusedID: UInt32? { focused }
    fileprivate var pickResult: X11PickResult { picked }
    fileprivate var regionPickResult: X11RegionPickResult { pickedRegion }
    fileprivate var unlisted: [X11WindowInfo] { unlistedWindows }
    fileprivate var offersComposite: Bool { composite }
    fileprivate var isPointerOver: Bool { pointerOver }

    fileprivate var hasFailed: Bool { locked { failed } }
    fileprivate func closed() { locked { open -= 1 } }
    fileprivate var offersSharedMemory: Bool { sharedMemory }
    fileprivate var cursorImage: X11CursorImage? { cursor }
    fileprivate var size: PixelSize { screenSize }
    fileprivate var name: String { displayName }

    /// One scripted connection.
    private final class Display: X11Display, @unchecked Sendable {
        let server: ScriptedX11Server
        private let segments = Mutex<UInt64>(0)

        init(server: ScriptedX11Server) { self.server = server }
        deinit { server.closed() }

        var name: String { server.name }
        var hasFailed: Bool { server.hasFailed }
        func screen() throws -> X11Screen { X11Screen(root: 1, size: server.size) }
        func enableCursorImages() -> Bool { server.cursorImage != nil }
        func supportsSharedMemory() -> Bool { server.offersSharedMemory }
        func drainEvents() {}

        func makeSharedFrameBuffer(byteCount: Int) throws -> FrameBuffer {
            let tag = segments.withLock { $0 += 1; return $0 }
            let bytes = UnsafeMutableRawPointer.allocate(byteCount: byteCount, alignment: 64)
            // The buffer retains this connection until it goes, as a real segment does.
            return FrameBuffer(bytes: bytes, byteCount: byteCount, tag: tag) { [self] bytes in
                withExtendedLifetime(self) { bytes.deallocate() }
            }
        }

        func windows(of root: UInt32) -> [X11WindowInfo] { server.windows }
        func focusedWindow(of root: UInt32) -> UInt32? { server.focusedID }
        func enableComposite() -> Bool { server.offersComposite }
        func redirectWindow(_ window: UInt32) -> Bool { server.redirect(window); return true }
        func windowState(_ window: UInt32, root: UInt32) -> X11WindowState { server.nextWindowState() }
        func nameWindowPixmap(_ window: UInt32) -> UInt32? { server.namePixmap() }
        func freePixmap(_ pixmap: UInt32) { server.free(pixmap: pixmap) }
        func pointerIsOver(_ window: UInt32, root: UInt32) -> Bool { server.isPointerOver }
        func pickWindow(of root: UInt32, isCancelled: @escaping () -> Bool) -> X11PickResult { server.pickResult }
        func pickRegion(of root: UInt32, isCancelled: @escaping () -> Bool) -> X11RegionPickResult { server.regionPickResult }
        func topLevelWindow(_ id: UInt32, of root: UInt32) -> X11WindowInfo? {
            (server.windows + server.unlisted).first { $0.id == id }
        }
        func hiddenWindows(of root: UInt32) -> [X11WindowInfo] { server.unlisted.filter { !$0.isMapped } }

        func startDamageTracking(of root: UInt32) -> Bool { server.startTracking() }
        func takeDamage() -> [PixelRect]? { server.nextDamage() }
        func cursorImage() -> X11CursorImage? { server.currentCursor }

        func readImage(_ rect: PixelRect, of root: UInt32, into frame: VideoFrame, atRow row: Int, shared: Bool,
                       withCursor: Bool) -> X11ImageReply {
            if server.tracksDamage {
                if server.hasFailed { return .refused(errorCode: nil) }
                guard server.readCanvas(rect, into: frame, atRow: row) else { return .refused(errorCode: 8) }
                return .captured(cursor: withCursor ? server.currentCursor : nil)
            }
            if server.isPixmap(root) {
                guard let pixel = server.readPixmap(root, rect: rect) else { return .refused(errorCode: 8) }
                Self.fill(frame, rect: rect, with: pixel)
                return .captured(cursor: withCursor ? server.cursorImage : nil)
            }
            let answer = server.answer(shared: shared, withCursor: withCursor)
            switch answer {
            case .picture(let pixel):
                Self.fill(frame, rect: rect, with: pixel)
                return .captured(cursor: withCursor ? server.cursorImage : nil)
            case .refused(let code):
                return .refused(errorCode: code)
            case .sharedMemoryRefused:
                return .refused(errorCode: 10)  // BadAccess
            case .serverGone:
                return .refused(errorCode: nil)
            }
        }

        private static func fill(_ frame: VideoFrame, rect: PixelRect, with pixel: UInt32) {
            frame.withUnsafeMutablePlane(0) { plane, stride in
                guard let base = plane.baseAddress else { return }
                for row in 0..<min(rect.height, frame.height) {
                    let line = (base + row * stride).assumingMemoryBound(to: UInt32.self)
                    line.update(repeating: pixel, count: min(rect.width, frame.width))
                }
            }
        }
    }
}
