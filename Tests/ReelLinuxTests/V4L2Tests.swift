import Foundation
import ReelCore
import ReelSystem
import ReelFFmpeg
@testable import ReelLinux
import ReelTestSupport
import Synchronization
import Testing

/// What a delivered frame said about itself (kept for every frame; the frames themselves only
/// for the first few, so that the camera's bounded pool never runs dry).
private struct FrameSummary: Sendable {
    var sequenceNumber: Int64
    var presentationTime: MediaTime
    var captureTime: MediaTime?
    var arrival: MediaTime
}

/// Collects what a camera delivers and reports.
private final class Collector: Sendable {
    /// The first frames, kept for their contents (fewer than a camera pool's 8).
    static let kept = 6
    let frames = Mutex<[VideoFrame]>([])
    let summaries = Mutex<[FrameSummary]>([])
    let events = Mutex<[SourceEvent]>([])
    let clock: any MediaClock
    let origin: MediaTime

    init(clock: any MediaClock = HostClock()) {
        self.clock = clock
        origin = clock.now()
    }

    var context: SourceContext {
        SourceContext(id: SourceID(1), clock: clock, origin: origin,
                      deliver: { [self] sample in
                          if case .video(let frame) = sample {
                              summaries.withLock {
                                  $0.append(FrameSummary(sequenceNumber: frame.sequenceNumber, presentationTime: frame.presentationTime,
                                                         captureTime: frame.captureTime, arrival: clock.now()))
                              }
                              frames.withLock { if $0.count < Self.kept { $0.append(frame) } }
                          }
                      },
                      report: { [self] event in events.withLock { $0.append(event) } })
    }

    var received: [FrameSummary] { summaries.withLock { $0 } }
    var kept: [VideoFrame] { frames.withLock { $0 } }
    var dropped: Int {
        events.withLock { $0.reduce(0) { if case .droppedFrames(let n, _) = $1 { return $0 + n } else { return $0 } } }
    }
    var lost: ReelError? {
        events.withLock { $0.compactMap { if case .lost(let e) = $0 { return e } else { return nil } }.first }
    }

    func wait(timeout: Double, until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            if Date() >= deadline { return false }
            usleep(5_000)
        }
        return true
    }
}

private func recording(_ text: String) throws -> V4L2Recording { try V4L2Recording(parsing: text) }

private func replay(_ devices: [String: String], skipped: Set<UInt32> = [], timestamps: V4L2ReplayDriver.Timestamps = .monotonic,
                    stallAfter: Int? = nil, writer: @escaping V4L2ReplayDriver.FrameWriter = V4L2ReplayDriver.patternWriter) throws -> V4L2ReplayDriver {
    V4L2ReplayDriver(devices: try devices.mapValues { try recording($0) }, skippedSequences: skipped, timestamps: timestamps,
                     stallAfterFrames: stallAfter, writer: writer)
}

private func c920() throws -> V4L2Device {
    try V4L2Devices.describe("/dev/video0", driver: replay(["/dev/video0": CameraRecordings.logitechC920]))
}

private func eightMegapixel() throws -> V4L2Device {
    try V4L2Devices.describe("/dev/video0", driver: replay(["/dev/video0": CameraRecordings.eightMegapixelMJPEG]))
}

