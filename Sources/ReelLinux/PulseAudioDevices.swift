import ReelCore
internal import CPulse

/// A PulseAudio source (something to record from) or sink (something applications play into).
public struct AudioDevice: Sendable, Hashable {
    /// The PulseAudio name that selects the device ("alsa_input.usb-…", "apps.monitor").
    public var name: String
    /// The human-readable description ("Built-in Audio Analog Stereo").
    public var description: String
    /// Whether this source is the monitor of a sink: it carries what applications play.
    public var isMonitor: Bool
    /// Whether this is the server's default source (or, for a sink, its default sink).
    public var isDefault: Bool
    /// The device's native sample rate in hertz.
    public var sampleRate: Int
    /// The device's native channel count.
    public var channels: Int

    /// Creates a device description.
    public init(name: String, description: String, isMonitor: Bool, isDefault: Bool, sampleRate: Int, channels: Int) {
        self.name = name
        self.description = description
        self.isMonitor = isMonitor
        self.isDefault = isDefault
        self.sampleRate = sampleRate
        self.channels = channels
    }
}

/// The audio devices of a PulseAudio (or PipeWire-Pulse) server.
public enum PulseAudioDevices {
    /// Whether this process may record from the audio source `source` (`nil`: the server's
    /// default source, a microphone), in the spirit of `AVCaptureDevice.authorizationStatus(for:
    /// .audio)`: `.absent` when no audio server answers or there is no such source (or no
    /// microphone at all), `.denied` with what to do when the server refuses this user.
    public static func authorizationStatus(forSource source: String? = nil, server: String? = nil) -> AuthorizationStatus {
        let sources: [AudioDevice]
        do {
            sources = try list(server: server).sources
        } catch let error as ReelError where error.code == .permissionDenied {
            return .denied(hint: error.hint ?? "ask the owner of the audio server to let you in")
        } catch {
            return .absent
        }
        if let source { return sources.contains { $0.name == source } ? .authorized : .absent }
        return sources.contains { !$0.isMonitor } ? .authorized : .absent
    }

    /// Lists the server's sources (microphones and sink monitors) and sinks, with the server's
    /// defaults marked.
    ///
    /// - Parameter server: a PulseAudio server string such as `"unix:/run/user/1000/pulse/native"`;
    ///   `nil` uses `PULSE_SERVER` or the usual default.
    /// - Throws: ``ReelError`` `.sourceUnavailable` when no server answers within about 5 seconds.
    public static func list(server: String? = nil) throws -> (sources: [AudioDevice], sinks: [AudioDevice]) {
        let connection = try PulseConnection(server: server, clientName: "Reel device list")
        let box = DeviceListBox()
        let userdata = Unmanaged.passUnretained(box).toOpaque()
        try withExtendedLifetime(box) { () throws(ReelError) in
            let serverOp = pa_context_get_server_info(connection.context, { _, info, userdata in
                guard let userdata else { return }
                let box = Unmanaged<DeviceListBox>.fromOpaque(userdata).takeUnretainedValue()
                if let info {
                    box.defaultSink = info.pointee.default_sink_name.map { String(cString: $0) }
                    box.defaultSource = info.pointee.default_source_name.map { String(cString: $0) }
                }
                box.serverDone = true
            }, userdata)
            let sinkOp = pa_context_get_sink_info_list(connection.context, { _, info, eol, userdata in
                guard let userdata else { return }
                let box = Unmanaged<DeviceListBox>.fromOpaque(userdata).takeUnretainedValue()
                if eol != 0 { box.sinksDone = true; return }
                guard let i = info?.pointee else { return }
                box.sinks.append(AudioDevice(
                    name: i.name.map { String(cString: $0) } ?? "",
                    description: i.description.map { String(cString: $0) } ?? "",
                    isMonitor: false, isDefault: false,
                    sampleRate: Int(i.sample_spec.rate), channels: Int(i.sample_spec.channels)))
            }, userdata)
            let sourceOp = pa_context_get_source_info_list(connection.context, { _, info, eol, userdata in
                guard let userdata else { return }
                let box = Unmanaged<DeviceListBox>.fromOpaque(userdata).takeUnretainedValue()
                if eol != 0 { box.sourcesDone = true; return }
                guard let i = info?.pointee else { return }
                box.sources.append(AudioDevice(
                    name: i.name.map { String(cString: $0) } ?? "",
                    description: i.description.map { String(cString: $0) } ?? "",
                    isMonitor: i.monitor_of_sink != UInt32.max, isDefault: false,
                    sampleRate: Int(i.sample_spec.rate), channels: Int(i.sample_spec.channels)))
            }, userdata)
            try connection.run([serverOp, sinkOp, sourceOp], what: "listing the audio devices") {
                box.serverDone && box.sinksDone && box.sourcesDone
            }
        }
        let sources = box.sources.map { device in
            var device = device
            device.isDefault = device.name == box.defaultSource
            return device
        }
        let sinks = box.sinks.map { device in
            var device = device
            device.isDefault = device.name == box.defaultSink
            return device
        }
        return (sources, sinks)
    }
}

