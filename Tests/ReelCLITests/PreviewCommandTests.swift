import Foundation
import Testing
import ReelCLI
import Reel
import ReelTestSupport

/// `reel record --preview` under Xvfb: the window shows the recorded picture and its progress,
/// closing it stops and finalises the file; without a display, `--preview` is an error and
/// `--preview=auto` records without a window.
@Suite(.serialized) struct PreviewCommandTests {
    static func pixel(_ shot: (rgb: [UInt8], width: Int, height: Int), _ x: Int, _ y: Int) -> RGBColor {
        let i = (y * shot.width + x) * 3
        return RGBColor(red: shot.rgb[i], green: shot.rgb[i + 1], blue: shot.rgb[i + 2])
    }

    @Test func theWindowShowsTheRecordingAndClosingItStops() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        defer { xvfb.terminate() }
        let painter = try ScreenPainter(display: xvfb.display)
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("previewed.mp4")
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--camera=test:green", "--size", "320x240", "--preset", "ultrafast", "--max-duration", "20",
                             "--preview", "-o", url.path]
        process.environment = ProcessInfo.processInfo.environment.merging(["DISPLAY": xvfb.display]) { _, new in new }
        process.standardOutput = FileHandle.nullDevice
        let errors = dir.url.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: errors)
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

        // The window, titled with the file's name, takes the picture's size once it comes.
        let title = "Reel — previewed.mp4"
        var frame: PixelRect?
        var shot = painter.screenshot()
        var green = false
        for _ in 0..<100 where !green {
            try await Task.sleep(for: .milliseconds(100))
            frame = painter.frame(ofWindowTitled: title)
            guard let f = frame, f.width == 320, f.height == 240 else { continue }
            shot = painter.screenshot()
            let c = Self.pixel(shot, f.x + 60, f.y + 150)
            green = c.green > 150 && c.red < 100 && c.blue < 100
        }
        let w = try #require(frame, "a window titled \(title)")
        #expect(green, "the camera's green in the window at \(w)")
        let dot = Self.pixel(shot, w.x + 20, w.y + 16)
        #expect(dot.red > 180 && dot.green < 80, "the recording dot: \(dot)")
        // The progress bar toward --max-duration 20 grows.
        func filled() -> Int {
            let now = painter.screenshot()
            return (0..<320).filter { let c = Self.pixel(now, w.x + $0, w.y + 237); return c.red > 180 && c.green < 80 }.count
        }
        try await Task.sleep(for: .seconds(1))
        let early = filled()
        try await Task.sleep(for: .seconds(2))
        let later = filled()
        #expect(later > early && later > 0, "the bar grew from \(early) to \(later) pixels")

        #expect(painter.requestClose(windowTitled: title), "the window is titled \(title)")
        for _ in 0..<100 where process.isRunning { try await Task.sleep(for: .milliseconds(100)) }
        #expect(!process.isRunning, "closing the window stopped the recording")
        #expect(process.terminationStatus == 0, "\((try? String(contentsOf: errors, encoding: .utf8)) ?? "")")
        let probe = try MediaProbe.probe(url)
        let frames = try #require(probe.videoStreams.first?.frameCount)
        #expect(frames >= 90, "about four seconds")
        #expect(abs(probe.duration - Double(frames) / 30) < 0.05)
    }

    @Test func reelPreviewRecordsOnlyWhatRAndTheButtonAskFor() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        defer { xvfb.terminate() }
        let painter = try ScreenPainter(display: xvfb.display)
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("take.mp4")
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["preview", "--camera=test:blue", "--size", "320x240", "--preset", "ultrafast", "-o", url.path]
        process.environment = ProcessInfo.processInfo.environment.merging(["DISPLAY": xvfb.display]) { _, new in new }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let title = "Reel — take.mp4"
        var frame: PixelRect?
        for _ in 0..<100 {
            try await Task.sleep(for: .milliseconds(100))
            if let f = painter.frame(ofWindowTitled: title), f.width == 320, f.height == 240 { frame = f; break }
        }
        let w = try #require(frame, "a window titled \(title)")
        try await Task.sleep(for: .milliseconds(500))
        // Idle: a ring, nothing recorded, and the record button's dot.
        var shot = painter.screenshot()
        #expect(Self.pixel(shot, w.x + 20, w.y + 8).red > 150 && Self.pixel(shot, w.x + 20, w.y + 16).red < 120,
                "a hollow circle over the blue picture")
        let button = (x: w.x + 160, y: w.y + 240 - 6 - 22 - 12)
        #expect(Self.pixel(shot, button.x, button.y).red > 180, "the record button")
        #expect(!FileManager.default.fileExists(atPath: url.path))

        func xdotool(_ arguments: [String]) throws {
            _ = try Subprocess.run(["xdotool"] + arguments, environment: ["DISPLAY": xvfb.display])
        }
        // r records; a click on the button pauses; r again records a second clip; Enter saves.
        try xdotool(["mousemove", "\(w.x + 100)", "\(w.y + 120)", "key", "r"])
        try await Task.sleep(for: .milliseconds(1500))
        shot = painter.screenshot()
        #expect(Self.pixel(shot, w.x + 20, w.y + 16).red > 180, "the red dot while recording")
        try xdotool(["mousemove", "\(button.x)", "\(button.y)", "click", "1"])
        try await Task.sleep(for: .milliseconds(800))
        shot = painter.screenshot()
        #expect(Self.pixel(shot, w.x + 14, w.y + 16).green > 200, "the pause bars")
        try xdotool(["mousemove", "\(w.x + 100)", "\(w.y + 120)", "key", "r"])
        try await Task.sleep(for: .milliseconds(1000))
        try xdotool(["key", "Return"])
        for _ in 0..<100 where process.isRunning { try await Task.sleep(for: .milliseconds(100)) }
        #expect(process.terminationStatus == 0)
        let said = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(said.contains("clips     2"), "\(said)")
        let probe = try MediaProbe.probe(url)
        // About 1.5 s and 1 s recorded, the paused time left out.
        #expect(probe.duration > 1.8 && probe.duration < 3.4, "\(probe.duration) s")

        // Closed without recording: no file, and not a failure.
        let empty = dir.url.appendingPathComponent("nothing.mp4")
        let again = Process()
        again.executableURL = ReelBinary.url
        again.arguments = ["preview", "--camera=test:blue", "--size", "320x240", "-o", empty.path]
        again.environment = process.environment
        let out2 = Pipe()
        again.standardOutput = out2
        again.standardError = FileHandle.nullDevice
        try again.run()
        defer { if again.isRunning { kill(again.processIdentifier, SIGKILL) } }
        var opened = false
        for _ in 0..<100 where !opened {
            try await Task.sleep(for: .milliseconds(100))
            opened = painter.frame(ofWindowTitled: "Reel — nothing.mp4") != nil
        }
        #expect(painter.requestClose(windowTitled: "Reel — nothing.mp4"))
        for _ in 0..<100 where again.isRunning { try await Task.sleep(for: .milliseconds(100)) }
        #expect(again.terminationStatus == 0)
        #expect(String(decoding: out2.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).contains("Nothing was recorded"))
        #expect(!FileManager.default.fileExists(atPath: empty.path))
    }

    @Test func withoutADisplayPreviewIsAnErrorAndAutoRecordsAnyway() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("nowindow.mp4")
        var environment = ProcessInfo.processInfo.environment
        environment["DISPLAY"] = nil
        environment["WAYLAND_DISPLAY"] = nil
        let strict = try Subprocess.run([ReelBinary.url.path, "record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast",
                                         "--duration", "1", "--faster-than-real-time", "--preview", "-o", url.path],
                                        environment: ["DISPLAY": ""])
        #expect(strict.status == 1, "\(strict.stderr)")
        #expect(strict.stderr.contains("no display to open the preview window"), "\(strict.stderr)")
        #expect(!FileManager.default.fileExists(atPath: url.path), "nothing written")

        let auto = try Subprocess.run([ReelBinary.url.path, "record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast",
                                       "--duration", "1", "--faster-than-real-time", "--preview=auto", "-o", url.path],
                                      environment: ["DISPLAY": ""])
        #expect(auto.status == 0, "\(auto.stderr)")
        #expect(auto.stderr.contains("no preview window"), "\(auto.stderr)")
        #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == 30)
        _ = environment

        // A DISPLAY that names no server (stale after ssh): the same, not a failure of =auto.
        let stale = dir.url.appendingPathComponent("stale.mp4")
        let dead = try Subprocess.run([ReelBinary.url.path, "record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast",
                                       "--duration", "1", "--faster-than-real-time", "--preview=auto", "-o", stale.path],
                                      environment: ["DISPLAY": XvfbServer.unusedDisplay()])
        #expect(dead.status == 0, "\(dead.stderr)")
        #expect(dead.stderr.contains("no preview window"), "\(dead.stderr)")
        #expect(try MediaProbe.probe(stale).videoStreams.first?.frameCount == 30)
    }

    @Test func previewNeedsAPictureAndTakesOnlyAuto() throws {
        #expect(try Subprocess.run([ReelBinary.url.path, "preview", "--tone"]).stderr.contains("reel preview needs a picture"))
        #expect(try Subprocess.run([ReelBinary.url.path, "preview", "--test-pattern", "--replay", "30"]).stderr.contains("--replay"))
        #expect(try Subprocess.run([ReelBinary.url.path, "record", "--tone", "--preview"]).stderr.contains("--preview does nothing without a video source"))
        #expect(try Subprocess.run([ReelBinary.url.path, "record", "--test-pattern", "--preview=yes"]).stderr.contains("--preview takes no value, or =auto"))
    }
}
