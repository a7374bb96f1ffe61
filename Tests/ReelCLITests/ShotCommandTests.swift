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

    /// A region of odd size is the picture exactly, PNG and JPEG alike: a still has no 4:2:0
    /// chroma to need an even size (it came out 100x50, its last column and row left out).
    @Test func anOddRegionIsThePictureExactly() throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let painter = try ScreenPainter(display: xvfb.display)
        painter.fill(rect: PixelRect(x: 0, y: 0, width: 640, height: 480), red: 20, green: 20, blue: 200)
        // The region's last column and row are red: they are in the picture.
        painter.fill(rect: PixelRect(x: 110, y: 20, width: 1, height: 51), red: 220, green: 30, blue: 30)
        painter.fill(rect: PixelRect(x: 10, y: 70, width: 101, height: 1), red: 220, green: 30, blue: 30)
        let dir = try TemporaryDirectory()
        for name in ["odd.png", "odd.jpg"] {
            let file = dir.url.appendingPathComponent(name)
            let r = try ReelBinary.run(["shot", "--screen=\(xvfb.display)", "--region", "101x51+10+20", "--no-cursor", "-o", file.path])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(!r.stderr.contains("note"), "nothing left out to say: \(r.stderr)")
            let format = name.hasSuffix("png") ? "PNG" : "JPEG"
            #expect(r.output.contains("Saved \(file.path) (101x51 \(format))"), "\(r.output)")
            let video = try #require(try MediaProbe.probe(file).videoStreams.first)
            #expect(video.width == 101 && video.height == 51, "\(name): \(video.width)x\(video.height)")
            guard name.hasSuffix("png") else { continue }
            let rgb = try #require(try MediaProbe.decodeRGB(file, width: 101, height: 51).first)
            for (x, y, red) in [(100, 10, true), (50, 50, true), (100, 50, true), (99, 10, false), (50, 49, false)] {
                let i = (y * 101 + x) * 3
                #expect((rgb[i] > 150 && rgb[i + 2] < 80) == red, "(\(x), \(y)): \(rgb[i...i + 2])")
            }
        }
    }

    /// A region partly off the screen is refused with where the screen ends and the part of it
    /// on the screen ('lies outside' said neither).
    @Test func aRegionPastTheScreenSaysWhereItEnds() throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let dir = try TemporaryDirectory()
        let past = try ReelBinary.run(["shot", "--screen=\(xvfb.display)", "--region", "100x100+600+420", "-o", dir.url.appendingPathComponent("past.png").path])
        #expect(past.status != 0)
        #expect(past.stderr.contains("region 100x100+600+420 extends past the 640x480 screen (x from 0 to 639, y from 0 to 479)")
                && past.stderr.contains("40x60+600+420"), "\(past.stderr)")
    }

    /// Runs `reel shot ARGS` in the background and `step` once it waits for the pick.
    func shot(_ args: [String], after seconds: Double, _ step: @escaping () -> Void) async throws -> (status: Int32, stdout: String, stderr: String) {
        let (r, finished) = try await ReelBinary.run(["shot"] + args, steps: [(seconds, step)], timeout: 20)
        if !finished { Issue.record("reel shot did not finish") }
        return (r.status, r.output, r.stderr)
    }

    /// `reel shot --region pick` under Xvfb, driven by xdotool: the rectangle dragged is the
    /// picture (no rubber band left in it) and is said for reuse; Escape gives up, writing nothing.
    @Test func aRegionPickedByADragOrGivenUp() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let painter = try ScreenPainter(display: xvfb.display)
        painter.fill(rect: PixelRect(x: 0, y: 0, width: 640, height: 480), red: 20, green: 20, blue: 200)
        painter.fill(rect: PixelRect(x: 120, y: 90, width: 200, height: 100), red: 220, green: 30, blue: 30)
        let dir = try TemporaryDirectory()
        let png = dir.url.appendingPathComponent("dragged.png")
        let drag = { WindowRecordTests.xdotool(["mousemove", "120", "90", "mousedown", "1", "mousemove", "200", "140",
                                                 "mousemove", "320", "190", "mouseup", "1"], display: xvfb.display) }
        // 201x101 dragged: the picture and the region said are 200x100, alike.
        let r = try await shot(["--screen=\(xvfb.display)", "--region", "pick", "--no-cursor", "-o", png.path], after: 1.5, drag)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("drag a rectangle") && r.stderr.contains("region 200x100+120+90 (to use it again without dragging: --region 200x100+120+90)"), "\(r.stderr)")
        #expect(r.stdout.contains("Saved \(png.path) (200x100 PNG)"), "\(r.stdout)")
        let rgb = try #require(try MediaProbe.decodeRGB(png, width: 200, height: 100).first)
        // Red everywhere, its edges too: the rectangle drawn while dragging is gone.
        for (x, y) in [(0, 0), (1, 1), (199, 0), (100, 50), (0, 99), (198, 98)] {
            let i = (y * 200 + x) * 3
            #expect(abs(Int(rgb[i]) - 220) <= 8 && abs(Int(rgb[i + 1]) - 30) <= 8 && abs(Int(rgb[i + 2]) - 30) <= 8, "(\(x), \(y)): \(rgb[i...i + 2])")
        }

        let never = dir.url.appendingPathComponent("never.png")
        let escape = { WindowRecordTests.xdotool(["key", "Escape"], display: xvfb.display) }
        let givenUp = try await shot(["--screen=\(xvfb.display)", "--region", "pick", "-o", never.path], after: 1.5, escape)
        #expect(givenUp.status == 1 && givenUp.stderr.contains("Escape or Ctrl-C gave up"), "\(givenUp.stderr)")
        #expect(!FileManager.default.fileExists(atPath: never.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted() == ["dragged.png"])
    }

    /// `reel shot --window=pick`: the window clicked is the picture, and is said to be given
    /// again without a click (with --json, a `picked` event before `saved`).
    @Test func aWindowPickedByAClickIsSaid() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let painter = try ScreenPainter(display: xvfb.display)
        let window = painter.openWindow(title: "Shot Me", rect: PixelRect(x: 200, y: 150, width: 120, height: 80), red: 220, green: 30, blue: 30)
        let dir = try TemporaryDirectory()
        let png = dir.url.appendingPathComponent("window.png")
        let click = { WindowRecordTests.xdotool(["mousemove", "250", "190", "click", "1"], display: xvfb.display) }
        let r = try await shot(["--screen=\(xvfb.display)", "--window=pick", "--no-cursor", "--json", "-o", png.path], after: 1.5, click)
        #expect(r.status == 0, "\(r.stderr)")
        let id = "0x" + String(window, radix: 16)
        #expect(r.stderr.contains("reel: window \(id) \"Shot Me\" (to use it again without clicking: --window=\(id))"), "\(r.stderr)")
        let events = r.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(events.map { $0["event"] as? String } == ["picked", "saved"], "\(r.stdout)")
        #expect(events.first?["window"] as? String == id && events.first?["title"] as? String == "Shot Me", "\(r.stdout)")
        #expect(events.last?["width"] as? Int == 120 && events.last?["height"] as? Int == 80, "\(r.stdout)")
    }

    /// On Wayland there is no region to drag: the portal's dialog chooses what is shared. Said
    /// (exit 1, nothing written) before any portal is asked, by reel shot and reel record alike,
    /// whether Wayland is named (--screen=wayland) or the session's (WAYLAND_DISPLAY).
    @Test func onWaylandARegionPickSaysThePortalsDialogChooses() throws {
        let dir = try TemporaryDirectory()
        let runtime = dir.url.appendingPathComponent("run")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // No desktop answers here: the refusal must come before one is looked for.
        let session = ["WAYLAND_DISPLAY": "wayland-none", "XDG_RUNTIME_DIR": runtime.path, "DISPLAY": "",
                       "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(runtime.path)/no-bus"]
        let cases: [([String], [String: String])] = [
            (["shot", "--screen=wayland", "--region", "pick", "-o", dir.url.appendingPathComponent("a.png").path], session),
            (["shot", "--region", "pick", "-o", dir.url.appendingPathComponent("b.png").path], session),
            (["record", "--screen=wayland", "--region", "pick", "--duration", "1", "-o", dir.url.appendingPathComponent("c.mp4").path], session),
        ]
        for (arguments, environment) in cases {
            let r = try ReelBinary.run(arguments, environment: environment)
            #expect(r.status == 1, "\(arguments): \(r.stderr)")
            #expect(r.stderr.contains("on Wayland the desktop portal's own dialog chooses what is shared, so there is no region to drag"),
                    "\(arguments): \(r.stderr)")
            #expect(r.stderr.contains("leave out --region pick"), "\(r.stderr)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path) == ["run"], "nothing written")
    }

    /// A picture into a folder that does not exist is refused naming the folder, as a
    /// recording is (it said "Input/output error").
    @Test func aMissingFolderIsSaidAsSuch() throws {
        let dir = try TemporaryDirectory()
        let r = try ReelBinary.run(["shot", "--camera=test", "--size", "320x240", "-o", dir.url.appendingPathComponent("nodir/x.png").path])
        #expect(r.status == 1 && r.stderr.contains("the folder \(dir.url.appendingPathComponent("nodir").path) does not exist"), "\(r.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).isEmpty)
    }
}
