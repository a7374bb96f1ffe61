import Foundation
import Testing
import Reel
import ReelTestSupport

/// Several cameras composed into one picture on a manual clock, faster than real time: which
/// colour lands where, swaps, every source's own file and the frame log of the same run.
@Suite struct CompositorTests {
    static let size = PixelSize(width: 320, height: 240)

    /// The colour of a decoded RGB frame around (x, y): "red", "green", "blue", "black" or "other …".
    static func colour(_ rgb: [UInt8], width: Int, x: Int, y: Int) -> String {
        RGBColor.average(of: rgb, width: width, x: x, y: y).name(in: RGBColor.primaries, tolerance: 90)
    }

    func camera(_ colour: YUVColor, _ name: String) -> TestPatternSource {
        TestPatternSource(size: Self.size, frameRate: FrameRate(30), beeps: .never, background: colour, name: name)
    }

    func recorderSettings(seconds: Int) -> Recorder.Settings {
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        settings.maxRecordedDuration = MediaTime(value: Int64(seconds), timescale: 1)
        return settings
    }

    @Test func pictureInPictureSwapsAndRecordsEachSourceAndTheFrameLog() async throws {
        let dir = try TemporaryDirectory()
        let session = CaptureSession(clock: ManualClock())
        let red = camera(.red, "red camera"), blue = camera(.blue, "blue camera")
        try session.addInput(red)
        try session.addInput(blue)
        try session.addInput(ToneSource())
        let compositor = Compositor(settings: .init(size: Self.size, frameRate: FrameRate(30),
                                                    layout: .pictureInPicture(corner: .bottomRight, size: 0.25, margin: 8)))
        let composedURL = dir.url.appendingPathComponent("pip.mp4")
        let composed = Recorder(url: composedURL, settings: recorderSettings(seconds: 2))
        try compositor.addOutput(composed)
        try session.addOutput(compositor)
        compositor.swap(at: MediaTime(value: 1, timescale: 1))
        // Each camera in its own file too, in the same run.
        let redOwn = Recorder(url: dir.url.appendingPathComponent("red.mp4"), settings: recorderSettings(seconds: 2))
        let blueOwn = Recorder(url: dir.url.appendingPathComponent("blue.mp4"), settings: recorderSettings(seconds: 2))
        try session.addOutput(redOwn, connectedTo: [red])
        try session.addOutput(blueOwn, connectedTo: [blue])
        let logURL = dir.url.appendingPathComponent("frames.csv")
        try session.addOutput(FrameLog(url: logURL), connectedTo: [red, blue])

        try await session.start()
        let summary = try await composed.result()
        let redSummary = try await redOwn.result()
        let blueSummary = try await blueOwn.result()
        await session.stop()

        #expect(summary.frames == 60)
        #expect(summary.audioTracks.count == 1, "the session's audio goes through the compositor")
        let frames = try MediaProbe.decodeRGB(composedURL, width: 320, height: 240)
        #expect(frames.count == 60)
        // The inset: a quarter of the width at the bottom right, 8 pixels in.
        let insetCentre = (x: 320 - 8 - 40, y: 240 - 8 - 30)
        for (i, rgb) in frames.enumerated() {
            let (large, small) = i < 30 ? ("red", "blue") : ("blue", "red")
            #expect(Self.colour(rgb, width: 320, x: 100, y: 120) == large, "frame \(i): large picture")
            #expect(Self.colour(rgb, width: 320, x: insetCentre.x, y: insetCentre.y) == small, "frame \(i): inset")
        }
        // The composed file still carries the large source's frame counter strip.
        let luma = try MediaProbe.decodeLuma(composedURL, width: 320, height: 240)
        #expect(luma.prefix(30).map(\.counter) == (0..<30).map { Int64($0) })

        #expect(redSummary.frames == 60 && blueSummary.frames == 60)
        #expect(redSummary.audioTracks.isEmpty, "a source's own file holds only that source")
        let redFrames = try MediaProbe.decodeRGB(dir.url.appendingPathComponent("red.mp4"), width: 320, height: 240)
        #expect(redFrames.allSatisfy { Self.colour($0, width: 320, x: insetCentre.x, y: insetCentre.y) == "red" })
        let blueFrames = try MediaProbe.decodeRGB(dir.url.appendingPathComponent("blue.mp4"), width: 320, height: 240)
        #expect(blueFrames.allSatisfy { Self.colour($0, width: 320, x: 100, y: 120) == "blue" })

        let log = try String(contentsOf: logURL, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(log.first == "source,name,frame,capture_time,presentation_time")
        let rows = log.dropFirst().map { $0.split(separator: ",").map(String.init) }
        #expect(rows.allSatisfy { $0.count == 5 })
        let redRows = rows.filter { $0[1] == "red camera" }, blueRows = rows.filter { $0[1] == "blue camera" }
        // The log runs until the session stops: at least the recorded two seconds of each.
        #expect(redRows.count >= 60 && blueRows.count >= 60)
        #expect(redRows.prefix(60).map { Int($0[2]) } == (0..<60).map { Int?($0) })
        for row in redRows.prefix(60) {
            let frame = Double(row[2])!, presentation = Double(row[4])!
            #expect(abs(presentation - frame / 30) < 1e-5)
        }
    }

    @Test(arguments: [CompositionLayout.sideBySide, .grid])
    func sideBySideAndGridPutEachSourceInItsCell(_ layout: CompositionLayout) async throws {
        let dir = try TemporaryDirectory()
        let session = CaptureSession(clock: ManualClock())
        let colours: [(YUVColor, String)] = [(.red, "red"), (.green, "green"), (.blue, "blue")]
        for (c, name) in colours { try session.addInput(camera(c, name)) }
        let canvas = PixelSize(width: 640, height: 240)
        let compositor = Compositor(settings: .init(size: canvas, frameRate: FrameRate(30), layout: layout))
        let url = dir.url.appendingPathComponent("layout.mp4")
        let recorder = Recorder(url: url, settings: recorderSettings(seconds: 1))
        try compositor.addOutput(recorder)
        try session.addOutput(compositor)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        #expect(summary.frames == 30)

        let rects = layout.rects(for: Array(repeating: Self.size, count: 3), canvas: canvas)
        let frames = try MediaProbe.decodeRGB(url, width: 640, height: 240)
        #expect(frames.count == 30)
        for rgb in frames {
            for ((_, name), rect) in zip(colours, rects) {
                // Below the counter strip, in the middle of the cell.
                #expect(Self.colour(rgb, width: 640, x: rect.x + rect.width / 2, y: rect.y + rect.height * 2 / 3) == name, "\(layout): \(name) at \(rect)")
            }
        }
        // Outside every picture the background shows.
        if layout == .grid {
            let fourthCell = PixelRect(x: 320, y: 120, width: 320, height: 120)
            #expect(Self.colour(frames[5], width: 640, x: fourthCell.x + 160, y: fourthCell.y + 60) == "black")
        }
    }

    @Test func digitalZoomCropsAboutTheCentre() async throws {
        let dir = try TemporaryDirectory()
        let session = CaptureSession(clock: ManualClock())
        let cam = camera(.blue, "zoomed")
        cam.videoZoomFactor = 2
        try session.addInput(cam)
        let url = dir.url.appendingPathComponent("zoom.mp4")
        let recorder = Recorder(url: url, settings: recorderSettings(seconds: 1))
        try session.addOutput(recorder)
        try await session.start()
        _ = try await recorder.result()
        await session.stop()
        // At 2x the middle half shows: the counter strip along the top edge is cut away.
        let luma = try MediaProbe.decodeLuma(url, width: 320, height: 240)
        #expect(luma.count == 30)
        #expect(luma.allSatisfy { $0.counter == nil })
        let rgb = try MediaProbe.decodeRGB(url, width: 320, height: 240)
        #expect(Self.colour(rgb[0], width: 320, x: 10, y: 4) == "blue")
        #expect(cam.videoZoomFactor == 2)
    }

    @Test func compositionGoesOnWhenASourceIsLostAndEndsWhenAllAre() async throws {
        let dir = try TemporaryDirectory()
        let session = CaptureSession(clock: ManualClock())
        let steady = camera(.red, "steady")
        let failing = FailingSource(inner: camera(.blue, "failing"), failAt: MediaTime(value: 1, timescale: 2))
        try session.addInput(failing)
        try session.addInput(steady)
        let compositor = Compositor(settings: .init(size: Self.size, frameRate: FrameRate(30), layout: .sideBySide))
        let url = dir.url.appendingPathComponent("lost.mp4")
        let recorder = Recorder(url: url, settings: recorderSettings(seconds: 2))
        try compositor.addOutput(recorder)
        try session.addOutput(compositor)
        let events = Task { var lost: [String] = []; for await e in session.events { if case .sourceLost(let n, _) = e { lost.append(n) } }; return lost }
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        #expect(summary.frames == 60, "the failing source drove composition; the other took over without a gap")
        let rgb = try MediaProbe.decodeRGB(url, width: 320, height: 240)
        let rects = CompositionLayout.sideBySide.rects(for: [Self.size, Self.size], canvas: Self.size)
        let left = rects[0], right = rects[1]
        #expect(Self.colour(rgb[5], width: 320, x: left.x + left.width / 2, y: left.y + left.height * 2 / 3) == "blue")
        #expect(Self.colour(rgb[50], width: 320, x: left.x + left.width / 2, y: left.y + left.height * 2 / 3) == "black")
        #expect(rgb.allSatisfy { Self.colour($0, width: 320, x: right.x + right.width / 2, y: right.y + right.height * 2 / 3) == "red" })
        try await Task.sleep(for: .milliseconds(100))
        events.cancel()
        #expect(await events.value == ["failing"])
    }

    @Test func aCameraThatFreezesWithoutAWordStopsDrivingComposition() async throws {
        let dir = try TemporaryDirectory()
        let session = CaptureSession(clock: ManualClock())
        // The frozen camera comes first, so it drives until it goes quiet at 0.5 s.
        try session.addInput(FailingSource(inner: camera(.blue, "frozen"), failAt: MediaTime(value: 1, timescale: 2), reports: false))
        try session.addInput(camera(.red, "steady"))
        let compositor = Compositor(settings: .init(size: Self.size, frameRate: FrameRate(30), layout: .sideBySide))
        let url = dir.url.appendingPathComponent("frozen.mp4")
        let recorder = Recorder(url: url, settings: recorderSettings(seconds: 2))
        try compositor.addOutput(recorder)
        try session.addOutput(compositor)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        // The steady camera took over: the recording reached its two seconds, a few slots at
        // the hand-over aside.
        #expect(summary.frames >= 55, "\(summary.frames) frames")
        let rgb = try MediaProbe.decodeRGB(url, width: 320, height: 240)
        let right = CompositionLayout.sideBySide.rects(for: [Self.size, Self.size], canvas: Self.size)[1]
        #expect(rgb.allSatisfy { Self.colour($0, width: 320, x: right.x + right.width / 2, y: right.y + right.height * 2 / 3) == "red" })
    }

    @Test func aRecordingEndsCleanlyWhenEverySourceHasGone() async throws {
        let dir = try TemporaryDirectory()
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(FailingSource(inner: camera(.green, "only"), failAt: MediaTime(value: 1, timescale: 1)))
        let url = dir.url.appendingPathComponent("gone.mp4")
        let recorder = Recorder(url: url, settings: recorderSettings(seconds: 10))
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        #expect(summary.ending == .sourcesGone)
        #expect(summary.frames == 30)
        #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == 30)
    }
}

/// A camera that delivers until `failAt`, then reports itself lost, as an unplugged device
/// does (the real devices' losses are tested with their own servers).
final class FailingSource: CameraSource, @unchecked Sendable {
    let inner: TestPatternSource
    let failAt: MediaTime
    /// Whether the failure is reported (unplugged) or not (frozen without a word).
    let reports: Bool
    var name: String { inner.name }
    var kind: SampleKind { .video }
    var zoom: ZoomControl { inner.zoom }
    private let failed = NSLock()
    private var hasFailed = false

    init(inner: TestPatternSource, failAt: MediaTime, reports: Bool = true) {
        self.inner = inner
        self.failAt = failAt
        self.reports = reports
    }

    func prepare() throws -> SourceFormat { try inner.prepare() }

    func start(_ context: SourceContext) throws {
        let failAt = self.failAt
        try inner.start(SourceContext(id: context.id, clock: context.clock, origin: context.origin, deliver: { [self] sample in
            failed.lock(); defer { failed.unlock() }
            guard !hasFailed else { return }
            if sample.presentationTime >= failAt {
                hasFailed = true
                if reports { context.report(.lost(ReelError(.sourceUnavailable, "\(name) was unplugged"))) }
                return
            }
            context.deliver(sample)
        }, report: context.report))
    }

    func stop() { inner.stop() }
}
