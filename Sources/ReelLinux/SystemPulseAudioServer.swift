import ReelCore
internal import CPulse

/// The PulseAudio server through libpulse: the ``PulseAudioServer`` that recordings use.
package struct SystemPulseAudioServer: PulseAudioServer {
    /// The real server.
    package init() {}

    /// Connects once and looks the device up.
    package func checkDevice(_ request: PulseRecordRequest) throws(ReelError) {
        _ = try Self.sampleSpec(request.format)
        let connection = try PulseConnection(server: request.server, clientName: "Reel")
        try Self.checkDevice(request, on: connection)
    }

    /// Connects, looks the device up and opens a record stream on it.
    package func openRecording(_ request: PulseRecordRequest,
                               isCancelled: @escaping () -> Bool) throws(ReelError) -> any PulseAudioRecording {
        var spec = try Self.sampleSpec(request.format)
        let connection = try PulseConnection(server: request.server, clientName: "Reel", isCancelled: isCancelled)
        let device = try Self.checkDevice(request, on: connection)
        let stream = try PulseRecordStream(connection: connection, device: request.device, spec: &spec,
                                           fragmentBytes: request.fragmentFrames * request.format.bytesPerFrame,
                                           description: request.description, isMonitor: device.isMonitor)
        stream.isMuted = device.isMuted
        return stream
    }

    /// The PulseAudio sample spec of `format`, or `.unsupportedFormat`.
    private static func sampleSpec(_ format: AudioFormat) throws(ReelError) -> pa_sample_spec {
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

    /// Throws `.sourceUnavailable` naming the device when the server does not have it; returns
    /// whether it is the monitor of a sink, and whether it is muted.
    @discardableResult
    private static func checkDevice(_ request: PulseRecordRequest, on connection: PulseConnection) throws(ReelError) -> (isMonitor: Bool, isMuted: Bool) {
        let box = LookupBox()
        let lookupName = request.lookupName
        try withExtendedLifetime(box) { () throws(ReelError) in
            let op = pa_context_get_source_info_by_name(connection.context, lookupName, { context, info, eol, userdata in
                guard let userdata else { return }
                let box = Unmanaged<LookupBox>.fromOpaque(userdata).takeUnretainedValue()
                if let info {
                    box.found = true
                    box.isMonitor = info.pointee.monitor_of_sink != UInt32.max  // PA_INVALID_INDEX
                    box.isMuted = info.pointee.mute != 0
                }
                if eol < 0 { box.errorCode = pa_context_errno(context) }
                if eol != 0 { box.done = true }
            }, Unmanaged.passUnretained(box).toOpaque())
            try connection.run([op], what: "looking up '\(lookupName)'") { box.done }
        }
        if box.found { return (box.isMonitor, box.isMuted) }
        if box.errorCode == 0 || box.errorCode == Int32(PA_ERR_NOENTITY.rawValue) {
            throw ReelError(.sourceUnavailable, request.missingDevice + connection.serverClause,
                            hint: LibraryHint.listAudioDevices)
        }
        throw PulseConnection.error(code: box.errorCode, server: request.server)
    }
}

/// What a device lookup's callback found. Touched only on the thread iterating the main loop.
private final class LookupBox {
    var found = false
    var isMonitor = false
    var isMuted = false
    var done = false
    var errorCode: Int32 = 0
}

// MARK: - Record stream

/// One PulseAudio record stream (`pa_stream`), owned here and freed in `deinit`; it retains the
/// connection it lives on. Used by one thread at a time.
final class PulseRecordStream: PulseAudioRecording {
    let connection: PulseConnection
    let stream: OpaquePointer
    let isMonitor: Bool
    /// Whether the device was muted when the stream opened.
    var isMuted = false

    /// Creates a record stream on `device` (`nil`: the default source) with fragments of
    /// `fragmentBytes`, and waits until it is recording.
    init(connection: PulseConnection, device: String?, spec: inout pa_sample_spec,
         fragmentBytes: Int, description: String, isMonitor: Bool) throws(ReelError) {
        guard let stream = pa_stream_new(connection.context, "Reel: \(description)", &spec, nil) else {
            throw connection.connectionError()
        }
        self.connection = connection
        self.stream = stream
        self.isMonitor = isMonitor
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
                         hint: "the device may have been removed; \(LibraryHint.listAudioDevices)")
    }
}
