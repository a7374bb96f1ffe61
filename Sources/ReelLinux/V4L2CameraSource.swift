#if canImport(Glibc)
import Glibc
#endif
import ReelCore
import ReelSystem
import Synchronization

/// A V4L2 camera (`/dev/videoN`): a webcam, a capture card.
///
/// ``prepare()`` opens the camera, chooses the mode closest to the requested size, rate and
/// format (the rule is at ``V4L2Negotiation``) and reports it; ``negotiation`` says what was
/// chosen and, when it differs from the request, why. ``start(_:)`` maps a few driver buffers
/// and streams on a dedicated thread: raw frames (`YUYV`, `NV12`) are copied into pooled
/// frames of the same format, MJPEG frames are decoded by the injected decoder into `yuv420p`.
///
/// Each frame carries the driver's capture time on the session clock (`captureTime`) and its
/// presentation time on the timeline; frames the driver dropped (gaps in its sequence
/// numbers) and frames no pooled buffer was free for are reported as `.droppedFrames`. A
/// camera unplugged mid-recording is reported as `.lost` with an error that says so.
///
/// ```swift
/// let camera = V4L2CameraSource(path: "/dev/video0", size: PixelSize(width: 1280, height: 720),
///                               frameRate: FrameRate(30), decoderFactory: MJPEGDecoder.factory)
/// let format = try camera.prepare()          // .video(size: 1280x720, pixelFormat: .yuyv, frameRate: 10)
/// print(camera.negotiation?.warning ?? "exact")
/// ```
public final class V4L2CameraSource: CameraSource {
    /// "camera /dev/video0".
    public let name: String
    /// Always `.video`.
    public var kind: SampleKind { .video }
    /// The device node.
    public let path: String
    /// The requested frame size.
    public let requestedSize: PixelSize
    /// The requested frame rate.
    public let requestedFrameRate: FrameRate
    /// The requested pixel format, if any.
    public let requestedFormat: V4L2FourCC?
    /// The camera's digital zoom (the session applies it).
    public let zoom = ZoomControl()

    /// How many driver buffers are mapped while streaming.
    public static let bufferCount = 6
    /// How long the capture thread waits for a frame before it looks at whether to stop.
    static let pollMilliseconds = 100

    private let decoderFactory: CompressedFrameDecoderFactory?
    private let driver: any V4L2Driver
    private let chosen = Mutex<V4L2Negotiation?>(nil)
    private let thread = CaptureThread<(capture: V4L2Capture, sink: FrameSink)>(threadName: "reel.v4l2")

    /// Creates a camera source.
    ///
    /// - Parameters:
    ///   - path: the device node, e.g. `/dev/video0`.
    ///   - size: the frame size wanted (the closest offered is used).
    ///   - frameRate: the frame rate wanted (the closest offered at the chosen size is used).
    ///   - format: a pixel format to prefer (`.yuyv`, `.mjpeg`, `.nv12`), or `nil` to let the
    ///     negotiation choose.
    ///   - decoderFactory: makes the decoder for MJPEG cameras (`MJPEGDecoder.factory` from
    ///     ReelFFmpeg); without one only raw formats are used.
    public convenience init(path: String, size: PixelSize = PixelSize(width: 1280, height: 720),
                            frameRate: FrameRate = FrameRate(30), format: V4L2FourCC? = nil,
                            decoderFactory: CompressedFrameDecoderFactory? = nil) {
        self.init(path: path, size: size, frameRate: frameRate, format: format, decoderFactory: decoderFactory,
                  driver: SystemV4L2Driver())
    }

    /// Creates a camera source on a given driver (a ``V4L2ReplayDriver`` in tests).
    package init(path: String, size: PixelSize, frameRate: FrameRate, format: V4L2FourCC?,
                 decoderFactory: CompressedFrameDecoderFactory?, driver: any V4L2Driver) {
        self.path = path
        self.requestedSize = size
        self.requestedFrameRate = frameRate
        self.requestedFormat = format
        self.decoderFactory = decoderFactory
        self.driver = driver
        self.name = "camera \(path)"
    }

    /// What the last ``prepare()`` or ``start(_:)`` chose: the mode and how it differs from
    /// the request (`nil` before either).
    public var negotiation: V4L2Negotiation? { chosen.withLock { $0 } }

    /// Whether this process may use the camera at `path` (see
    /// ``V4L2Devices/authorizationStatus(forCamera:)``).
    public static func authorizationStatus(forCamera path: String) -> AuthorizationStatus {
        V4L2Devices.authorizationStatus(forCamera: path)
    }

