import Foundation
import Testing
import Reel
import ReelTestSupport

/// `reel shot` as a user meets it: a region of a real X server, the test camera, a dated name
/// in the pictures folder, and never over a file.
@Suite(.serialized, .tags(.realTime)) struct ShotCommandTests {
    @Test func takesARegionTheTestCameraAndADatedPicture() throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let painter = try ScreenPainter(display: xvfb.display)
        painter.fill(rect: PixelRect(x: 100, y: 100, width: 200, height: 80), red: 220, green: 30, blue: 30)
        let dir = try TemporaryDirectory()
        let png = dir.url.appendingPathComponent("region.png")
        let r = try ReelBinary.run(["shot", "--screen=\(xvfb.display)", "--region", "200x80+100+100", "-o", png.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.output.contains("Saved \(png.path) (200x80 PNG)"), "\(r.output)")
        let rgb = try #require(try MediaProbe.decodeRGB(png, width: 200, height: 80).first)
        let i = (40 * 200 + 100) * 3
        #expect(abs(Int(rgb[i]) - 220) <= 8 && abs(Int(rgb[i + 1]) - 30) <= 8 && abs(Int(rgb[i + 2]) - 30) <= 8, "\(rgb[i...i + 2])")

        let before = try Data(contentsOf: png)
        let again = try ReelBinary.run(["shot", "--screen=\(xvfb.display)", "-o", png.path])
        #expect(again.status == 1)
        #expect(again.stderr.contains("exists"), "\(again.stderr)")
        #expect(try Data(contentsOf: png) == before, "never over a file unless asked")

        let jpeg = dir.url.appendingPathComponent("camera.jpg")
        let camera = try ReelBinary.run(["shot", "--camera=test", "--size", "320x240", "-o", jpeg.path])
        #expect(camera.status == 0, "\(camera.stderr)")
        let video = try #require(try MediaProbe.probe(jpeg).videoStreams.first)
        #expect(video.codec == "mjpeg" && video.width == 320 && video.height == 240)

        let pictures = dir.url.appendingPathComponent("Pictures")
        let dated = try ReelBinary.run(["shot", "--camera=test", "--size", "320x240"], environment: ["XDG_PICTURES_DIR": pictures.path])
        #expect(dated.status == 0, "\(dated.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: pictures.path)
        #expect(names.count == 1 && names[0].hasPrefix("Reel ") && names[0].hasSuffix(".png"), "\(names)")

        let refused = try ReelBinary.run(["shot", "--camera=test", "-o", dir.url.appendingPathComponent("x.gif").path])
        #expect(refused.status == 2 && refused.stderr.contains(".png or a .jpg"), "\(refused.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).filter { $0.hasPrefix(".") }.isEmpty)
    }
}
