import ReelCore
internal import CPulse

/// Application-audio routing through libpulse: the ``PulseAudioRoutingServer`` that recordings
/// and the restoring guard use.
package struct SystemPulseAudioRouting: PulseAudioRoutingServer {
    /// The real server.
    package init() {}

    /// Connects (never autospawning a server).
    package func connect(server: String?, clientName: String) throws(ReelError) -> any PulseAudioRoutingConnection {
        PulseRoutingConnection(try PulseConnection(server: server, clientName: clientName))
    }
}

/// What an operation's callbacks collect. Touched only on the thread iterating the main loop.
private final class RoutingBox {
    var done = false
    var success = true
    var errorCode: Int32 = 0
    var index: UInt32 = UInt32.max
    var streams: [PlayingStream] = []
    var sinkNames: [UInt32: String] = [:]
    var modules: [LoadedModule] = []
    var defaultSink: String?
    var product = ""
    var events: [StreamEvent] = []
    /// The programs recording: each source output's index, program and source.
    var recorders: [(index: UInt32, label: String, source: UInt32)] = []
    /// For each source, the sink it is the monitor of (monitor sources only).
    var monitors: [UInt32: String] = [:]
}

private func box(_ userdata: UnsafeMutableRawPointer?) -> RoutingBox? {
    userdata.map { Unmanaged<RoutingBox>.fromOpaque($0).takeUnretainedValue() }
}

private func property(_ list: OpaquePointer?, _ key: String) -> String? {
    guard let list, let value = pa_proplist_gets(list, key) else { return nil }
    return String(cString: value)
}

/// A ``PulseAudioRoutingConnection`` on one libpulse connection.
private final class PulseRoutingConnection: PulseAudioRoutingConnection {
    let connection: PulseConnection
    /// Receives the subscription's events between calls.
    private let eventBox = RoutingBox()

    init(_ connection: PulseConnection) { self.connection = connection }

    deinit {
        // The callback's userdata is `eventBox`: no callback may run once it is gone.
        pa_context_set_subscribe_callback(connection.context, nil, nil)
    }

    private var context: OpaquePointer { connection.context }

    var serverName: String? {
        pa_context_get_server(context).map { String(cString: $0) } ?? connection.server
    }

    /// Runs one operation made by `start` and waits for it.
    private func run(_ what: String, _ start: (UnsafeMutableRawPointer) -> OpaquePointer?) throws(ReelError) -> RoutingBox {
        let box = RoutingBox()
        try withExtendedLifetime(box) { () throws(ReelError) in
            let op = start(Unmanaged.passUnretained(box).toOpaque())
            try connection.run([op], what: what) { box.done }
        }
        return box
    }

    private func failure(_ box: RoutingBox, _ what: String) -> ReelError {
        let reason = String(cString: pa_strerror(box.errorCode))
        return ReelError(.sourceUnavailable, "PulseAudio refused \(what): \(reason)",
                         hint: "check the audio server with 'pactl info'")
    }

    func serverProduct() throws(ReelError) -> String {
        try run("asking the server what it is") { userdata in
            pa_context_get_server_info(context, { _, info, userdata in
                guard let box = box(userdata) else { return }
                box.product = info?.pointee.server_name.map { String(cString: $0) } ?? ""
                box.done = true
            }, userdata)
        }.product
    }

    func defaultSink() throws(ReelError) -> String? {
        try run("asking for the default sink") { userdata in
            pa_context_get_server_info(context, { _, info, userdata in
                guard let box = box(userdata) else { return }
                box.defaultSink = info?.pointee.default_sink_name.map { String(cString: $0) }
                box.done = true
            }, userdata)
        }.defaultSink
    }

    private func sinkTable() throws(ReelError) -> [UInt32: String] {
        try run("listing the sinks") { userdata in
            pa_context_get_sink_info_list(context, { _, info, eol, userdata in
                guard let box = box(userdata) else { return }
                if eol != 0 { box.done = true; return }
                guard let i = info?.pointee else { return }
                box.sinkNames[i.index] = i.name.map { String(cString: $0) } ?? ""
            }, userdata)
        }.sinkNames
    }

