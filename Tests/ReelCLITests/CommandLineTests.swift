import Foundation
import Testing
@testable import ReelCLI
import Reel
import ReelTestSupport

/// Parsing `reel record` options: each bad value is a usage error with a clear message.
@Suite struct RecordOptionParsingTests: ParsesRecordOptions {
    @Test func parsesAFullCommandLine() throws {
        let o = try options(["--screen=:3", "--region", "1280x720+10+20", "--mic", "--app-audio=speakers", "--fps", "60",
                             "--codec", "hevc", "--preset", "fast", "--crf", "28", "--keyframe-interval", "120",
                             "--audio-bitrate", "128k", "--duration", "1:30", "-o", "/tmp/x.mkv"])
        #expect(o.screen == .some(":3"))
        #expect(o.region == PixelRect(x: 10, y: 20, width: 1280, height: 720))
        #expect(o.microphone == .some(nil))
        #expect(o.appAudio == .some("speakers"))
        #expect(o.frameRate == FrameRate(60))
        #expect(o.video.codec == .hevc && o.video.preset == "fast" && o.video.rateControl == .crf(28))
        #expect(o.video.keyframeInterval == 120)
        #expect(o.audio.bitRate == 128_000)
        #expect(o.duration == MediaTime(seconds: 90))
        #expect(o.container == .mkv)
    }

    /// An odd size is made even and remembered as given, for the note that says so.
    @Test func anOddSizeIsMadeEvenAndKeptAsGiven() throws {
        let odd = try options(["--test-pattern", "--size", "321x241"])
        #expect(odd.size == PixelSize(width: 320, height: 240) && odd.sizeAsGiven == PixelSize(width: 321, height: 241))
        let even = try options(["--test-pattern", "--size", "320x240"])
        #expect(even.size == PixelSize(width: 320, height: 240) && even.sizeAsGiven == nil)
    }

    @Test(arguments: [
        (["--test-pattern", "--codec", "xvid"], "unknown codec 'xvid'"),
        (["--test-pattern", "--preset", "superslow"], "unknown preset 'superslow'"),
        (["--test-pattern", "--fps", "abc"], "--fps needs a number"),
        (["--test-pattern", "--fps", "0"], "--fps must be between 1 and 240"),
        (["--test-pattern", "--crf", "twenty"], "--crf needs a whole number"),
        (["--test-pattern", "--crf", "99"], "--crf must be between 0 and 51"),
        (["--test-pattern", "--duration", "soon"], "--duration needs a duration"),
        (["--test-pattern", "--duration", "-5"], "--duration must be more than zero"),
        // Numbers are written out: an exponent, hexadecimal, inf or a + is not a number here.
        (["--test-pattern", "--duration", "1e3"], "--duration needs a duration"),
        (["--test-pattern", "--duration", "1e1m"], "--duration needs a duration"),
        (["--test-pattern", "--duration", "0x10"], "--duration needs a duration"),
        (["--test-pattern", "--duration", "00:1e1"], "--duration needs a duration"),
        (["--test-pattern", "--delay", "+5"], "--delay needs a duration"),
        (["--test-pattern", "--fps", "3e1"], "--fps needs a number"),
        (["--test-pattern", "--bitrate", "4e6"], "--bitrate needs a bit rate"),
        (["--test-pattern", "--tone", "--audio-offset", "1e2"], "--audio-offset needs milliseconds"),
        (["--test-pattern", "--tone", "--audio-offset", "inf"], "--audio-offset needs milliseconds"),
        (["--camera=test", "--zoom", "2e0"], "--zoom needs a factor"),
        (["--camera=test", "--test-pattern", "--pip-size", "25e-2"], "--pip-size needs a fraction"),
        (["--test-pattern", "--bitrate", "fast"], "--bitrate needs a bit rate"),
        (["--test-pattern", "--size", "big"], "--size needs WIDTHxHEIGHT"),
        (["--screen", "--region", "100x"], "--region needs WIDTHxHEIGHT+X+Y"),
        (["--test-pattern", "--format", "avi"], "unknown format 'avi'"),
        (["--test-pattern", "-o", "x.avi"], "unknown file type '.avi'"),
        (["--test-pattern", "-o", "x.mp4", "--format", "mkv"], "says .mp4 but --format says mkv"),
        (["--test-pattern", "--audio-codec", "mp3"], "unknown audio codec 'mp3'"),
        (["--test-pattern", "--frobnicate"], "unknown option --frobnicate"),
        (["--test-pattern", "--crf", "20", "--bitrate", "4M"], "give --crf or --bitrate, not both"),
        (["--test-pattern", "extra"], "unexpected argument 'extra'"),
    ])
    func rejectsNonsense(_ args: [String], _ message: String) {
        let error = usageError(args)
        #expect(error?.contains(message) == true, "got: \(error ?? "no error")")
    }

