import Foundation
import ReelCore
import ReelSystem
import Synchronization
internal import CPulse

/// Records a PulseAudio source: a microphone, or the monitor of a sink (the audio that
/// applications play), in the spirit of ReplayKit's `.audioMic` and `.audioApp` buffers.
///
/// The source reads the server in 10 ms buffers on its own thread (the asynchronous API on a
/// private main loop that never blocks for more than 20 ms, so ``stop()`` is prompt even when the
/// device delivers nothing). Presentation times come from the count of samples, anchored to the
/// session clock: the newest sample that arrived was captured "now, minus the latency the server
/// reports". Arrivals can be late but never early, so the anchor follows the earliest of the
/// last second's arrivals; when that disagrees with the count by more than 30 ms — the device's
/// clock drifted, or the server dropped data — the count is re-anchored to the clock, so audio
/// stays in sync with video, while scheduling jitter moves nothing.
/// Buffers never overlap and never start before the session timeline's zero: samples that
/// would are discarded.
///
/// If the server goes away while recording (it was restarted), the source reports
/// ``SourceEvent/lost(_:)``, tries to reconnect every second until it is stopped, and when the
/// server is back continues delivering, re-anchored to the clock: the recording carries on with
/// a gap.
///
/// Timing assumes a real-time session clock (``HostClock``).
public final class PulseAudioSource: CaptureSource {
    /// A human-readable name: "microphone (default)", "app audio of 'apps'".
    public let name: String
    /// `.micAudio` for a microphone, `.appAudio` for the monitor of a sink.
    public let kind: SampleKind
    /// The format delivered; the server converts the device's own format to it.
    public let format: AudioFormat
    /// The PulseAudio server string, or `nil` for the usual one (`PULSE_SERVER` or the default).
    public let server: String?
    /// The PulseAudio source recorded: a source name, `"@DEFAULT_MONITOR@"`, or `nil` for the
    /// default source (a stream on the default follows the default when it changes).
    public let sourceName: String?

    /// The name used to check that the device exists.
    private let lookupName: String
    /// What to say when `lookupName` does not exist.
    private let missingDevice: String
    private let worker = Mutex<WorkerThread?>(nil)

    /// The length of a delivered buffer, and of the server's fragments.
    private var framesPerBuffer: Int { max(1, format.sampleRate / 100) }

    private init(name: String, kind: SampleKind, sourceName: String?, lookupName: String, missingDevice: String,
                 server: String?, format: AudioFormat) {
        self.name = name
        self.kind = kind
        self.sourceName = sourceName
        self.lookupName = lookupName
        self.missingDevice = missingDevice
        self.server = server
        self.format = format
    }

    /// A microphone: records a PulseAudio source.
    ///
    /// - Parameters:
    ///   - source: the PulseAudio source name (see `reel devices` or `pactl list short sources`);
    ///     `nil` records the server's default source and follows it when it changes.
    ///   - server: a PulseAudio server string such as `"unix:/tmp/pulse/native"`; `nil` uses
    ///     `PULSE_SERVER` or the default server.
    ///   - format: the format to deliver.
    public static func microphone(source: String? = nil, server: String? = nil,
                                  format: AudioFormat = AudioFormat(sampleFormat: .f32, sampleRate: 48_000, channels: 2)) -> PulseAudioSource {
        PulseAudioSource(
            name: source.map { "microphone '\($0)'" } ?? "microphone (default)",
            kind: .micAudio, sourceName: source, lookupName: source ?? "@DEFAULT_SOURCE@",
            missingDevice: source.map { "PulseAudio has no source named '\($0)'" } ?? "PulseAudio has no default source",
            server: server, format: format)
    }

