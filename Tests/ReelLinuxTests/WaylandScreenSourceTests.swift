import Foundation
import ReelCore
@testable import ReelLinux
import Synchronization
import Testing

/// The picture fitter: a region, a screen that changes size (scaled and letterboxed into the
/// recording's size), the pixel layouts a compositor sends.
@Suite("Screen picture fitter")
struct ScreenPictureFitterTests {
    /// Draws a picture of `size` given pixel by pixel and returns the frame's pixels.
    static func draw(_ pixels: [UInt32], size: PixelSize, layout: ScreenPixelLayout = .bgrx,
                     fitter: ScreenPictureFitter) -> [UInt32] {
        let frame = FramePool(format: .bgra, size: fitter.frameSize, capacity: 1).makeFrame()!
        pixels.withUnsafeBytes { bytes in
            fitter.draw(ScreenPicture(pixels: bytes.baseAddress!, size: size, stride: size.width * 4, layout: layout, serial: 1), into: frame)
        }
        var result: [UInt32] = []
        frame.withUnsafePlane(0) { plane, stride in
            for y in 0..<frame.height {
                for x in 0..<frame.width { result.append(plane.load(fromByteOffset: y * stride + x * 4, as: UInt32.self)) }
            }
        }
        return result
    }

    @Test("each layout becomes opaque BGRA")
    func layouts() {
        let fitter = ScreenPictureFitter(screenSize: PixelSize(width: 1, height: 1), region: nil)
        let size = PixelSize(width: 1, height: 1)
        // Bytes in memory 0x33 0x22 0x11 0x00: blue 0x33, green 0x22, red 0x11 for BGRx.
        #expect(Self.draw([0x0011_2233], size: size, layout: .bgrx, fitter: fitter) == [0xFF11_2233])
        #expect(Self.draw([0x8011_2233], size: size, layout: .bgra, fitter: fitter) == [0xFF11_2233])
        // The same bytes in RGBx: red 0x33, green 0x22, blue 0x11.
        #expect(Self.draw([0x0011_2233], size: size, layout: .rgbx, fitter: fitter) == [0xFF33_2211])
        #expect(Self.draw([0x4011_2233], size: size, layout: .rgba, fitter: fitter) == [0xFF33_2211])
    }

    @Test("a region is cut out of the screen")
    func region() {
        let screen = PixelSize(width: 4, height: 3)
        let pixels = (0..<12).map { UInt32($0) }
        let fitter = ScreenPictureFitter(screenSize: screen, region: PixelRect(x: 1, y: 1, width: 2, height: 2))
        #expect(Self.draw(pixels, size: screen, fitter: fitter) == [5, 6, 9, 10].map { 0xFF00_0000 | $0 })
    }

    @Test("a screen grown to twice its size is scaled down; a wider one is letterboxed")
    func sizeChanges() {
        let fitter = ScreenPictureFitter(screenSize: PixelSize(width: 4, height: 2), region: nil)
        // 8x4, each 2x2 block one value: scaled back to 4x2 it reads one pixel per block.
        let big: [UInt32] = (0..<32).map { (i: Int) -> UInt32 in
            let column = (i % 8) / 2, row = (i / 8) / 2
            return UInt32(column + 4 * row)
        }
        #expect(Self.draw(big, size: PixelSize(width: 8, height: 4), fitter: fitter) == (0..<8).map { (v: Int) -> UInt32 in 0xFF00_0000 | UInt32(v) })
        #expect(fitter.layout(pictureSize: PixelSize(width: 8, height: 4)).fit == PixelRect(x: 0, y: 0, width: 4, height: 2))
        // 4x4 (taller): fits as 2x2 in the middle, black on both sides.
        let tall = [UInt32](repeating: 0x00FF_FFFF, count: 16)
        let black: UInt32 = 0xFF00_0000, white: UInt32 = 0xFFFF_FFFF
        #expect(Self.draw(tall, size: PixelSize(width: 4, height: 4), fitter: fitter) == [black, white, white, black, black, white, white, black])
        // A region follows the screen in proportion.
        let withRegion = ScreenPictureFitter(screenSize: PixelSize(width: 100, height: 100), region: PixelRect(x: 50, y: 0, width: 50, height: 50))
        #expect(withRegion.layout(pictureSize: PixelSize(width: 200, height: 200)).crop == PixelRect(x: 100, y: 0, width: 100, height: 100))
        #expect(withRegion.layout(pictureSize: PixelSize(width: 10, height: 10)).crop == PixelRect(x: 5, y: 0, width: 5, height: 5))
        // Shrunk to a sliver: still inside the picture, never empty.
        let sliver = withRegion.layout(pictureSize: PixelSize(width: 1, height: 1))
        #expect(sliver.crop == PixelRect(x: 0, y: 0, width: 1, height: 1))
    }
}

