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
    /// With damage tracking: what each buffer holds and what each picture changed.
    private var damage: ScreenDamage?
    /// The last frame handed on, given again (same pixels, new time) while nothing changes.
    private var last: (frame: VideoFrame, picture: Int, cursor: X11CursorImage?)?

    /// Sets up a capture of `rect` of the window `root`: shared-memory frames when the server
    /// and `allowsSharedMemory` allow, copied frames otherwise; reading only what changed when
    /// the server can say (DAMAGE).
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
        if display.startDamageTracking(of: root) {
            damage = ScreenDamage(height: rect.height)
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
        // One buffer now, so that a refusal shows at once; the others only when the frames in
        // flight need them (a still or slowly changing screen never does), so memory follows
        // the real need. A later refusal is a dropped frame, counted.
        return pool.makeFrame() == nil ? nil : pool
    }

    private func useCopying() {
        pool = FramePool(format: .bgra, size: rect.size, capacity: capacity)
        methodState.store(X11ScreenSource.CaptureMethod.copy.rawValue, ordering: .relaxed)
        // Buffers of another pool: what the old ones held means nothing now.
        if damage != nil { damage = ScreenDamage(height: rect.height) }
        last = nil
    }

    /// Reads the region into a pooled frame stamped with `presentationTime` and `sequenceNumber`.
    /// With `waitForBuffer` (a clock that is not real time) it waits for a free frame rather
    /// than dropping one.
    func grab(presentationTime: MediaTime, sequenceNumber: Int64, waitForBuffer: Bool = false) -> Outcome {
        guard let display, let pool else { return .lost(ReelError(.notRunning, "the screen capture has stopped")) }
        display.drainEvents()
        if damage != nil {
            return grabChanges(display: display, pool: pool, presentationTime: presentationTime, sequenceNumber: sequenceNumber,
                               waitForBuffer: waitForBuffer)
        }
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
            return refused(errorCode, display: display, shared: shared, presentationTime: presentationTime,
                           sequenceNumber: sequenceNumber, waitForBuffer: waitForBuffer)
        }
    }

    /// What a refused read means: the server went away, it refused shared memory after all
    /// (read by copying from now on, and try again), or the region no longer fits.
    private func refused(_ errorCode: UInt8?, display: any X11Display, shared: Bool, presentationTime: MediaTime,
                         sequenceNumber: Int64, waitForBuffer: Bool) -> Outcome {
        if display.hasFailed { return Self.serverGone(display) }
        if shared {
            useCopying()
            return grab(presentationTime: presentationTime, sequenceNumber: sequenceNumber, waitForBuffer: waitForBuffer)
        }
        return .lost(ReelError(.sourceUnavailable,
                               "reading region \(rect) of the screen at \(display.name) failed (X error \(errorCode.map(String.init) ?? "?"))",
                               hint: "the screen may have changed size; choose a region inside it"))
    }

    /// The source is lost: the server went away.
    private static func serverGone(_ display: any X11Display) -> Outcome {
        .lost(ReelError(.sourceUnavailable, "the X server at \(display.name) went away",
                        hint: "restart the recording once the display is back"))
    }

    /// A grab that reads only what changed: nothing at all when neither the screen (inside the
    /// region) nor the cursor did — the last frame is given again, the same pixels at a new
    /// time — else the rows changed since the picture the pooled buffer holds, then the cursor.
    private func grabChanges(display: any X11Display, pool: FramePool, presentationTime: MediaTime, sequenceNumber: Int64,
                             waitForBuffer: Bool) -> Outcome {
        // Bookkeeping on a copy, stored back before each way out below (a refusal may start
        // the bookkeeping afresh, for another pool).
        guard var damage else { return .noBuffer }
        let changed: RowSet? = display.takeDamage().map { rects in
            var rows = RowSet()
            for r in rects { rows.insert(RowSet.rows(of: r, in: rect)) }
            return rows
        }
        if display.hasFailed { return Self.serverGone(display) }
        let cursor = drawsCursor ? display.cursorImage() : nil
        let cursorRows = cursor?.rows(in: rect) ?? 0..<0
        if let last, changed?.isEmpty == true, last.cursor == cursor, last.picture == damage.newest {
            var frame = last.frame
            frame.presentationTime = presentationTime
            frame.sequenceNumber = sequenceNumber
            frame.captureTime = nil
            let id = frame.identity?.id ?? PictureIdentity.newID()
            frame.identity = PictureIdentity(id: id, base: id, changedRows: [])
            return .frame(frame)
        }
        // A new picture: what the screen changed, and the cursor where it was and is now.
        var pictureRows = changed
        if changed != nil, last?.cursor != cursor {
            pictureRows?.insert(cursorRows)
            if let old = last?.cursor { pictureRows?.insert(old.rows(in: rect)) }
        }
        let picture = damage.addPicture(changing: pictureRows)
        self.damage = damage
        let buffer = waitForBuffer
            ? pool.makeFrameWaiting(presentationTime: presentationTime, sequenceNumber: sequenceNumber)
            : pool.makeFrame(presentationTime: presentationTime, sequenceNumber: sequenceNumber)
        guard var frame = buffer else { return .noBuffer }
        let shared = method == .sharedMemory
        let address = frame.buffer.bytes
        for band in damage.rowsToRead(into: address).bridged(16).ranges {
            let area = PixelRect(x: rect.x, y: rect.y + band.lowerBound, width: rect.width, height: band.count)
            if case .refused(let errorCode) = display.readImage(area, of: root, into: frame, atRow: band.lowerBound,
                                                                shared: shared, withCursor: false) {
                damage.forget(address)
                self.damage = damage
                return refused(errorCode, display: display, shared: shared, presentationTime: presentationTime,
                               sequenceNumber: sequenceNumber, waitForBuffer: waitForBuffer)
            }
        }
        if let cursor { cursor.blend(into: frame, origin: (rect.x, rect.y)) }
        damage.noteFilled(address, cursor: cursor == nil ? 0..<0 : cursorRows)
        // What changed against the frame handed on before (several pictures back when a
        // picture found no buffer), for a consumer that kept what it made of that one.
        let base = last.flatMap { last in last.frame.identity.map { (id: $0.id, picture: last.picture) } }
        let sinceBase = base.flatMap { damage.changes(since: $0.picture) }
        frame.identity = PictureIdentity(id: PictureIdentity.newID(), base: sinceBase == nil ? nil : base?.id,
                                         changedRows: sinceBase?.ranges ?? [0..<rect.height])
        last = (frame, picture, cursor)
        self.damage = damage
        return .frame(frame)
    }
}
