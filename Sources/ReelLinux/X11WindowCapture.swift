#if canImport(Glibc)
import Glibc
#endif
internal import CPipeWire
import ReelCore
import Synchronization

/// The resources of one running window capture: the connection, the window's pixmap, the frame
/// pools and the last picture, and what to do with each state the window is found in. Used
/// only by the capture thread, except ``method`` and ``pixmapsNamed``.
final class X11WindowCapture: @unchecked Sendable {
    /// What one grab gave.
    typealias Outcome = GrabOutcome

    private var display: (any X11Display)?
    private let window: X11WindowInfo
    private let root: UInt32
    private let frameSize: PixelSize
    private let mode: WindowResizeMode
    private let capacity: Int
    private let drawsCursor: Bool
    private var pool: FramePool?
    private var scratch: FramePool?
    private var scratchShared = false
    private var shared: Bool
    private var pixmap: UInt32?
    private var pixmapSize: PixelSize?
    private var lastFrame: VideoFrame?
    private var hidden = false
    private let methodState = Atomic<UInt8>(0)
    private let namedCount = Atomic<Int>(0)

    /// Sets up the capture of `window` (already redirected) into frames of `frameSize`.
    init(display: any X11Display, window: X11WindowInfo, root: UInt32, frameSize: PixelSize, mode: WindowResizeMode,
         drawsCursor: Bool, allowsSharedMemory: Bool, capacity: Int) {
        self.display = display
        self.window = window
        self.root = root
        self.frameSize = frameSize
        self.mode = mode
        self.capacity = capacity
        self.drawsCursor = drawsCursor && display.enableCursorImages()
        self.shared = false
        if allowsSharedMemory, display.supportsSharedMemory(),
           let pool = Self.makePool(display: display, size: frameSize, capacity: capacity, shared: true) {
            self.pool = pool
            shared = true
        } else {
            pool = Self.makePool(display: display, size: frameSize, capacity: capacity, shared: false)
        }
        methodState.store(shared ? X11ScreenSource.CaptureMethod.sharedMemory.rawValue : X11ScreenSource.CaptureMethod.copy.rawValue,
                          ordering: .relaxed)
    }

    /// How frames are read now.
    var method: X11ScreenSource.CaptureMethod? {
        X11ScreenSource.CaptureMethod(rawValue: methodState.load(ordering: .relaxed))
    }

    /// How many times the window's pixmap has been named (once, then after each resize or map).
    var pixmapsNamed: Int { namedCount.load(ordering: .relaxed) }

    /// Frees the pixmap and releases the pools and the connection.
    func close() {
        releasePixmap()
        lastFrame = nil
        pool = nil
        scratch = nil
        display = nil
    }

    /// A pool of BGRA frames of `size`: in shared memory (all allocated now; `nil` if refused)
    /// or on the heap.
    private static func makePool(display: any X11Display, size: PixelSize, capacity: Int, shared: Bool) -> FramePool? {
        guard shared else { return FramePool(format: .bgra, size: size, capacity: capacity) }
        let stride = size.width * 4
        let pool = FramePool(format: .bgra, size: size, capacity: capacity, strides: [stride], offsets: [0],
                             byteCount: stride * size.height) { byteCount in
            try? display.makeSharedFrameBuffer(byteCount: byteCount)
        }
        var frames: [VideoFrame] = []
        for _ in 0..<capacity {
            guard let frame = pool.makeFrame() else { return nil }
            frames.append(frame)
        }
        return pool
    }

    private func useCopying() {
        guard let display else { return }
        shared = false
        pool = Self.makePool(display: display, size: frameSize, capacity: capacity, shared: false)
        scratch = nil
        methodState.store(X11ScreenSource.CaptureMethod.copy.rawValue, ordering: .relaxed)
    }

    private func releasePixmap() {
        if let pixmap, let display { display.freePixmap(pixmap) }
        pixmap = nil
        pixmapSize = nil
    }

