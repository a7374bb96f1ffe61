import Foundation
import Testing
import ReelCLI
import Reel
import ReelTestSupport

/// `reel record` with cameras: the options, composition of several cameras, each camera's own
/// file and the frame log, and the bad inputs.
@Suite struct CameraOptionTests: ParsesRecordOptions {
    @Test func parsesCamerasAndComposition() throws {
        let o = try options(["--screen", "--camera", "--camera=rtsp://10.0.0.5:554/live", "--camera=test:red", "--camera=clip.mp4",
                             "--pip-corner", "top-left", "--pip-size", "30%", "--each-source", "cams", "--frame-log", "f.csv",
                             "--zoom", "4:1.5"])
        #expect(o.cameras == [.device("/dev/video0"), .url(URL(string: "rtsp://10.0.0.5:554/live")!), .testPattern(.red),
                              .file(URL(fileURLWithPath: "clip.mp4"))])
        #expect(o.layout == .pictureInPicture(corner: .topLeft, size: 0.3, margin: 16))
        #expect(o.videoSourceCount == 5)
        #expect(o.eachSource?.lastPathComponent == "cams")
        #expect(o.frameLog?.lastPathComponent == "f.csv")
        #expect(o.zoom?.factor == 4 && o.zoom?.rate == 1.5)
        #expect(try options(["--camera=test", "--camera=test", "--layout", "grid"]).layout == .grid)
        #expect(try options(["--camera=/dev/video2", "--camera=test", "--layout", "side-by-side"]).layout == .sideBySide)
    }

    @Test(arguments: [
        (["--camera=test:mauve"], "unknown test camera colour 'mauve'"),
        (["--camera=ftp://cam/x"], "ftp:// addresses are not supported"),
        (["--camera=http://"], "is not a camera URL"),
        (["--camera=test", "--layout", "mosaic"], "--layout must be pip, side-by-side or grid"),
        (["--camera=test", "--pip-corner", "middle"], "--pip-corner must be"),
        (["--camera=test", "--pip-size", "2"], "--pip-size must be between"),
        (["--camera=test", "--pip-size", "big"], "--pip-size needs a fraction"),
        (["--camera=test", "--layout", "grid", "--pip-size", "0.3"], "--pip-corner and --pip-size go with --layout pip"),
        (["--camera=test", "--zoom", "0.5"], "--zoom must be between 1 and 16"),
        (["--camera=test", "--zoom", "2:-1"], "--zoom's rate must be a positive number"),
        (["--camera=test", "--zoom", "lots"], "--zoom needs a factor"),
        (["--camera=/dev/video0", "--faster-than-real-time", "--duration", "1"], "--faster-than-real-time works only with the synthetic"),
    ])
    func rejectsNonsense(_ args: [String], _ message: String) {
        let error = usageError(args)
        #expect(error?.contains(message) == true, "got: \(error ?? "no error")")
    }
}

