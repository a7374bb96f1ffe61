import Foundation
import ReelCore
import Synchronization

/// The screen of a Wayland desktop, or a region of it, captured through the desktop's
/// ScreenCast portal and PipeWire, at a steady frame rate.
///
/// The first recording shows the desktop's dialog for choosing a screen; the portal's restore
/// token is kept (see ``tokenFile``) so the next recordings do not ask again, unless
/// `choosesAgain`. A compositor sends a picture only when the screen changes, so the source
/// repeats the newest picture at every slot of the frame rate (a repeat is not a drop; it is
/// the same frame given again, marked as such for the frame modes that leave repeats out).
/// Frames are BGRA; a screen whose size changes mid-recording is scaled into the recording's
/// size with black bars, never a failure. When the user stops sharing or PipeWire goes away,
/// the source reports itself lost and the recording ends cleanly.
///
/// ```swift
/// let screen = WaylandScreenSource(region: PixelRect(x: 0, y: 0, width: 1280, height: 720))
/// let format = try screen.prepare()   // the portal's dialog, the first time
/// ```
public final class WaylandScreenSource: CaptureSource {
    /// "screen wayland", or "screen wayland 1280x720+0+0" for a region.
    public let name: String
    /// Always `.video`.
    public var kind: SampleKind { .video }
    /// The part of the screen to capture, or `nil` for the whole screen.
    public let region: PixelRect?
    /// The rate at which frames are delivered.
    public let frameRate: FrameRate
    /// Whether the mouse cursor is drawn into the frames.
    public let drawsCursor: Bool
    /// Whether the portal is made to ask again which screen to share, ignoring the kept choice.
    public let choosesAgain: Bool
    /// Whether a window is shared (the portal's dialog offers windows) rather than a monitor.
    /// The portal asks each time; a window resized while recording is scaled in with black bars.
    public let sharesWindow: Bool

    private let tokenStore: ScreenCastTokenStore
    private let connect: @Sendable () throws(ReelError) -> any DBusConnection
    private let openStream: @Sendable (_ descriptor: Int32, _ node: UInt32) throws(ReelError) -> any ScreenStream
    private let firstPictureTimeout: Double
    private let thread = CaptureThread<WaylandCapture>(threadName: "reel.wayland")
    /// A capture opened by ``prepare()`` and not yet taken by ``start(_:)``.
    private let prepared = Mutex<WaylandCapture?>(nil)
    /// Set by ``stop()``: an opening under way (the portal's dialog) gives up.
    private let stopRequested = Atomic<Bool>(false)

    /// How many frames may be in flight at once.
    static let poolCapacity = 5

    /// Where the portal's restore token is kept for the current user
    /// (`$XDG_STATE_HOME/reel/screencast-restore-token`); deleting it makes the next recording
    /// ask again.
    public static var tokenFile: URL { ScreenCastTokenStore().url }

    /// Creates a source for the screen the desktop's portal grants.
    ///
    /// - Parameters:
    ///   - region: the rectangle of the screen to capture; `nil` captures the whole screen.
    ///   - frameRate: the delivery rate.
    ///   - drawsCursor: whether to draw the mouse cursor into the frames.
    ///   - choosesAgain: whether to show the portal's dialog even when a choice was kept.
    ///   - sharesWindow: whether to ask the portal for a window (the one the user picks in its
    ///     dialog) instead of a monitor; a portal that offers no windows fails the start.
    public convenience init(region: PixelRect? = nil, frameRate: FrameRate = FrameRate(30), drawsCursor: Bool = true,
                            choosesAgain: Bool = false, sharesWindow: Bool = false) {
        self.init(region: region, frameRate: frameRate, drawsCursor: drawsCursor, choosesAgain: choosesAgain, sharesWindow: sharesWindow,
                  tokenStore: ScreenCastTokenStore(),
                  connect: { () throws(ReelError) in try SystemDBusConnection() },
                  openStream: { (descriptor, node) throws(ReelError) in try PipeWireStream(descriptor: descriptor, node: node) })
    }

    /// Why the desktop's screen cannot be shared through the portal now (no session bus, no
    /// portal, no ScreenCast), or `nil` when it offers ScreenCast. Asks the portal (a few
    /// seconds at most); shows no dialog.
    public static func unavailability() -> ReelError? {
        unavailability(connect: { () throws(ReelError) in try SystemDBusConnection() })
    }

