import Foundation
import Testing
import Reel
import ReelTestSupport

/// `reel record --window` on a real X server (Xvfb, which has Composite): the window's own
/// picture whatever covers or moves it, a resize scaled into the recording's size, a hidden
/// window's last picture held, a closed window ending the source, and clear errors.
@Suite(.serialized, .tags(.realTime)) struct WindowRecordTests {
    static let red = RGBColor(red: 230, green: 20, blue: 20)

    /// Runs `reel record ARGS`, calls each step after its delay (seconds from the start), and
    /// waits for reel to finish.
    func record(_ args: [String], steps: [(Double, () -> Void)] = []) async throws -> (status: Int32, stdout: String, stderr: String) {
        let (r, finished) = try await ReelBinary.run(["record"] + args, steps: steps)
        if !finished { Issue.record("reel did not finish") }
        return (r.status, r.output, r.stderr)
    }

    /// Runs xdotool with `arguments` on `display` (a click, a drag, a key), expecting it to work.
    static func xdotool(_ arguments: [String], display: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let result = try? Subprocess.run(["xdotool"] + arguments, environment: ["DISPLAY": display])
        #expect(result?.status == 0, "xdotool: \(result?.stderr ?? "did not run")", sourceLocation: sourceLocation)
    }

    /// Decodes every frame with ffmpeg, failing on any decoding error.
    func decodeCleanly(_ url: URL, width: Int, height: Int) throws -> [[UInt8]] {
        let check = try Subprocess.run(["ffmpeg", "-v", "error", "-i", url.path, "-f", "null", "-"])
        #expect(check.status == 0 && check.stderr.isEmpty, "decoding errors: \(check.stderr)")
        return try MediaProbe.decodeRGB(url, width: width, height: height)
    }

    @Test("a covered window moved partly off the screen is recorded with its own colour at its own size in every frame")
    func coveredAndMoved() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let painter = try ScreenPainter(display: xvfb.display)
        let target = painter.openWindow(title: "Reel Target", rect: PixelRect(x: 40, y: 40, width: 200, height: 150),
                                        red: Self.red.red, green: Self.red.green, blue: Self.red.blue)
        let cover = painter.openWindow(title: "Cover", className: "Other", rect: PixelRect(x: 100, y: 80, width: 300, height: 200),
                                       red: 0, green: 0, blue: 255)
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("window.mp4")
        let r = try await record(["--screen=\(xvfb.display)", "--window=reel target", "--no-cursor", "--preset", "ultrafast",
                                  "--duration", "3", "-o", url.path], steps: [
            (1.0, { painter.place(window: target, at: PixelRect(x: 520, y: 400, width: 200, height: 150)) }),
            (1.5, { painter.place(window: cover, at: PixelRect(x: 450, y: 350, width: 190, height: 130)); painter.raise(window: cover) }),
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let probe = try MediaProbe.probe(url)
        let video = try #require(probe.videoStreams.first)
        #expect(video.width == 200 && video.height == 150)
        let frames = try decodeCleanly(url, width: 200, height: 150)
        #expect(frames.count >= 60, "about 3 s at 30 fps: \(frames.count)")
        for (index, frame) in frames.enumerated() {
            for (x, y) in [(5, 5), (100, 75), (194, 144), (150, 40), (60, 120)] {
                let colour = RGBColor.average(of: frame, width: 200, x: x, y: y)
                #expect(colour.distance(to: Self.red) <= 40, "frame \(index) at (\(x), \(y)): \(colour)")
            }
        }
    }

    @Test("a window resized mid-recording is letterboxed (fit) or cut to fill (fill); the file stays valid")
    func resized() async throws {
        for mode in ["fit", "fill"] {
            let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
            let painter = try ScreenPainter(display: xvfb.display)
            let target = painter.openWindow(title: "Growing", rect: PixelRect(x: 10, y: 10, width: 201, height: 151),
                                            red: Self.red.red, green: Self.red.green, blue: Self.red.blue)
            let dir = try TemporaryDirectory()
            let url = dir.url.appendingPathComponent("resized-\(mode).mkv")
            let r = try await record(["--screen=\(xvfb.display)", "--window=\(String(target))", "--window-size", mode, "--no-cursor",
                                      "--preset", "ultrafast", "--duration", "3", "-o", url.path], steps: [
                (1.0, { painter.place(window: target, at: PixelRect(x: 10, y: 10, width: 400, height: 100)) }),
            ])
            #expect(r.status == 0, "\(r.stderr)")
            let video = try #require(try MediaProbe.probe(url).videoStreams.first)
            // The size at the start, made even.
            #expect(video.width == 200 && video.height == 150, "\(mode)")
            let frames = try decodeCleanly(url, width: 200, height: 150)
            #expect(frames.count >= 60, "\(mode): \(frames.count)")
            let first = try #require(frames.first), last = try #require(frames.last)
            #expect(RGBColor.average(of: first, width: 200, x: 100, y: 10).distance(to: Self.red) <= 40, "\(mode)")
            #expect(RGBColor.average(of: last, width: 200, x: 100, y: 75).distance(to: Self.red) <= 40, "\(mode)")
            // 400x100 into 200x150: fit is 200x50 with bars above and below; fill is all window.
            let top = RGBColor.average(of: last, width: 200, x: 100, y: 10)
            if mode == "fit" {
                #expect(top.distance(to: RGBColor(red: 0, green: 0, blue: 0)) <= 30, "fit: a black bar at the top: \(top)")
            } else {
                #expect(top.distance(to: Self.red) <= 40, "fill: the window to the top: \(top)")
            }
        }
    }

    @Test("a hidden window's last picture is held and said; a closed window ends the recording cleanly, finalised")
    func hiddenThenClosed() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let painter = try ScreenPainter(display: xvfb.display)
        let target = painter.openWindow(title: "Short Lived", rect: PixelRect(x: 10, y: 10, width: 160, height: 120),
                                        red: Self.red.red, green: Self.red.green, blue: Self.red.blue)
        painter.focus(window: target)
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("closed.mp4")
        let r = try await record(["--screen=\(xvfb.display)", "--window", "--no-cursor", "--preset", "ultrafast", "-o", url.path], steps: [
            (1.0, { painter.show(window: target, false) }),
            (2.0, { painter.show(window: target, true) }),
            (2.5, { painter.close(window: target) }),
        ])
        // Finalised, but the window's own picture is missing for a while and at the end.
        #expect(r.status == 3, "\(r.stderr)")
        #expect(r.stderr.contains("is minimised or hidden"), "\(r.stderr)")
        #expect(r.stderr.contains("is back"), "\(r.stderr)")
        #expect(r.stderr.contains("was closed"), "\(r.stderr)")
        #expect(r.stdout.contains("every source was lost or ended"), "\(r.stdout)")
        let frames = try decodeCleanly(url, width: 160, height: 120)
        #expect(frames.count >= 60 && frames.count <= 90, "about 2.5 s, the hidden second included: \(frames.count)")
        for (index, frame) in frames.enumerated() {
            let colour = RGBColor.average(of: frame, width: 160, x: 80, y: 60)
            #expect(colour.distance(to: Self.red) <= 40, "frame \(index): \(colour)")
        }
        let head = try FileHandle(forReadingFrom: url).read(upToCount: 1 << 16) ?? Data()
        let moov = head.range(of: Data("moov".utf8)), mdat = head.range(of: Data("mdat".utf8))
        #expect(moov != nil && (mdat == nil || moov!.lowerBound < mdat!.lowerBound), "finalised")
    }

    @Test("a window that nothing matches, or several windows that a name matches, is a clear error listing the windows")
    func noSuchWindow() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let painter = try ScreenPainter(display: xvfb.display)
        painter.openWindow(title: "Editor one", rect: PixelRect(x: 0, y: 0, width: 100, height: 100), red: 9, green: 9, blue: 9,
                           processID: getpid())
        painter.openWindow(title: "Editor two", rect: PixelRect(x: 100, y: 0, width: 100, height: 100), red: 9, green: 9, blue: 9,
                           processID: getpid())
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("none.mp4")
        let none = try await record(["--screen=\(xvfb.display)", "--window=browser", "--duration", "1", "-o", url.path])
        #expect(none.status != 0)
        #expect(none.stderr.contains("no window on display \(xvfb.display) has \"browser\""), "\(none.stderr)")
        #expect(none.stderr.contains("\"Editor one\"") && none.stderr.contains("\"Editor two\""), "\(none.stderr)")
        let several = try await record(["--screen=\(xvfb.display)", "--window=editor", "--duration", "1", "-o", url.path])
        #expect(several.status != 0)
        #expect(several.stderr.contains("2 windows on display \(xvfb.display) match \"editor\""), "\(several.stderr)")
        #expect(!FileManager.default.fileExists(atPath: url.path), "no file is left")
        // reel devices lists them with their class and size.
        let devices = try Subprocess.run([ReelBinary.url.path, "devices"], environment: ["DISPLAY": xvfb.display, "PATH": "/usr/bin:/bin"])
        // Where each is and which program shows it, so that alike windows can be told apart.
        #expect(devices.output.contains("\"Editor one\" (ReelTest) 100x100+0+0, "), "\(devices.output)")
        #expect(devices.output.contains("\"Editor two\" (ReelTest) 100x100+100+0, "), "\(devices.output)")
        #expect(devices.output.contains("(pid \(getpid()))"), "\(devices.output)")
        let json = try Subprocess.run([ReelBinary.url.path, "devices", "--json"], environment: ["DISPLAY": xvfb.display, "PATH": "/usr/bin:/bin"])
        let object = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any])
        let windows = try #require(object["windows"] as? [[String: Any]])
        #expect(windows.compactMap { $0["title"] as? String } == ["Editor one", "Editor two"])
        #expect(windows.first?["class"] as? String == "ReelTest" && windows.first?["width"] as? Int == 100)
        #expect((windows.first?["id"] as? String)?.hasPrefix("0x") == true)
        #expect(windows.first?["pid"] as? Int == Int(getpid()) && windows.first?["program"] is String, "\(windows)")
    }
}