@Suite(.tags(.realTime)) struct CameraCommandTests {
    /// With --json, `finished` says what each source's own file holds (`"sources"`), as the text
    /// summary does; it came only in the sourceFile events after `finished` (s5 F12).
    @Test func eachSourcesFileIsInFinished() throws {
        let dir = try TemporaryDirectory()
        let own = dir.url.appendingPathComponent("own")
        let r = try ReelBinary.run(["record", "--camera=test:red", "--camera=test:blue", "--size", "320x240", "--preset", "ultrafast",
                                    "--duration", "1", "--faster-than-real-time", "--each-source", own.path, "--json",
                                    "-o", dir.url.appendingPathComponent("both.mp4").path])
        #expect(r.status == 0, "\(r.stderr)")
        let events = r.output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let finished = try #require(events.first { $0["event"] as? String == "finished" }, "\(r.output)")
        let sources = finished["sources"] as? [[String: Any]] ?? []
        #expect(sources.compactMap { ($0["file"] as? String).map { URL(fileURLWithPath: $0).lastPathComponent } }
                == ["01-test-camera-red.mp4", "02-test-camera-blue.mp4"], "\(finished)")
        #expect(sources.allSatisfy { ($0["frames"] as? Int ?? 0) >= 30 }, "\(sources)")
    }

    @Test func composesTwoCamerasAndKeepsEachOneAndTheFrameLog() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("pip.mp4")
        let own = dir.url.appendingPathComponent("own")
        let log = dir.url.appendingPathComponent("frames.csv")
        let r = try ReelBinary.run(["record", "--camera=test:red", "--camera=test:blue", "--tone", "--size", "320x240",
                                    "--preset", "ultrafast", "--duration", "2", "--faster-than-real-time",
                                    "--each-source", own.path, "--frame-log", log.path, "-o", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        let probe = try MediaProbe.probe(url)
        #expect(probe.videoStreams.first?.frameCount == 60)
        #expect(probe.videoStreams.first?.width == 320)
        #expect(probe.audioStreams.count == 1)
        let frames = try MediaProbe.decodeRGB(url, width: 320, height: 240)
        // Red fills the picture; blue is the inset at the bottom right. Both flash white with
        // the tone's beeps (at 0.5 and 1.5 s, 3 frames each).
        for (i, rgb) in frames.enumerated() where !(15..<18).contains(i) && !(45..<48).contains(i) {
            #expect(RGB.classify(rgb, width: 320, x: 80, y: 120) == "red", "frame \(i)")
            #expect(RGB.classify(rgb, width: 320, x: 320 - 16 - 40, y: 240 - 16 - 30) == "blue", "frame \(i)")
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: own.path).sorted()
        #expect(files == ["01-test-camera-red.mp4", "02-test-camera-blue.mp4"])
        for file in files {
            let p = try MediaProbe.probe(own.appendingPathComponent(file))
            #expect(p.videoStreams.first?.frameCount ?? 0 >= 60, "\(file)")
            #expect(p.audioStreams.isEmpty)
        }
        let rows = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
        #expect(rows.first == "source,name,frame,capture_time,presentation_time,recorded")
        // Each camera's frames of the recorded two seconds are in the file, at their slots.
        for camera in ["test camera (red)", "test camera (blue)"] {
            let recorded = rows.filter { $0.contains(camera) && $0.hasSuffix(",yes") }
            #expect(recorded.count == 60, "\(camera)")
            let times: [Double] = recorded.compactMap { row in row.split(separator: ",").dropLast().last.flatMap { Double($0) } }
            let slots: [Double] = (0..<60).map { i in (Double(i) / 30 * 1_000_000).rounded() / 1_000_000 }
            #expect(times == slots, "\(camera)")
        }
        #expect(r.output.contains("01-test-camera-red.mp4"))
    }

    @Test func aMissingCameraIsOneClearLineAndNothingIsWritten() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("none.mp4")
        let r = try ReelBinary.run(["record", "--camera=/dev/video57", "--duration", "1", "-o", url.path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("/dev/video57"), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1)
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test func existingPerSourceFilesAndFrameLogsAreNotOverwritten() throws {
        let dir = try TemporaryDirectory()
        let log = dir.url.appendingPathComponent("frames.csv")
        try Data("precious".utf8).write(to: log)
        let r = try ReelBinary.run(["record", "--camera=test", "--duration", "1", "--faster-than-real-time",
                                    "--frame-log", log.path, "-o", dir.url.appendingPathComponent("x.mp4").path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("already exists"))
        #expect(try String(contentsOf: log, encoding: .utf8) == "precious")
    }
}

/// Classifies decoded RGB pixels for the camera tests.
enum RGB {
    static func classify(_ rgb: [UInt8], width: Int, x: Int, y: Int) -> String {
        RGBColor.average(of: rgb, width: width, x: x, y: y).name(in: RGBColor.primaries, tolerance: 90)
    }
}