    /// Opens the camera, negotiates and sets the mode, and reports the frames it will deliver.
    ///
    /// - Throws: `.sourceUnavailable` (no such camera), `.permissionDenied` (with the hint to
    ///   join the `video` group), `.busy` (another program streams from it),
    ///   `.unsupportedFormat` (not a capture device, or no format Reel can capture).
    public func prepare() throws -> SourceFormat {
        let capture = try V4L2Capture.open(path: path, driver: driver, size: requestedSize, frameRate: requestedFrameRate,
                                           format: requestedFormat, canDecode: decoderFactory != nil)
        defer { capture.close() }
        chosen.withLock { $0 = capture.negotiation }
        return capture.sourceFormat
    }

    /// Opens and configures the camera, maps its buffers and starts streaming on a dedicated
    /// thread.
    ///
    /// - Throws: what ``prepare()`` throws, `.busy` when buffers cannot be had or streaming
    ///   cannot start, `.alreadyRunning`.
    public func start(_ context: SourceContext) throws {
        let decoderFactory = self.decoderFactory
        // The camera is opened and set streaming outside any lock; a stop meanwhile closes it.
        try thread.start(sourceName: name, open: { _ in
            let capture = try V4L2Capture.open(path: path, driver: driver, size: requestedSize, frameRate: requestedFrameRate,
                                               format: requestedFormat, canDecode: decoderFactory != nil)
            do {
                let sink = try FrameSink(capture: capture, decoderFactory: decoderFactory)
                try capture.startStreaming(bufferCount: Self.bufferCount)
                chosen.withLock { $0 = capture.negotiation }
                return (capture, sink)
            } catch {
                capture.close()
                throw error
            }
        }, release: { opened in
            opened.capture.close()
        }) { opened, thread in
            opened.sink.run(context: context, thread: thread)
            opened.capture.close()
        }
    }

    /// Stops streaming, waits for the capture thread and releases the camera. Safe to call twice.
    public func stop() {
        thread.stop()
    }
}

/// One open, configured camera: owns its descriptor and its mapped buffers, and releases
/// them in ``close()``.
final class V4L2Capture: @unchecked Sendable {
    let path: String
    let driver: any V4L2Driver
    let device: V4L2Device
    let negotiation: V4L2Negotiation
    /// The format the driver accepted.
    let format: V4L2PixFormat
    /// The rate the driver accepted.
    let frameRate: FrameRate
    private var fd: Int32?
    private(set) var buffers: [UnsafeMutableRawBufferPointer] = []
    private var streaming = false

    private init(path: String, driver: any V4L2Driver, fd: Int32, device: V4L2Device, negotiation: V4L2Negotiation,
                 format: V4L2PixFormat, frameRate: FrameRate) {
        self.path = path
        self.driver = driver
        self.fd = fd
        self.device = device
        self.negotiation = negotiation
        self.format = format
        self.frameRate = frameRate
    }

    deinit { assert(fd == nil, "V4L2Capture of \(path) was not closed") }

    /// What the source delivers in this mode.
    var sourceFormat: SourceFormat {
        .video(size: format.size, pixelFormat: format.fourCC.pixelFormat ?? .yuv420p, frameRate: frameRate)
    }

    /// The descriptor, while open.
    var descriptor: Int32 { fd ?? -1 }

