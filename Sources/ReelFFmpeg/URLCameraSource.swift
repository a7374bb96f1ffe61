import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem
import Synchronization

/// A network camera: an RTSP stream (H.264 or MJPEG over RTP) or an HTTP(S) MJPEG stream
/// (`multipart/x-mixed-replace`), read with libavformat and decoded with libavcodec.
///
/// Frames arrive as `yuv420p` at the size the stream had when ``prepare()`` opened it (or the
/// size asked for), stamped with their arrival time on the session clock. When the stream drops
/// or stalls for longer than ``timeout``, the camera reports
/// ``SourceEvent/interrupted(_:)``, reconnects with a growing pause (0.5 s up to 4 s) until it
/// is stopped, and reports ``SourceEvent/resumed`` with its first frame after a reconnection; a
/// stream that comes back at another size is scaled to the prepared one.
///
/// ```swift
/// let camera = URLCameraSource(url: URL(string: "rtsp://192.168.1.20:554/stream1")!)
/// try session.addInput(camera)
/// ```
public final class URLCameraSource: CameraSource {
    /// How RTSP carries the media.
    public enum RTSPTransport: Sendable, Hashable {
        /// Interleaved in the RTSP TCP connection: passes firewalls and NAT, loses nothing.
        case tcp
        /// RTP over UDP: lower latency on a good network, but blocked by many firewalls.
        case udp
        /// TCP first; UDP if the camera refuses TCP.
        case tcpThenUDP
    }

    public let name: String
    public var kind: SampleKind { .video }
    /// The stream's address (`rtsp://`, `http://`, `https://`).
    public let url: URL
    /// How long connecting may take, and how long the stream may stall before it counts as
    /// interrupted.
    public let timeout: MediaTime
    /// The size frames are delivered at; `nil` for the stream's own size.
    public let requestedSize: PixelSize?
    /// How RTSP streams are carried.
    public let transport: RTSPTransport
    public let zoom = ZoomControl()

    /// The pause after the first failed reconnection; it doubles up to ``maximumBackoff``.
    public static let initialBackoff = MediaTime(value: 1, timescale: 2)
    /// The longest pause between reconnection attempts.
    public static let maximumBackoff = MediaTime(value: 4, timescale: 1)

    private struct Prepared: Sendable {
        var format: SourceFormat
        var size: PixelSize
        /// The open stream, handed to the first ``start(_:)``.
        var input: VideoInput?
    }
    private struct State {
        var prepared: Prepared?
        /// Gates of connections in progress or running, cancelled by ``stop()``.
        var gates: [ObjectIdentifier: InterruptGate] = [:]
    }
    private let state = Mutex(State())
    private let thread = CaptureThread<Prepared>(threadName: "reel.urlcamera")

    /// Creates a camera for `url`.
    ///
    /// - Parameters:
    ///   - url: an `rtsp://`, `http://` or `https://` address (credentials may be in the URL).
    ///   - timeout: how long connecting may take and how long the stream may stall.
    ///   - size: the size to deliver frames at; `nil` keeps the stream's size.
    ///   - transport: how RTSP carries the media.
    ///   - name: a name for the camera; the URL without credentials if `nil`.
    public init(url: URL, timeout: MediaTime = MediaTime(value: 5, timescale: 1), size: PixelSize? = nil,
                transport: RTSPTransport = .tcp, name: String? = nil) {
        self.url = url
        self.timeout = timeout
        self.requestedSize = size
        self.transport = transport
        self.name = name ?? "camera \(Self.redacted(url))"
    }

    deinit { stop() }

    /// Whether `url` is an address this source can open (`rtsp`, `rtsps`, `http`, `https`).
    public static func canOpen(_ url: URL) -> Bool {
        ["rtsp", "rtsps", "http", "https"].contains(url.scheme?.lowercased() ?? "")
    }