    @Test func durationsInEveryForm() throws {
        #expect(try ValueParser.duration("90", option: "d").seconds == 90)
        #expect(try ValueParser.duration("2.5s", option: "d").seconds == 2.5)
        #expect(try ValueParser.duration("5m", option: "d").seconds == 300)
        #expect(try ValueParser.duration("1h", option: "d").seconds == 3600)
        #expect(try ValueParser.duration("01:02:03", option: "d").seconds == 3723)
        #expect(ValueParser.decimal("2.5") == 2.5 && ValueParser.decimal(".5") == 0.5 && ValueParser.decimal("-150", signed: true) == -150)
        for odd in ["1e3", "1E3", "0x10", "inf", "nan", "+5", "-5", "1.2.3", ".", "", "٣"] { #expect(ValueParser.decimal(odd) == nil, "\(odd)") }
    }
}

/// The `reel` binary, run as a user runs it: exit codes, one clear line per bad input,
/// nothing on disk lost.
@Suite(.tags(.realTime)) struct ReelBinaryTests {
    @Test func helpForEveryCommand() throws {
        for args in [["--help"], ["record", "--help"], ["devices", "--help"]] {
            let r = try ReelBinary.run(args)
            #expect(r.status == 0, "\(args)")
            #expect(r.output.contains("Usage") || r.output.contains("Commands"))
        }
        let record = try ReelBinary.run(["record", "--help"])
        for option in ["--screen", "--region", "--mic", "--app-audio", "--test-pattern", "--tone", "--size", "--fps", "--codec",
                       "--preset", "--crf", "--bitrate", "--keyframe-interval", "--audio-codec", "--audio-bitrate",
                       "--duration", "--max-duration", "--format", "--output", "--overwrite", "--json"] {
            #expect(record.output.contains(option), "help lists \(option)")
        }
    }

    @Test func usageErrorsExitWithTwo() throws {
        let r = try ReelBinary.run(["record", "--test-pattern", "--fps", "many"])
        #expect(r.status == 2)
        #expect(r.stderr.hasPrefix("reel: --fps needs a number"))
        #expect(try ReelBinary.run(["frobnicate"]).status == 2)
        #expect(try ReelBinary.run([]).status == 2)
    }

    @Test func recordsTheTestPatternAndSaysWhatTheFileHolds() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("cli.mp4")
        let r = try ReelBinary.run(["record", "--test-pattern", "--tone", "--size", "640x360", "--preset", "ultrafast",
                                    "--duration", "2", "-o", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.output.contains("Saved \(url.path)"))
        #expect(r.output.contains("640x360"))
        // Every slot of the 2 s a frame, or on a loaded machine one the summary says was dropped.
        let reported = try #require(EveryFrame.reported(inSummary: r.output), "\(r.output)")
        #expect(reported.frames + reported.dropped == 60, "\(r.output)")
        let probe = try MediaProbe.probe(url)
        #expect(probe.videoStreams.first?.frameCount == reported.frames)
        #expect(probe.audioStreams.count == 1)
    }

    @Test func jsonEventsForScripts() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("events.mkv")
        let r = try ReelBinary.run(["record", "--test-pattern", "--size", "320x240", "--duration", "1.5", "--json", "-o", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        let events = r.output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(events.first?["event"] as? String == "started")
        #expect(events.contains { $0["event"] as? String == "progress" })
        let finished = try #require(events.last)
        #expect(finished["event"] as? String == "finished")
        #expect((finished["frames"] as? Int ?? 0) + (finished["dropped"] as? Int ?? -1) == 45, "\(finished)")
        #expect(finished["file"] as? String == url.path)
    }

    @Test func refusesToOverwriteAnExistingFile() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("precious.mp4")
        try Data("precious".utf8).write(to: url)
        let r = try ReelBinary.run(["record", "--test-pattern", "--duration", "1", "-o", url.path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("already exists"))
        #expect(r.stderr.contains("--overwrite"))
        #expect(try Data(contentsOf: url) == Data("precious".utf8), "the file is untouched")
        let again = try ReelBinary.run(["record", "--test-pattern", "--size", "320x240", "--duration", "0.5", "--overwrite", "-o", url.path])
        #expect(again.status == 0, "\(again.stderr)")
        let reported = EveryFrame.reported(inSummary: again.output), frames = try MediaProbe.probe(url).videoStreams.first?.frameCount
        #expect(reported.map { $0.frames + $0.dropped } == 15 && reported?.frames == frames, "\(again.output)")
    }

    @Test func anOutputFolderThatCannotBeWritten() throws {
        let missing = try ReelBinary.run(["record", "--test-pattern", "--duration", "1", "-o", "/nonexistent/folder/x.mp4"])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("/nonexistent/folder does not exist"))
        let dir = try TemporaryDirectory()
        let file = dir.url.appendingPathComponent("plain-file")
        try Data().write(to: file)
        let notAFolder = try ReelBinary.run(["record", "--test-pattern", "--duration", "1", "-o", file.path + "/x.mp4"])
        #expect(notAFolder.status == 1)
        #expect(notAFolder.stderr.contains("does not exist"))
    }

    @Test func theSummaryReportsTheSizeEncoded() throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 800, height: 600))
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("odd.mp4")
        let r = try ReelBinary.run(["record", "--screen=\(xvfb.display)", "--region", "641x361+0+0", "--preset", "ultrafast",
                                    "--duration", "0.5", "-o", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        let video = try #require(try MediaProbe.probe(url).videoStreams.first)
        #expect(video.width == 640 && video.height == 360)
        #expect(r.output.contains("640x360") && !r.output.contains("641x361"), "\(r.output)")
    }

    /// A region of odd size typed by hand is cut to the even size below it, as a region picked
    /// is, and said once: the last column and row are left out, the picture not squeezed
    /// (here they are red, the rest yellow: squeezed, the last column and row were red).
    @Test func anOddRegionIsCutAndSaidOnce() throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let painter = try ScreenPainter(display: xvfb.display)
        painter.fill(rect: PixelRect(x: 0, y: 0, width: 640, height: 480), red: 230, green: 20, blue: 20)
        painter.fill(rect: PixelRect(x: 10, y: 10, width: 320, height: 240), red: 240, green: 200, blue: 20)
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("odd.mkv")
        let r = try ReelBinary.run(["record", "--screen=\(xvfb.display)", "--region", "321x241+10+10", "--preset", "ultrafast", "--no-cursor",
                                    "--crf", "10", "--duration", "0.5", "-o", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        let note = "reel: note: the region 321x241+10+10 is recorded as 320x240+10+10: video needs an even width and height, so its last column and row are left out"
        #expect(r.stderr.components(separatedBy: note).count == 2, "said once: \(r.stderr)")
        #expect(r.output.contains("320x240") && !r.output.contains("321x241"), "\(r.output)")
        let rgb = try #require(try MediaProbe.decodeRGB(url, width: 320, height: 240, maxFrames: 1).first)
        for (x, y) in [(319, 120), (160, 239), (319, 239)] {
            let i = (y * 320 + x) * 3
            #expect(abs(Int(rgb[i]) - 240) <= 30 && abs(Int(rgb[i + 1]) - 200) <= 30 && abs(Int(rgb[i + 2]) - 20) <= 30, "(\(x), \(y)): \(rgb[i...i + 2])")
        }
    }

    /// An odd `--size` is made even, and said once on stderr with the size recorded (s2 F8:
    /// 17x17 was recorded as 16x16 without a word); an even one says nothing.
    @Test func anOddSizeIsSaidWithTheSizeRecorded() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("odd.mp4")
        let r = try ReelBinary.run(["record", "--test-pattern", "--size", "17x17", "--preset", "ultrafast", "--duration", "0.5", "-o", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        let video = try #require(try MediaProbe.probe(url).videoStreams.first)
        #expect(video.width == 16 && video.height == 16)
        let note = "reel: note: --size 17x17 is recorded as 16x16: video needs an even width and height"
        #expect(r.stderr.components(separatedBy: note).count == 2, "said once: \(r.stderr)")
        let even = try ReelBinary.run(["record", "--test-pattern", "--size", "16x16", "--preset", "ultrafast", "--duration", "0.5",
                                       "-o", dir.url.appendingPathComponent("even.mp4").path])
        #expect(even.status == 0 && !even.stderr.contains("is recorded as"), "\(even.stderr)")
        // With --json, `started` says it too (s44 #8f: on stderr only).
        let json = try ReelBinary.run(["record", "--test-pattern", "--size", "17x17", "--preset", "ultrafast", "--duration", "0.5", "--json",
                                       "-o", dir.url.appendingPathComponent("json.mp4").path])
        let started = json.output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .first { $0["event"] as? String == "started" } ?? [:]
        #expect(started["size"] as? String == "16x16" && started["sizeAsGiven"] as? String == "17x17", "\(json.output)")
    }

    @Test func noXServerAtTheDisplay() throws {
        let display = XvfbServer.unusedDisplay()
        let r = try ReelBinary.run(["record", "--screen=\(display)", "--duration", "1", "-o", "/tmp/never-\(UUID()).mp4"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("no X server at display \(display)"))
        #expect(r.stderr.split(separator: "\n").count == 1, "one clear line: \(r.stderr)")
    }

    @Test func aRegionOutsideTheScreen() throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("region.mp4")
        let r = try ReelBinary.run(["record", "--screen=\(xvfb.display)", "--region", "400x400+300+200", "--duration", "1", "-o", url.path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("extends past the 640x480 screen (x from 0 to 639, y from 0 to 479)"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: url.path), "no empty file is left behind")
    }

    @Test func pulseAudioNotRunning() throws {
        let dir = try TemporaryDirectory()
        let r = try ReelBinary.run(["record", "--mic", "--duration", "1", "-o", dir.url.appendingPathComponent("mic.mp4").path],
                                   environment: ["PULSE_SERVER": "unix:\(dir.url.path)/no-such-socket"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("PulseAudio"))
        #expect(r.stderr.split(separator: "\n").count == 1, "one clear line: \(r.stderr)")
    }

    @Test func sigtermStopsAndFinalises() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("term.mp4")
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast", "-o", url.path]
        let summary = dir.url.appendingPathComponent("summary.txt")
        _ = FileManager.default.createFile(atPath: summary.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: summary)
        process.standardError = FileHandle.nullDevice
        try process.run()
        try await Task.sleep(for: .seconds(2))
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let probe = try MediaProbe.probe(url)
        let frames = try #require(probe.videoStreams.first?.frameCount)
        #expect(frames >= 15, "about two seconds were recorded")
        // The file lasts its frames and the slots of those the summary says were dropped (a
        // loaded machine: five in a .ci/run rehearsal made it 0.18 s longer than its frames).
        let said = (try? String(contentsOf: summary, encoding: .utf8)) ?? ""
        let reported = try #require(EveryFrame.reported(inSummary: said), "\(said)")
        #expect(reported.frames == frames && abs(probe.duration - Double(frames + reported.dropped) / 30) < 0.05, "\(probe.duration) s: \(said)")
        // Finalised: the index sits at the front, before the media data.
        let head = try FileHandle(forReadingFrom: url).read(upToCount: 1 << 16) ?? Data()
        let moov = head.range(of: Data("moov".utf8)), mdat = head.range(of: Data("mdat".utf8))
        #expect(moov != nil && (mdat == nil || moov!.lowerBound < mdat!.lowerBound))
    }

    @Test func aSecondInterruptAbortsLeavingAPlayableFile() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("abort.mp4")
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "-o", url.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try await Task.sleep(for: .seconds(2.5))
        kill(process.processIdentifier, SIGINT)
        usleep(5_000)  // two signals sent together may arrive as one
        // From another process, as a second Ctrl-C is another keypress: one process's signal
        // repeated at once is one request (SignalTests).
        _ = try Subprocess.run(["sh", "-c", "kill -INT \(process.processIdentifier)"])
        process.waitUntilExit()
        #expect(process.terminationStatus == 130, "the second interrupt aborts at once")
        let probe = try MediaProbe.probe(url)
        #expect((probe.videoStreams.first?.frameCount ?? 0) >= 30, "complete fragments survive")
        let frames = try MediaProbe.decodeLuma(url, width: 320, height: 240)
        #expect(frames.count >= 30)
        #expect(frames.compactMap(\.counter).count == frames.count)
    }

    @Test func sigusr1TogglesPauseWithoutATerminal() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("usr1.mp4")
        let out = dir.url.appendingPathComponent("events.jsonl")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "--json", "-o", url.path]
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = FileHandle.nullDevice
        try process.run()
        try await Task.sleep(for: .seconds(1.5))
        kill(process.processIdentifier, SIGUSR1)
        try await Task.sleep(for: .seconds(1.5))
        kill(process.processIdentifier, SIGUSR1)
        try await Task.sleep(for: .seconds(1))
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let objects = try String(contentsOf: out, encoding: .utf8).split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let events = objects.compactMap { $0["event"] as? String }
        #expect(events.contains("paused") && events.contains("resumed"))
        let probe = try MediaProbe.probe(url)
        // About 2.5 s recorded out of about 4 s: the paused 1.5 s is not in the file.
        #expect(probe.duration > 1.5 && probe.duration < 3.3, "duration \(probe.duration)")
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).compactMap(\.counter)
        // One join where the pause was; no other gap but a frame `finished` says was dropped.
        let jumps = zip(counters, counters.dropFirst()).filter { $1 - $0 > 30 }
        #expect(jumps.count == 1, "one join where the pause was: \(counters)")
        let finished = objects.last { $0["event"] as? String == "finished" }
        let missing = zip(counters, counters.dropFirst()).filter { $1 - $0 <= 30 }.reduce(0) { $0 + Int($1.1 - $1.0 - 1) }
        #expect(zip(counters, counters.dropFirst()).allSatisfy { $0 < $1 } && missing <= (finished?["dropped"] as? Int ?? -1),
                "\(missing) missing besides the pause: \(finished ?? [:])")
    }

    @Test func pauseModeOptions() throws {
        #expect(try ReelBinary.run(["record", "--test-pattern", "--pause-mode", "sometimes"]).status == 2)
    }

    @Test func withoutOutputTheFileGoesToTheVideosFolder() throws {
        let home = try TemporaryDirectory()
        let r = try ReelBinary.run(["record", "--test-pattern", "--size", "320x240", "--duration", "0.5"],
                                   environment: ["HOME": home.url.path, "XDG_CONFIG_HOME": home.url.appendingPathComponent(".config").path])
        #expect(r.status == 0, "\(r.stderr)")
        let videos = home.url.appendingPathComponent("Videos")
        let files = try FileManager.default.contentsOfDirectory(atPath: videos.path)
        #expect(files.count == 1)
        #expect(files.first?.hasPrefix("Reel ") == true && files.first?.hasSuffix(".mp4") == true)
        #expect(r.output.contains(videos.path))
    }

    @Test func clipModeKeepsClipsAndMergesThem() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("merged.mp4")
        let clips = dir.url.appendingPathComponent("takes")
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast",
                             "--keep-clips", clips.path, "-o", url.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try await Task.sleep(for: .seconds(1.5))
        kill(process.processIdentifier, SIGUSR1)
        try await Task.sleep(for: .seconds(1))
        kill(process.processIdentifier, SIGUSR1)
        try await Task.sleep(for: .seconds(1.5))
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let kept = try FileManager.default.contentsOfDirectory(atPath: clips.path).sorted()
        #expect(kept == ["clip-001.mp4", "clip-002.mp4"])
        let merged = try MediaProbe.probe(url)
        let parts = try kept.map { try MediaProbe.probe(clips.appendingPathComponent($0)) }
        let sum = parts.reduce(0) { $0 + ($1.videoStreams.first?.frameCount ?? 0) }
        #expect(merged.videoStreams.first?.frameCount == sum)
        #expect(merged.audioStreams.count == 1)
        #expect(!Recovery.isCutOff(url))
    }
}