/// The Wayland screen source on a scripted portal and stream, on a manual clock: a frame at every
/// slot repeating the newest picture (no drops counted), the kept restore token, a region, the
/// portal closing the session, the stream ending, a denial.
@Suite("Wayland screen source on a scripted portal and stream")
struct WaylandScreenSourceTests {
    final class Run: Sendable {
        let clock = ManualClock()
        let colours = Mutex<[UInt32]>([])
        let events = Mutex<[SourceEvent]>([])
        let onFrame: @Sendable (Int) -> Void

        init(onFrame: @escaping @Sendable (Int) -> Void) { self.onFrame = onFrame }

        var context: SourceContext {
            SourceContext(id: SourceID(1), clock: clock, origin: .zero, deliver: { [self] sample in
                guard case .video(let frame) = sample else { return }
                let colour = frame.withUnsafePlane(0) { plane, _ in plane.load(as: UInt32.self) }
                let count = colours.withLock { $0.append(colour); return $0.count }
                onFrame(count)
            }, report: { [self] event in events.withLock { $0.append(event) } })
        }

        var lost: ReelError? {
            events.withLock { for case .lost(let e) in $0 { return e }; return nil }
        }
        var dropped: Int { events.withLock { $0.reduce(0) { if case .droppedFrames(let n, _) = $1 { $0 + n } else { $0 } } } }

        func waitUntilLost() -> ReelError? {
            for _ in 0..<30_000 { if let lost { return lost }; usleep(1000) }
            return nil
        }
    }

    static let screen = PixelSize(width: 64, height: 48)

    static func source(_ connection: ScriptedDBusConnection, _ stream: ScriptedScreenStream, store: ScreenCastTokenStore,
                       region: PixelRect? = nil, choosesAgain: Bool = false) -> WaylandScreenSource {
        WaylandScreenSource(region: region, frameRate: FrameRate(30), drawsCursor: true, choosesAgain: choosesAgain, tokenStore: store,
                            connect: { connection }, openStream: { fd, node in
                                close(fd)
                                #expect(node == 47)
                                return stream
                            }, firstPictureTimeout: 0.5)
    }

    static func store() -> (ScreenCastTokenStore, URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reel-wl-\(UUID().uuidString)")
        return (ScreenCastTokenStore(environment: ["XDG_STATE_HOME": folder.path]), folder)
    }

    @Test("a frame at every slot, repeating the newest picture, with no drops counted; the stream ending ends the source")
    func constantRate() throws {
        let (store, folder) = Self.store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let connection = ScriptedDBusConnection(answers: ScreenCastPortalTests.grantScript(fd: ScreenCastPortalTests.openDescriptor()))
        let stream = ScriptedScreenStream()
        stream.show(0x0000_00FF, size: Self.screen)  // blue
        let source = Self.source(connection, stream, store: store)
        #expect(try source.prepare() == .video(size: Self.screen, pixelFormat: .bgra, frameRate: FrameRate(30)))
        #expect(store.load() == "4f1c2a9e-6b1d-4c3e-8a57-93d0e6b2f1a8", "the portal's token is kept")
        let run = Run { count in
            if count == 10 { stream.show(0x0000_FF00, size: Self.screen) }  // green
            if count == 20 { stream.end(ReelError(.sourceUnavailable, "PipeWire went away")) }
        }
        try source.start(run.context)
        let lost = run.waitUntilLost()
        source.stop()
        #expect(lost?.message == "PipeWire went away")
        let colours = run.colours.withLock { $0 }
        #expect(colours.count == 20)
        #expect(colours.prefix(10).allSatisfy { $0 == 0xFF00_00FF })
        #expect(colours.dropFirst(10).allSatisfy { $0 == 0xFF00_FF00 })
        #expect(run.dropped == 0)
        #expect(stream.closed)
        #expect(connection.closed)
        #expect(connection.calls.contains { $0.member == "Close" }, "the portal session is closed when the source stops")
    }