    /// Connects to the stream and reads its picture size.
    ///
    /// - Throws: `.invalidConfiguration` for an address that is not a network stream or a bad
    ///   size; `.sourceUnavailable` when nothing answers within ``timeout`` (at once when the
    ///   connection is refused) or the stream stops being wanted (``stop()``); `.invalidMedia`
    ///   or `.unsupportedFormat` for a stream that is not video this build decodes.
    public func prepare() throws -> SourceFormat {
        try prepare(isCancelled: { false })
    }

    /// ``prepare()``, giving up when `isCancelled` (a ``stop()`` during ``start(_:)``).
    private func prepare(isCancelled: () -> Bool) throws -> SourceFormat {
        if let prepared = state.withLock({ $0.prepared }) { return prepared.format }
        guard Self.canOpen(url) else {
            throw ReelError(.invalidConfiguration, "\(Self.redacted(url)) is not a network camera address",
                            hint: "use an rtsp://, http:// or https:// URL")
        }
        if let size = requestedSize, size.width < 2 || size.height < 2 || size.width % 2 != 0 || size.height % 2 != 0
            || size.width > VideoInput.maximumDimension || size.height > VideoInput.maximumDimension {
            throw ReelError(.invalidConfiguration, "camera size \(size) is not usable", hint: "use even sizes of at least 2x2")
        }
        guard timeout > .zero else {
            throw ReelError(.invalidConfiguration, "the camera timeout must be positive")
        }
        let input = try connect(isCancelled: isCancelled)
        let size = requestedSize ?? PixelSize(width: max(2, input.size.width & ~1), height: max(2, input.size.height & ~1))
        // A camera's stated rate; streams without timing (HTTP MJPEG) are taken as 30 fps.
        let rate = input.averageFrameRate ?? FrameRate(30)
        let format = SourceFormat.video(size: size, pixelFormat: .yuv420p, frameRate: rate)
        return state.withLock { state in
            if let prepared = state.prepared { return prepared.format }
            state.prepared = Prepared(format: format, size: size, input: input)
            return format
        }
    }

    /// Starts reading frames on a thread of its own (connecting first if ``prepare()`` has not).
    ///
    /// A ``stop()`` while it connects abandons the connection; the start then returns with
    /// nothing running.
    public func start(_ context: SourceContext) throws {
        try thread.start(sourceName: name, open: { isCancelled in
            _ = try prepare(isCancelled: isCancelled)
            // The stream opened by prepare goes to this run alone; a later start connects anew.
            return try state.withLock { state in
                guard var prepared = state.prepared else { throw ReelError(.notRunning, "\(name) is not prepared") }
                let run = prepared
                prepared.input = nil
                state.prepared = prepared
                return run
            }
        }) { [self] prepared, thread in
            run(thread, context: context, size: prepared.size, first: prepared.input)
        }
    }

    /// Stops reading, abandoning a connection or read in progress, and waits for the thread.
    /// Also makes a ``prepare()`` in progress on another thread give up. Safe to call twice.
    public func stop() {
        // A stream opened by prepare but never started is let go too.
        state.withLock { $0.prepared?.input = nil }
        // The stop is asked for before the gates are collected: a connection that registers
        // its gate later sees the request and gives up by itself.
        thread.stop {
            for gate in state.withLock({ Array($0.gates.values) }) { gate.cancel() }
        }
    }

    // MARK: - Connecting

    /// Opens the stream and its decoder within ``timeout``, abandoning the attempt if ``stop()``
    /// is called meanwhile.
    private func connect(isCancelled: () -> Bool) throws -> VideoInput {
        FFmpeg.silenceLibraryLogging()
        Self.networkReady
        let gate = InterruptGate()
        state.withLock { $0.gates[ObjectIdentifier(gate)] = gate }
        defer { _ = state.withLock { $0.gates.removeValue(forKey: ObjectIdentifier(gate)) } }
        if isCancelled() { gate.cancel() }
        let scheme = url.scheme?.lowercased() ?? ""
        var attempts: [RTSPTransport] = [transport]
        if scheme.hasPrefix("rtsp"), transport == .tcpThenUDP { attempts = [.tcp, .udp] }
        var lastError: ReelError?
        for attempt in attempts {
            gate.arm(timeout)
            do {
                let input = try InputFile(url: url, readsStreamInfo: true, format: demuxer(scheme),
                                          options: options(scheme, attempt), gate: gate)
                let video = try VideoInput(input: input)
                gate.disarm()
                return video
            } catch let error as ReelError {
                lastError = explain(error, gate: gate)
                if gate.isCancelled { break }
            }
        }
        throw lastError ?? ReelError(.sourceUnavailable, "cannot connect to \(Self.redacted(url))")
    }

