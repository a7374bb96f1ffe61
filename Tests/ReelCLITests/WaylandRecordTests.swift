import Foundation
import Testing
import Reel
import ReelTestSupport

/// `reel record --screen` on a real headless Wayland desktop (sway, PipeWire, the ScreenCast
/// portal): frames at a constant rate whose colours follow the screen, a region, the portal's
/// choice kept for the next run, and the cast or PipeWire going away mid-recording.
@Suite(.serialized, .tags(.realTime)) struct WaylandRecordTests {
    /// Runs `reel record ARGS` on `desktop`, calling `whileRunning` `after` seconds after the
    /// recording's file `started` appears (the portal's answer and the first picture have come).
    func record(_ args: [String], on desktop: WaylandDesktop, started: URL? = nil, after: Double = 0,
                whileRunning: () throws -> Void = {}) async throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record"] + args
        process.environment = ProcessInfo.processInfo.environment.merging(desktop.environment) { _, new in new }
        let out = desktop.folder.url.appendingPathComponent("reel-\(UUID().uuidString).out")
        let err = desktop.folder.url.appendingPathComponent("reel-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        if let started {
            let appeared = Date(timeIntervalSinceNow: 30)
            while !FileManager.default.fileExists(atPath: started.path) && process.isRunning && Date() < appeared {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        if after > 0 {
            try await Task.sleep(for: .milliseconds(Int(after * 1000)))
            try whileRunning()
        }
        let deadline = Date(timeIntervalSinceNow: 60)
        while process.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL); Issue.record("reel did not finish") }
        process.waitUntilExit()
        return (process.terminationStatus, try String(contentsOf: out, encoding: .utf8), try String(contentsOf: err, encoding: .utf8))
    }

    /// The colour name of the middle of each frame.
    func colours(_ url: URL, size: PixelSize) throws -> [String] {
        try MediaProbe.decodeRGB(url, width: size.width, height: size.height).map {
            RGBColor.average(of: $0, width: size.width, x: size.width / 2, y: size.height / 2).name(in: RGBColor.primaries)
        }
    }

    /// Consecutive equal names run-length encoded.
    func runs(_ names: [String]) -> [(name: String, count: Int)] {
        var result: [(name: String, count: Int)] = []
        for name in names {
            if result.last?.name == name { result[result.count - 1].count += 1 } else { result.append((name, 1)) }
        }
        return result
    }

    /// Whether the file's index is at its front (finalised in place, not merely cut off).
    func isFinalised(_ url: URL) throws -> Bool {
        let head = try FileHandle(forReadingFrom: url).read(upToCount: 1 << 16) ?? Data()
        let moov = head.range(of: Data("moov".utf8)), mdat = head.range(of: Data("mdat".utf8))
        return moov != nil && (mdat == nil || moov!.lowerBound < mdat!.lowerBound)
    }

    @Test func fiveSecondsAt30FpsFollowTheScreensColours() async throws {
        let desktop = try WaylandDesktop()
        defer { desktop.terminate() }
        try desktop.paint("#ff0000")
        let url = desktop.folder.url.appendingPathComponent("screen.mp4")
        // The colour changes every second, on a schedule of its own (not after each swaymsg).
        let painting = Task.detached {
            let start = Date()
            for (k, colour) in ["#00ff00", "#0000ff", "#ff0000", "#00ff00", "#0000ff", "#ff0000"].enumerated() {
                let due = start.addingTimeInterval(Double(k + 1))
                if due.timeIntervalSinceNow > 0 { try await Task.sleep(for: .milliseconds(Int(due.timeIntervalSinceNow * 1000))) }
                try desktop.paint(colour)
            }
        }
        let r = try await record(["--screen", "--duration", "5", "--preset", "ultrafast", "-o", url.path], on: desktop)
        _ = try? await painting.value
        #expect(r.status == 0, "\(r.stderr)")
        let probe = try MediaProbe.probe(url)
        #expect(probe.videoStreams.first?.width == 640 && probe.videoStreams.first?.height == 480)
        // Every slot of the 5 s is a frame in the file or, on a loaded machine, one counted as dropped.
        let frames = probe.videoStreams.first?.frameCount ?? 0
        let reported = EveryFrame.reported(inSummary: r.stdout)
        #expect(reported?.frames == frames && frames + (reported?.dropped ?? -1) == 150, "\(frames) frames: \(r.stdout)")
        let names = try colours(url, size: desktop.size)
        #expect(names.count == frames)
        // Each change shows at most one in-between frame (swaybg restarting paints grey), so a
        // colour's run is followed by the next colour within one frame.
        // Until the first picture (a new cast of a still screen waits for a change) the frames
        // are black; not more than the first second.
        var runs = runs(names)
        let before = runs.prefix { !["red", "green", "blue"].contains($0.name) }
        #expect(before.reduce(0) { $0 + $1.count } <= 30, "\(runs)")
        runs.removeFirst(before.count)
        let primaries = runs.filter { ["red", "green", "blue"].contains($0.name) }
        for (a, b) in zip(primaries, primaries.dropFirst()) {
            #expect(a.name != b.name, "consecutive runs differ: \(runs)")
        }
        for run in runs where !["red", "green", "blue"].contains(run.name) {
            #expect(run.count <= 1, "one in-between frame at most: \(runs)")
        }
        // The interior runs last a second each (at 30 fps), give or take the start-up of swaymsg.
        #expect(primaries.count >= 4, "\(runs)")
        for run in primaries.dropFirst().dropLast() {
            #expect(abs(run.count - 30) <= 6, "about 30 frames a colour: \(runs)")
        }
        let order = ["red", "green", "blue"]
        for (a, b) in zip(primaries, primaries.dropFirst()) {
            #expect(order[(order.firstIndex(of: a.name)! + 1) % 3] == b.name, "in the painted order: \(runs)")
        }
    }

    @Test func aRegionAndTheKeptChoiceOnTheNextRun() async throws {
        let desktop = try WaylandDesktop(background: "#0000ff")
        defer { desktop.terminate() }
        let token = URL(fileURLWithPath: desktop.environment["XDG_STATE_HOME"]!).appendingPathComponent("reel/screencast-restore-token")
        let first = desktop.folder.url.appendingPathComponent("region.mp4")
        // A new cast of a still screen gets its first picture when the screen changes
        // (xdg-desktop-portal-wlr 0.7); reel records black until then. Change it soon after
        // the start, then leave it still: the frames go on at the constant rate.
        let r = try await record(["--screen=wayland", "--region", "320x240+320+240", "--duration", "2", "--preset", "ultrafast",
                                  "-o", first.path], on: desktop, started: first, after: 0.2) { try desktop.paint("#0000ff") }
        #expect(r.status == 0, "\(r.stderr)")
        let probe = try MediaProbe.probe(first)
        #expect(probe.videoStreams.first?.width == 320 && probe.videoStreams.first?.height == 240)
        let frames = probe.videoStreams.first?.frameCount ?? 0
        let reported = EveryFrame.reported(inSummary: r.stdout)
        #expect(reported?.frames == frames && frames + (reported?.dropped ?? -1) == 60, "\(frames) frames: \(r.stdout)")
        let names = try colours(first, size: PixelSize(width: 320, height: 240))
        #expect(names.suffix(30).allSatisfy { $0 == "blue" }, "the still blue screen repeated to the end: \(runs(names))")
        let kept = try String(contentsOf: token, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!kept.isEmpty)
        let restored = "restore data available"  // what the wlr backend logs when the portal hands it a kept choice
        #expect(!(try String(contentsOf: desktop.log("xdg-desktop-portal-wlr"), encoding: .utf8)).contains(restored))

        // The second run hands the token back; the portal takes it and gives a new one.
        let second = desktop.folder.url.appendingPathComponent("second.mp4")
        let again = try await record(["--screen", "--duration", "1", "--preset", "ultrafast", "-o", second.path], on: desktop)
        #expect(again.status == 0, "\(again.stderr)")
        let backendLog = try String(contentsOf: desktop.log("xdg-desktop-portal-wlr"), encoding: .utf8)
        #expect(backendLog.contains(restored), "the portal restored the kept choice: \(backendLog.suffix(2000))")
        let renewed = try String(contentsOf: token, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!renewed.isEmpty)

        // reel devices says what --screen records here.
        let devices = try ReelBinary.run(["devices"], environment: desktop.environment)
        #expect(devices.output.contains("--screen records: the Wayland desktop"), "\(devices.output)")
    }

    @Test func theCastGoingAwayEndsTheRecordingCleanly() async throws {
        let desktop = try WaylandDesktop()
        defer { desktop.terminate() }
        let url = desktop.folder.url.appendingPathComponent("cast.mp4")
        let r = try await record(["--screen", "--preset", "ultrafast", "-o", url.path], on: desktop, started: url, after: 1.5) {
            desktop.kill("xdg-desktop-portal-wlr")
        }
        #expect(r.status == 3, "\(r.stderr)")
        #expect(r.stderr.contains("lost screen"), "\(r.stderr)")
        #expect(r.stderr.contains("screen cast ended") || r.stderr.contains("stopped"), "\(r.stderr)")
        #expect(r.stdout.contains("every source was lost or ended"), "\(r.stdout)")
        #expect((try MediaProbe.probe(url).videoStreams.first?.frameCount ?? 0) >= 20)
        #expect(try isFinalised(url))
    }

    @Test func pipeWireKilledEndsTheRecordingCleanly() async throws {
        let desktop = try WaylandDesktop()
        defer { desktop.terminate() }
        let url = desktop.folder.url.appendingPathComponent("pipewire.mp4")
        let r = try await record(["--screen", "--preset", "ultrafast", "-o", url.path], on: desktop, started: url, after: 1.5) {
            desktop.kill("pipewire")
        }
        #expect(r.status == 3, "\(r.stderr)")
        #expect(r.stderr.contains("lost screen"), "\(r.stderr)")
        #expect(r.stderr.contains("PipeWire"), "\(r.stderr)")
        #expect((try MediaProbe.probe(url).videoStreams.first?.frameCount ?? 0) >= 20)
        #expect(try isFinalised(url))
    }

    @Test func aScreenThatChangesSizeIsFittedIntoTheRecording() async throws {
        let desktop = try WaylandDesktop(background: "#ff0000")
        defer { desktop.terminate() }
        let url = desktop.folder.url.appendingPathComponent("resized.mp4")
        let r = try await record(["--screen", "--duration", "4", "--preset", "ultrafast", "-o", url.path], on: desktop,
                                 started: url, after: 1) {
            // Half as wide: the picture keeps its aspect, with black bars left and right.
            let result = try Subprocess.run(["swaymsg", "output", "HEADLESS-1", "resolution", "320x480"], environment: desktop.environment)
            #expect(result.status == 0, "\(result.stderr)")
            try desktop.paint("#00ff00")
        }
        #expect(r.status == 0, "\(r.stderr)")
        let probe = try MediaProbe.probe(url)
        #expect(probe.videoStreams.first?.width == 640 && probe.videoStreams.first?.height == 480)
        // Every slot of the 4 s is a frame in the file or, on a loaded machine, one counted as dropped.
        let frames = probe.videoStreams.first?.frameCount ?? 0
        let dropped = r.stdout.firstMatch(of: /(\d+) dropped/).flatMap { Int($0.1) } ?? -1
        #expect(frames + dropped == 120 && frames >= 114, "\(frames) frames, \(dropped) dropped: \(r.stdout)")
        let last = try #require(MediaProbe.decodeRGB(url, width: 640, height: 480).last)
        let centre = RGBColor.average(of: last, width: 640, x: 320, y: 240).name(in: RGBColor.primaries)
        let side = RGBColor.average(of: last, width: 640, x: 20, y: 240).name(in: RGBColor.primaries)
        #expect(centre == "green" && side == "black", "the 320x480 screen in the middle of the 640x480 frame: \(centre), \(side)")
    }

    /// Audio needs nothing new on a PipeWire desktop: pipewire-pulse serves the PulseAudio API.
    @Test func appAudioAndMicrophoneThroughPipeWirePulse() async throws {
        let desktop = try WaylandDesktop()
        defer { desktop.terminate() }
        let loaded = try Subprocess.run(["pactl", "load-module", "module-null-sink", "sink_name=reelnull"], environment: desktop.environment)
        #expect(loaded.status == 0, "\(loaded.stderr)")
        let tone = Process()
        tone.executableURL = URL(fileURLWithPath: Subprocess.which("ffmpeg")!)
        tone.arguments = ["-v", "error", "-re", "-f", "lavfi", "-i", "sine=frequency=440:duration=15", "-f", "pulse", "-device", "reelnull", "tone"]
        tone.environment = ProcessInfo.processInfo.environment.merging(desktop.environment) { _, new in new }
        tone.standardOutput = FileHandle.nullDevice
        tone.standardError = FileHandle.nullDevice
        tone.standardInput = FileHandle.nullDevice
        try tone.run()
        defer { if tone.isRunning { kill(tone.processIdentifier, SIGKILL) }; tone.waitUntilExit() }
        try await Task.sleep(for: .milliseconds(300))
        let url = desktop.folder.url.appendingPathComponent("audio.mkv")
        let r = try await record(["--screen", "--app-audio=reelnull", "--mic=reelnull.monitor", "--duration", "3", "--preset", "ultrafast",
                                  "-o", url.path], on: desktop)
        #expect(r.status == 0, "\(r.stderr)")
        let probe = try MediaProbe.probe(url)
        #expect(probe.audioStreams.count == 2)
        for track in 0..<2 {
            let samples = try MediaProbe.decodeAudio(url, track: track)
            let middle = Array(samples[(samples.count / 3)..<(2 * samples.count / 3)])
            #expect(ToneAnalysis.dominantFrequency(of: middle, sampleRate: 48_000, candidates: [440, 880, 1000]) == 440, "track \(track)")
            #expect(ToneAnalysis.meanPower(of: middle, sampleRate: 48_000, frequency: 440) > 0.01, "track \(track) carries the tone")
        }
    }

    @Test func noPortalOnTheBusIsAClearError() async throws {
        let bus = try SessionBus()
        defer { bus.terminate() }
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("none.mp4")
        let r = try ReelBinary.run(["record", "--screen=wayland", "--duration", "1", "-o", url.path],
                                   environment: bus.environment.merging(["XDG_STATE_HOME": dir.url.path]) { _, new in new })
        #expect(r.status != 0)
        #expect(r.stderr.contains("org.freedesktop.portal.Desktop is not on the session bus"), "\(r.stderr)")
        #expect(r.stderr.contains("xdg-desktop-portal"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }
}

extension WaylandRecordTests {
    /// xdg-desktop-portal-wlr 0.7 on sway offers monitors only: --window says so clearly and
    /// leaves no file (the portal's window type is asked for; see WaylandScreenSourceTests for
    /// a portal that offers windows).
    @Test func aWindowOnAPortalThatOffersNoneIsAClearError() async throws {
        let desktop = try WaylandDesktop()
        defer { desktop.terminate() }
        let url = desktop.folder.url.appendingPathComponent("window.mp4")
        let r = try await record(["--window", "--duration", "2", "--preset", "ultrafast", "-o", url.path], on: desktop)
        #expect(r.status != 0)
        #expect(r.stderr.contains("the desktop portal cannot share a window (record the whole screen instead)"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: url.path))
        let named = try await record(["--window=firefox", "--duration", "2", "-o", url.path], on: desktop)
        #expect(named.stderr.contains("on Wayland --window cannot name a window"), "\(named.stderr)")
    }
}