@Suite("reel devices: cameras", .tags(.realTime))
struct DevicesCameraTests {
    @Test func listsCamerasWithFormatsSizesAndRates() throws {
        let driver = V4L2ReplayDriver(devices: [
            "/dev/video0": try V4L2Recording(parsing: CameraRecordings.logitechC920),
            "/dev/video1": try V4L2Recording(parsing: CameraRecordings.uvcMetadataNode),
        ])
        let lines = DevicesCommand.cameraLines(V4L2Devices.list(driver: driver))
        #expect(lines.first == "  /dev/video0  HD Pro Webcam C920  (uvcvideo, usb-0000:00:14.0-1)")
        #expect(lines.contains("    YUYV YUV 4:2:2 (YUYV)"))
        #expect(lines.contains("    H264 H.264 (Reel cannot record this format)"))
        #expect(lines.contains("      1920x1080 @ 5 fps"))
        #expect(lines.contains("      960x720 1024x576 @ 15, 10, 7.5, 5 fps"))
        #expect(lines.contains { $0.hasPrefix("  /dev/video1  HD Pro Webcam C920  (not a camera: metadata capture") })
    }

    @Test func saysClearlyWhenThereAreNoCameras() throws {
        #expect(DevicesCommand.cameraLines(V4L2DeviceList()) == [
            "  none: no cameras (no /dev/video* devices on this machine; plug one in, or pass it through to the VM or container)",
        ])
        let r = try ReelBinary.run(["devices"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.output.contains("Cameras (--camera=PATH):"))
        let none = (try? FileManager.default.contentsOfDirectory(atPath: "/dev"))?.allSatisfy { !$0.hasPrefix("video") } ?? true
        if none { #expect(r.output.contains("none: no cameras")) }
    }
}