    private func demuxer(_ scheme: String) -> String? {
        scheme.hasPrefix("http") ? "mpjpeg" : nil
    }

    private func options(_ scheme: String, _ transport: RTSPTransport) -> [String: String] {
        let micros = String(max(1, timeout.convertedValue(to: 1_000_000)))
        var options: [String: String] = [
            // A live camera: no waiting to fill buffers, and no long probing.
            "fflags": "nobuffer",
            "analyzeduration": "1000000",
            "probesize": "1000000",
        ]
        if scheme.hasPrefix("rtsp") {
            options["rtsp_transport"] = transport == .udp ? "udp" : "tcp"
            // The socket timeout for connecting and reading (microseconds, FFmpeg 5).
            options["timeout"] = micros
        } else {
            options["timeout"] = micros
            options["rw_timeout"] = micros
            options["reconnect"] = "0"
        }
        return options
    }

    /// Turns an FFmpeg failure to connect into an error that says what happened.
    private func explain(_ error: ReelError, gate: InterruptGate) -> ReelError {
        let address = Self.redacted(url)
        if gate.isCancelled {
            return ReelError(.sourceUnavailable, "stopped while connecting to \(address)")
        }
        if error.averror == reel_averror(ECONNREFUSED) || error.errno == ECONNREFUSED {
            return ReelError(.sourceUnavailable, "nothing accepts connections at \(address) (connection refused)",
                             hint: "check the camera's address and port, and that it is switched on",
                             errno: ECONNREFUSED, averror: error.averror)
        }
        if gate.hasExpired || error.averror == reel_averror(ETIMEDOUT) {
            return ReelError(.sourceUnavailable, "\(address) did not answer within \(Self.seconds(timeout))",
                             hint: "check that the camera is reachable and streaming, or allow a longer timeout",
                             errno: ETIMEDOUT, averror: error.averror)
        }
        if error.code == .invalidMedia || error.code == .unsupportedFormat {
            return ReelError(error.code, "\(address) answered, but not with a video stream Reel can decode: \(error.message)",
                             hint: "check the stream's path; Reel reads H.264 or MJPEG over RTSP and MJPEG over HTTP",
                             errno: error.errno, averror: error.averror)
        }
        return ReelError(.sourceUnavailable, "cannot connect to \(address): \(error.message)",
                         hint: error.hint ?? "check the camera's address, path and credentials",
                         errno: error.errno, averror: error.averror)
    }

    // MARK: - Running

    private func run(_ thread: WorkerThread, context: SourceContext, size: PixelSize, first: VideoInput?) {
        let pool = FramePool(format: .yuv420p, size: size, capacity: 8)
        let converter = PictureConverter(size: size)
        var input = first
        var sequence: Int64 = 0
        var interrupted = false
        var backoff = Self.initialBackoff
        while !thread.isStopRequested {
            // Connect (again).
            if input == nil {
                do {
                    input = try connect(isCancelled: { thread.isStopRequested })
                    backoff = Self.initialBackoff
                } catch let error as ReelError {
                    if thread.isStopRequested { break }
                    if !interrupted { interrupted = true; context.report(.interrupted(error)) }
                    pause(backoff, thread: thread)
                    backoff = min(backoff * 2, Self.maximumBackoff)
                    continue
                } catch {
                    continue
                }
            }
            guard let current = input else { continue }
            // Read until the stream fails or stalls.
            let failure = read(current, thread: thread, context: context, pool: pool, converter: converter,
                               sequence: &sequence, interrupted: &interrupted)
            input = nil
            guard let failure, !thread.isStopRequested else { break }
            if !interrupted { interrupted = true; context.report(.interrupted(failure)) }
            pause(backoff, thread: thread)
            backoff = min(backoff * 2, Self.maximumBackoff)
        }
    }