extension WindowRecordTests {
    @Test("--window=pick records the window clicked (xdotool clicks it)")
    func pickedByAClick() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let painter = try ScreenPainter(display: xvfb.display)
        painter.openWindow(title: "Left", rect: PixelRect(x: 0, y: 0, width: 120, height: 90), red: 0, green: 0, blue: 255)
        let right = painter.openWindow(title: "Right", rect: PixelRect(x: 300, y: 200, width: 160, height: 100),
                                       red: Self.red.red, green: Self.red.green, blue: Self.red.blue)
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("picked.mkv")
        let click = { WindowRecordTests.xdotool(["mousemove", "350", "250", "click", "1"], display: xvfb.display) }
        let r = try await record(["--screen=\(xvfb.display)", "--window=pick", "--no-cursor", "--preset", "ultrafast", "--json",
                                  "--duration", "1", "-o", url.path], steps: [(1.0, click)])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("click the window to record"), "\(r.stderr)")
        // The window clicked is said, to be given again without a click; with --json as the
        // first event, before started.
        let id = "0x" + String(right, radix: 16)
        #expect(r.stderr.contains("reel: window \(id) \"Right\" (to use it again without clicking: --window=\(id))"), "\(r.stderr)")
        let events = r.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(events.first?["event"] as? String == "picked" && events.first?["window"] as? String == id
                && events.first?["title"] as? String == "Right", "\(r.stdout)")
        #expect(events.dropFirst().first?["event"] as? String == "started", "\(r.stdout)")
        let video = try #require(try MediaProbe.probe(url).videoStreams.first)
        #expect(video.width == 160 && video.height == 100)
        let frames = try decodeCleanly(url, width: 160, height: 100)
        #expect(!frames.isEmpty)
        for frame in frames {
            #expect(RGBColor.average(of: frame, width: 160, x: 80, y: 50).distance(to: Self.red) <= 40)
        }
    }
}

