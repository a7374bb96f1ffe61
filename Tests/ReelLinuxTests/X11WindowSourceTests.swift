import Foundation
import Testing
import Synchronization
import ReelLinux
import ReelSystem
import ReelCore
import ReelTestSupport

/// The X11 window source on Xvfb (which has Composite): the window's own pixels, at its own
/// size, through shared memory and by copying; a border left out; the pixmap named again when
/// the window is resized; and how fast it keeps up.
@Suite("X11 window source", .tags(.realTime))
struct X11WindowSourceTests {
    /// Keeps the latest frame and counts frames, drops and losses.
    final class Sink: Sendable {
        private struct State {
            var count = 0
            var latest: VideoFrame?
            var dropped = 0
            var lost: [ReelError] = []
        }
        private let state = Mutex(State())
        let clock = HostClock()
        let origin: MediaTime

        init() { origin = clock.now() }

        var context: SourceContext {
            SourceContext(id: SourceID(1), clock: clock, origin: origin, deliver: { [self] sample in
                guard case .video(let frame) = sample else { return }
                state.withLock { $0.count += 1; $0.latest = frame }
            }, report: { [self] event in
                state.withLock {
                    if case .droppedFrames(let n, _) = event { $0.dropped += n }
                    if case .lost(let error) = event { $0.lost.append(error) }
                }
            })
        }

        var count: Int { state.withLock { $0.count } }
        var dropped: Int { state.withLock { $0.dropped } }
        var lost: [ReelError] { state.withLock { $0.lost } }

        /// Waits for `more` frames after those already seen; returns the latest.
        func waitForFrames(_ more: Int, timeout: Double = 5) async throws -> VideoFrame {
            let target = count + more
            let deadline = Date().addingTimeInterval(timeout)
            while count < target, Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
            return try #require(state.withLock { $0.latest }, "no frame within \(timeout) s")
        }
    }

    /// The blue, green and red bytes of the pixel at `(x, y)` of a BGRA frame.
    static func pixel(_ frame: VideoFrame, _ x: Int, _ y: Int) -> [UInt8] {
        frame.withUnsafePlane(0) { bytes, stride in
            let at = y * stride + x * 4
            return [bytes[at], bytes[at + 1], bytes[at + 2]]
        }
    }

    @Test("a covered window with a border is read from its own pixmap: its pixels, no border, through shared memory or by copying",
          arguments: [true, false])
    func ownPixels(sharedMemory: Bool) async throws {
        let server = try XvfbServer(size: PixelSize(width: 800, height: 600),
                                    extraArguments: sharedMemory ? [] : ["-extension", "MIT-SHM"])
        let painter = try ScreenPainter(display: server.display)
        let window = painter.openWindow(title: "Bordered", rect: PixelRect(x: 100, y: 100, width: 300, height: 200),
                                        red: 200, green: 0, blue: 0, border: 7, borderColour: 0x00FF00)
        painter.fill(rect: PixelRect(x: 250, y: 150, width: 50, height: 50), red: 0, green: 0, blue: 200, inside: window)
        // Another window over most of it.
        painter.fill(rect: PixelRect(x: 0, y: 0, width: 380, height: 290), red: 255, green: 255, blue: 255)

        let source = X11WindowSource(display: server.display, window: .name("bordered"), drawsCursor: false)
        #expect(try source.prepare() == .video(size: PixelSize(width: 300, height: 200), pixelFormat: .bgra, frameRate: FrameRate(30)))
        let sink = Sink()
        try source.start(sink.context)
        defer { source.stop() }
        let frame = try await sink.waitForFrames(3)
        #expect(source.captureMethod == (sharedMemory ? .sharedMemory : .copy))
        #expect(frame.size == PixelSize(width: 300, height: 200))
        let red: [UInt8] = [0, 0, 200], blue: [UInt8] = [200, 0, 0]
        #expect(Self.pixel(frame, 0, 0) == red, "the content's corner, not the green border")
        #expect(Self.pixel(frame, 299, 0) == red)
        #expect(Self.pixel(frame, 0, 199) == red)
        #expect(Self.pixel(frame, 249, 149) == red)
        #expect(Self.pixel(frame, 299, 199) == blue)
        #expect(Self.pixel(frame, 250, 150) == blue, "the child window where it is in the window")
        #expect(Self.pixel(frame, 299, 151) == blue)
        #expect(source.pixmapsNamed == 1)
    }

