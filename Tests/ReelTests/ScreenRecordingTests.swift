import Foundation
import Testing
import Reel
import ReelTestSupport

/// Screen recordings against a real Xvfb, checked by decoding the file.
@Suite(.tags(.realTime)) struct ScreenRecordingTests {
    /// The colour of the decoded RGB pixel at (x, y).
    func pixel(_ rgb: [UInt8], width: Int, x: Int, y: Int) -> (Int, Int, Int) {
        let i = (y * width + x) * 3
        return (Int(rgb[i]), Int(rgb[i + 1]), Int(rgb[i + 2]))
    }

    func close(_ a: (Int, Int, Int), _ b: (Int, Int, Int), tolerance: Int = 24) -> Bool {
        abs(a.0 - b.0) <= tolerance && abs(a.1 - b.1) <= tolerance && abs(a.2 - b.2) <= tolerance
    }

    @Test func fullHDRecordingShowsWhatWasDrawn() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 1920, height: 1080))
        let painter = try ScreenPainter(display: xvfb.display)
        painter.fill(rect: PixelRect(x: 0, y: 0, width: 960, height: 540), red: 220, green: 30, blue: 30)
        painter.fill(rect: PixelRect(x: 960, y: 540, width: 960, height: 540), red: 30, green: 200, blue: 40)
        painter.fill(rect: PixelRect(x: 1700, y: 40, width: 200, height: 200), red: 40, green: 60, blue: 230)
        painter.movePointer(x: 1900, y: 1060)

        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("screen.mp4")
        let session = CaptureSession()
        try session.addInput(X11ScreenSource(display: xvfb.display, frameRate: FrameRate(30)))
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        settings.maxRecordedDuration = MediaTime(value: 3, timescale: 2)
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()

        let probe = try MediaProbe.probe(url)
        let video = try #require(probe.videoStreams.first)
        #expect(video.width == 1920 && video.height == 1080)
        #expect(video.codec == "h264")
        #expect(summary.frames + summary.droppedFrames == 45)
        #expect(abs((video.duration ?? 0) - 1.5) <= 1.0 / 30 + 0.001)
        let frames = try MediaProbe.decodeRGB(url, width: 1920, height: 1080, start: 1.0, maxFrames: 1)
        let rgb = try #require(frames.first)
        #expect(close(pixel(rgb, width: 1920, x: 480, y: 270), (220, 30, 30)))
        #expect(close(pixel(rgb, width: 1920, x: 1440, y: 810), (30, 200, 40)))
        #expect(close(pixel(rgb, width: 1920, x: 1800, y: 140), (40, 60, 230)))
        #expect(close(pixel(rgb, width: 1920, x: 1440, y: 270), (0, 0, 0), tolerance: 20), "the background stays black")
    }

    @Test func regionRecordingHasTheRegionsSizeAndContent() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 1280, height: 720))
        let painter = try ScreenPainter(display: xvfb.display)
        painter.fill(rect: PixelRect(x: 100, y: 100, width: 320, height: 240), red: 240, green: 200, blue: 20)
        painter.fill(rect: PixelRect(x: 420, y: 100, width: 320, height: 240), red: 20, green: 200, blue: 220)

        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("region.mkv")
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(X11ScreenSource(display: xvfb.display, region: PixelRect(x: 100, y: 100, width: 640, height: 240),
                                             frameRate: FrameRate(30), drawsCursor: false))
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        settings.maxRecordedDuration = MediaTime(value: 1, timescale: 1)
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()

        #expect(summary.frames == 30)
        let probe = try MediaProbe.probe(url)
        let video = try #require(probe.videoStreams.first)
        #expect(video.width == 640 && video.height == 240)
        let rgb = try #require(try MediaProbe.decodeRGB(url, width: 640, height: 240, maxFrames: 1).first)
        #expect(close(pixel(rgb, width: 640, x: 160, y: 120), (240, 200, 20)))
        #expect(close(pixel(rgb, width: 640, x: 480, y: 120), (20, 200, 220)))
    }

    /// A region of odd size (321x241) is recorded at 320x240 with its last column and row left
    /// out: the picture is not squeezed by a pixel. Here the left-out column and row are red
    /// and the rest yellow; squeezed, the last column and row of the recording were the red ones.
    @Test func anOddRegionIsCutToAnEvenSizeNotSqueezed() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let painter = try ScreenPainter(display: xvfb.display)
        painter.fill(rect: PixelRect(x: 0, y: 0, width: 640, height: 480), red: 230, green: 20, blue: 20)
        painter.fill(rect: PixelRect(x: 10, y: 10, width: 320, height: 240), red: 240, green: 200, blue: 20)
        painter.fill(rect: PixelRect(x: 10, y: 10, width: 4, height: 4), red: 20, green: 200, blue: 220)

        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("odd.mkv")
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(X11ScreenSource(display: xvfb.display, region: PixelRect(x: 10, y: 10, width: 321, height: 241),
                                             frameRate: FrameRate(30), drawsCursor: false))
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        settings.video.rateControl = .crf(10)
        settings.maxRecordedDuration = MediaTime(value: 1, timescale: 2)
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()

        #expect(summary.videoSize == PixelSize(width: 320, height: 240))
        let video = try #require(try MediaProbe.probe(url).videoStreams.first)
        #expect(video.width == 320 && video.height == 240)
        let rgb = try #require(try MediaProbe.decodeRGB(url, width: 320, height: 240, maxFrames: 1).first)
        for (x, y) in [(319, 120), (160, 239), (319, 239), (318, 238), (160, 120)] {
            #expect(close(pixel(rgb, width: 320, x: x, y: y), (240, 200, 20), tolerance: 30), "(\(x), \(y)): \(pixel(rgb, width: 320, x: x, y: y))")
        }
        #expect(close(pixel(rgb, width: 320, x: 1, y: 1), (20, 200, 220), tolerance: 30), "the corner stays where it was")
    }

    @Test func scaledRecordingUsesTheRequestedSize() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 1280, height: 720))
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("scaled.mp4")
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(X11ScreenSource(display: xvfb.display, frameRate: FrameRate(30)))
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        settings.video.size = PixelSize(width: 640, height: 360)
        settings.maxRecordedDuration = MediaTime(value: 1, timescale: 2)
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        _ = try await recorder.result()
        await session.stop()
        let video = try #require(try MediaProbe.probe(url).videoStreams.first)
        #expect(video.width == 640 && video.height == 360)
        #expect(video.frameCount == 15)
    }
}