    /// App audio: records the monitor of a PulseAudio sink, i.e. what applications play into it.
    ///
    /// - Parameters:
    ///   - sink: the sink name (see `reel devices` or `pactl list short sinks`), whose monitor
    ///     `"<sink>.monitor"` is recorded (a name that already ends in `.monitor` is used as it
    ///     is); `nil` records the monitor of the default sink, `"@DEFAULT_MONITOR@"`.
    ///   - server: a PulseAudio server string; `nil` uses `PULSE_SERVER` or the default server.
    ///   - format: the format to deliver.
    public static func appAudio(sink: String? = nil, server: String? = nil,
                                format: AudioFormat = AudioFormat(sampleFormat: .f32, sampleRate: 48_000, channels: 2)) -> PulseAudioSource {
        let monitor = sink.map { $0.hasSuffix(".monitor") ? $0 : "\($0).monitor" } ?? "@DEFAULT_MONITOR@"
        return PulseAudioSource(
            name: sink.map { "app audio of '\($0)'" } ?? "app audio (default)",
            kind: .appAudio, sourceName: monitor, lookupName: monitor,
            missingDevice: sink.map { "PulseAudio has no sink named '\($0)' (no source '\(monitor)')" }
                ?? "PulseAudio has no default sink to record from",
            server: server, format: format)
    }

    /// Connects once to check that the server and the device exist, and returns `.audio(format)`.
    ///
    /// - Throws: ``ReelError`` `.sourceUnavailable` when PulseAudio is not running or the device
    ///   does not exist, `.unsupportedFormat` when PulseAudio cannot deliver `format`.
    public func prepare() throws -> SourceFormat {
        _ = try sampleSpec()
        let connection = try PulseConnection(server: server, clientName: "Reel")
        try checkDevice(on: connection)
        return .audio(format)
    }

    /// Connects, opens the record stream and starts delivering buffers on a dedicated thread.
    ///
    /// - Throws: what ``prepare()`` throws, or `.alreadyRunning`.
    public func start(_ context: SourceContext) throws {
        try worker.withLock { worker in
            guard worker == nil else { throw ReelError(.alreadyRunning, "\(name) is already running") }
            let handoff = Handoff(try openStream(isCancelled: { false }))
            worker = WorkerThread(name: "reel.pulse.\(kind.rawValue)") { [self] thread in
                guard let stream = handoff.take() else { return }
                captureLoop(thread, stream: stream, context: context)
            }
        }
    }

    /// Stops delivering and waits for the capture thread to end (within a few tens of
    /// milliseconds: the thread never blocks on the server for longer). Safe to call twice.
    public func stop() {
        let thread = worker.withLock { w -> WorkerThread? in let t = w; w = nil; return t }
        thread?.requestStop()
        thread?.join()
    }

    // MARK: - Capture

    private func captureLoop(_ thread: WorkerThread, stream initial: PulseRecordStream, context: SourceContext) {
        var stream: PulseRecordStream? = initial
        let format = self.format
        let bytesPerFrame = format.bytesPerFrame
        let chunkFrames = framesPerBuffer
        let chunkBytes = chunkFrames * bytesPerFrame
        var timeline = SampleTimeline(sampleRate: Int32(format.sampleRate))
        var pending: [UInt8] = []
        pending.reserveCapacity(chunkBytes * 8)
        // The index of the first frame in `pending`, counted since the stream was opened.
        var nextFrame: Int64 = 0
        // Where the last delivered buffer ended, in ticks: buffers never start before the
        // timeline's zero nor overlap (after the count was re-anchored backwards).
        var deliveredEnd: Int64 = 0
        let clock = ContinuousClock()
        var lastAttempt = clock.now

        while !thread.isStopRequested {
            guard let current = stream else {
                // Lost: try again about once a second, napping briefly so that stop() is prompt.
                usleep(50_000)
                guard clock.now - lastAttempt >= .seconds(1), !thread.isStopRequested else { continue }
                lastAttempt = clock.now
                if let reopened = try? openStream(isCancelled: { thread.isStopRequested }) {
                    stream = reopened
                    context.report(.resumed)
                    timeline.reset()
                    pending.removeAll(keepingCapacity: true)
                    nextFrame = 0
                }
                continue
            }
            do {
                try current.pump(timeoutMicroseconds: 20_000)
                guard try current.read(appendingTo: &pending) > 0 else { continue }
                // The end of what has arrived was captured `latency` ago.
                let received = nextFrame + Int64(pending.count / bytesPerFrame)
                timeline.observe(framesReceived: received, capturedAt: context.timelineNow() - current.latency)
                var consumed = 0
                while pending.count - consumed >= chunkBytes {
                    let start = timeline.ticks(ofFrame: nextFrame)
                    let end = start + Int64(chunkFrames)
                    if end > deliveredEnd {
                        let skip = Int(max(0, deliveredEnd - start))
                        let bytes = Array(pending[(consumed + skip * bytesPerFrame)..<(consumed + chunkBytes)])
                        let pts = MediaTime(value: start + Int64(skip), timescale: Int32(format.sampleRate))
                        context.deliver(.audio(AudioBuffer(format: format, presentationTime: pts, data: bytes)))
                        deliveredEnd = end
                    }
                    consumed += chunkBytes
                    nextFrame += Int64(chunkFrames)
                }
                pending.removeFirst(consumed)
            } catch {
                context.report(.interrupted(ReelError(
                    .sourceUnavailable, "\(name) lost its PulseAudio stream: \(error.message)",
                    hint: "the audio server stopped or the device went away; Reel retries every second and carries on when it is back",
                    errno: error.errno)))
                stream = nil
                lastAttempt = clock.now
            }
        }
    }