private func expectError(_ code: ReelError.Code, containing text: String, _ body: () throws -> Void,
                         sourceLocation: SourceLocation = #_sourceLocation) -> ReelError? {
    do {
        try body()
        Issue.record("expected a \(code) error", sourceLocation: sourceLocation)
        return nil
    } catch let error as ReelError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        #expect(error.description.contains(text), "\(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

@Suite("V4L2 recordings")
struct V4L2RecordingTests {
    @Test func readsTheOlderLayoutOfAC920() throws {
        let r = try recording(CameraRecordings.logitechC920)
        #expect(r.identity.card == "HD Pro Webcam C920")
        #expect(r.identity.driver == "uvcvideo")
        #expect(r.identity.busInfo == "usb-0000:00:14.0-1")
        #expect(r.identity.capabilities.contains(.metadataCapture))
        #expect(r.identity.effectiveCapabilities == [.videoCapture, .streaming, .extendedPixelFormat])
        #expect(r.formats.map(\.entry.fourCC) == [.yuyv, .h264, .mjpeg])
        #expect(r.formats.map(\.entry.description) == ["YUV 4:2:2 (YUYV)", "H.264", "MJPEG"])
        #expect(r.formats.map(\.entry.isCompressed) == [false, true, true])
        #expect(r.formats[0].sizes.count == 19)
        #expect(r.formats[2].sizes.count == 17)
        #expect(r.formats[0].sizes[0].intervals.count == 7)
        // 7.5 fps is 2/15 s per frame exactly, though the text says 0.133s.
        #expect(r.formats[0].sizes[0].intervals[5] == .discrete(V4L2Fraction(2, 15)))
        #expect(r.currentFormat == V4L2PixFormat(fourCC: .yuyv, size: PixelSize(width: 640, height: 480), bytesPerLine: 1280, sizeImage: 614_400))
        #expect(r.currentInterval == V4L2Fraction(1, 30))
        #expect(r.canSetFrameInterval)
    }

    @Test func readsTheCurrentLayout() throws {
        let device = try eightMegapixel()
        #expect(device.card == "8MP USB Camera: 8MP USB Camera")
        #expect(device.formats.map(\.fourCC) == [.mjpeg, .yuyv])
        #expect(device.formats[0].description == "Motion-JPEG")
        #expect(device.formats[0].isCompressed)
        #expect(device.formats[0].frameSizes.count == 10)
        #expect(device.formats[1].frameSizes.last == V4L2FrameSize(.discrete(PixelSize(width: 1920, height: 1080)), frameRates: .discrete([FrameRate(5)])))
        #expect(device.formats[1].frameSizes[4].frameRates == .discrete([FrameRate(7)]))
    }

    @Test func readsStepwiseSizesAndContinuousIntervals() throws {
        let text = """
        Driver Info:
        \tDriver name      : vivid
        \tCard type        : vivid
        \tBus info         : platform:vivid-000
        \tCapabilities     : 0x04000001
        ioctl: VIDIOC_ENUM_FMT
        \tType: Video Capture

        \t[0]: 'NV12' (Y/UV 4:2:0)
        \t\tSize: Stepwise 16x16 - 1920x1080 with step 2/2
        \t\t\tInterval: Continuous 0.033s - 1.000s with step 0.000s (1.000-30.000 fps)
        \t[1]: 'YU12' (Planar YUV 4:2:0, emulated)
        \t\tSize: Discrete 640x480
        \t\t\tInterval: Discrete 0.033s (29.970 fps)
        """
        let r = try recording(text)
        #expect(r.formats[0].sizes[0].size == .stepwise(min: PixelSize(width: 16, height: 16), max: PixelSize(width: 1920, height: 1080),
                                                         step: PixelSize(width: 2, height: 2)))
        #expect(r.formats[1].entry.isEmulated)
        #expect(r.formats[1].sizes[0].intervals == [.discrete(V4L2Fraction(1001, 30000))])
        let device = try V4L2Devices.describe("/dev/video0", driver: V4L2ReplayDriver(devices: ["/dev/video0": r]))
        #expect(device.formats[0].frameSizes[0].frameRates == .range(slowest: FrameRate(1), fastest: FrameRate(30)))
        // A range offers the requested size, rounded to its step, and rates within the range.
        let n = try device.negotiate(size: PixelSize(width: 1001, height: 700), frameRate: FrameRate(25))
        #expect(n.chosen == V4L2Mode(fourCC: .nv12, size: PixelSize(width: 1002, height: 700), frameRate: FrameRate(25)))
        let big = try device.negotiate(size: PixelSize(width: 3840, height: 2160), frameRate: FrameRate(60))
        #expect(big.chosen == V4L2Mode(fourCC: .nv12, size: PixelSize(width: 1920, height: 1080), frameRate: FrameRate(30)))
        #expect(big.warnings.count == 2)
    }

    @Test func rejectsTextThatIsNotARecording() {
        _ = expectError(.invalidConfiguration, containing: "Driver Info") { _ = try recording("ioctl: VIDIOC_ENUM_FMT\n") }
        _ = expectError(.invalidConfiguration, containing: "format list") {
            _ = try recording("Driver Info:\n\tDriver name : uvcvideo\n\tCard type : Cam\n")
        }
        _ = expectError(.invalidConfiguration, containing: "frame size") {
            _ = try recording("Driver Info:\n\tDriver name : uvcvideo\n\tCard type : Cam\nioctl: VIDIOC_ENUM_FMT\n\t[0]: 'YUYV' (YUYV 4:2:2)\n\t\tSize: Discrete huge\n")
        }
    }
}