    /// Delivers the frames of `input` until it fails (returns why) or the thread is asked to stop
    /// (returns `nil`).
    private func read(_ input: VideoInput, thread: WorkerThread, context: SourceContext, pool: FramePool,
                      converter: PictureConverter, sequence: inout Int64, interrupted: inout Bool) -> ReelError? {
        // The gate the stream was opened with is the one its protocol layers ask.
        guard let gate = input.input.gate else { return ReelError(.sourceUnavailable, "the stream has no interrupt gate") }
        gate.disarm()
        state.withLock { $0.gates[ObjectIdentifier(gate)] = gate }
        defer { _ = state.withLock { $0.gates.removeValue(forKey: ObjectIdentifier(gate)) } }
        if thread.isStopRequested { return nil }
        let address = Self.redacted(url)
        while !thread.isStopRequested {
            // Each picture may take up to the timeout: data that never decodes is a stall too.
            gate.arm(timeout)
            let next: VideoInput.Next
            do {
                next = try input.next()
            } catch let error as ReelError {
                if thread.isStopRequested { return nil }
                if gate.hasExpired {
                    return ReelError(.sourceUnavailable, "\(address) stalled: no data for \(Self.seconds(timeout))",
                                     hint: "Reel reconnects until the recording stops", errno: ETIMEDOUT)
                }
                return ReelError(error.code == .invalidMedia ? .invalidMedia : .sourceUnavailable,
                                 "the stream from \(address) broke off: \(error.message)",
                                 hint: "Reel reconnects until the recording stops", errno: error.errno, averror: error.averror)
            } catch {
                return ReelError(.sourceUnavailable, "the stream from \(address) broke off: \(error)")
            }
            if case .endOfStream = next {
                return ReelError(.sourceUnavailable, "\(address) ended the stream",
                                 hint: "Reel reconnects until the recording stops")
            }
            // One reading: the arrival is the capture time, and on the timeline its presentation time.
            let captured = context.clock.now()
            let arrival = captured - context.origin
            let frame = context.clock.isRealTime
                ? pool.makeFrame(presentationTime: arrival, sequenceNumber: sequence)
                : pool.makeFrameWaiting(presentationTime: arrival, sequenceNumber: sequence)
            sequence += 1
            guard var frame else {
                context.report(.droppedFrames(1, reason: .encoderBehind))
                continue
            }
            do {
                try converter.convert(input.picture, into: frame)
            } catch {
                // One picture that does not convert (a damaged one) is dropped.
                context.report(.droppedFrames(1, reason: .source))
                continue
            }
            frame.captureTime = captured
            if interrupted {
                interrupted = false
                context.report(.resumed)
            }
            context.deliver(.video(frame))
        }
        return nil
    }

    /// Waits `duration` of real time, returning early when the thread is asked to stop.
    private func pause(_ duration: MediaTime, thread: WorkerThread) {
        let clock = HostClock()
        let end = clock.now() + duration
        while !thread.isStopRequested {
            let now = clock.now()
            if now >= end { return }
            clock.sleep(until: min(end, now + MediaTime(value: 1, timescale: 50)))
        }
    }

    // MARK: - Helpers

    /// libavformat's network layer, set up once per process.
    private static let networkReady: Void = {
        avformat_network_init()
    }()

    /// `url` without a password, for messages and names.
    static func redacted(_ url: URL) -> String {
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false), parts.password != nil else {
            return url.absoluteString
        }
        parts.password = "***"
        return parts.string ?? url.absoluteString
    }

    private static func seconds(_ time: MediaTime) -> String {
        let s = time.seconds
        return s == s.rounded() ? "\(Int(s)) s" : String(format: "%.1f s", s)
    }
}