@Suite("reel devices: audio", .tags(.realTime))
struct DevicesAudioTests {
    /// `reel devices --json` says what the text says of each audio device: rate and channels.
    @Test func devicesJSONHasSampleRateAndChannels() throws {
        let pulse = try PulseServer()
        let r = try ReelBinary.run(["devices", "--json"], environment: pulse.environment)
        #expect(r.status == 0, "\(r.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(r.output.utf8)) as? [String: Any])
        let sources = try #require(object["audioSources"] as? [[String: Any]])
        let sinks = try #require(object["audioSinks"] as? [[String: Any]])
        let mic = try #require(sources.first { $0["name"] as? String == PulseServer.microphoneName })
        let apps = try #require(sinks.first { $0["name"] as? String == PulseServer.sinkName })
        #expect(mic["sampleRate"] as? Int == 48_000)
        #expect(apps["sampleRate"] as? Int == 48_000)
        #expect(apps["channels"] as? Int == 2)
        let micChannels = try #require(mic["channels"] as? Int)
        let text = try ReelBinary.run(["devices"], environment: pulse.environment)
        let line = text.output.split(separator: "\n").first { $0.contains(" \(PulseServer.microphoneName) ") }
        #expect(line?.hasSuffix("48000 Hz \(micChannels) ch") == true, "\(text.output)")
    }
}