@Suite("V4L2 discovery and negotiation")
struct V4L2DiscoveryTests {
    @Test func listsCamerasOtherNodesAndUnopenableOnes() throws {
        let driver = try replay(["/dev/video0": CameraRecordings.logitechC920, "/dev/video1": CameraRecordings.uvcMetadataNode,
                                 "/dev/video2": CameraRecordings.eightMegapixelMJPEG, "/dev/video10": CameraRecordings.logitechC920])
        driver.fail(.open, errno: EACCES, path: "/dev/video10")
        let list = V4L2Devices.list(driver: driver)
        #expect(list.cameras.map(\.path) == ["/dev/video0", "/dev/video2"])
        #expect(list.cameras[0].formats.map(\.fourCC) == [.yuyv, .h264, .mjpeg])
        #expect(list.otherDevices.map(\.path) == ["/dev/video1"])
        #expect(list.unavailable.map(\.path) == ["/dev/video10"])
        #expect(list.unavailable.first?.error.code == .permissionDenied)
        #expect(list.unavailable.first?.error.hint?.contains("usermod -aG video") == true)
        #expect(driver.openDescriptors == 0)
    }

    @Test func anExactMatchWinsAndRawIsPreferred() throws {
        let n = try c920().negotiate(size: PixelSize(width: 640, height: 480), frameRate: FrameRate(30))
        #expect(n.chosen == V4L2Mode(fourCC: .yuyv, size: PixelSize(width: 640, height: 480), frameRate: FrameRate(30)))
        #expect(n.isExactMatch)
        #expect(n.warning == nil)
    }

    @Test func mjpegIsChosenWhereOnlyItReachesTheRate() throws {
        let n = try c920().negotiate(size: PixelSize(width: 1920, height: 1080), frameRate: FrameRate(30))
        #expect(n.chosen == V4L2Mode(fourCC: .mjpeg, size: PixelSize(width: 1920, height: 1080), frameRate: FrameRate(30)))
        #expect(n.isExactMatch)
        // Without a decoder, only YUYV is left: the size holds, the rate falls.
        let raw = try c920().negotiate(size: PixelSize(width: 1920, height: 1080), frameRate: FrameRate(30), decodableFormats: [])
        #expect(raw.chosen == V4L2Mode(fourCC: .yuyv, size: PixelSize(width: 1920, height: 1080), frameRate: FrameRate(5)))
        #expect(raw.warning == "30 fps is not offered for YUYV 1920x1080; using 5 fps")
    }

    @Test func theClosestSizeIsChosenAndReported() throws {
        let n = try c920().negotiate(size: PixelSize(width: 1000, height: 700), frameRate: FrameRate(30))
        #expect(n.chosen == V4L2Mode(fourCC: .mjpeg, size: PixelSize(width: 960, height: 720), frameRate: FrameRate(30)))
        #expect(n.warnings == ["the camera has no 1000x700 frames; the closest is 960x720"])
    }

    @Test func theRateFallsBackToTheNearestOffered() throws {
        let n = try c920().negotiate(size: PixelSize(width: 1280, height: 720), frameRate: FrameRate(60))
        #expect(n.chosen == V4L2Mode(fourCC: .mjpeg, size: PixelSize(width: 1280, height: 720), frameRate: FrameRate(30)))
        #expect(n.warning == "60 fps is not offered for MJPG 1280x720; using 30 fps")
        let slow = try c920().negotiate(size: PixelSize(width: 1280, height: 720), frameRate: FrameRate(8), format: .yuyv)
        #expect(slow.chosen.frameRate == FrameRate(15, per: 2))
    }