extension WindowRecordTests {
    @Test("Ctrl-C while --window=pick waits for the click gives up at once, writing nothing")
    func pickGivenUp() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("never.mp4")
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--screen=\(xvfb.display)", "--window=pick", "-o", url.path]
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        try await Task.sleep(for: .seconds(1))
        process.interrupt()
        let deadline = Date(timeIntervalSinceNow: 5)
        while process.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!process.isRunning, "reel still waits for the click")
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(stderr.contains("no file was written"), "\(stderr)")
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }
}

extension WindowRecordTests {
    @Test("a closed window ends the video while the sound goes on to the end")
    func closedWhileTheToneGoesOn() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let painter = try ScreenPainter(display: xvfb.display)
        let target = painter.openWindow(title: "Closing", rect: PixelRect(x: 10, y: 10, width: 160, height: 120),
                                        red: Self.red.red, green: Self.red.green, blue: Self.red.blue)
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("closing.mkv")
        let r = try await record(["--screen=\(xvfb.display)", "--window=closing", "--tone", "--preset", "ultrafast", "--duration", "3",
                                  "-o", url.path], steps: [(1.5, { painter.close(window: target) })])
        #expect(r.status == 3, "\(r.stderr)")
        #expect(r.stderr.contains("lost window 0x\(String(target, radix: 16)) \"Closing\""), "\(r.stderr)")
        #expect(r.stderr.contains("recording goes on with the other sources"), "\(r.stderr)")
        let probe = try MediaProbe.probe(url)
        let frames = try #require(probe.videoStreams.first?.frameCount)
        #expect(frames >= 30 && frames <= 60, "about 1.5 s of the window: \(frames)")
        let audio = try #require(probe.audioStreams.first)
        #expect((audio.duration ?? probe.duration) > 2.8, "the tone for the whole 3 s: \(audio.duration ?? -1)")
    }
}