    /// Opens `path`, checks it is a camera, negotiates and sets the mode.
    static func open(path: String, driver: any V4L2Driver, size: PixelSize, frameRate: FrameRate,
                     format: V4L2FourCC?, canDecode: Bool) throws -> V4L2Capture {
        guard size.width > 0, size.height > 0, size.width % 2 == 0, size.height % 2 == 0 else {
            throw ReelError(.invalidConfiguration, "camera size \(size) is not usable", hint: "use an even size such as 1280x720")
        }
        let fd: Int32
        do { fd = try driver.open(path) } catch { throw V4L2Devices.failure(error, "opening \(path)", path: path) }
        do {
            let identity: V4L2DeviceIdentity
            do { identity = try driver.queryCapabilities(fd) } catch {
                throw V4L2Devices.failure(error, "asking \(path) what it is", path: path)
            }
            let device: V4L2Device
            do { device = try V4L2Device.describe(path: path, fd: fd, identity: identity, driver: driver) } catch {
                throw V4L2Devices.failure(error, "reading the formats of \(path)", path: path)
            }
            guard device.isCamera else { throw V4L2Devices.notACamera(device) }
            var negotiation = try device.negotiate(size: size, frameRate: frameRate, format: format,
                                                   decodableFormats: canDecode ? [.mjpeg] : [])
            let chosen = negotiation.chosen
            let set: V4L2PixFormat
            do { set = try driver.setFormat(fd, fourCC: chosen.fourCC, size: chosen.size) } catch {
                throw V4L2Devices.failure(error, "setting \(path) to \(chosen.fourCC) \(chosen.size)", path: path)
            }
            guard set.fourCC == chosen.fourCC else {
                throw ReelError(.unsupportedFormat, "\(path) refused \(chosen.fourCC) and offered \(set.fourCC) instead",
                                hint: "\(LibraryHint.checkCameraFormats), or with v4l2-ctl --list-formats-ext")
            }
            if set.size != chosen.size {
                negotiation.warnings.append("the driver adjusted \(chosen.size) to \(set.size)")
                negotiation.chosen.size = set.size
            }
            guard set.size.width % 2 == 0, set.size.height % 2 == 0 else {
                throw ReelError(.unsupportedFormat, "\(path) delivers \(set.size) frames, which Reel cannot encode",
                                hint: "ask for another size")
            }
            var rate = chosen.frameRate
            do {
                let params = try driver.setFrameInterval(fd, V4L2Fraction(interval: chosen.frameRate))
                if let actual = params.timePerFrame?.frameRate { rate = actual }
            } catch let error as ReelError where error.errno == EINVAL || error.errno == ENOTTY {
                // The driver has no frame-rate control: it runs at the rate it lists.
            } catch {
                throw V4L2Devices.failure(error, "setting \(path) to \(V4L2FrameRates.format(chosen.frameRate)) fps", path: path)
            }
            if rate != chosen.frameRate {
                negotiation.warnings.append("the driver set \(V4L2FrameRates.format(rate)) fps")
                negotiation.chosen.frameRate = rate
            }
            return V4L2Capture(path: path, driver: driver, fd: fd, device: device, negotiation: negotiation,
                               format: set, frameRate: rate)
        } catch {
            driver.close(fd)
            throw error
        }
    }

    /// Requests, maps and queues the buffers and turns streaming on.
    func startStreaming(bufferCount: Int) throws {
        guard let fd else { throw ReelError(.notRunning, "\(path) is closed") }
        let count: Int
        do { count = try driver.requestBuffers(fd, count: bufferCount) } catch {
            throw V4L2Devices.failure(error, "asking \(path) for capture buffers", path: path)
        }
        guard count >= 2 else {
            throw ReelError(.sourceUnavailable, "\(path) gave \(count) capture buffers; at least 2 are needed",
                            hint: "close other programs that use the camera")
        }
        do {
            for index in 0..<count {
                let location = try driver.queryBuffer(fd, index: index)
                let pointer = try driver.map(fd, location)
                buffers.append(UnsafeMutableRawBufferPointer(start: pointer, count: location.length))
                try driver.queueBuffer(fd, index: index)
            }
        } catch {
            throw V4L2Devices.failure(error, "mapping the capture buffers of \(path)", path: path)
        }
        do { try driver.streamOn(fd) } catch {
            throw V4L2Devices.failure(error, "starting \(path) streaming", path: path)
        }
        streaming = true
    }

    /// Stops streaming, unmaps the buffers, frees them and closes the descriptor. Errors are
    /// ignored: the device may already be gone.
    func close() {
        guard let fd else { return }
        if streaming { try? driver.streamOff(fd) }
        for buffer in buffers { driver.unmap(buffer.baseAddress!, length: buffer.count) }
        if !buffers.isEmpty { _ = try? driver.requestBuffers(fd, count: 0) }
        buffers = []
        streaming = false
        driver.close(fd)
        self.fd = nil
    }
}

/// The capture loop: turns dequeued driver buffers into frames on the session clock.
final class FrameSink: @unchecked Sendable {
    private let capture: V4L2Capture
    private let pool: FramePool?
    /// Used only on the capture thread.
    private let decoder: (any CompressedFrameDecoder)?

    init(capture: V4L2Capture, decoderFactory: CompressedFrameDecoderFactory?) throws {
        self.capture = capture
        let format = capture.format
        if let pixelFormat = format.fourCC.pixelFormat {
            pool = FramePool(format: pixelFormat, size: format.size, capacity: 8)
            decoder = nil
        } else if let compressed = format.fourCC.compressedFormat, let decoderFactory {
            pool = nil
            decoder = try decoderFactory(compressed, format.size)
        } else {
            throw ReelError(.unsupportedFormat, "Reel cannot capture \(format.fourCC) from \(capture.path)",
                            hint: "give the camera an MJPEG decoder, or ask for YUYV")
        }
    }

    /// Maps driver timestamps onto the session clock.
    private struct TimeMapping {
        var offset: Int64?
        let identity: Bool