    @Test func highResolutionsComeOnlyAsMJPEG() throws {
        let device = try eightMegapixel()
        let n = try device.negotiate(size: PixelSize(width: 3264, height: 2448), frameRate: FrameRate(15))
        #expect(n.chosen == V4L2Mode(fourCC: .mjpeg, size: PixelSize(width: 3264, height: 2448), frameRate: FrameRate(15)))
        #expect(n.isExactMatch)
        let small = try device.negotiate(size: PixelSize(width: 640, height: 480), frameRate: FrameRate(30))
        #expect(small.chosen.fourCC == .yuyv)
        // Asking for YUYV at a size only MJPEG has: the largest YUYV size, said so.
        let yuyv = try device.negotiate(size: PixelSize(width: 3264, height: 2448), frameRate: FrameRate(15), format: .yuyv)
        #expect(yuyv.chosen == V4L2Mode(fourCC: .yuyv, size: PixelSize(width: 1920, height: 1080), frameRate: FrameRate(5)))
        #expect(yuyv.warnings.count == 2)
        // Without a decoder the camera's high resolutions are out of reach.
        let raw = try device.negotiate(size: PixelSize(width: 3264, height: 2448), frameRate: FrameRate(15), decodableFormats: [])
        #expect(raw.chosen.fourCC == .yuyv)
    }

    @Test func aMissingFormatIsReplacedAndReported() throws {
        let n = try c920().negotiate(size: PixelSize(width: 640, height: 480), frameRate: FrameRate(30), format: .nv12)
        #expect(n.chosen.fourCC == .yuyv)
        #expect(n.warnings == ["the camera has no NV12 format; using YUYV"])
        let h264 = try c920().negotiate(size: PixelSize(width: 640, height: 480), frameRate: FrameRate(30), format: .h264)
        #expect(h264.warnings == ["Reel cannot capture H264 from this camera; using YUYV"])
    }

    @Test func aCameraWithOnlyMJPEGNeedsADecoder() throws {
        let text = """
        Driver Info:
        \tDriver name      : uvcvideo
        \tCard type        : MJPEG Cam
        \tCapabilities     : 0x04000001
        ioctl: VIDIOC_ENUM_FMT
        \t[0]: 'MJPG' (Motion-JPEG, compressed)
        \t\tSize: Discrete 1280x720
        \t\t\tInterval: Discrete 0.033s (30.000 fps)
        \t[1]: 'H264' (H.264, compressed)
        \t\tSize: Discrete 1280x720
        \t\t\tInterval: Discrete 0.033s (30.000 fps)
        """
        let device = try V4L2Devices.describe("/dev/video0", driver: replay(["/dev/video0": text]))
        _ = expectError(.unsupportedFormat, containing: "MJPEGDecoder.factory") {
            _ = try device.negotiate(size: PixelSize(width: 1280, height: 720), frameRate: FrameRate(30), decodableFormats: [])
        }
    }
}

@Suite("V4L2 capture", .serialized, .tags(.realTime))
struct V4L2CaptureTests {
    @Test func capturesYUYVFramesWithTheirContentsAndDriverTimes() throws {
        let driver = try replay(["/dev/video0": CameraRecordings.logitechC920])
        let camera = V4L2CameraSource(path: "/dev/video0", size: PixelSize(width: 640, height: 480), frameRate: FrameRate(30),
                                      format: nil, decoderFactory: nil, driver: driver)
        let format = try camera.prepare()
        #expect(format == .video(size: PixelSize(width: 640, height: 480), pixelFormat: .yuyv, frameRate: FrameRate(30)))
        #expect(camera.negotiation?.isExactMatch == true)
        #expect(driver.openDescriptors == 0, "prepare closes the camera again")
        let collector = Collector()
        try camera.start(collector.context)
        #expect(collector.wait(timeout: 5) { collector.received.count >= 12 })
        camera.stop()
        #expect(driver.openDescriptors == 0)
        #expect(driver.mappedBuffers == 0)
        #expect(collector.dropped == 0)
        #expect(collector.lost == nil)
        for (i, frame) in collector.kept.enumerated() {
            #expect(frame.sequenceNumber == Int64(i))
            #expect(frame.format == .yuyv)
            // The replayed camera writes luma 16 + sequence, chroma 128.
            let expected = UInt8(16 + i % 200)
            frame.withUnsafePlane(0) { bytes, stride in
                for row in [0, 239, 479] {
                    for x in [0, 2, 638, 1278] { #expect(bytes[row * stride + x] == expected) }
                    #expect(bytes[row * stride + 1] == 128)
                    #expect(bytes[row * stride + 1279] == 128)
                }
            }
        }
        let frames = collector.received
        for (i, frame) in frames.enumerated() {
            #expect(frame.sequenceNumber == Int64(i))
            // CLOCK_MONOTONIC driver stamps are taken as they are, 1/30 s apart.
            let capture = try #require(frame.captureTime)
            #expect(frame.presentationTime == capture - collector.origin)
            if i > 0, let previous = frames[i - 1].captureTime {
                #expect(abs((capture - previous).nanoseconds - 33_333_333) <= 1_000)
            }
            let arrival = frame.arrival
            // On the session's clock (not another epoch): before its arrival, and not seconds before.
            #expect(capture <= arrival && (arrival - capture).seconds < 5, "captured \(capture), delivered \(arrival)")
        }
    }

    @Test func gapsInTheDriversSequenceAreDroppedFrames() throws {
        let driver = try replay(["/dev/video0": CameraRecordings.logitechC920], skipped: [3, 4, 7])
        let camera = V4L2CameraSource(path: "/dev/video0", size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30),
                                      format: .yuyv, decoderFactory: nil, driver: driver)
        let collector = Collector()
        try camera.start(collector.context)
        #expect(collector.wait(timeout: 5) { collector.received.count >= 8 })
        camera.stop()
        let frames = collector.received
        #expect(Array(frames.prefix(8).map(\.sequenceNumber)) == [0, 1, 2, 5, 6, 8, 9, 10])
        #expect(collector.dropped == 3)
        let gap = try #require(frames[3].captureTime) - #require(frames[2].captureTime)
        #expect(abs(gap.nanoseconds - 100_000_000) <= 1_000, "three frame times between sequence 2 and 5")
    }

