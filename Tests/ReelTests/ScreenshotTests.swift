import Foundation
import Testing
import Reel
import ReelTestSupport

/// `ScreenRecorder.screenshot()` against a real Xvfb: what was drawn, in the region's size, and
/// written as PNG and JPEG files that decode to it.
@Suite(.serialized, .tags(.realTime)) struct ScreenshotTests {
    /// Pixel reading and colour comparison as the screen recordings' tests do them.
    static let colours = ScreenRecordingTests()
    static func pixel(_ rgb: [UInt8], width: Int, x: Int, y: Int) -> (Int, Int, Int) { colours.pixel(rgb, width: width, x: x, y: y) }
    static func close(_ a: (Int, Int, Int), _ b: (Int, Int, Int), tolerance: Int) -> Bool { colours.close(a, b, tolerance: tolerance) }

    @Test func aScreenshotOfARegionHoldsWhatWasDrawnAndIsWrittenWhole() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let painter = try ScreenPainter(display: xvfb.display)
        painter.fill(rect: PixelRect(x: 100, y: 100, width: 100, height: 80), red: 220, green: 30, blue: 30)
        painter.fill(rect: PixelRect(x: 200, y: 100, width: 100, height: 80), red: 30, green: 200, blue: 40)
        let screen = ScreenRecorder(configuration: .init(display: xvfb.display, region: PixelRect(x: 100, y: 100, width: 200, height: 80)))

        let picture = try await screen.screenshot()
        #expect(picture.format == .rgba)
        #expect(picture.width == 200 && picture.height == 80)
        let (red, green) = picture.withUnsafePlane(0) { bytes, stride in
            ((Int(bytes[40 * stride + 50 * 4]), Int(bytes[40 * stride + 50 * 4 + 1]), Int(bytes[40 * stride + 50 * 4 + 2])),
             (Int(bytes[40 * stride + 150 * 4]), Int(bytes[40 * stride + 150 * 4 + 1]), Int(bytes[40 * stride + 150 * 4 + 2])))
        }
        #expect(Self.close(red, (220, 30, 30), tolerance: 8) && Self.close(green, (30, 200, 40), tolerance: 8), "\(red) \(green)")
        #expect(!screen.isActive, "the screen is closed again")

        let dir = try TemporaryDirectory()
        let png = dir.url.appendingPathComponent("shot.png")
        #expect(try await screen.screenshot(to: png) == png)
        #expect(try MediaProbe.probe(png).videoStreams.first?.codec == "png")
        // Opaque: no alpha channel (as RGBA, X11's zero fourth byte made every pixel transparent).
        let format = try Subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=pix_fmt", "-of", "csv=p=0", png.path])
        #expect(format.output.trimmingCharacters(in: .whitespacesAndNewlines) == "rgb24", "\(format.output)")
        let pngPixels = try #require(try MediaProbe.decodeRGB(png, width: 200, height: 80).first)
        #expect(Self.pixel(pngPixels, width: 200, x: 50, y: 40) == red, "PNG is lossless")
        #expect(Self.pixel(pngPixels, width: 200, x: 150, y: 40) == green)

        let jpeg = dir.url.appendingPathComponent("shot.jpg")
        try await screen.screenshot(to: jpeg)
        #expect(try MediaProbe.probe(jpeg).videoStreams.first?.codec == "mjpeg")
        let jpegPixels = try #require(try MediaProbe.decodeRGB(jpeg, width: 200, height: 80).first)
        #expect(Self.close(Self.pixel(jpegPixels, width: 200, x: 50, y: 40), red, tolerance: 12))

        // Never over a file unless asked; a kind of file it cannot write is refused.
        let mine = Data("mine".utf8)
        try mine.write(to: png)
        let taken = await #expect(throws: ReelError.self) { try await screen.screenshot(to: png) }
        #expect(taken?.code == .fileExists)
        #expect(try Data(contentsOf: png) == mine)
        try await screen.screenshot(to: png, overwrite: true)
        #expect(try MediaProbe.probe(png).videoStreams.first?.codec == "png")
        let bmp = await #expect(throws: ReelError.self) { try await screen.screenshot(to: dir.url.appendingPathComponent("shot.bmp")) }
        #expect(bmp?.code == .unsupportedFormat)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).filter { $0.hasPrefix(".") }.isEmpty)
    }

    /// A region of odd size is taken and written whole (it came out 100x50: the live frame was
    /// made even, as 4:2:0 video needs and a still does not).
    @Test func anOddRegionIsTakenWhole() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let painter = try ScreenPainter(display: xvfb.display)
        painter.fill(rect: PixelRect(x: 0, y: 0, width: 640, height: 480), red: 20, green: 20, blue: 200)
        painter.fill(rect: PixelRect(x: 110, y: 20, width: 1, height: 51), red: 220, green: 30, blue: 30)
        let screen = ScreenRecorder(configuration: .init(display: xvfb.display, region: PixelRect(x: 10, y: 20, width: 101, height: 51), capturesCursor: false))
        let picture = try await screen.screenshot()
        #expect(picture.width == 101 && picture.height == 51)
        let last = picture.withUnsafePlane(0) { bytes, stride in (Int(bytes[50 * stride + 100 * 4]), Int(bytes[50 * stride + 100 * 4 + 2])) }
        #expect(last.0 > 150 && last.1 < 80, "the last column is the region's: \(last)")
        let dir = try TemporaryDirectory()
        for name in ["odd.png", "odd.jpg"] {
            let file = try await screen.screenshot(to: dir.url.appendingPathComponent(name))
            let video = try #require(try MediaProbe.probe(file).videoStreams.first)
            #expect(video.width == 101 && video.height == 51, "\(name): \(video.width)x\(video.height)")
        }
    }
}