    @Test("the portal closing the session (stop sharing) ends the source with an error that says so")
    func portalClosesSession() throws {
        let (store, folder) = Self.store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let connection = ScriptedDBusConnection(answers: ScreenCastPortalTests.grantScript(fd: ScreenCastPortalTests.openDescriptor()))
        let stream = ScriptedScreenStream()
        stream.show(0x0000_00FF, size: Self.screen)
        let source = Self.source(connection, stream, store: store)
        let run = Run { count in
            if count == 5 {
                connection.emit(DBusSignal(path: ScreenCastPortalTests.session, interface: "org.freedesktop.portal.Session",
                                           member: "Closed", arguments: []))
            }
        }
        try source.start(run.context)
        let lost = run.waitUntilLost()
        source.stop()
        #expect(lost?.message.contains("stopped") == true)
        #expect(run.colours.withLock { $0.count } == 5)
    }

    @Test("a kept token is handed to the portal; --screen-choose leaves it out")
    func keptToken() throws {
        let (store, folder) = Self.store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let kept = "7d8b3c1e-52a4-4f0e-9a61-0c2f5e8b9d10"
        try store.save(kept)
        for choosesAgain in [false, true] {
            let connection = ScriptedDBusConnection(answers: ScreenCastPortalTests.grantScript(fd: ScreenCastPortalTests.openDescriptor(),
                                                                                              restoreToken: "new"))
            let stream = ScriptedScreenStream()
            stream.show(0, size: Self.screen)
            let source = Self.source(connection, stream, store: store, choosesAgain: choosesAgain)
            _ = try source.prepare()
            source.stop()
            let select = connection.calls.first { $0.member == "SelectSources" }?.arguments.last?.entries ?? [:]
            #expect(select["restore_token"] == (choosesAgain ? nil : .string(kept)))
            try store.save(kept)
        }
    }

    @Test("a region is recorded at its size; one outside the screen is refused and everything is closed")
    func region() throws {
        let (store, folder) = Self.store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let connection = ScriptedDBusConnection(answers: ScreenCastPortalTests.grantScript(fd: ScreenCastPortalTests.openDescriptor()))
        let stream = ScriptedScreenStream()
        stream.show(0, size: Self.screen)
        let inside = Self.source(connection, stream, store: store, region: PixelRect(x: 8, y: 8, width: 32, height: 16))
        #expect(try inside.prepare() == .video(size: PixelSize(width: 32, height: 16), pixelFormat: .bgra, frameRate: FrameRate(30)))
        inside.stop()

        let second = ScriptedDBusConnection(answers: ScreenCastPortalTests.grantScript(fd: ScreenCastPortalTests.openDescriptor()))
        let secondStream = ScriptedScreenStream()
        secondStream.show(0, size: Self.screen)
        let outside = Self.source(second, secondStream, store: store, region: PixelRect(x: 40, y: 0, width: 32, height: 16))
        let error = #expect(throws: ReelError.self) { try outside.prepare() }
        #expect(error?.code == .invalidConfiguration)
        #expect(secondStream.closed)
        #expect(second.closed)
    }