/// The command line tells its user which flag to pass where the library names a setting.
@Suite struct CommandLineHintTests {
    @Test func libraryHintsBecomeFlags() {
        let exists = ReelError(.fileExists, "out.mp4 already exists", hint: LibraryHint.allowOverwriting)
        #expect(CommandLineHints.rephrased(exists).hint == "choose another name, or pass --overwrite")
        let differ = ReelError(.incompatibleClips, "clip 2 is 640x480", hint: "\(LibraryHint.allowReencoding) or merge clips of one size")
        #expect(CommandLineHints.rephrased(differ).hint == "pass --reencode or merge clips of one size")
        #expect(CommandLineHints.rephrased(differ).message == differ.message)
        for (library, flag) in CommandLineHints.flags {
            #expect(!library.contains("--") && !library.contains("reel "), "the library's hint names no flag or command: \(library)")
            #expect(flag.contains("--") || flag.contains("-o") || flag.contains("reel "), "the command line's names one: \(flag)")
        }
        // The porting stranger's missing camera: the app's user reads the library's words, a
        // `reel` user the command that lists the cameras.
        let camera = ReelError(.sourceUnavailable, "there is no camera at /dev/video0", hint: LibraryHint.listCameras)
        #expect(CommandLineHints.rephrased(camera).hint == "check the path; reel devices lists the cameras")
        let several = ReelError(.invalidConfiguration, "2 windows match", hint: LibraryHint.nameOneByItsID + "0x400002; windows: …")
        #expect(CommandLineHints.rephrased(several).hint == "name one by its id, e.g. --window=0x400002; windows: …")
        // The default --min-free refusing on a small disk names the option that changes it.
        let low = ReelError(.insufficientStorage, "only 31 MB free in /small", hint: LibraryHint.freeSpaceOrLowerMinimum)
        #expect(CommandLineHints.rephrased(low).hint?.contains("lower --min-free") == true, "\(CommandLineHints.rephrased(low))")
        let plain = ReelError(.busy, "in use", hint: "close the other program")
        #expect(CommandLineHints.rephrased(plain) == plain)
    }
}