extension WindowRecordTests {
    @Test("an untitled xmessage window is listed as (no title), recorded by id and by class; unmapped, it is refused as not shown; a click on the desktop is said")
    func untitledXmessage() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let xmessage = Process()
        xmessage.executableURL = URL(fileURLWithPath: "/usr/bin/xmessage")
        xmessage.arguments = ["-display", xvfb.display, "-geometry", "+100+100", "-title", "", "hello"]
        xmessage.standardOutput = FileHandle.nullDevice
        xmessage.standardError = FileHandle.nullDevice
        try xmessage.run()
        defer { kill(xmessage.processIdentifier, SIGKILL); xmessage.waitUntilExit() }
        let env = ["DISPLAY": xvfb.display, "PATH": "/usr/bin:/bin"]
        var id = ""
        for _ in 0..<100 where id.isEmpty {
            try await Task.sleep(for: .milliseconds(50))
            let found = try Subprocess.run(["xdotool", "search", "--onlyvisible", "--class", "Xmessage"], environment: env)
            id = found.output.split(separator: "\n").first.map(String.init) ?? ""
        }
        let number = try #require(UInt32(id), "xdotool found no Xmessage window")
        let window = "0x" + String(number, radix: 16)
        let devices = try Subprocess.run([ReelBinary.url.path, "devices"], environment: env)
        #expect(devices.output.contains("\(window) (no title) (Xmessage)"), "\(devices.output)")

        let dir = try TemporaryDirectory()
        for (index, selector) in ["--window=\(window)", "--window=Xmessage"].enumerated() {
            let url = dir.url.appendingPathComponent("x\(index).mkv")
            let r = try await record(["--screen=\(xvfb.display)", selector, "--no-cursor", "--preset", "ultrafast", "--duration", "1", "-o", url.path])
            #expect(r.status == 0, "\(selector): \(r.stderr)")
            #expect(try MediaProbe.probe(url).videoStreams.count == 1)
        }

        let picked = dir.url.appendingPathComponent("desktop.mkv")
        let click = {
            let result = try? Subprocess.run(["xdotool", "mousemove", "500", "400", "click", "1"], environment: env)
            #expect(result?.status == 0, "xdotool: \(result?.stderr ?? "did not run")")
        }
        let desktop = try await record(["--screen=\(xvfb.display)", "--window=pick", "--duration", "1", "-o", picked.path], steps: [(1.0, click)])
        #expect(desktop.status != 0)
        #expect(desktop.stderr.contains("the click on display \(xvfb.display) was on the desktop, not on a window"), "\(desktop.stderr)")
        #expect(!FileManager.default.fileExists(atPath: picked.path))