    @Test func timestampsOfAnotherClockAreMappedByTheFirstFrame() throws {
        let driver = try replay(["/dev/video0": CameraRecordings.logitechC920], timestamps: .unknownClock(start: 5_000_000_000_000))
        let camera = V4L2CameraSource(path: "/dev/video0", size: PixelSize(width: 640, height: 480), frameRate: FrameRate(15),
                                      format: nil, decoderFactory: nil, driver: driver)
        let clock = ManualClock(start: MediaTime(value: 100, timescale: 1))
        let collector = Collector(clock: clock)
        try camera.start(collector.context)
        #expect(collector.wait(timeout: 5) { collector.received.count >= 4 })
        camera.stop()
        let frames = collector.received
        #expect(frames[0].captureTime == MediaTime(value: 100, timescale: 1))
        #expect(frames[0].presentationTime == .zero)
        for i in 1..<frames.count {
            let delta = try #require(frames[i].captureTime) - #require(frames[i - 1].captureTime)
            #expect(abs(delta.nanoseconds - 66_666_666) <= 1_000)
            #expect(frames[i].presentationTime == frames[i].captureTime! - collector.origin)
        }
    }

    @Test func stoppingDoesNotWaitForAFrameThatNeverComes() throws {
        let driver = try replay(["/dev/video0": CameraRecordings.logitechC920], stallAfter: 2)
        let camera = V4L2CameraSource(path: "/dev/video0", size: PixelSize(width: 640, height: 480), frameRate: FrameRate(30),
                                      format: nil, decoderFactory: nil, driver: driver)
        let collector = Collector()
        try camera.start(collector.context)
        #expect(collector.wait(timeout: 5) { collector.received.count == 2 })
        usleep(300_000)
        let started = Date()
        camera.stop()
        let took = Date().timeIntervalSince(started)
        // A stop that waited for the frame would never return; one poll (0.1 s) is what it may take.
        #expect(took < 5, "stop took \(took) s")
        #expect(collector.received.count == 2)
        #expect(driver.openDescriptors == 0)
        camera.stop()
    }