    // MARK: - Opening

    /// The PulseAudio sample spec of `format`, or `.unsupportedFormat`.
    private func sampleSpec() throws(ReelError) -> pa_sample_spec {
        #if _endian(little)
        let f32 = PA_SAMPLE_FLOAT32LE, s16 = PA_SAMPLE_S16LE
        #else
        let f32 = PA_SAMPLE_FLOAT32BE, s16 = PA_SAMPLE_S16BE
        #endif
        guard (1...Int(PA_RATE_MAX)).contains(format.sampleRate), (1...Int(PA_CHANNELS_MAX)).contains(format.channels) else {
            throw ReelError(.unsupportedFormat, "PulseAudio cannot record \(format)",
                            hint: "use 1 to \(PA_CHANNELS_MAX) channels at up to \(PA_RATE_MAX) Hz")
        }
        var spec = pa_sample_spec(format: format.sampleFormat == .f32 ? f32 : s16,
                                  rate: UInt32(format.sampleRate), channels: UInt8(format.channels))
        guard pa_sample_spec_valid(&spec) != 0 else {
            throw ReelError(.unsupportedFormat, "PulseAudio cannot record \(format)")
        }
        return spec
    }

    /// Throws `.sourceUnavailable` naming the device when the server does not have it.
    private func checkDevice(on connection: PulseConnection) throws(ReelError) {
        let box = LookupBox()
        try withExtendedLifetime(box) { () throws(ReelError) in
            let op = pa_context_get_source_info_by_name(connection.context, lookupName, { context, info, eol, userdata in
                guard let userdata else { return }
                let box = Unmanaged<LookupBox>.fromOpaque(userdata).takeUnretainedValue()
                if info != nil { box.found = true }
                if eol < 0 { box.errorCode = pa_context_errno(context) }
                if eol != 0 { box.done = true }
            }, Unmanaged.passUnretained(box).toOpaque())
            try connection.run([op], what: "looking up '\(lookupName)'") { box.done }
        }
        if box.found { return }
        if box.errorCode == 0 || box.errorCode == Int32(PA_ERR_NOENTITY.rawValue) {
            throw ReelError(.sourceUnavailable, missingDevice + connection.serverClause,
                            hint: "list the audio devices with 'reel devices'")
        }
        throw PulseConnection.error(code: box.errorCode, server: server)
    }

    /// Connects, checks the device and opens a record stream on it.
    private func openStream(isCancelled: @escaping () -> Bool) throws(ReelError) -> PulseRecordStream {
        var spec = try sampleSpec()
        let connection = try PulseConnection(server: server, clientName: "Reel", isCancelled: isCancelled)
        try checkDevice(on: connection)
        return try PulseRecordStream(connection: connection, device: sourceName, spec: &spec,
                                     fragmentBytes: framesPerBuffer * format.bytesPerFrame, description: name)
    }
}