/// What the introspection callbacks of ``PulseAudioDevices/list(server:)`` collect. Touched only
/// on the thread that iterates the main loop.
private final class DeviceListBox {
    var sources: [AudioDevice] = []
    var sinks: [AudioDevice] = []
    var defaultSink: String?
    var defaultSource: String?
    var serverDone = false
    var sinksDone = false
    var sourcesDone = false
}

// MARK: - Connection

/// One connection to a PulseAudio server: a private `pa_mainloop` and a `pa_context` on it, both
/// owned here and freed in `deinit`. Used by one thread at a time; the main loop is iterated
/// only by explicit calls, so callbacks run on the caller's thread.
final class PulseConnection {
    let mainloop: OpaquePointer
    let context: OpaquePointer
    /// The server string asked for (`nil`: the default), for messages.
    let server: String?
    /// Polled while waiting; when it returns true, waits give up with a `.notRunning` error.
    private let isCancelled: () -> Bool

    /// Connects and waits until the context is ready (or fails, or `timeout` passes).
    init(server: String?, clientName: String, timeout: Duration = .seconds(5),
         isCancelled: @escaping () -> Bool = { false }) throws(ReelError) {
        guard let loop = pa_mainloop_new() else {
            throw ReelError(.sourceUnavailable, "could not create a PulseAudio main loop")
        }
        guard let ctx = pa_context_new(pa_mainloop_get_api(loop), clientName) else {
            pa_mainloop_free(loop)
            throw ReelError(.sourceUnavailable, "could not create a PulseAudio context")
        }
        self.mainloop = loop
        self.context = ctx
        self.server = server
        self.isCancelled = isCancelled
        // From here on `deinit` frees both, also when this initializer throws.
        // Never autospawn: a recorder should not start an audio server as a side effect.
        if pa_context_connect(ctx, server, PA_CONTEXT_NOAUTOSPAWN, nil) < 0 {
            throw connectionError()
        }
        try wait(timeout: timeout, what: "connecting") { () throws(ReelError) -> Bool in
            let state = pa_context_get_state(ctx)
            if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED { throw connectionError() }
            return state == PA_CONTEXT_READY
        }
    }

    deinit {
        pa_context_disconnect(context)
        pa_context_unref(context)
        pa_mainloop_free(mainloop)
    }

    /// Whether the context is still connected.
    var isReady: Bool { pa_context_get_state(context) == PA_CONTEXT_READY }

    /// Runs the main loop once, waiting at most `timeoutMicroseconds` for something to happen.
    /// Returns false if the main loop failed.
    @discardableResult
    func iterate(timeoutMicroseconds: Int32) -> Bool {
        if pa_mainloop_prepare(mainloop, timeoutMicroseconds) < 0 { return false }
        if pa_mainloop_poll(mainloop) < 0 { return false }
        return pa_mainloop_dispatch(mainloop) >= 0
    }

