import Foundation
import Testing
import ReelCLI
import Reel
import ReelTestSupport

/// `reel record --preview` under Xvfb: the window shows the recorded picture and its progress,
/// closing it stops and finalises the file; without a display, `--preview` is an error and
/// `--preview=auto` records without a window.
@Suite(.serialized, .tags(.realTime)) struct PreviewCommandTests {
    static func pixel(_ shot: (rgb: [UInt8], width: Int, height: Int), _ x: Int, _ y: Int) -> RGBColor {
        let i = (y * shot.width + x) * 3
        return RGBColor(red: shot.rgb[i], green: shot.rgb[i + 1], blue: shot.rgb[i + 2])
    }

    /// Starts reel with `arguments` on the X display `display`: standard output into `output`
    /// (else nowhere), standard error into the file `errors` (else nowhere).
    static func launch(_ arguments: [String], display: String, output: Pipe? = nil, errors: URL? = nil) throws -> Process {
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["DISPLAY": display]) { $1 }
        process.standardOutput = output ?? FileHandle.nullDevice
        if let errors {
            _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
            process.standardError = try FileHandle(forWritingTo: errors)
        } else {
            process.standardError = FileHandle.nullDevice
        }
        try process.run()
        return process
    }

    /// Waits up to 10 s for a window titled `title`; returns whether it came.
    static func waitForWindow(_ title: String, on painter: ScreenPainter) async throws -> Bool {
        for _ in 0..<100 {
            if painter.frame(ofWindowTitled: title) != nil { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
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
        let summary = dir.url.appendingPathComponent("stdout")
        _ = FileManager.default.createFile(atPath: summary.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: summary)
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
        for _ in 0..<300 where process.isRunning { try await Task.sleep(for: .milliseconds(100)) }
        try #require(!process.isRunning, "closing the window stopped the recording")
        #expect(process.terminationStatus == 0, "\((try? String(contentsOf: errors, encoding: .utf8)) ?? "")")
        let probe = try MediaProbe.probe(url)
        let frames = try #require(probe.videoStreams.first?.frameCount)
        #expect(frames >= 90, "about four seconds")
        // A frame a loaded machine dropped keeps its slot of time in the file (the summary
        // says how many).
        let dropped = EveryFrame.reported(inSummary: (try? String(contentsOf: summary, encoding: .utf8)) ?? "")?.dropped ?? 0
        #expect(abs(probe.duration - Double(frames + dropped) / 30) < 0.05, "\(frames) frames, \(dropped) dropped")
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
        for _ in 0..<300 where process.isRunning { try await Task.sleep(for: .milliseconds(100)) }
        try #require(!process.isRunning, "Enter stopped reel preview")
        #expect(process.terminationStatus == 0)
        let said = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(said.contains("clips     2"), "\(said)")
        let probe = try MediaProbe.probe(url)
        // About 1.5 s and 1 s recorded, the paused time left out.
        #expect(probe.duration > 1.8 && probe.duration < 3.4, "\(probe.duration) s")

        // Closed without recording: no file, and not a failure.
        let empty = dir.url.appendingPathComponent("nothing.mp4")
        let out2 = Pipe()
        let again = try Self.launch(["preview", "--camera=test:blue", "--size", "320x240", "-o", empty.path], display: xvfb.display, output: out2)
        defer { if again.isRunning { kill(again.processIdentifier, SIGKILL) } }
        #expect(try await Self.waitForWindow("Reel — nothing.mp4", on: painter))
        #expect(painter.requestClose(windowTitled: "Reel — nothing.mp4"))
        for _ in 0..<300 where again.isRunning { try await Task.sleep(for: .milliseconds(100)) }
        try #require(!again.isRunning, "closing the window stopped reel preview")
        #expect(again.terminationStatus == 0)
        #expect(String(decoding: out2.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).contains("Nothing was recorded"))
        #expect(!FileManager.default.fileExists(atPath: empty.path))
    }

    /// The window's display going away (the X server ends, or another program kills the
    /// window's connection) must not end reel before the file is finalised: Xlib's own handler
    /// would exit(1) there. The recording stops as if the window were closed, and says why.
    @Test(arguments: ["X server ends", "xdotool windowkill", "xdotool windowclose"])
    func aDisplayThatGoesAwayStopsAndFinalises(how: String) async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        defer { xvfb.terminate() }
        let painter = try ScreenPainter(display: xvfb.display)
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("lost.mp4")
        let errors = dir.url.appendingPathComponent("stderr")
        let process = try Self.launch(["record", "--camera=test:green", "--size", "320x240", "--preset", "ultrafast", "--preview", "-o", url.path],
                                      display: xvfb.display, errors: errors)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        #expect(try await Self.waitForWindow("Reel — lost.mp4", on: painter))
        try await Task.sleep(for: .seconds(1.5))
        if how == "X server ends" {
            xvfb.terminate()
        } else {
            // windowkill ends the window's connection; windowclose destroys the window.
            let r = try Subprocess.run(["xdotool", "search", "--name", "lost\\.mp4", String(how.split(separator: " ")[1])],
                                       environment: ["DISPLAY": xvfb.display])
            #expect(r.status == 0, "\(r.stderr)")
        }
        for _ in 0..<150 where process.isRunning { try await Task.sleep(for: .milliseconds(100)) }
        try #require(!process.isRunning, "reel stopped")
        let said = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
        #expect(process.terminationStatus == 0, "\(said)")
        // Each said as what it was: a display that is still there did not go away (issue 26 item 18).
        let why = switch how {
        case "X server ends": "the preview window's display went away"
        case "xdotool windowkill": "another program closed the preview window's connection to its display"
        default: "another program closed the preview window,"
        }
        #expect(said.contains(why), "\(said)")
        #expect(!Recovery.isCutOff(url), "the file was finalised")
        let frames = try MediaProbe.probe(url).videoStreams.first?.frameCount ?? 0
        #expect(frames >= 40, "\(frames) frames")
        let decode = try Subprocess.run(["ffmpeg", "-v", "error", "-i", url.path, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.stderr.isEmpty, "\(decode.stderr)")
    }

    /// `reel preview` killed before anything was recorded leaves no clip: its name stays free
    /// (a second window on it meanwhile is refused), and recover tidies the empty folder away.
    @Test func killedBeforeRecordingLeavesTheNameFree() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        defer { xvfb.terminate() }
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("idle.mp4")
        let folder = dir.url.appendingPathComponent("idle.clips")
        func preview() throws -> Process {
            try Self.launch(["preview", "--camera=test:blue", "--size", "320x240", "-o", url.path], display: xvfb.display)
        }
        let painter = try ScreenPainter(display: xvfb.display)
        let first = try preview()
        defer { if first.isRunning { kill(first.processIdentifier, SIGKILL) } }
        #expect(try await Self.waitForWindow("Reel — idle.mp4", on: painter))
        // While it runs, its (clip-less) folder is in use, not left over.
        let busy = try ReelBinary.run(["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "--faster-than-real-time",
                                       "--duration", "1", "--pause-mode", "clips", "-o", url.path])
        #expect(busy.status != 0 && busy.stderr.contains("in use by another recording"), "\(busy.stderr)")
        let recoverBusy = try ReelBinary.run(["recover", folder.path])
        #expect(recoverBusy.status != 0 && recoverBusy.stderr.contains("being recorded into right now"), "\(recoverBusy.stderr)")
        kill(first.processIdentifier, SIGKILL)
        first.waitUntilExit()
        #expect(FileManager.default.fileExists(atPath: folder.path))
        // Recover says nothing was recorded and frees the name.
        let recovered = try ReelBinary.run(["recover", url.path])
        #expect(recovered.stderr.contains("before anything was recorded on the disk"), "\(recovered.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.path))
        // Killed again: the next recording takes the empty folder over.
        let second = try preview()
        defer { if second.isRunning { kill(second.processIdentifier, SIGKILL) } }
        #expect(try await Self.waitForWindow("Reel — idle.mp4", on: painter))
        kill(second.processIdentifier, SIGKILL)
        second.waitUntilExit()
        let again = try ReelBinary.run(["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "--faster-than-real-time",
                                        "--duration", "1", "--pause-mode", "clips", "-o", url.path])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == 30)
        #expect(!FileManager.default.fileExists(atPath: folder.path))
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