/// What a device lookup's callback found. Touched only on the thread iterating the main loop.
private final class LookupBox {
    var found = false
    var done = false
    var errorCode: Int32 = 0
}

/// Moves a value that is not `Sendable` to the one thread that will use it from then on.
private final class Handoff<Value>: @unchecked Sendable {
    private var value: Value?
    init(_ value: Value) { self.value = value }
    /// Called once, by the receiving thread.
    func take() -> Value? {
        defer { value = nil }
        return value
    }
}

// MARK: - Record stream

/// One PulseAudio record stream (`pa_stream`), owned here and freed in `deinit`; it retains the
/// connection it lives on. Used by one thread at a time.
final class PulseRecordStream {
    let connection: PulseConnection
    let stream: OpaquePointer

    /// Creates a record stream on `device` (`nil`: the default source) with fragments of
    /// `fragmentBytes`, and waits until it is recording.
    init(connection: PulseConnection, device: String?, spec: inout pa_sample_spec,
         fragmentBytes: Int, description: String) throws(ReelError) {
        guard let stream = pa_stream_new(connection.context, "Reel: \(description)", &spec, nil) else {
            throw connection.connectionError()
        }
        self.connection = connection
        self.stream = stream
        // Small fragments keep latency low; the server's defaults for the rest.
        var attr = pa_buffer_attr(maxlength: UInt32.max, tlength: UInt32.max, prebuf: UInt32.max,
                                  minreq: UInt32.max, fragsize: UInt32(fragmentBytes))
        var flags = PA_STREAM_ADJUST_LATENCY.rawValue | PA_STREAM_AUTO_TIMING_UPDATE.rawValue
        // A named device is what the user asked for: fail rather than move to another one.
        if let device, !device.hasPrefix("@") { flags |= PA_STREAM_DONT_MOVE.rawValue }
        if pa_stream_connect_record(stream, device, &attr, pa_stream_flags_t(rawValue: flags)) < 0 {
            throw connection.connectionError()
        }
        try connection.wait(what: "opening the record stream") { () throws(ReelError) -> Bool in
            let state = pa_stream_get_state(stream)
            if state == PA_STREAM_FAILED || state == PA_STREAM_TERMINATED { throw streamError() }
            return state == PA_STREAM_READY
        }
    }

    deinit {
        pa_stream_disconnect(stream)
        pa_stream_unref(stream)
    }

    /// Runs the main loop once (waiting at most `timeoutMicroseconds`) and throws if the
    /// connection or the stream has failed.
    func pump(timeoutMicroseconds: Int32) throws(ReelError) {
        guard connection.iterate(timeoutMicroseconds: timeoutMicroseconds) else {
            throw ReelError(.sourceUnavailable, "the PulseAudio main loop failed")
        }
        guard connection.isReady else { throw connection.connectionError() }
        guard pa_stream_get_state(stream) == PA_STREAM_READY else { throw streamError() }
    }

    /// Appends everything that has arrived to `buffer` and returns the number of bytes added.
    /// Holes in the stream become silence.
    func read(appendingTo buffer: inout [UInt8]) throws(ReelError) -> Int {
        var added = 0
        while pa_stream_readable_size(stream) > 0 {
            var data: UnsafeRawPointer?
            var count = 0
            guard pa_stream_peek(stream, &data, &count) == 0 else { throw streamError() }
            if count == 0 { break }
            if let data {
                buffer.append(contentsOf: UnsafeRawBufferPointer(start: data, count: count))
            } else {
                buffer.append(contentsOf: repeatElement(0, count: count))
            }
            pa_stream_drop(stream)
            added += count
        }
        return added
    }

