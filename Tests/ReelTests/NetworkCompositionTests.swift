import Foundation
import Testing
import Reel
import ReelTestSupport

/// Two or three network cameras served by real local servers (HTTP MJPEG and GStreamer's
/// RTSP server, each a solid colour), composed and recorded in real time; each camera also
/// recorded on its own and logged frame by frame in the same run; a server killed mid-way.
@Suite(.serialized, .tags(.realTime)) struct NetworkCompositionTests {
    static let size = PixelSize(width: 320, height: 240)
    static let red = RGBColor(red: 220, green: 30, blue: 30)
    static let blue = RGBColor(red: 30, green: 60, blue: 220)
    static let green = RGBColor(red: 30, green: 200, blue: 60)

    /// The name of the test colour near (x, y) of a decoded RGB frame, or a description.
    static func colour(_ rgb: [UInt8], width: Int, x: Int, y: Int) -> String {
        RGBColor.average(of: rgb, width: width, x: x, y: y, radius: 3)
            .name(in: ["red": red, "blue": blue, "green": green, "black": RGBColor(red: 0, green: 0, blue: 0)], tolerance: 39)
    }

    func settings(seconds: Double) -> Recorder.Settings {
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        settings.maxRecordedDuration = MediaTime(seconds: seconds)
        return settings
    }

    @Test func pictureInPictureOfTwoNetworkCamerasSwapsAndKeepsEachCamerasFileAndLog() async throws {
        let http = try MJPEGServer(color: Self.red, size: Self.size)
        let rtsp = try RTSPServer(color: Self.blue, size: Self.size, codec: .h264)
        let dir = try TemporaryDirectory()
        let session = CaptureSession()
        let large = URLCameraSource(url: http.url, name: "http camera")
        let small = URLCameraSource(url: rtsp.url, name: "rtsp camera")
        try session.addInput(large)
        try session.addInput(small)
        let compositor = Compositor(settings: .init(size: Self.size, layout: .pictureInPicture(corner: .bottomRight, size: 0.3, margin: 10)))
        let url = dir.url.appendingPathComponent("pip.mp4")
        let recorder = Recorder(url: url, settings: settings(seconds: 4))
        try compositor.addOutput(recorder)
        try session.addOutput(compositor)
        let own = [Recorder(url: dir.url.appendingPathComponent("http.mp4"), settings: settings(seconds: 4)),
                   Recorder(url: dir.url.appendingPathComponent("rtsp.mp4"), settings: settings(seconds: 4))]
        try session.addOutput(own[0], connectedTo: [large])
        try session.addOutput(own[1], connectedTo: [small])
        let log = dir.url.appendingPathComponent("frames.csv")
        try session.addOutput(FrameLog(url: log), connectedTo: [large, small])
        compositor.swap(at: MediaTime(seconds: 2))

        try await session.start()
        let summary = try await recorder.result()
        let ownSummaries = [try await own[0].result(), try await own[1].result()]
        await session.stop()

        #expect(summary.frames >= 100, "\(summary.frames) frames of 120")
        let frames = try MediaProbe.decodeRGB(url, width: 320, height: 240)
        let inset = (x: 320 - 10 - 48, y: 240 - 10 - 36)
        let pairs = frames.map { (Self.colour($0, width: 320, x: 80, y: 100), Self.colour($0, width: 320, x: inset.x, y: inset.y)) }
        // Red large with blue inset, then (after the swap) blue large with red inset; one change.
        let first = pairs.firstIndex { $0 == ("blue", "red") }
        let swapAt = try #require(first, "never swapped: \(pairs.prefix(3)) … \(pairs.suffix(3))")
        #expect(swapAt > 10)
        // The inset appears with the RTSP camera's first frame, which may come a moment after
        // the HTTP camera's (the large picture shows through until then).
        let insetFrom = try #require(pairs.firstIndex { $0 == ("red", "blue") })
        #expect(insetFrom < 30 && pairs[..<insetFrom].allSatisfy { $0 == ("red", "red") })
        #expect(pairs[insetFrom..<swapAt].allSatisfy { $0 == ("red", "blue") }, "before the swap: \(Set(pairs[insetFrom..<swapAt].map { "\($0)" }))")
        #expect(pairs[swapAt...].allSatisfy { $0 == ("blue", "red") }, "after the swap: \(Set(pairs[swapAt...].map { "\($0)" }))")

        for (name, colour, s) in [("http", "red", ownSummaries[0]), ("rtsp", "blue", ownSummaries[1])] {
            #expect(s.frames >= 100, "\(name): \(s.frames) frames")
            let ownFrames = try MediaProbe.decodeRGB(dir.url.appendingPathComponent("\(name).mp4"), width: 320, height: 240)
            #expect(ownFrames.allSatisfy { Self.colour($0, width: 320, x: 160, y: 120) == colour }, "\(name)'s own file")
        }
        let rows = try String(contentsOf: log, encoding: .utf8).split(separator: "\n").dropFirst().map { $0.split(separator: ",") }
        for name in ["http camera", "rtsp camera"] {
            let mine = rows.filter { $0[1] == name }
            #expect(mine.count >= 100, "\(name): \(mine.count) rows")
            let frameNumbers = mine.compactMap { Int($0[2]) }
            #expect(zip(frameNumbers, frameNumbers.dropFirst()).allSatisfy { $0 < $1 })
            let captured = mine.compactMap { Double($0[3]) }, presented = mine.compactMap { Double($0[4]) }
            #expect(zip(captured, captured.dropFirst()).allSatisfy { $0 < $1 })
            // Presentation time is capture time on the session's timeline: one fixed offset.
            let offsets = zip(captured, presented).map { $0 - $1 }
            #expect((offsets.max() ?? 0) - (offsets.min() ?? 0) < 1e-5)
        }
    }

    @Test func aGridOfThreeCameras() async throws {
        let servers = [try MJPEGServer(color: Self.red, size: Self.size), try MJPEGServer(color: Self.green, size: Self.size)]
        let rtsp = try RTSPServer(color: Self.blue, size: Self.size, codec: .mjpeg)
        let session = CaptureSession()
        for url in [servers[0].url, rtsp.url, servers[1].url] { try session.addInput(URLCameraSource(url: url)) }
        let canvas = PixelSize(width: 640, height: 480)
        let compositor = Compositor(settings: .init(size: canvas, layout: .grid))
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("grid.mp4")
        let recorder = Recorder(url: url, settings: settings(seconds: 2))
        try compositor.addOutput(recorder)
        try session.addOutput(compositor)
        try await session.start()
        _ = try await recorder.result()
        await session.stop()
        let rects = CompositionLayout.grid.rects(for: Array(repeating: Self.size, count: 3), canvas: canvas)
        let frames = try MediaProbe.decodeRGB(url, width: 640, height: 480)
        #expect(frames.count >= 50)
        // Past the first few frames (a camera's first frame may come a moment after the others').
        for rgb in frames.dropFirst(5) {
            for (name, r) in zip(["red", "blue", "green"], rects) {
                #expect(Self.colour(rgb, width: 640, x: r.x + r.width / 2, y: r.y + r.height / 2) == name)
            }
            #expect(Self.colour(rgb, width: 640, x: 480, y: 360) == "black", "the empty fourth cell")
        }
    }

    @Test func aCameraServerKilledMidRecordingLeavesAPlayableRecordingOfTheRest() async throws {
        let http = try MJPEGServer(color: Self.red, size: Self.size)
        let rtsp = try RTSPServer(color: Self.blue, size: Self.size, codec: .h264)
        let dir = try TemporaryDirectory()
        let session = CaptureSession()
        let left = URLCameraSource(url: http.url, name: "http camera")
        let right = URLCameraSource(url: rtsp.url, name: "rtsp camera")
        try session.addInput(left)
        try session.addInput(right)
        let canvas = PixelSize(width: 640, height: 240)
        let compositor = Compositor(settings: .init(size: canvas, layout: .sideBySide))
        let url = dir.url.appendingPathComponent("sbs.mp4")
        let recorder = Recorder(url: url, settings: settings(seconds: 4))
        try compositor.addOutput(recorder)
        try session.addOutput(compositor)
        let rightOwn = Recorder(url: dir.url.appendingPathComponent("rtsp.mp4"), settings: settings(seconds: 4))
        try session.addOutput(rightOwn, connectedTo: [right])
        let events = Task {
            var seen: [String] = []
            for await event in session.events {
                switch event {
                case .sourceInterrupted(let name, _): seen.append("interrupted \(name)")
                case .sourceLost(let name, _): seen.append("lost \(name)")
                default: break
                }
            }
            return seen
        }
        try await session.start()
        try await Task.sleep(for: .milliseconds(1500))
        rtsp.kill()
        let summary = try await recorder.result()
        await session.stop()
        let ownSummary = try await rightOwn.result()
        try await Task.sleep(for: .milliseconds(100))
        events.cancel()
        let seen = await events.value

        #expect(seen.contains("interrupted rtsp camera"), "\(seen)")
        #expect(summary.frames >= 100, "the recording went on: \(summary.frames) frames")
        let frames = try MediaProbe.decodeRGB(url, width: 640, height: 240)
        let rects = CompositionLayout.sideBySide.rects(for: [Self.size, Self.size], canvas: canvas)
        func at(_ rgb: [UInt8], _ r: PixelRect) -> String { Self.colour(rgb, width: 640, x: r.x + r.width / 2, y: r.y + r.height / 2) }
        #expect(frames.allSatisfy { at($0, rects[0]) == "red" }, "the HTTP camera throughout")
        #expect(at(frames[20], rects[1]) == "blue")
        #expect(at(frames[frames.count - 1], rects[1]) == "black", "the killed camera's place is blank")
        // The killed camera's own file holds what came before the kill, and plays.
        let probe = try MediaProbe.probe(dir.url.appendingPathComponent("rtsp.mp4"))
        #expect((probe.videoStreams.first?.frameCount ?? 0) >= 25)
        #expect(ownSummary.frames < summary.frames)
    }
}