    @Test("a resize names the pixmap again and the frames keep their size; moving it changes nothing")
    func resizeAndMove() async throws {
        let server = try XvfbServer(size: PixelSize(width: 800, height: 600))
        let painter = try ScreenPainter(display: server.display)
        let window = painter.openWindow(title: "Stretchy", rect: PixelRect(x: 10, y: 10, width: 200, height: 100),
                                        red: 0, green: 150, blue: 0)
        let source = X11WindowSource(display: server.display, window: .id(window), drawsCursor: false)
        let sink = Sink()
        try source.start(sink.context)
        defer { source.stop() }
        _ = try await sink.waitForFrames(3)
        painter.place(window: window, at: PixelRect(x: 700, y: 550, width: 200, height: 100))
        let moved = try await sink.waitForFrames(3)
        #expect(Self.pixel(moved, 199, 99) == [0, 150, 0], "partly off the screen, whole in the recording")
        #expect(source.pixmapsNamed == 1, "a move keeps the pixmap")
        painter.place(window: window, at: PixelRect(x: 10, y: 10, width: 100, height: 100))
        let resized = try await sink.waitForFrames(3)
        #expect(source.pixmapsNamed == 2)
        #expect(resized.size == PixelSize(width: 200, height: 100))
        // 100x100 fitted into 200x100: a 100x100 square in the middle, black bars.
        #expect(Self.pixel(resized, 100, 50) == [0, 150, 0])
        #expect(Self.pixel(resized, 10, 50) == [0, 0, 0])
        #expect(sink.lost.isEmpty)
    }

    @Test("a 1280x720 window at 30 fps keeps up in real time")
    func keepsUp() async throws {
        let server = try XvfbServer(size: PixelSize(width: 1920, height: 1080))
        let painter = try ScreenPainter(display: server.display)
        painter.openWindow(title: "Big", rect: PixelRect(x: 50, y: 50, width: 1280, height: 720), red: 1, green: 2, blue: 3)
        let source = X11WindowSource(display: server.display, window: .name("big"))
        let sink = Sink()
        try source.start(sink.context)
        try await Task.sleep(for: .seconds(3))
        source.stop()
        let frames = sink.count, dropped = sink.dropped
        print("window capture 1280x720 @ 30 fps for 3 s: \(frames) frames, \(dropped) dropped")
        #expect(frames >= 85, "\(frames) frames, \(dropped) dropped")
        #expect(dropped <= 3)
    }
}

extension X11WindowSourceTests {
    @Test("under a reparenting window manager the client in its frame is listed, focused and recorded, with WM_STATE or _NET_CLIENT_LIST")
    func windowManagerFrames() async throws {
        let server = try XvfbServer(size: PixelSize(width: 800, height: 600))
        let painter = try ScreenPainter(display: server.display)
        let first = painter.openFramedWindow(title: "Framed one", frame: PixelRect(x: 20, y: 20, width: 220, height: 180),
                                             offset: (10, 30), clientSize: PixelSize(width: 200, height: 140), red: 0, green: 0, blue: 220)
        let second = painter.openFramedWindow(title: "Framed two", frame: PixelRect(x: 300, y: 20, width: 220, height: 180),
                                              offset: (10, 30), clientSize: PixelSize(width: 200, height: 140), red: 220, green: 0, blue: 0)
        // Without EWMH: found by WM_STATE inside the frames.
        var list = try X11WindowSource.listWindows(display: server.display)
        #expect(list.windows.map(\.id) == [first.client, second.client])
        #expect(list.windows.map(\.title) == ["Framed one", "Framed two"])
        #expect(list.windows.first?.frame == PixelRect(x: 30, y: 50, width: 200, height: 140), "where the client is on the screen")
        // With EWMH: the client list and the active window.
        painter.setRootWindows("_NET_CLIENT_LIST", [second.client])
        painter.setRootWindows("_NET_ACTIVE_WINDOW", [second.client])
        list = try X11WindowSource.listWindows(display: server.display)
        #expect(list.windows.map(\.id) == [second.client])
        #expect(list.focused == second.client)

        let source = X11WindowSource(display: server.display, window: .focused, drawsCursor: false)
        let sink = Sink()
        try source.start(sink.context)
        defer { source.stop() }
        #expect(source.windowID == second.client)
        // The frame moves (the window manager moves the window): the picture is the same.
        painter.place(window: second.frame, at: PixelRect(x: 700, y: 500, width: 220, height: 180))
        let frame = try await sink.waitForFrames(3)
        #expect(frame.size == PixelSize(width: 200, height: 140))
        #expect(Self.pixel(frame, 0, 0) == [0, 0, 220] && Self.pixel(frame, 199, 139) == [0, 0, 220])
        // Minimised: the window manager unmaps the frame; the last picture is held, nothing lost.
        painter.show(window: second.frame, false)
        let held = try await sink.waitForFrames(3)
        #expect(Self.pixel(held, 100, 70) == [0, 0, 220])
        #expect(sink.lost.isEmpty)
    }
}