        /// The session-clock reading of a driver timestamp: the same reading when both are
        /// `CLOCK_MONOTONIC`; otherwise shifted by the offset seen at the first frame.
        mutating func map(_ buffer: V4L2FilledBuffer, now: MediaTime) -> MediaTime {
            let stamp = buffer.timestampNanoseconds
            if stamp == 0 { return now }
            if identity && buffer.hasMonotonicTimestamp { return MediaTime(nanoseconds: stamp) }
            let offset = self.offset ?? (now.nanoseconds - stamp)
            self.offset = offset
            return MediaTime(nanoseconds: stamp + offset)
        }
    }

    func run(context: SourceContext, thread: WorkerThread) {
        let driver = capture.driver
        let fd = capture.descriptor
        var mapping = TimeMapping(offset: nil, identity: context.clock is HostClock)
        var firstSequence: UInt32?
        var lastSequence: UInt32 = 0
        do {
            while !thread.isStopRequested {
                let readiness = try driver.waitForBuffer(fd, timeoutMilliseconds: V4L2CameraSource.pollMilliseconds)
                if readiness == .timedOut { continue }
                guard let buffer = try driver.dequeueBuffer(fd) else {
                    if readiness == .failed {
                        throw Syscall.error("waiting for a camera frame", errno: EIO)
                    }
                    continue
                }
                let now = context.clock.now()
                let captureTime = mapping.map(buffer, now: now)
                // Gaps in the driver's sequence are frames it dropped.
                if firstSequence != nil {
                    let step = buffer.sequence &- lastSequence
                    if step > 1 && step < UInt32.max / 2 { context.report(.droppedFrames(Int(step - 1), reason: .source)) }
                } else {
                    firstSequence = buffer.sequence
                }
                lastSequence = buffer.sequence
                let index = Int64(buffer.sequence &- firstSequence!)
                let pts = captureTime - context.origin
                if !thread.isStopRequested && pts >= .zero {
                    if buffer.isDamaged {
                        context.report(.droppedFrames(1, reason: .source))
                    } else if let frame = convert(buffer, pts: pts, index: index, captureTime: captureTime) {
                        context.deliver(.video(frame))
                    } else {
                        context.report(.droppedFrames(1, reason: .encoderBehind))
                    }
                }
                try driver.queueBuffer(fd, index: buffer.index)
            }
        } catch {
            let reel = error as? ReelError
            let code = reel?.errno
            let card = capture.device.card
            let lost: ReelError
            switch code {
            case ENODEV, ENXIO, ENOENT:
                lost = ReelError(.sourceUnavailable, "camera \(capture.path) (\(card)) was disconnected",
                                 hint: V4L2Devices.hint(errno: ENODEV, path: capture.path), errno: code)
            case EIO:
                lost = ReelError(.sourceUnavailable, "camera \(capture.path) (\(card)) stopped answering (input/output error)",
                                 hint: V4L2Devices.hint(errno: EIO, path: capture.path), errno: code)
            default:
                lost = V4L2Devices.failure(error, "capturing from \(capture.path)", path: capture.path)
            }
            context.report(.lost(lost))
        }
    }

    /// The frame for a filled buffer, or `nil` to drop it (no pooled frame free, short or
    /// undecodable data).
    private func convert(_ buffer: V4L2FilledBuffer, pts: MediaTime, index: Int64, captureTime: MediaTime) -> VideoFrame? {
        guard buffer.index >= 0, buffer.index < capture.buffers.count else { return nil }
        let memory = capture.buffers[buffer.index]
        let used = min(buffer.bytesUsed, memory.count)
        if let decoder {
            guard used > 0,
                  var frame = try? decoder.decode(UnsafeRawBufferPointer(start: memory.baseAddress, count: used),
                                                  presentationTime: pts, sequenceNumber: index) else { return nil }
            frame.presentationTime = pts
            frame.sequenceNumber = index
            frame.captureTime = captureTime
            return frame
        }
        guard let pool, var frame = pool.makeFrame(presentationTime: pts, sequenceNumber: index) else { return nil }
        let format = capture.format
        let height = format.size.height
        let source = memory.baseAddress!
        var offset = 0
        for plane in 0..<frame.format.planeCount {
            let rowBytes = frame.format.rowBytes(plane: plane, width: format.size.width)
            let sourceStride = max(format.bytesPerLine, frame.format.rowBytes(plane: 0, width: format.size.width))
            let rows = frame.format.rows(plane: plane, height: height)
            guard offset + sourceStride * (rows - 1) + rowBytes <= used else { return nil }
            frame.withUnsafeMutablePlane(plane) { destination, stride in
                for row in 0..<rows {
                    (destination.baseAddress! + row * stride).copyMemory(from: source + offset + row * sourceStride, byteCount: rowBytes)
                }
            }
            offset += sourceStride * rows
        }
        frame.captureTime = captureTime
        return frame
    }
}