        _ = try Subprocess.run(["xdotool", "windowunmap", "--sync", id], environment: env)
        let hidden = dir.url.appendingPathComponent("hidden.mkv")
        let unmapped = try await record(["--screen=\(xvfb.display)", "--window=\(window)", "--duration", "1", "-o", hidden.path])
        #expect(unmapped.status != 0)
        #expect(unmapped.stderr.contains("window \(window) (no title) is not shown (minimised or unmapped)"), "\(unmapped.stderr)")
        #expect(!FileManager.default.fileExists(atPath: hidden.path))
    }
}

extension WindowRecordTests {
    @Test("--region pick records the rectangle dragged (xdotool drags it) and says it for reuse")
    func regionPickedByADrag() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let painter = try ScreenPainter(display: xvfb.display)
        painter.openWindow(title: "Target", rect: PixelRect(x: 80, y: 180, width: 220, height: 180),
                           red: Self.red.red, green: Self.red.green, blue: Self.red.blue)
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("dragged.mkv")
        let drag = { WindowRecordTests.xdotool(["mousemove", "100", "200", "mousedown", "1", "mousemove", "180", "260",
                                                 "mousemove", "260", "320", "mouseup", "1"], display: xvfb.display) }
        // 161x121 dragged: the region said is the 160x120 recorded, so that it records the same again.
        let r = try await record(["--screen=\(xvfb.display)", "--region", "pick", "--no-cursor", "--preset", "ultrafast", "--json",
                                  "--duration", "1", "-o", url.path], steps: [(1.5, drag)])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("drag a rectangle") && r.stderr.contains("region 160x120+100+200 (to use it again without dragging: --region 160x120+100+200)"),
                "\(r.stderr)")
        #expect(r.stderr.components(separatedBy: "to use it again").count == 2, "said once: \(r.stderr)")
        let first = r.stdout.split(separator: "\n").first.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(first?["event"] as? String == "picked" && first?["region"] as? String == "160x120+100+200"
                && first?["width"] as? Int == 160 && first?["x"] as? Int == 100, "\(r.stdout)")
        let video = try #require(try MediaProbe.probe(url).videoStreams.first)
        #expect(video.width == 160 && video.height == 120)
        let frames = try decodeCleanly(url, width: 160, height: 120)
        #expect(!frames.isEmpty)
        for frame in frames {
            #expect(RGBColor.average(of: frame, width: 160, x: 80, y: 60).distance(to: Self.red) <= 40, "no rubber band left in the picture")
        }
    }

    @Test("Escape or Ctrl-C typed while --window=pick waits for the click gives up (exit 1), writing nothing",
          arguments: ["Escape", "ctrl+c"])
    func windowPickGivenUpByAKey(key: String) async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let painter = try ScreenPainter(display: xvfb.display)
        painter.openWindow(title: "Target", rect: PixelRect(x: 20, y: 20, width: 120, height: 90), red: 0, green: 0, blue: 255)
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("never.mp4")
        let press = { WindowRecordTests.xdotool(["mousemove", "60", "60", "key", key], display: xvfb.display) }
        let r = try await record(["--screen=\(xvfb.display)", "--window=pick", "--duration", "1", "-o", url.path], steps: [(1.5, press)])
        #expect(r.status == 1 && r.stderr.contains("Escape or Ctrl-C gave up"), "\(r.stderr)")
        #expect(r.stderr.contains("--window=ID|NAME"), "the command line's way to skip the click: \(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test("Escape while --region pick waits for the drag gives up, writing nothing")
    func regionPickGivenUp() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("never.mp4")
        let escape = { WindowRecordTests.xdotool(["key", "Escape"], display: xvfb.display) }
        let r = try await record(["--screen=\(xvfb.display)", "--region", "pick", "--duration", "1", "-o", url.path], steps: [(1.5, escape)])
        #expect(r.status == 1 && r.stderr.contains("Escape or Ctrl-C gave up"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }
}