    @Test func mjpegFramesAreDecodedAndACorruptOneIsDropped() throws {
        let dir = try TemporaryDirectory()
        let jpeg = dir.url.appendingPathComponent("frame.jpg")
        // A camera-like JPEG (4:2:2, full range) of a solid colour.
        let made = try Subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "color=c=0x3366CC:s=1280x720", "-frames:v", "1",
                                       "-pix_fmt", "yuvj422p", "-q:v", "2", "-y", jpeg.path])
        #expect(made.status == 0, "\(made.stderr)")
        let bytes = try [UInt8](Data(contentsOf: jpeg))
        let writer: V4L2ReplayDriver.FrameWriter = { request in
            if request.sequence == 2 {
                // A truncated frame, as a camera sends when USB bandwidth runs short.
                for i in 0..<600 { request.buffer[i] = bytes[i] }
                return 600
            }
            for i in 0..<bytes.count { request.buffer[i] = bytes[i] }
            return bytes.count
        }
        let driver = try replay(["/dev/video0": CameraRecordings.eightMegapixelMJPEG], writer: writer)
        let camera = V4L2CameraSource(path: "/dev/video0", size: PixelSize(width: 1280, height: 720), frameRate: FrameRate(30),
                                      format: .mjpeg, decoderFactory: MJPEGDecoder.factory, driver: driver)
        let format = try camera.prepare()
        #expect(format == .video(size: PixelSize(width: 1280, height: 720), pixelFormat: .yuv420p, frameRate: FrameRate(30)))
        let collector = Collector()
        try camera.start(collector.context)
        #expect(collector.wait(timeout: 5) { collector.received.count >= 5 })
        camera.stop()
        #expect(!collector.received.map(\.sequenceNumber).contains(2))
        #expect(collector.dropped == 1)
        #expect(collector.lost == nil)
        let frames = collector.kept
        #expect(frames.count >= 4)
        let colour = YUVColor(red: 0x33, green: 0x66, blue: 0xCC)
        for frame in frames {
            #expect(frame.format == .yuv420p && frame.size == PixelSize(width: 1280, height: 720))
            #expect(frame.captureTime != nil)
            for (plane, value) in [(0, colour.y), (1, colour.cb), (2, colour.cr)] {
                frame.withUnsafePlane(plane) { b, stride in
                    let sample = b[(frame.format.rows(plane: plane, height: 720) / 2) * stride + 100]
                    #expect(abs(Int(sample) - Int(value)) <= 3, "plane \(plane): \(sample) vs \(value)")
                }
            }
        }
    }

    @Test(arguments: [(ENODEV, "was disconnected"), (EIO, "stopped answering")])
    func anUnpluggedCameraIsLost(code: Int32, text: String) throws {
        let driver = try replay(["/dev/video0": CameraRecordings.logitechC920])
        driver.fail(.dequeue, errno: code, after: 3)
        let camera = V4L2CameraSource(path: "/dev/video0", size: PixelSize(width: 640, height: 480), frameRate: FrameRate(30),
                                      format: nil, decoderFactory: nil, driver: driver)
        let collector = Collector()
        try camera.start(collector.context)
        #expect(collector.wait(timeout: 5) { collector.lost != nil })
        let lost = try #require(collector.lost)
        #expect(lost.code == .sourceUnavailable)
        #expect(lost.message == "camera /dev/video0 (HD Pro Webcam C920) \(text)" + (code == EIO ? " (input/output error)" : ""))
        #expect(lost.errno == code)
        #expect(lost.hint != nil)
        #expect(collector.received.count == 3)
        // The capture thread has released the camera by itself.
        #expect(collector.wait(timeout: 2) { driver.openDescriptors == 0 })
        camera.stop()
        #expect(driver.mappedBuffers == 0)
    }

    @Test func aBusyCameraIsABusyError() throws {
        for operation in [V4L2ReplayDriver.Operation.setFormat, .requestBuffers, .streamOn] {
            let driver = try replay(["/dev/video0": CameraRecordings.logitechC920])
            driver.fail(operation, errno: EBUSY)
            let camera = V4L2CameraSource(path: "/dev/video0", size: PixelSize(width: 640, height: 480), frameRate: FrameRate(30),
                                          format: nil, decoderFactory: nil, driver: driver)
            let error = expectError(.busy, containing: "/dev/video0") { try camera.start(Collector().context) }
            #expect(error?.hint?.contains("another program") == true, "\(operation)")
            #expect(error?.errno == EBUSY)
            #expect(driver.openDescriptors == 0, "\(operation) leaves nothing open")
            #expect(driver.mappedBuffers == 0)
            camera.stop()
        }
    }

    @Test func openingErrorsSayWhatToDo() throws {
        let driver = try replay(["/dev/video0": CameraRecordings.logitechC920, "/dev/video1": CameraRecordings.uvcMetadataNode])
        driver.fail(.open, errno: EACCES, path: "/dev/video0")
        let denied = V4L2CameraSource(path: "/dev/video0", size: PixelSize(width: 640, height: 480), frameRate: FrameRate(30),
                                      format: nil, decoderFactory: nil, driver: driver)
        let error = expectError(.permissionDenied, containing: "opening /dev/video0 failed: Permission denied") { _ = try denied.prepare() }
        #expect(error?.hint == "add your user to the video group: sudo usermod -aG video $USER, then log in again")

        let absent = V4L2CameraSource(path: "/dev/video7", size: PixelSize(width: 640, height: 480), frameRate: FrameRate(30),
                                      format: nil, decoderFactory: nil, driver: driver)
        _ = expectError(.sourceUnavailable, containing: "there is no camera at /dev/video7") { _ = try absent.prepare() }

        let metadata = V4L2CameraSource(path: "/dev/video1", size: PixelSize(width: 640, height: 480), frameRate: FrameRate(30),
                                        format: nil, decoderFactory: nil, driver: driver)
        _ = expectError(.unsupportedFormat, containing: "is not a video capture device") { _ = try metadata.prepare() }

        let odd = V4L2CameraSource(path: "/dev/video0", size: PixelSize(width: 641, height: 480), frameRate: FrameRate(30),
                                   format: nil, decoderFactory: nil, driver: driver)
        _ = expectError(.invalidConfiguration, containing: "641x480") { _ = try odd.prepare() }
        #expect(driver.openDescriptors == 0)
    }

    @Test func authorizationStatusForEachCase() throws {
        let driver = try replay(["/dev/video0": CameraRecordings.logitechC920, "/dev/video1": CameraRecordings.logitechC920,
                                 "/dev/video2": CameraRecordings.logitechC920, "/dev/video3": CameraRecordings.logitechC920])
        driver.fail(.open, errno: EACCES, path: "/dev/video1")
        driver.fail(.requestBuffers, errno: EBUSY, path: "/dev/video2")
        driver.fail(.open, errno: EBUSY, path: "/dev/video3")
        #expect(V4L2Devices.authorizationStatus(forCamera: "/dev/video0", driver: driver) == .authorized)
        #expect(V4L2Devices.authorizationStatus(forCamera: "/dev/video1", driver: driver)
                == .denied(hint: "add your user to the video group: sudo usermod -aG video $USER, then log in again"))
        #expect(V4L2Devices.authorizationStatus(forCamera: "/dev/video2", driver: driver) == .busy)
        #expect(V4L2Devices.authorizationStatus(forCamera: "/dev/video3", driver: driver) == .busy)
        #expect(V4L2Devices.authorizationStatus(forCamera: "/dev/video9", driver: driver) == .absent)
        #expect(driver.openDescriptors == 0)
        // On this machine's real devices: a node that does not exist is absent.
        #expect(V4L2CameraSource.authorizationStatus(forCamera: "/dev/video-reel-none") == .absent)
    }

    static let hasCamera = !SystemV4L2Driver().devicePaths().isEmpty

    @Test(.enabled(if: hasCamera, "no /dev/video* on this machine"))
    func capturesFromARealCamera() throws {
        let list = V4L2Devices.list()
        let device = try #require(list.cameras.first, "video nodes exist but none is a usable camera: \(list.unavailable)")
        let camera = V4L2CameraSource(path: device.path, size: PixelSize(width: 640, height: 480), frameRate: FrameRate(30),
                                      decoderFactory: MJPEGDecoder.factory)
        _ = try camera.prepare()
        let collector = Collector()
        try camera.start(collector.context)
        #expect(collector.wait(timeout: 5) { collector.received.count >= 10 })
        camera.stop()
        #expect(collector.lost == nil)
        #expect(collector.received.allSatisfy { $0.captureTime != nil })
    }

    @Test func theSystemDriverFindsNoCameraWhereThereIsNone() throws {
        let paths = SystemV4L2Driver().devicePaths()
        let list = V4L2Devices.list()
        #expect(list.cameras.count + list.otherDevices.count + list.unavailable.count == paths.count)
        if paths.isEmpty {
            _ = expectError(.sourceUnavailable, containing: "there is no camera at /dev/video0") { _ = try V4L2Devices.describe("/dev/video0") }
        }
    }
}