    func sinkNames() throws(ReelError) -> [String] {
        try sinkTable().sorted { $0.key < $1.key }.map(\.value)
    }

    private static let streamCallback: pa_sink_input_info_cb_t = { _, info, eol, userdata in
        guard let box = box(userdata) else { return }
        if eol != 0 { box.done = true; return }
        guard let i = info?.pointee else { return }
        let pid = property(i.proplist, "application.process.id").flatMap { Int32($0) }
        box.streams.append(PlayingStream(
            index: i.index,
            applicationName: property(i.proplist, "application.name") ?? "",
            binary: property(i.proplist, "application.process.binary") ?? "",
            processID: pid,
            // The sink's index for now; named below.
            sinkName: String(i.sink),
            // Streams of clients name their client; those of modules (loopbacks) have none (a
            // client's stream names the native protocol module as its owner, so that says nothing).
            isModuleStream: i.client == UInt32.max))
        if i.client == UInt32.max && i.owner_module != UInt32.max { box.streams[box.streams.count - 1].ownerModule = i.owner_module }
        box.streams[box.streams.count - 1].isMuted = i.mute != 0
        // A stream without a volume of its own (a passthrough one) is never at 0.
        var volume = i.volume
        guard i.has_volume != 0, volume.channels > 0 else { return }
        let loudest = pa_cvolume_max(&volume)
        box.streams[box.streams.count - 1].volumePercent = Int((Double(loudest) / Double(0x10000) * 100).rounded())
        // The mixer's volume scales the samples by its cube (pa_sw_volume_to_linear): at 1 %
        // a millionth, which leaves no sample of 16-bit sound above zero.
        box.streams[box.streams.count - 1].isAtVolumeZero = loudest == 0 || pa_sw_volume_to_linear(loudest) < 1.0 / 32768
    }

    private func named(_ streams: [PlayingStream]) throws(ReelError) -> [PlayingStream] {
        guard !streams.isEmpty else { return [] }
        var sinks = try sinkTable()
        // A sink made since the stream was listed (the server moved the stream onto it) is in
        // the table asked for again.
        if streams.contains(where: { UInt32($0.sinkName).map { sinks[$0] == nil } ?? false }) { sinks = try sinkTable() }
        return streams.map { stream in
            var stream = stream
            if let index = UInt32(stream.sinkName) { stream.sinkName = PlayingStream.sinkName(index: index, in: sinks) }
            return stream
        }
    }

    func playingStreams() throws(ReelError) -> [PlayingStream] {
        let found = try run("listing the playing streams") { userdata in
            pa_context_get_sink_input_info_list(context, Self.streamCallback, userdata)
        }.streams
        return try named(found)
    }

    func playingStream(_ index: UInt32) throws(ReelError) -> PlayingStream? {
        // A stream that is gone makes the operation fail (no such entity): that is `nil`.
        let found = try run("looking up stream \(index)") { userdata in
            pa_context_get_sink_input_info(context, index, Self.streamCallback, userdata)
        }.streams
        return try named(found).first
    }

    func modules() throws(ReelError) -> [LoadedModule] {
        try run("listing the modules") { userdata in
            pa_context_get_module_info_list(context, { _, info, eol, userdata in
                guard let box = box(userdata) else { return }
                if eol != 0 { box.done = true; return }
                guard let i = info?.pointee else { return }
                box.modules.append(LoadedModule(index: i.index, name: i.name.map { String(cString: $0) } ?? "",
                                                argument: i.argument.map { String(cString: $0) } ?? ""))
            }, userdata)
        }.modules
    }

    func loadModule(_ name: String, argument: String) throws(ReelError) -> UInt32 {
        let result = try run("loading \(name)") { userdata in
            pa_context_load_module(context, name, argument, { context, index, userdata in
                guard let box = box(userdata) else { return }
                box.index = index
                if index == UInt32.max { box.success = false; box.errorCode = pa_context_errno(context) }
                box.done = true
            }, userdata)
        }
        guard result.success else { throw failure(result, "to load \(name) \(argument)") }
        return result.index
    }