    @Test("a denied dialog is a clear error and no stream is opened")
    func denied() throws {
        let (store, folder) = Self.store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let connection = ScriptedDBusConnection(answers: ScreenCastPortalTests.properties + [
            .request(response: 0, results: ["session_handle": .variant(.string(ScreenCastPortalTests.session))]),
            .request(response: 0, results: [:]),
            .request(response: 1, results: [:]),
        ])
        let opened = Mutex(false)
        let source = WaylandScreenSource(region: nil, frameRate: FrameRate(30), drawsCursor: true, choosesAgain: false, tokenStore: store,
                                         connect: { connection }, openStream: { _, _ in
                                             opened.withLock { $0 = true }
                                             return ScriptedScreenStream()
                                         })
        let error = #expect(throws: ReelError.self) { try source.prepare() }
        #expect(error?.code == .permissionDenied)
        #expect(!opened.withLock { $0 })
        #expect(store.load() == nil)
    }

    @Test("a stop while the portal's dialog is open gives up the opening at once and closes the session")
    func stopDuringTheDialog() throws {
        let (store, folder) = Self.store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let connection = ScriptedDBusConnection(answers: ScreenCastPortalTests.properties + [
            .request(response: 0, results: ["session_handle": .variant(.string(ScreenCastPortalTests.session))]),
            .request(response: 0, results: [:]),
            .requestUnanswered,
        ])
        let source = Self.source(connection, ScriptedScreenStream(), store: store)
        let stopper = Thread {
            while !connection.calls.contains(where: { $0.member == "Start" }) { usleep(1000) }
            usleep(50_000)
            source.stop()
        }
        let began = Date()
        stopper.start()
        let error = #expect(throws: ReelError.self) { try source.prepare() }
        #expect(error?.code == .notRunning)
        #expect(Date().timeIntervalSince(began) < 10, "not the portal's 300 s")
        #expect(connection.calls.last?.member == "Close")
        #expect(connection.closed)
    }

    @Test("the session follows WAYLAND_DISPLAY and XDG_SESSION_TYPE; --screen values name one")
    func location() {
        #expect(ScreenLocation.session(environment: ["WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"]) == .wayland)
        #expect(ScreenLocation.session(environment: ["XDG_SESSION_TYPE": "wayland"]) == .wayland)
        #expect(ScreenLocation.session(environment: ["XDG_SESSION_TYPE": "x11", "DISPLAY": ":0"]) == .x11(display: nil))
        #expect(ScreenLocation(argument: "wayland", environment: [:]) == .wayland)
        #expect(ScreenLocation(argument: ":1", environment: ["WAYLAND_DISPLAY": "wayland-0"]) == .x11(display: ":1"))
        #expect(ScreenLocation(argument: nil, environment: ["WAYLAND_DISPLAY": "wayland-0"]) == .wayland)
    }
}

extension WaylandScreenSourceTests {
    @Test("a window is asked for with the portal's window type, each time: no kept choice is given or kept")
    func aWindow() throws {
        let (store, folder) = Self.store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let monitor = "0b5e2c47-8f13-4a9d-b6e2-5d71c3a0f9e4"
        try store.save(monitor)
        // A portal that offers monitors and windows (types 1 | 2).
        var script = ScreenCastPortalTests.grantScript(fd: ScreenCastPortalTests.openDescriptor(), restoreToken: "window-token")
        script[2] = .reply([.variant(.uint32(3))])
        let connection = ScriptedDBusConnection(answers: script)
        let stream = ScriptedScreenStream()
        stream.show(0x0000_00FF, size: Self.screen)
        let source = WaylandScreenSource(region: nil, frameRate: FrameRate(30), drawsCursor: true, choosesAgain: false, sharesWindow: true,
                                         tokenStore: store, connect: { connection }, openStream: { fd, _ in close(fd); return stream },
                                         firstPictureTimeout: 0.5)
        #expect(source.name == "window wayland")
        #expect(try source.prepare() == .video(size: Self.screen, pixelFormat: .bgra, frameRate: FrameRate(30)))
        source.stop()
        let select = connection.calls.first { $0.member == "SelectSources" }?.arguments.last?.entries ?? [:]
        #expect(select["types"] == .uint32(2))
        #expect(select["restore_token"] == nil, "a monitor's kept choice is not offered for a window")
        #expect(store.load() == monitor, "a window's grant is not kept over it")
    }
}