    /// How long ago the newest sample that has arrived was captured, from the server's latest
    /// timing report: the source's latency plus the transport, less the sink's latency for a
    /// monitor (whose data is rendered ahead of playback), and never below zero. Zero until the
    /// first report.
    ///
    /// The local buffer is left out because the caller drains it as soon as data arrives; the
    /// interpolated `pa_stream_get_latency` is not used because it counts from the stream's
    /// creation and goes astray when a source starts delivering late (a null sink's monitor
    /// reports 0.7 s while data arrives in real time).
    var latency: MediaTime {
        guard let info = pa_stream_get_timing_info(stream)?.pointee else { return .zero }
        let usec = Int64(info.source_usec) + Int64(info.transport_usec) - Int64(info.sink_usec)
        return MediaTime(value: max(0, usec), timescale: 1_000_000)
    }

    /// The stream's failure as a ``ReelError``.
    func streamError() -> ReelError {
        let code = pa_context_errno(connection.context)
        if !connection.isReady { return connection.connectionError() }
        let reason = String(cString: pa_strerror(code))
        return ReelError(.sourceUnavailable, "the PulseAudio record stream failed (\(reason))",
                         hint: "the device may have been removed; list the audio devices with 'reel devices'")
    }
}

// MARK: - Timing

/// Presentation times of audio derived from sample counts, anchored to the session clock and
/// re-anchored when the two disagree by more than `tolerance`.
///
/// Each observation says when, by the clock, the newest frame that arrived was captured. Data
/// can arrive late (the capture thread was not scheduled at once) but never early, so the
/// anchor is the earliest that recent observations allow: the minimum over about a second of
/// the clock time less the count time. A late arrival moves nothing; a lasting disagreement
/// (the device's clock drifts, the server dropped data) moves the minimum, and when it has moved
/// more than `tolerance` the count is re-anchored there. Data that arrives earlier than the
/// anchor allows re-anchors at once.
///
/// Times are kept in ticks of the sample rate, so consecutive buffers follow each other exactly
/// between re-anchorings.
struct SampleTimeline {
    /// Ticks per second.
    let sampleRate: Int32
    /// How far the count may stray from the clock before it is re-anchored, in ticks.
    let toleranceTicks: Int64
    /// The span, in frames, of each of the two buckets the minimum is taken over.
    let bucketFrames: Int64
    /// The presentation time of frame 0, in ticks.
    private var anchor: Int64?
    /// The minimum offset seen in the current and the previous bucket.
    private var currentMinimum = Int64.max
    private var previousMinimum = Int64.max
    /// The first frame of the current bucket.
    private var bucketStart: Int64 = 0
    /// How many times the count was re-anchored after the first anchoring.
    private(set) var reanchorCount = 0

    init(sampleRate: Int32, tolerance: MediaTime = MediaTime(value: 30, timescale: 1000),
         window: MediaTime = MediaTime(value: 1, timescale: 1)) {
        self.sampleRate = sampleRate
        self.toleranceTicks = max(1, tolerance.convertedValue(to: sampleRate))
        self.bucketFrames = max(1, window.convertedValue(to: sampleRate) / 2)
    }

    /// Whether an anchor has been set.
    var isAnchored: Bool { anchor != nil }

    /// Records that `framesReceived` frames have arrived in all (counted since the stream
    /// opened), the newest of them captured at `time` on the timeline, so that frame
    /// `framesReceived` begins at `time`.
    mutating func observe(framesReceived: Int64, capturedAt time: MediaTime) {
        let offset = time.convertedValue(to: sampleRate) - framesReceived
        if framesReceived - bucketStart >= bucketFrames {
            previousMinimum = currentMinimum
            currentMinimum = .max
            bucketStart = framesReceived
        }
        currentMinimum = min(currentMinimum, offset)
        guard let anchor else {
            anchor = offset
            return
        }
        let estimate = min(currentMinimum, previousMinimum)
        if abs(estimate - anchor) > toleranceTicks {
            self.anchor = estimate
            reanchorCount += 1
        }
    }

    /// The presentation time of frame `frame`, in ticks of the sample rate. Call after the first
    /// `observe`.
    func ticks(ofFrame frame: Int64) -> Int64 {
        (anchor ?? 0) + frame
    }

    /// Forgets the anchor and the history (after a reconnection the count starts again).
    mutating func reset() {
        anchor = nil
        currentMinimum = .max
        previousMinimum = .max
        bucketStart = 0
    }
}
