import Foundation
import Observation
import Synchronization
import Testing
@testable import Reel
import ReelTestSupport

/// Live frames: the newest frame, converted for application code, never holding up capture.
@Suite(.tags(.realTime)) struct LiveFramesTests {
    static let size = PixelSize(width: 320, height: 240)

    /// The first frame of `stream` that is not a flash of the test pattern.
    func steadyFrame(_ stream: AsyncStream<LiveFrame>) async -> LiveFrame? {
        for await frame in stream where !BeepSchedule().isBeeping(at: frame.presentationTime) { return frame }
        return nil
    }

    @Test(arguments: [("test:red", [255, 0, 0]), ("test:green", [0, 255, 0]), ("test:blue", [0, 0, 255])])
    func testColoursComeBackInBGRAAndRGBA(location: String, rgb: [Int]) async throws {
        let session = CaptureSession(clock: ManualClock())
        let camera = try Cameras.source(for: try CameraLocation(parsing: location), size: Self.size)
        try session.addInput(camera)
        let live = LiveFrames()
        try session.addOutput(live)
        let bgra = live.frames(.init(format: .bgra))
        let rgba = live.frames(.init(format: .rgba, size: PixelSize(width: 160, height: 160), scaling: .fill))
        let gray = live.frames(.init(format: .gray))
        let nv12 = live.frames(.init(format: .nv12, size: PixelSize(width: 100, height: 100)))
        try await session.start()
        let b = try #require(await steadyFrame(bgra)), r = try #require(await steadyFrame(rgba))
        let g = try #require(await steadyFrame(gray)), n = try #require(await steadyFrame(nv12))
        await session.stop()
        #expect(b.size == Self.size && b.format == .bgra)
        #expect(r.size == PixelSize(width: 160, height: 160), "filled: exactly the size asked for")
        #expect(n.size == PixelSize(width: 100, height: 74), "fitted, aspect kept, even for NV12")
        func close(_ got: [UInt8], _ want: [Int], _ what: String) {
            #expect(zip(got, want).allSatisfy { abs(Int($0) - $1) <= 3 }, "\(location) \(what): got \(got), wanted \(want)")
        }
        // Below the counter strip, in the middle.
        close(b.pixel(x: 160, y: 180), [rgb[2], rgb[1], rgb[0], 255], "BGRA")
        close(r.pixel(x: 80, y: 120), [rgb[0], rgb[1], rgb[2], 255], "RGBA")
        let luma = 0.2126 * Double(rgb[0]) + 0.7152 * Double(rgb[1]) + 0.0722 * Double(rgb[2])
        close(g.pixel(x: 160, y: 180), [Int(luma.rounded())], "gray")
        let yuv = YUVColor(red: UInt8(rgb[0]), green: UInt8(rgb[1]), blue: UInt8(rgb[2]))
        close(n.pixel(x: 50, y: 56), [Int(yuv.y), Int(yuv.cb), Int(yuv.cr)], "NV12")
    }

    @Test func theComposedPictureComesAsOneFrame() async throws {
        let session = CaptureSession(clock: ManualClock())
        let red = try Cameras.source(for: .testPattern(.red), size: Self.size)
        let blue = try Cameras.source(for: .testPattern(.blue), size: Self.size)
        try session.addInput(red)
        try session.addInput(blue)
        let compositor = Compositor(settings: .init(size: PixelSize(width: 640, height: 240), layout: .sideBySide))
        let live = LiveFrames()
        try compositor.addOutput(live)
        try session.addOutput(compositor)
        let own = LiveFrames()                       // the blue camera on its own, beside
        try session.addOutput(own, connectedTo: [blue])
        let composed = live.frames(.init(format: .rgba))
        let both = LiveFrames()                      // both cameras, one of them picked per consumer
        try session.addOutput(both)
        let redID: SourceID = try #require(session.sourceID(of: red))
        let redOnly = both.frames(.init(format: .bgra, size: PixelSize(width: 16, height: 16)), from: redID)
        let alone = own.frames(.init(format: .rgba, size: PixelSize(width: 32, height: 32)))
        try await session.start()
        let frame = try #require(await steadyFrame(composed))
        let single = try #require(await steadyFrame(alone))
        let picked = try #require(await steadyFrame(redOnly))
        await session.stop()
        #expect(picked.source == redID)
        #expect(picked.pixel(x: 8, y: 10).dropFirst(2).first ?? 0 > 240, "red: \(picked.pixel(x: 8, y: 10))")
        #expect(both.sources.count == 2)
        #expect(frame.size == PixelSize(width: 640, height: 240))
        let left = frame.pixel(x: 160, y: 200), right = frame.pixel(x: 480, y: 200)
        #expect(left[0] > 240 && left[2] < 15, "red on the left: \(left)")
        #expect(right[2] > 240 && right[0] < 15, "blue on the right: \(right)")
        #expect(single.source != frame.source)
        #expect(single.size == PixelSize(width: 32, height: 24))
        #expect(single.pixel(x: 16, y: 20).dropFirst(2).first ?? 0 > 240, "blue: \(single.pixel(x: 16, y: 20))")
    }

    /// A consumer asleep for a second gets the newest frame when it wakes, not the next of a
    /// backlog, and the recording made beside it, in real time, keeps every frame.
    @Test func aSleepingConsumerGetsTheNewestFrameAndTheRecordingLosesNothing() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("beside.mp4")
        let session = CaptureSession()
        try session.addInput(TestPatternSource(size: Self.size, frameRate: FrameRate(30)))
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        settings.maxRecordedDuration = MediaTime(seconds: 3)
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        let live = LiveFrames()
        try session.addOutput(live)
        let frames = live.frames(.init(format: .bgra))
        try await session.start()
        var iterator = frames.makeAsyncIterator()
        let first = try #require(await iterator.next())
        try await Task.sleep(for: .seconds(1))
        let woken = try #require(await iterator.next())
        #expect(woken.sequenceNumber >= first.sequenceNumber + 25,
                "after a second asleep: frame \(woken.sequenceNumber), \(woken.sequenceNumber - first.sequenceNumber) after the first, not a backlog")
        let next = try #require(await iterator.next())
        #expect(next.sequenceNumber > woken.sequenceNumber)
        let summary = try await recorder.result()
        await session.stop()
        // Every frame, in order, or on a loaded machine all but a few the recording reports as
        // dropped (a consumer asleep for a second that held the recording up would cost 30).
        #expect(summary.droppedFrames <= 2, "\(summary.droppedFrames) dropped")
        let counters = try MediaProbe.decodeLuma(url, width: Self.size.width, height: Self.size.height).map(\.counter)
        #expect(counters.allSatisfy { $0 != nil })
        EveryFrame.expect(counters.compactMap { $0 }, of: 90, summary: summary, "every frame, in order")
        #expect(live.replacedFrames >= 20, "the asleep consumer's frames were left out, not queued: \(live.replacedFrames)")
    }

    /// Consumers come and go while the session runs: a model a UI binds to, observed through
    /// Observation, and a stream with a frame-rate cap.
    @Test func consumersComeAndGoWhileRunning() async throws {
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: Self.size, frameRate: FrameRate(30)))
        let live = LiveFrames()
        try session.addOutput(live)
        try await session.start()
        #expect(live.consumerCount == 0)

        let model = live.model(.init(format: .gray, size: PixelSize(width: 64, height: 64), scaling: .fill))
        final class Flag: Sendable { let raised = Mutex(false) }
        let changed = Flag()
        withObservationTracking { _ = model.frame } onChange: { changed.raised.withLock { $0 = true } }
        // Frames given after the tracking began (on a manual clock they come as fast as they
        // can: on a busy machine three came before it, and none was waited for).
        let tracked = model.frameCount
        let deadline = Date().addingTimeInterval(10)
        while model.frameCount < tracked + 3, Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        let heard = changed.raised.withLock { $0 }
        #expect(heard, "observers heard of the new frame")
        #expect(model.frame?.size == PixelSize(width: 64, height: 64))
        live.remove(model)
        #expect(live.consumerCount == 0)
        let count = model.frameCount
        try await Task.sleep(for: .milliseconds(100))
        #expect(model.frameCount == count, "no frame after its removal")

        let reader = Task { () -> [Double] in
            var times: [Double] = []
            for await frame in live.frames(.init(format: .rgba, size: PixelSize(width: 32, height: 32), maxFrameRate: 10)) {
                times.append(frame.presentationTime.seconds)
                if times.count == 6 { break }
            }
            return times
        }
        let times = await reader.value
        #expect(times.count == 6)
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 >= 0.075 }, "at most 10 a second: \(times)")
        let gone = Date().addingTimeInterval(10)
        while live.consumerCount > 0, Date() < gone { try await Task.sleep(for: .milliseconds(10)) }
        #expect(live.consumerCount == 0, "the stream went with its loop")
        await session.stop()
    }

    @Test func aStreamEndsWhenTheSessionStops() async throws {
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: Self.size))
        let live = LiveFrames()
        try session.addOutput(live)
        let stream = live.frames()
        try await session.start()
        let reader = Task { var n = 0; for await _ in stream { n += 1 }; return n }
        try await Task.sleep(for: .milliseconds(200))
        await session.stop()
        #expect(await reader.value > 0)
    }

    /// A decoded camera (a file, a network camera) whose pictures are BT.601, or full range
    /// like JPEG, comes out as the colour it is: the conversion into Reel's BT.709 frames reads
    /// the picture's own colour space and range.
    @Test(arguments: [("bt709", "tv", "yuv420p"), ("smpte170m", "tv", "yuv420p"), ("smpte170m", "pc", "yuvj420p")])
    func aDecodedCameraInAnyColourSpaceComesOutRed(space: String, range: String, pixelFormat: String) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("red-\(space)-\(range).mp4")
        let matrix = space == "bt709" ? "bt709" : "bt601"
        let made = try Subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=0xFF0000:s=320x240:r=30", "-t", "1",
                                       "-vf", "scale=out_color_matrix=\(matrix):out_range=\(range),format=\(pixelFormat)",
                                       "-color_primaries", space, "-color_trc", space, "-colorspace", space, "-color_range", range,
                                       "-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", url.path])
        try #require(made.status == 0, "ffmpeg: \(made.stderr)")
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(FileCameraSource(url: url, loops: false))
        let live = LiveFrames()
        try session.addOutput(live)
        let frames = live.frames(.init(format: .rgba))
        try await session.start()
        var iterator = frames.makeAsyncIterator()
        let frame = try #require(await iterator.next())
        await session.stop()
        let pixel = frame.pixel(x: 160, y: 120)
        // ffmpeg's own rounding, making the file, costs a few levels; BT.601 read as BT.709 is
        // 23 levels of green.
        #expect(abs(Int(pixel[0]) - 255) <= 6 && pixel[1] <= 6 && pixel[2] <= 6, "\(space) \(range): RGBA \(pixel)")
    }
}