    private static let successCallback: pa_context_success_cb_t = { context, success, userdata in
        guard let box = box(userdata) else { return }
        box.success = success != 0
        if success == 0 { box.errorCode = pa_context_errno(context) }
        box.done = true
    }

    func unloadModule(_ index: UInt32) throws(ReelError) {
        let result = try run("unloading module \(index)") { userdata in
            pa_context_unload_module(context, index, Self.successCallback, userdata)
        }
        guard result.success else { throw failure(result, "to unload module \(index)") }
    }

    func moveStream(_ index: UInt32, toSink sink: String) throws(ReelError) {
        let result = try run("moving stream \(index)") { userdata in
            pa_context_move_sink_input_by_name(context, index, sink, Self.successCallback, userdata)
        }
        guard result.success else { throw failure(result, "to move stream \(index) to '\(sink)'") }
    }

    func recordingStreams() throws(ReelError) -> [RecordingStream] {
        let monitors = try run("listing the sources") { userdata in
            pa_context_get_source_info_list(context, { _, info, eol, userdata in
                guard let box = box(userdata) else { return }
                if eol != 0 { box.done = true; return }
                guard let i = info?.pointee, let sink = i.monitor_of_sink_name else { return }
                box.monitors[i.index] = String(cString: sink)
            }, userdata)
        }.monitors
        return try run("listing the recording streams") { userdata in
            pa_context_get_source_output_info_list(context, { _, info, eol, userdata in
                guard let box = box(userdata) else { return }
                if eol != 0 { box.done = true; return }
                guard let i = info?.pointee else { return }
                let label = property(i.proplist, "application.name") ?? property(i.proplist, "application.process.binary") ?? ""
                box.recorders.append((i.index, label, i.source))
            }, userdata)
        }.recorders.map { RecordingStream(index: $0.index, label: $0.label, monitoredSink: monitors[$0.source]) }
    }

    func suspendSink(_ sink: String, _ suspended: Bool) throws(ReelError) {
        let result = try run("suspending '\(sink)'") { userdata in
            pa_context_suspend_sink_by_name(context, sink, suspended ? 1 : 0, Self.successCallback, userdata)
        }
        guard result.success else { throw failure(result, "to \(suspended ? "suspend" : "resume") '\(sink)'") }
    }

    func subscribeToStreams() throws(ReelError) {
        let userdata = Unmanaged.passUnretained(eventBox).toOpaque()
        pa_context_set_subscribe_callback(context, { _, type, index, userdata in
            guard let box = box(userdata) else { return }
            let facility = type.rawValue & PA_SUBSCRIPTION_EVENT_FACILITY_MASK.rawValue
            guard facility == PA_SUBSCRIPTION_EVENT_SINK_INPUT.rawValue else { return }
            switch type.rawValue & PA_SUBSCRIPTION_EVENT_TYPE_MASK.rawValue {
            case PA_SUBSCRIPTION_EVENT_NEW.rawValue: box.events.append(.appeared(index))
            case PA_SUBSCRIPTION_EVENT_REMOVE.rawValue: box.events.append(.vanished(index))
            case PA_SUBSCRIPTION_EVENT_CHANGE.rawValue: box.events.append(.changed(index))
            default: break
            }
        }, userdata)
        let result = try run("subscribing to the streams") { userdata in
            pa_context_subscribe(context, PA_SUBSCRIPTION_MASK_SINK_INPUT, Self.successCallback, userdata)
        }
        guard result.success else { throw failure(result, "a subscription to its streams") }
    }

    func nextEvents(timeoutMicroseconds: Int32) throws(ReelError) -> [StreamEvent] {
        if eventBox.events.isEmpty {
            if !connection.iterate(timeoutMicroseconds: timeoutMicroseconds) || !connection.isReady {
                throw connection.connectionError()
            }
        }
        defer { eventBox.events.removeAll() }
        return eventBox.events
    }
}