    /// Reads the window into a pooled frame stamped with `presentationTime` and
    /// `sequenceNumber`, or repeats the last picture while it is hidden; `report` hears when it
    /// is hidden and when it is back.
    func grab(presentationTime: MediaTime, sequenceNumber: Int64, waitForBuffer: Bool,
              report: (SourceEvent) -> Void) -> Outcome {
        guard let display, let pool else { return .lost(ReelError(.notRunning, "the window capture has stopped")) }
        display.drainEvents()
        let state = display.windowState(window.id, root: root)
        let frame: PixelRect, border: Int
        switch state {
        case .gone:
            if display.hasFailed { return serverGone(display) }
            return .lost(ReelError(.sourceUnavailable, "window \(window.hexID) \"\(window.title)\" was closed",
                                   hint: "the recording keeps what came before"))
        case .unmapped:
            releasePixmap()
            return hold(announce: true, presentationTime: presentationTime, sequenceNumber: sequenceNumber,
                        waitForBuffer: waitForBuffer, report: report)
        case .viewable(let rect, let width):
            frame = rect
            border = width
        }
        if pixmap == nil || pixmapSize != frame.size {
            // Resized, mapped again, or the first time: the window's storage is new.
            releasePixmap()
            pixmap = display.nameWindowPixmap(window.id)
            if pixmap != nil {
                pixmapSize = frame.size
                namedCount.add(1, ordering: .relaxed)
            }
        }
        guard let pixmap, frame.width > 0, frame.height > 0 else {
            // Unmapped between the two requests: it shows as hidden next time if it stays so.
            return hold(announce: false, presentationTime: presentationTime, sequenceNumber: sequenceNumber,
                        waitForBuffer: waitForBuffer, report: report)
        }
        let buffer = waitForBuffer
            ? pool.makeFrameWaiting(presentationTime: presentationTime, sequenceNumber: sequenceNumber)
            : pool.makeFrame(presentationTime: presentationTime, sequenceNumber: sequenceNumber)
        guard let output = buffer else { return .noBuffer }
        let (crop, fit) = WindowPictureLayout.layout(picture: frame.size, frame: frameSize, mode: mode)
        let direct = crop.size == frameSize && fit.size == frameSize
        // The picture: straight into the frame when it has the frame's size, else into a
        // scratch frame of the window's size that is then scaled into it.
        let target: VideoFrame
        if direct {
            target = output
        } else {
            if scratch?.size != frame.size {
                scratch = nil
                if shared, let pool = Self.makePool(display: display, size: frame.size, capacity: 1, shared: true) {
                    scratch = pool
                    scratchShared = true
                } else {
                    scratch = Self.makePool(display: display, size: frame.size, capacity: 1, shared: false)
                    scratchShared = false
                }
            }
            guard let picture = scratch?.makeFrame() else { return .noBuffer }
            target = picture
        }
        // Straight into the frame, the part the layout keeps is read (the middle of a window
        // grown in one direction and cut to fill); into the scratch frame, all of it.
        let offset = direct ? (x: crop.x, y: crop.y) : (x: 0, y: 0)
        let area = PixelRect(x: border + offset.x, y: border + offset.y, width: target.width, height: target.height)
        let targetIsShared = direct ? shared : scratchShared
        switch display.readImage(area, of: pixmap, into: target, shared: targetIsShared, withCursor: drawsCursor) {
        case .captured(let cursor):
            // Drawn where it is over the window itself, not over another window that covers it.
            if let cursor, display.pointerIsOver(window.id, root: root) {
                cursor.blend(into: target, origin: (frame.x + offset.x, frame.y + offset.y))
            }
        case .refused(let code):
            if display.hasFailed { return serverGone(display) }
            // BadPixmap, BadMatch, BadDrawable: the window changed between the requests (a
            // resize while it is dragged), not the shared memory.
            let windowChanged = code == 4 || code == 8 || code == 9
            if targetIsShared && !windowChanged {
                // The server refused the shared segment after all: read by copying from now on.
                useCopying()
                return grab(presentationTime: presentationTime, sequenceNumber: sequenceNumber,
                            waitForBuffer: waitForBuffer, report: report)
            }
            // The window changed between the requests (resized, unmapped): named again next time.
            releasePixmap()
            return hold(announce: false, presentationTime: presentationTime, sequenceNumber: sequenceNumber,
                        waitForBuffer: waitForBuffer, report: report)
        }
        if !direct {
            target.withUnsafePlane(0) { source, sourceStride in
                output.withUnsafeMutablePlane(0) { plane, stride in
                    guard let from = source.baseAddress, let to = plane.baseAddress else { return }
                    reel_fit_picture(from.assumingMemoryBound(to: UInt8.self), ScreenPixelLayout.bgrx.rawValue, Int32(sourceStride),
                                     Int32(crop.x), Int32(crop.y), Int32(crop.width), Int32(crop.height),
                                     to.assumingMemoryBound(to: UInt8.self), Int32(stride), Int32(output.width), Int32(output.height),
                                     Int32(fit.x), Int32(fit.y), Int32(fit.width), Int32(fit.height))
                }
            }
        }
        if hidden {
            hidden = false
            report(.resumed)
        }
        lastFrame = output
        return .frame(output)
    }

    /// The last picture again (black before the first), in a new frame.
    private func hold(announce: Bool, presentationTime: MediaTime, sequenceNumber: Int64, waitForBuffer: Bool,
                      report: (SourceEvent) -> Void) -> Outcome {
        guard let pool else { return .noBuffer }
        if announce && !hidden {
            hidden = true
            report(.interrupted(ReelError(.sourceUnavailable,
                                          "window \(window.hexID) \"\(window.title)\" is minimised or hidden: its last picture is repeated until it is back")))
        }
        let buffer = waitForBuffer
            ? pool.makeFrameWaiting(presentationTime: presentationTime, sequenceNumber: sequenceNumber)
            : pool.makeFrame(presentationTime: presentationTime, sequenceNumber: sequenceNumber)
        guard let output = buffer else { return .noBuffer }
        output.withUnsafeMutablePlane(0) { plane, stride in
            guard let to = plane.baseAddress else { return }
            if let last = lastFrame {
                last.withUnsafePlane(0) { source, sourceStride in
                    guard let from = source.baseAddress else { return }
                    for row in 0..<output.height {
                        memcpy(to + row * stride, from + row * sourceStride, output.width * 4)
                    }
                }
            } else {
                for row in 0..<output.height {
                    (to + row * stride).assumingMemoryBound(to: UInt32.self).update(repeating: 0xFF00_0000, count: output.width)
                }
            }
        }
        return .frame(output)
    }

    private func serverGone(_ display: any X11Display) -> Outcome {
        .lost(ReelError(.sourceUnavailable, "the X server at \(display.name) went away",
                        hint: "restart the recording once the display is back"))
    }

}