    /// ``unavailability()`` on a given bus (a ``ScriptedDBusConnection`` in tests).
    package static func unavailability(connect: () throws(ReelError) -> any DBusConnection) -> ReelError? {
        do {
            let connection = try connect()
            _ = try ScreenCastPortal(connection: connection, callTimeout: 5).screenCastVersion()
            return nil
        } catch {
            return error
        }
    }

    /// Creates a source on given seams: a bus (a ``ScriptedDBusConnection`` in tests) and a
    /// stream opener (a ``ScriptedScreenStream``).
    package init(region: PixelRect?, frameRate: FrameRate, drawsCursor: Bool, choosesAgain: Bool, sharesWindow: Bool = false,
                 tokenStore: ScreenCastTokenStore,
                 connect: @escaping @Sendable () throws(ReelError) -> any DBusConnection,
                 openStream: @escaping @Sendable (Int32, UInt32) throws(ReelError) -> any ScreenStream,
                 firstPictureTimeout: Double = 5) {
        self.region = region
        self.frameRate = frameRate
        self.drawsCursor = drawsCursor
        self.choosesAgain = choosesAgain
        self.sharesWindow = sharesWindow
        self.tokenStore = tokenStore
        self.connect = connect
        self.openStream = openStream
        self.firstPictureTimeout = firstPictureTimeout
        self.name = sharesWindow ? "window wayland" : region.map { "screen wayland \($0)" } ?? "screen wayland"
    }

    deinit {
        prepared.withLock { $0.take() }?.close()
    }

    /// Asks the portal for the screen (its dialog, unless a kept choice is accepted), waits for
    /// the first picture and reports the frame format. The grant is kept for ``start(_:)``.
    ///
    /// - Throws: `.sourceUnavailable` when no portal or PipeWire answers, `.permissionDenied`
    ///   when the user declines, `.invalidConfiguration` for a region outside the screen.
    public func prepare() throws -> SourceFormat {
        if let size = prepared.withLock({ $0?.fitter.frameSize }) {
            return .video(size: size, pixelFormat: .bgra, frameRate: frameRate)
        }
        stopRequested.store(false, ordering: .relaxed)
        let capture = try open(isCancelled: { self.stopRequested.load(ordering: .relaxed) })
        let extra = prepared.withLock { slot -> WaylandCapture? in
            if slot == nil { slot = capture; return nil }
            return capture
        }
        extra?.close()
        return .video(size: capture.fitter.frameSize, pixelFormat: .bgra, frameRate: frameRate)
    }

    /// Starts delivering frames on a dedicated thread at every slot of the frame rate.
    ///
    /// - Throws: what ``prepare()`` throws, or `.alreadyRunning`.
    public func start(_ context: SourceContext) throws {
        let rate = frameRate
        stopRequested.store(false, ordering: .relaxed)
        try thread.start(sourceName: name, open: { isCancelled in
            if let ready = self.prepared.withLock({ $0.take() }) { return ready }
            return try self.open(isCancelled: { isCancelled() || self.stopRequested.load(ordering: .relaxed) })
        }, release: { capture in
            capture.close()
        }) { capture, thread in
            Self.captureLoop(capture: capture, rate: rate, context: context, thread: thread)
        }
    }

    /// Stops, waits for the capture thread, and closes the portal session and the stream.
    /// Safe to call twice.
    public func stop() {
        stopRequested.store(true, ordering: .relaxed)
        thread.stop()
        prepared.withLock { $0.take() }?.close()
    }

    /// The portal conversation, the stream and its first picture.
    private func open(isCancelled: @escaping () -> Bool) throws(ReelError) -> WaylandCapture {
        let connection = try connect()
        let portal = ScreenCastPortal(connection: connection)
        // The kept choice is a monitor's: a window is asked for each time, and not kept.
        let kept = choosesAgain || sharesWindow ? nil : tokenStore.load()
        let grant: ScreenCastGrant
        do {
            grant = try portal.start(ScreenCastOptions(sources: sharesWindow ? .window : .monitor, drawsCursor: drawsCursor, restoreToken: kept),
                                     isCancelled: isCancelled)
        } catch {
            portal.close()
            throw error
        }
        if !sharesWindow, let token = grant.restoreToken { try? tokenStore.save(token) }
        let stream: any ScreenStream
        do {
            stream = try openStream(grant.pipeWireDescriptor, grant.nodeID)
        } catch {
            portal.close()
            throw error
        }
        do throws(ReelError) {
            // A compositor may send nothing until the screen changes (xdg-desktop-portal-wlr 0.7
            // on a still screen): when the portal said the size, wait only a moment for the
            // first picture, and record black until it comes.
            let screen = try Self.firstPictureSize(stream, portal: portal, announced: grant.size,
                                                   timeout: grant.size == nil ? firstPictureTimeout : min(firstPictureTimeout, 1),
                                                   isCancelled: isCancelled)
            let bounds = PixelRect(x: 0, y: 0, width: screen.width, height: screen.height)
            if let region {
                guard region.width > 0, region.height > 0 else {
                    throw ReelError(.invalidConfiguration, "region \(region) is empty", hint: "give a region of at least 1x1 pixels")
                }
                if let (problem, hint) = region.placement(on: bounds.size) {
                    throw ReelError(.invalidConfiguration, problem, hint: hint)
                }
            }
            let fitter = ScreenPictureFitter(screenSize: screen, region: region)
            return WaylandCapture(portal: portal, stream: stream, fitter: fitter,
                                  pool: FramePool(format: .bgra, size: fitter.frameSize, capacity: Self.poolCapacity))
        } catch {
            stream.close()
            portal.close()
            throw error
        }
    }