extension X11WindowSourceTests {
    @Test("the cursor is drawn where it is over the window, at its place in the window, and not where another window covers it")
    func cursorOverTheWindowOnly() async throws {
        let server = try XvfbServer(size: PixelSize(width: 800, height: 600))
        let painter = try ScreenPainter(display: server.display)
        painter.openWindow(title: "Pointed", rect: PixelRect(x: 200, y: 100, width: 300, height: 200), red: 0, green: 0, blue: 200)
        painter.setSquareCursor(size: 8, red: 255, green: 255, blue: 0)
        painter.movePointer(x: 250, y: 150)
        let source = X11WindowSource(display: server.display, window: .name("pointed"), drawsCursor: true)
        let sink = Sink()
        try source.start(sink.context)
        defer { source.stop() }
        let over = try await sink.waitForFrames(3)
        let yellow: [UInt8] = [0, 255, 255], blue: [UInt8] = [200, 0, 0]
        #expect(Self.pixel(over, 52, 52) == yellow, "the pointer at (50, 50) of the window")
        #expect(Self.pixel(over, 70, 70) == blue)
        // A window over that place: the pointer is over it, not over the recorded window.
        painter.fill(rect: PixelRect(x: 230, y: 130, width: 60, height: 60), red: 255, green: 255, blue: 255)
        painter.movePointer(x: 251, y: 151)
        let covered = try await sink.waitForFrames(3)
        #expect(Self.pixel(covered, 53, 53) == blue, "the window's own pixels, no cursor")
        // Off the window altogether: nothing drawn.
        painter.movePointer(x: 10, y: 10)
        let away = try await sink.waitForFrames(3)
        #expect(Self.pixel(away, 0, 0) == blue)
    }
}

extension X11WindowSourceTests {
    @Test("a window with a 32-bit (ARGB) visual, as browsers and terminals make, is recorded with its colours")
    func argbWindow() async throws {
        let server = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let painter = try ScreenPainter(display: server.display)
        let window = try #require(painter.openARGBWindow(title: "Translucent", rect: PixelRect(x: 30, y: 30, width: 160, height: 90),
                                                         red: 10, green: 180, blue: 40), "Xvfb offers a 32-bit visual with Composite")
        let source = X11WindowSource(display: server.display, window: .id(window), drawsCursor: false)
        let sink = Sink()
        try source.start(sink.context)
        defer { source.stop() }
        let frame = try await sink.waitForFrames(3)
        #expect(frame.size == PixelSize(width: 160, height: 90))
        #expect(Self.pixel(frame, 0, 0) == [40, 180, 10] && Self.pixel(frame, 159, 89) == [40, 180, 10])
        #expect(sink.lost.isEmpty)
    }
}

extension X11WindowSourceTests {
    @Test("a window resized over and over (dragged) never ends the capture nor drops shared memory")
    func draggedResize() async throws {
        let server = try XvfbServer(size: PixelSize(width: 800, height: 600))
        let painter = try ScreenPainter(display: server.display)
        let window = painter.openWindow(title: "Dragged", rect: PixelRect(x: 10, y: 10, width: 300, height: 200), red: 0, green: 150, blue: 0)
        let source = X11WindowSource(display: server.display, window: .id(window), drawsCursor: false)
        let sink = Sink()
        try source.start(sink.context)
        defer { source.stop() }
        _ = try await sink.waitForFrames(2)
        for step in 0..<200 {
            let grow = step % 40
            painter.place(window: window, at: PixelRect(x: 10 + step, y: 10, width: 200 + grow * 7, height: 120 + grow * 5))
            try await Task.sleep(for: .milliseconds(5))
        }
        let last = try await sink.waitForFrames(3)
        #expect(sink.lost.isEmpty, "\(sink.lost)")
        #expect(source.captureMethod == .sharedMemory, "a resize race is not a refusal of shared memory")
        #expect(last.size == PixelSize(width: 300, height: 200))
        #expect(Self.pixel(last, 150, 100) == [0, 150, 0])
        #expect((source.pixmapsNamed ?? 0) > 5, "named again as it changed: \(source.pixmapsNamed ?? 0)")
    }
}

extension X11WindowSourceTests {
    /// Runs `xdotool ARGS` on `display`, expecting it to succeed.
    static func xdotool(_ display: String, _ args: [String]) {
        let result = try? Subprocess.run(["xdotool"] + args, environment: ["DISPLAY": display])
        #expect(result?.status == 0, "xdotool: \(result?.stderr ?? "did not run")")
    }

