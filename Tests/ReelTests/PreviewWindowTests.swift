import Foundation
import Testing
import Reel
import ReelPreview
import ReelTestSupport

/// The preview window under Xvfb, in real time: screenshots of the screen find the picture,
/// the indicator in each state and the progress bar; keys and a click do what they say.
@Suite(.serialized, .tags(.realTime)) struct PreviewWindowTests {
    static let title = "Reel preview test"

    /// The keys the window reported, in order.
    final class KeyLog: @unchecked Sendable {
        private let lock = NSLock()
        private var keys: [PreviewWindow.Key] = []
        func append(_ key: PreviewWindow.Key) { lock.withLock { keys.append(key) } }
        var all: [PreviewWindow.Key] { lock.withLock { keys } }
    }

    static func pixel(_ shot: (rgb: [UInt8], width: Int, height: Int), _ x: Int, _ y: Int) -> RGBColor {
        let i = (y * shot.width + x) * 3
        return RGBColor(red: shot.rgb[i], green: shot.rgb[i + 1], blue: shot.rgb[i + 2])
    }

    static func near(_ c: RGBColor, _ r: Int, _ g: Int, _ b: Int, tolerance: Int = 40) -> Bool {
        abs(Int(c.red) - r) <= tolerance && abs(Int(c.green) - g) <= tolerance && abs(Int(c.blue) - b) <= tolerance
    }

    /// Polls `condition` for up to `seconds`.
    static func eventually(_ seconds: Double = 5, _ condition: () -> Bool) async throws -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return condition()
    }

    static func xdotool(_ display: String, _ arguments: [String]) throws {
        let result = try Subprocess.run(["xdotool"] + arguments, environment: ["DISPLAY": display])
        #expect(result.status == 0, "xdotool \(arguments): \(result.stderr)")
    }

    @Test func showsThePictureTheIndicatorAndTheProgressAndAnswersKeys() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        defer { xvfb.terminate() }
        let painter = try ScreenPainter(display: xvfb.display)
        let dir = try TemporaryDirectory()
        let session = CaptureSession()
        try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30), beeps: .never,
                                               background: .red, name: "red camera"))
        let preview = PreviewWindow(settings: .init(title: Self.title, size: PixelSize(width: 320, height: 240), position: (0, 0),
                                                    showsRecordButton: true, display: xvfb.display))
        let keys = KeyLog()
        preview.onKey = { keys.append($0) }
        try session.addOutput(preview)
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        let recorder = Recorder(url: dir.url.appendingPathComponent("beside.mp4"), settings: settings)
        try session.addOutput(recorder)
        try await session.start()

        // Recording, a quarter of the way to the limit.
        preview.show(.init(state: .recording, elapsed: MediaTime(seconds: 1), bytes: 1_500_000, maxDuration: MediaTime(seconds: 4)))
        var shot = painter.screenshot()
        #expect(try await Self.eventually {
            shot = painter.screenshot()
            return Self.near(Self.pixel(shot, 60, 150), 255, 0, 0, tolerance: 60) && Self.near(Self.pixel(shot, 20, 16), 230, 30, 30)
        }, "the red picture and the red dot: \(Self.pixel(shot, 60, 150)) \(Self.pixel(shot, 20, 16))")
        #expect(Self.near(Self.pixel(shot, 40, 237), 230, 30, 30), "progress bar filled at 40: \(Self.pixel(shot, 40, 237))")
        #expect(Self.near(Self.pixel(shot, 200, 237), 60, 60, 60), "not yet at 200: \(Self.pixel(shot, 200, 237))")
        #expect(Self.near(Self.pixel(shot, 160, 200), 230, 30, 30), "the record button shows a square while recording")

        // Paused, three quarters of the way: two bars, the bar grown.
        preview.show(.init(state: .paused, elapsed: MediaTime(seconds: 3), bytes: 2_000_000, maxDuration: MediaTime(seconds: 4)))
        #expect(try await Self.eventually {
            shot = painter.screenshot()
            return Self.near(Self.pixel(shot, 14, 16), 255, 255, 255) && Self.near(Self.pixel(shot, 200, 237), 230, 30, 30)
        }, "the pause bars and the grown progress: \(Self.pixel(shot, 14, 16)) \(Self.pixel(shot, 200, 237))")
        #expect(!Self.near(Self.pixel(shot, 20, 16), 255, 255, 255), "a gap between the bars")
        #expect(Self.near(Self.pixel(shot, 300, 237), 60, 60, 60))

        // Idle: a hollow circle.
        preview.show(.init(state: .idle, elapsed: .zero))
        #expect(try await Self.eventually {
            shot = painter.screenshot()
            return Self.near(Self.pixel(shot, 20, 8), 200, 200, 200) && !Self.near(Self.pixel(shot, 20, 16), 200, 200, 200)
        }, "a ring: \(Self.pixel(shot, 20, 8)) \(Self.pixel(shot, 20, 16))")

        // Keys go to the window under the pointer (no window manager gives focus); then a click
        // on the record button.
        try Self.xdotool(xvfb.display, ["mousemove", "100", "120"])
        for key in ["f", "r", "space", "shift+z", "z", "s"] { try Self.xdotool(xvfb.display, ["key", key]) }
        try Self.xdotool(xvfb.display, ["mousemove", "160", "200", "click", "1"])
        let expected: [PreviewWindow.Key] = [.filter, .record, .pause, .zoomOut, .zoomIn, .swap, .record]
        #expect(try await Self.eventually { keys.all.count >= expected.count }, "\(keys.all)")
        #expect(keys.all == expected)

        // Closing the window says stop; the recording beside it lost nothing to the window.
        #expect(painter.requestClose(windowTitled: Self.title))
        #expect(try await Self.eventually { keys.all.last == .stop && preview.isClosed }, "\(keys.all)")
        await session.stop()
        let summary = try await recorder.result()
        // A frame a slot, or on a loaded machine one counted as dropped: a few at most (a window
        // that held the recording up would cost many).
        #expect(summary.droppedFrames <= 2, "\(summary.droppedFrames) dropped")
        #expect(abs(Double(summary.frames + summary.droppedFrames) - summary.duration.seconds * 30) <= 1.5,
                "\(summary.frames) frames and \(summary.droppedFrames) dropped in \(summary.duration.seconds) s")
        #expect(preview.picturesShown > 10, "\(preview.picturesShown) shown")
    }

    @Test func aFilterOnTheWindowOnlyLeavesTheRecordingAlone() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        defer { xvfb.terminate() }
        let painter = try ScreenPainter(display: xvfb.display)
        let dir = try TemporaryDirectory()
        let session = CaptureSession()
        try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30), beeps: .never,
                                               background: .red, name: "red camera"))
        let preview = PreviewWindow(settings: .init(title: Self.title, size: PixelSize(width: 320, height: 240), position: (0, 0),
                                                    display: xvfb.display))
        preview.setVideoFilter(.look(.mono))
        #expect(preview.videoFilter == .look(.mono))
        try session.addOutput(preview)
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        settings.maxRecordedDuration = MediaTime(seconds: 1)
        let url = dir.url.appendingPathComponent("red.mp4")
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        var shot = painter.screenshot()
        #expect(try await Self.eventually {
            shot = painter.screenshot()
            let c = Self.pixel(shot, 60, 150)
            return c.red > 40 && abs(Int(c.red) - Int(c.green)) < 12 && abs(Int(c.green) - Int(c.blue)) < 12
        }, "grey in the window: \(Self.pixel(shot, 60, 150))")
        _ = try await recorder.result()
        await session.stop()
        let frames = try MediaProbe.decodeRGB(url, width: 320, height: 240, maxFrames: 5)
        #expect(frames.allSatisfy { RGBColor.average(of: $0, width: 320, x: 160, y: 160, radius: 3).red > 180 }, "red in the file")
    }

    /// A window closed before the app set its key handler: the stop is kept and handed over
    /// when the handler is set, not lost (a recording would otherwise run on unseen).
    @Test func aCloseBeforeTheHandlerIsSetIsKept() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        defer { xvfb.terminate() }
        let painter = try ScreenPainter(display: xvfb.display)
        let session = CaptureSession()
        try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30), beeps: .never))
        let preview = PreviewWindow(settings: .init(title: Self.title, size: PixelSize(width: 320, height: 240), display: xvfb.display))
        try session.addOutput(preview)
        try await session.start()
        #expect(try await Self.eventually { painter.frame(ofWindowTitled: Self.title) != nil })
        #expect(painter.requestClose(windowTitled: Self.title))
        #expect(try await Self.eventually { preview.isClosed })
        let keys = KeyLog()
        preview.onKey = { keys.append($0) }
        #expect(keys.all == [.stop])
        await session.stop()
    }

    /// A plain preview shows the picture alone (it drew "○ 00:00:00 0KB" over it, always); the
    /// status bar comes with show(_:) and goes with hideStatus(); an app's message shows over
    /// the middle and goes when cleared.
    @Test func aPlainPreviewShowsThePictureAloneAndTheAppsMessage() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        defer { xvfb.terminate() }
        let painter = try ScreenPainter(display: xvfb.display)
        let session = CaptureSession()
        try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30), beeps: .never,
                                               background: .red, name: "red camera"))
        let preview = PreviewWindow(settings: .init(title: Self.title, size: PixelSize(width: 320, height: 240), position: (0, 0),
                                                    display: xvfb.display))
        try session.addOutput(preview)
        try await session.start()
        var shot = painter.screenshot()
        #expect(try await Self.eventually {
            shot = painter.screenshot()
            return Self.near(Self.pixel(shot, 60, 150), 255, 0, 0, tolerance: 60) && preview.picturesShown > 3
        }, "the red picture: \(Self.pixel(shot, 60, 150))")
        #expect(!Self.near(Self.pixel(shot, 20, 8), 200, 200, 200), "no idle ring: \(Self.pixel(shot, 20, 8))")
        #expect(Self.near(Self.pixel(shot, 95, 100), 255, 0, 0, tolerance: 60), "nothing over the middle")

        // The app's message: a dark box with white letters in the middle of the picture.
        preview.message = "No camera"
        #expect(try await Self.eventually {
            shot = painter.screenshot()
            return Self.near(Self.pixel(shot, 95, 100), 65, 0, 0, tolerance: 30)
        }, "the message's box: \(Self.pixel(shot, 95, 100))")
        var white = 0
        for y in 105..<135 { for x in 91..<229 where Self.near(Self.pixel(shot, x, y), 255, 255, 255) { white += 1 } }
        #expect(white > 100, "\(white) white pixels of letters in the box")
        #expect(preview.message == "No camera")
        preview.message = nil
        #expect(try await Self.eventually {
            shot = painter.screenshot()
            return Self.near(Self.pixel(shot, 95, 100), 255, 0, 0, tolerance: 60)
        }, "the message gone: \(Self.pixel(shot, 95, 100))")

        // The status bar when shown, and gone when hidden.
        preview.show(.init(state: .idle, elapsed: .zero))
        #expect(try await Self.eventually {
            shot = painter.screenshot()
            return Self.near(Self.pixel(shot, 20, 8), 200, 200, 200)
        }, "the idle ring: \(Self.pixel(shot, 20, 8))")
        preview.hideStatus()
        #expect(try await Self.eventually {
            shot = painter.screenshot()
            return !Self.near(Self.pixel(shot, 20, 8), 200, 200, 200)
        }, "the bar hidden: \(Self.pixel(shot, 20, 8))")
        await session.stop()
    }

    /// The window's place on the screen, as the X server has it: x, y, width, height.
    static func geometry(_ display: String, title: String) throws -> PixelRect? {
        let result = try Subprocess.run(["xdotool", "search", "--name", "^\(title)$", "getwindowgeometry", "--shell"],
                                        environment: ["DISPLAY": display])
        var values: [String: Int] = [:]
        for line in String(decoding: result.stdout, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2, let value = Int(parts[1]) { values[String(parts[0])] = value }
        }
        guard let x = values["X"], let y = values["Y"], let w = values["WIDTH"], let h = values["HEIGHT"] else { return nil }
        return PixelRect(x: x, y: y, width: w, height: h)
    }

    /// The porting stranger's portrait picture (720x1280) on a 1280x720 screen, here 360x640 on
    /// 640x480: the window opens scaled down to fit, all of it on the screen; so does a window
    /// asked to be larger than the screen, placed partly off it.
    @Test func aWindowLargerThanTheScreenOpensScaledDownAndWhollyOnIt() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        defer { xvfb.terminate() }
        let screen = PixelRect(x: 0, y: 0, width: 640, height: 480)
        func inside(_ r: PixelRect) -> Bool { r.x >= 0 && r.y >= 0 && r.x + r.width <= screen.width && r.y + r.height <= screen.height }

        let session = CaptureSession()
        try session.addInput(TestPatternSource(size: PixelSize(width: 360, height: 640), frameRate: FrameRate(30), beeps: .never))
        let portrait = PreviewWindow(settings: .init(title: "Reel portrait", display: xvfb.display))
        try session.addOutput(portrait)
        try await session.start()
        var place: PixelRect?
        #expect(try await Self.eventually {
            place = try? Self.geometry(xvfb.display, title: "Reel portrait")
            return portrait.picturesShown > 3 && place.map { $0.height > $0.width } == true
        }, "the window took the picture's shape: \(String(describing: place))")
        let sized = try #require(place)
        #expect(inside(sized), "all of the window on the 640x480 screen: \(sized)")
        #expect(sized.height == 480 && abs(sized.width - 270) <= 2, "scaled down to fit, its shape kept: \(sized)")
        await session.stop()

        let wide = CaptureSession()
        try wide.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30), beeps: .never))
        let large = PreviewWindow(settings: .init(title: "Reel large", size: PixelSize(width: 1280, height: 720),
                                                  position: (200, 200), display: xvfb.display))
        try wide.addOutput(large)
        try await wide.start()
        #expect(try await Self.eventually {
            place = try? Self.geometry(xvfb.display, title: "Reel large")
            return large.picturesShown > 3 && place != nil
        })
        let asked = try #require(place)
        #expect(inside(asked), "moved until all of it is on the screen: \(asked)")
        #expect(asked.width == 640 && asked.height == 360, "1280x720 scaled down to the screen's width: \(asked)")
        await wide.stop()
    }

    /// `showsStatus` beside a recorder: the bar follows the recorder's recording (it showed
    /// "idle 00:00:00 0KB" the whole time the stranger's recorder recorded).
    @Test func theStatusBarFollowsARecorder() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        defer { xvfb.terminate() }
        let painter = try ScreenPainter(display: xvfb.display)
        let dir = try TemporaryDirectory()
        let session = CaptureSession()
        try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30), beeps: .never,
                                               background: .blue, name: "blue camera"))
        let preview = PreviewWindow(settings: .init(title: Self.title, size: PixelSize(width: 320, height: 240), position: (0, 0),
                                                    showsStatus: true, display: xvfb.display))
        try session.addOutput(preview)
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        let recorder = Recorder(url: dir.url.appendingPathComponent("followed.mp4"), settings: settings)
        recorder.pause(at: .zero)
        try session.addOutput(recorder)
        preview.showStatus(of: recorder)
        try await session.start()
        var shot = painter.screenshot()
        #expect(try await Self.eventually {
            shot = painter.screenshot()
            return Self.near(Self.pixel(shot, 20, 8), 200, 200, 200) && preview.picturesShown > 3
        }, "not recording yet: the ring \(Self.pixel(shot, 20, 8))")
        try recorder.record()
        #expect(try await Self.eventually(10) {
            shot = painter.screenshot()
            return Self.near(Self.pixel(shot, 20, 16), 230, 30, 30)
        }, "recording: the red dot \(Self.pixel(shot, 20, 16))")
        #expect(try await Self.eventually(10) { (recorder.progress?.duration ?? .zero) > .zero }, "the recorder's time is there to show")
        try recorder.pause()
        #expect(try await Self.eventually(10) {
            shot = painter.screenshot()
            return Self.near(Self.pixel(shot, 14, 16), 255, 255, 255)
        }, "paused: the bars \(Self.pixel(shot, 14, 16))")
        await session.stop()
        _ = try await recorder.result()
    }

    @Test func aDisplayThatIsNotThereIsAClearError() async throws {
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30)))
        let preview = PreviewWindow(settings: .init(title: Self.title, display: XvfbServer.unusedDisplay()))
        try session.addOutput(preview)
        do {
            try await session.start()
            Issue.record("the session started without a display")
            await session.stop()
        } catch let error as ReelError {
            #expect(error.code == .sourceUnavailable)
            #expect(error.message.contains("cannot open the preview window"), "\(error.message)")
        }
        let wayland = ProcessInfo.processInfo.environment["WAYLAND_DISPLAY"] != nil
        #expect(PreviewWindow.unavailability(display: "") != nil || wayland)
        #expect(!PreviewWindow.isAvailable(display: "") || wayland, "a yes or no, as ScreenRecorder's isAvailable (p5: canOpen's nil meant yes)")
    }
}