    /// The size of the first picture, or the portal's announced size when no picture comes in
    /// time (a still screen may send nothing until it changes).
    private static func firstPictureSize(_ stream: any ScreenStream, portal: ScreenCastPortal, announced: PixelSize?,
                                         timeout: Double, isCancelled: () -> Bool) throws(ReelError) -> PixelSize {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline && !isCancelled() {
            if let size = stream.withNewestPicture({ $0.size }) { return size }
            if case .ended(let error) = stream.state { throw error }
            if portal.isSessionClosed() { throw sharingStopped }
            usleep(5000)
        }
        if let size = stream.withNewestPicture({ $0.size }) { return size }
        if let announced { return announced }
        throw ReelError(.sourceUnavailable, "the screen cast sent no picture within \(Int(timeout)) s and the portal did not say its size",
                        hint: "check that PipeWire and WirePlumber run in the desktop session")
    }

    private static let sharingStopped = ReelError(.sourceUnavailable, "screen sharing was stopped: the desktop portal closed the session",
                                                  hint: "the recording ends with what was captured until then")

    /// The capture thread: sleep to each slot, draw the newest picture, stamp, deliver.
    private static func captureLoop(capture: WaylandCapture, rate: FrameRate, context: SourceContext, thread: WorkerThread) {
        defer { capture.close() }
        // The last frame drawn and the stream picture it shows: while no new picture comes
        // (the screen did not change), it is given again — nothing drawn, the same pixels.
        var last: (frame: VideoFrame, serial: UInt64)?
        ConstantRateCapture.run(rate: rate, context: context, thread: thread) { pts, index in
            if capture.portal.isSessionClosed() { return .lost(sharingStopped) }
            if case .ended(let error) = capture.stream.state { return .lost(error) }
            if let last, capture.stream.withNewestPicture({ $0.serial }) == last.serial {
                var frame = last.frame
                frame.presentationTime = pts
                frame.sequenceNumber = index
                frame.captureTime = context.clock.isRealTime ? context.clock.now() : nil
                let id = frame.identity?.id ?? PictureIdentity.newID()
                frame.identity = PictureIdentity(id: id, base: id, changedRows: [])
                return .frame(frame)
            }
            let frame = context.clock.isRealTime
                ? capture.pool.makeFrame(presentationTime: pts, sequenceNumber: index)
                : capture.pool.makeFrameWaiting(presentationTime: pts, sequenceNumber: index)
            guard var frame else { return .noBuffer }
            if context.clock.isRealTime { frame.captureTime = context.clock.now() }
            let drawn: UInt64? = capture.stream.withNewestPicture { picture in
                capture.fitter.draw(picture, into: frame)
                return picture.serial
            }
            if let drawn {
                frame.identity = PictureIdentity(id: PictureIdentity.newID(), base: nil, changedRows: [0..<frame.height])
                last = (frame, drawn)
            } else {
                frame.fill(with: .black)
            }
            return .frame(frame)
        }
    }
}

/// What a running Wayland capture holds: the portal session, the stream, the fitter and the
/// frame pool. Closing it closes the stream and then the portal session.
final class WaylandCapture: @unchecked Sendable {
    let portal: ScreenCastPortal
    let stream: any ScreenStream
    let fitter: ScreenPictureFitter
    let pool: FramePool
    private let closed = Atomic<Bool>(false)

    init(portal: ScreenCastPortal, stream: any ScreenStream, fitter: ScreenPictureFitter, pool: FramePool) {
        self.portal = portal
        self.stream = stream
        self.fitter = fitter
        self.pool = pool
    }

    func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        stream.close()
        portal.close()
    }
}