    /// Prepares a `--window=pick` source while `xdotool` clicks at `(x, y)`.
    static func pick(on display: String, x: Int, y: Int) async throws -> (source: X11WindowSource, result: Result<SourceFormat, any Error>) {
        let source = X11WindowSource(display: display, window: .pick, drawsCursor: false)
        let waiting = Task.detached { Result { try source.prepare() } }
        try await Task.sleep(for: .milliseconds(500))
        xdotool(display, ["mousemove", "\(x)", "\(y)", "click", "1"])
        let deadline = Task.detached {
            try await Task.sleep(for: .seconds(10))
            source.stop()
        }
        defer { deadline.cancel() }
        return (source, await waiting.value)
    }

    @Test("a window without a title (no window manager) is listed, found by id and by class, and picked with a click")
    func untitledWindow() async throws {
        let server = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let painter = try ScreenPainter(display: server.display)
        let titled = painter.openWindow(title: "Titled", rect: PixelRect(x: 300, y: 300, width: 100, height: 100), red: 0, green: 220, blue: 0)
        // As `xmessage -title '' hello` makes: an empty title, class Xmessage.
        let untitled = painter.openWindow(title: "", className: "Xmessage", rect: PixelRect(x: 20, y: 30, width: 120, height: 40),
                                          red: 0, green: 0, blue: 220)
        // A menu (override-redirect, untitled) is no application window: not listed.
        painter.fill(rect: PixelRect(x: 500, y: 10, width: 50, height: 50), red: 9, green: 9, blue: 9)
        let list = try X11WindowSource.listWindows(display: server.display)
        #expect(list.windows.map(\.id) == [titled, untitled], "\(list.windows.map(\.summary))")
        let entry = try #require(list.windows.first { $0.id == untitled })
        #expect(entry.summary.hasPrefix("\(entry.hexID) (no title) (Xmessage) 120x40+20+30"), "\(entry.summary)")

        for selector in [X11WindowSelector.id(untitled), .name("Xmessage")] {
            let source = X11WindowSource(display: server.display, window: selector, drawsCursor: false)
            #expect(try source.prepare() == .video(size: PixelSize(width: 120, height: 40), pixelFormat: .bgra, frameRate: FrameRate(30)))
            #expect(source.windowID == untitled, "\(selector)")
        }
        let picked = try await Self.pick(on: server.display, x: 60, y: 50)
        _ = try picked.result.get()
        #expect(picked.source.windowID == untitled)
        #expect(picked.source.name == "window 0x\(String(untitled, radix: 16)) (no title)")
    }

    @Test("a window unmapped before the start, given by id or name, is refused as not shown; a click on the desktop is said to be on no window")
    func unmappedAndDesktop() async throws {
        let server = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let painter = try ScreenPainter(display: server.display)
        let hidden = painter.openWindow(title: "Minimised", rect: PixelRect(x: 20, y: 20, width: 100, height: 80), red: 220, green: 0, blue: 0)
        painter.show(window: hidden, false)
        #expect(try X11WindowSource.listWindows(display: server.display).windows.isEmpty, "an unmapped window is not listed")
        let source = X11WindowSource(display: server.display, window: .id(hidden), drawsCursor: false)
        let error = #expect(throws: ReelError.self) { try source.prepare() }
        #expect(error?.message == "window 0x\(String(hidden, radix: 16)) \"Minimised\" is not shown (minimised or unmapped)")
        // By name it is said the same way, not "no window has" the name (issue 26 item 18).
        let byName = #expect(throws: ReelError.self) { try X11WindowSource(display: server.display, window: .name("minim"), drawsCursor: false).prepare() }
        #expect(byName?.message == "window 0x\(String(hidden, radix: 16)) \"Minimised\" is not shown (minimised or unmapped)")
        // An id that is no window at all is still "no top-level window".
        let none = #expect(throws: ReelError.self) { try X11WindowSource(display: server.display, window: .id(0x7f_ffff)).prepare() }
        #expect(none?.message.contains("has no top-level window 0x7fffff") == true, "\(none?.message ?? "")")

        let picked = try await Self.pick(on: server.display, x: 400, y: 300)
        guard case .failure(let failure) = picked.result, let clicked = failure as? ReelError else {
            Issue.record("a click on the desktop picked \(String(describing: picked.source.windowID))")
            return
        }
        #expect(clicked.message == "the click on display \(server.display) was on the desktop, not on a window")
    }
}