    /// Iterates the main loop until `done` returns true. Throws when the connection fails, the
    /// wait is cancelled or `timeout` passes.
    func wait(timeout: Duration = .seconds(5), what: String,
              until done: () throws(ReelError) -> Bool) throws(ReelError) {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while try !done() {
            if isCancelled() { throw ReelError(.notRunning, "\(what) was cancelled") }
            let state = pa_context_get_state(context)
            if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED { throw connectionError() }
            if clock.now >= deadline {
                throw ReelError(.sourceUnavailable,
                                "PulseAudio did not answer within \(timeout) while \(what)\(serverClause)",
                                hint: "check that the audio server is running and not stuck")
            }
            if !iterate(timeoutMicroseconds: 20_000) {
                throw ReelError(.sourceUnavailable, "the PulseAudio main loop failed while \(what)")
            }
        }
    }

    /// Waits for introspection operations to complete (`done`), then releases them. Operations
    /// still running on failure are cancelled, so their callbacks never run after the caller's
    /// userdata is gone.
    func run(_ operations: [OpaquePointer?], what: String, until done: () -> Bool) throws(ReelError) {
        defer {
            for op in operations {
                guard let op else { continue }
                if pa_operation_get_state(op) == PA_OPERATION_RUNNING { pa_operation_cancel(op) }
                pa_operation_unref(op)
            }
        }
        if operations.contains(where: { $0 == nil }) { throw connectionError() }
        try wait(what: what) { done() }
    }

    /// " at <server>" when a server was named.
    var serverClause: String { server.map { " at \($0)" } ?? "" }

    /// The context's last error as a ``ReelError`` that says what to do.
    func connectionError() -> ReelError {
        let code = pa_context_errno(context)
        return PulseConnection.error(code: code, server: server)
    }

    /// Maps a PulseAudio error code met while connecting to a ``ReelError``.
    static func error(code: Int32, server: String?) -> ReelError {
        let clause = server.map { " at \($0)" } ?? ""
        let reason = String(cString: pa_strerror(code))
        switch code {
        case Int32(PA_ERR_CONNECTIONREFUSED.rawValue):
            return ReelError(.sourceUnavailable, "PulseAudio is not running\(clause) (connection refused)",
                             hint: "start it with 'pulseaudio --start' (or start PipeWire's pipewire-pulse), or point PULSE_SERVER at a running server")
        case Int32(PA_ERR_INVALIDSERVER.rawValue):
            return ReelError(.invalidConfiguration, "'\(server ?? "")' is not a valid PulseAudio server string",
                             hint: "use a form like unix:/run/user/1000/pulse/native or tcp:host:4713")
        case Int32(PA_ERR_ACCESS.rawValue), Int32(PA_ERR_AUTHKEY.rawValue):
            return ReelError(.permissionDenied, "PulseAudio\(clause) refused the connection (\(reason))",
                             hint: "run as the user who owns the audio server, or check its cookie (~/.config/pulse/cookie)")
        case Int32(PA_ERR_CONNECTIONTERMINATED.rawValue), Int32(PA_ERR_KILLED.rawValue):
            return ReelError(.sourceUnavailable, "the connection to PulseAudio\(clause) was lost (\(reason))",
                             hint: "the audio server stopped or restarted")
        default:
            return ReelError(.sourceUnavailable, "cannot use PulseAudio\(clause): \(reason)",
                             hint: "check that the audio server is running ('pactl info')")
        }
    }
}

extension PulseAudioDevices {
    /// Lists the streams that applications play now, with the sink each plays into: what
    /// ``ApplicationAudioSource`` can record. Streams played by modules (loopbacks) are left out.
    ///
    /// - Parameter server: a PulseAudio server string; `nil` uses `PULSE_SERVER` or the default.
    /// - Throws: ``ReelError`` `.sourceUnavailable` when no server answers.
    public static func applications(server: String? = nil) throws -> [PlayingStream] {
        try SystemPulseAudioRouting().connect(server: server, clientName: "Reel device list")
            .playingStreams().filter { !$0.isModuleStream }
    }
}
