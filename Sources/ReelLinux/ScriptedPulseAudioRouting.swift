import Foundation
import ReelCore

/// A ``PulseAudioRoutingServer`` that keeps a small model of a PulseAudio server — sinks,
/// streams, modules — which a test changes as a script goes (an application starts or ends a
/// stream), so that what `ApplicationAudioRouter` moves, follows and restores is checked on
/// exact event sequences without a server.
///
/// It behaves as PulseAudio does where routing depends on it: loading `module-null-sink` or
/// `module-remap-sink` (onto an existing `master=`) makes its sink, a remap sink plays into its
/// master and `module-loopback` into its `sink=` through a module stream (no client, owned by
/// the module; a remap sink's may be moved, and its master with it); unloading a null or
/// remap sink moves the applications' streams still on it to the default sink and unloads the
/// modules whose streams played into it (a remap sink whose master goes goes too); a stream
/// opened "dont-move" refuses to move; every connection that subscribed hears of streams that
/// start and end.
package final class ScriptedPulseAudioRouting: PulseAudioRoutingServer, @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`.
    private var sinkList: [String]
    private var defaultSinkName: String?
    private var streamList: [PlayingStream] = []
    private var unmovable: Set<UInt32> = []
    /// Programs recording: each records the monitor of a sink, or only one stream of it.
    private var recordingList: [(stream: RecordingStream, onlyOf: UInt32?)] = []
    private var nextRecording: UInt32 = 500
    private var moduleList: [LoadedModule] = []
    /// The module stream of each remap sink and loopback, by module.
    private var moduleStreams: [UInt32: UInt32] = [:]
    private var nextStream: UInt32 = 0
    private var nextModule: UInt32 = 100
    private var subscribers: [Connection] = []
    private var running = true
    private var suspended: Set<String> = []
    private var changes = 0
    /// Modules unloaded but still listed for a few more asks, as a server that unloads later
    /// than it answers (``unloadsLater(by:)``).
    private var lingering: [(module: LoadedModule, asks: Int)] = []
    private var lingeringAsks = 0
    /// The sinks the server starts with.
    private let initialSinks: [String]
    /// Counts restarts: a connection of an earlier one is lost.
    private var generation = 0

    /// The server string that reaches this server, when a test has several
    /// (``ScriptedPulseAudioServers``).
    package let name: String?

    /// A server with `sinks` (the first is the default), reached as `name`.
    package init(sinks: [String], name: String? = nil) {
        self.name = name
        sinkList = sinks
        initialSinks = sinks
        defaultSinkName = sinks.first
    }

    /// From now on a module unloaded is still listed for `asks` more asks of the modules (a
    /// server whose unloading comes a moment after its answer).
    package func unloadsLater(by asks: Int) {
        locked { lingeringAsks = asks }
    }

    /// The modules listed to one ask: the loaded ones, and those unloaded that linger.
    fileprivate func listModules() -> [LoadedModule] {
        locked {
            let listed = moduleList + lingering.map(\.module)
            lingering = lingering.map { ($0.module, $0.asks - 1) }.filter { $0.asks > 0 }
            return listed
        }
    }

    /// The server restarts: every connection is lost, the modules and the streams are gone,
    /// and the sinks are the first ones again.
    package func restart() {
        locked {
            generation += 1
            sinkList = initialSinks
            defaultSinkName = initialSinks.first
            streamList = []
            moduleList = []
            moduleStreams = [:]
            unmovable = []
            suspended = []
            subscribers = []
        }
    }

    private func locked<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock.lock(); defer { lock.unlock() }
        return try body()
    }

    /// What the server says it is (`pulseaudio`, or `PulseAudio (on PipeWire 0.3.65)`).
    package var product: String {
        get { locked { productName } }
        set { locked { productName = newValue } }
    }
    private var productName = "pulseaudio"

    /// Whether loading any module is refused (a server that does not allow it).
    package var refusesModules: Bool {
        get { locked { refusing } }
        set { locked { refusing = newValue } }
    }
    private var refusing = false

    /// Whether the server runs; a stopped one refuses connections.
    package var isRunning: Bool {
        get { locked { running } }
        set { locked { running = newValue } }
    }

    /// The sinks now.
    package var sinks: [String] { locked { sinkList } }
    /// The streams now, applications' and modules'.
    package var streams: [PlayingStream] { locked { streamList } }
    /// The modules loaded now.
    package var modules: [LoadedModule] { locked { moduleList } }
    /// The sinks suspended now.
    package var suspendedSinks: Set<String> { locked { suspended } }
    /// How many modules were loaded or unloaded and streams moved so far.
    package var changeCount: Int { locked { changes } }

    /// Routing as `pactl` shows it: each stream with its sink, and the modules.
    package var routing: [String] {
        locked {
            streamList.map { "stream \($0.index) \($0.applicationName) on \($0.sinkName)" }
                + moduleList.map { "module \($0.index) \($0.name) \($0.argument)" }
        }
    }

    /// An application starts a stream on `sink` (the default when `nil`); subscribers hear of it.
    @discardableResult
    package func play(_ application: String, binary: String = "", pid: Int32? = nil, sink: String? = nil,
                      dontMove: Bool = false) -> UInt32 {
        locked {
            let index = nextStream
            nextStream += 1
            streamList.append(PlayingStream(index: index, applicationName: application, binary: binary, processID: pid,
                                            sinkName: sink ?? defaultSinkName ?? ""))
            if dontMove { unmovable.insert(index) }
            for subscriber in subscribers { subscriber.queue(.appeared(index)) }
            return index
        }
    }

    /// The user (or another program) moves a stream to `sink`; subscribers hear of it.
    package func move(_ index: UInt32, to sink: String) {
        locked {
            guard let at = streamList.firstIndex(where: { $0.index == index }) else { return }
            streamList[at].sinkName = sink
            for subscriber in subscribers { subscriber.queue(.changed(index)) }
        }
    }

    /// The user mutes or unmutes a stream in the mixer, or sets its volume to 0 or back;
    /// subscribers hear of it (as a change).
    package func setMixer(_ index: UInt32, muted: Bool, volumeZero: Bool = false) {
        locked {
            guard let at = streamList.firstIndex(where: { $0.index == index }) else { return }
            streamList[at].isMuted = muted
            streamList[at].isAtVolumeZero = volumeZero
            for subscriber in subscribers { subscriber.queue(.changed(index)) }
        }
    }

    /// A program starts recording the monitor of `sink`, or, with `onlyOf`, of the sink that
    /// stream plays on and that stream only (`parec --monitor-stream`): the server ends such a
    /// recording when the stream is moved, as PulseAudio does.
    @discardableResult
    package func record(_ program: String, monitorOf sink: String? = nil, onlyOf stream: UInt32? = nil) -> UInt32 {
        locked {
            let index = nextRecording
            nextRecording += 1
            let monitored = stream.flatMap { s in streamList.first { $0.index == s }?.sinkName } ?? sink
            recordingList.append((RecordingStream(index: index, label: program, monitoredSink: monitored), stream))
            return index
        }
    }

    /// The programs recording now.
    package var recordings: [RecordingStream] { locked { recordingList.map(\.stream) } }

    /// A stream ends; subscribers hear of it.
    package func end(_ index: UInt32) {
        locked { removeStream(index) }
    }

    /// A module's stream (`module`'s own, no client) starts on `sink`. Under `lock`.
    private func addModuleStream(of module: UInt32, on sink: String) {
        let stream = nextStream
        nextStream += 1
        var playing = PlayingStream(index: stream, applicationName: "", binary: "", processID: nil, sinkName: sink, isModuleStream: true)
        playing.ownerModule = module
        streamList.append(playing)
        moduleStreams[module] = stream
        for subscriber in subscribers { subscriber.queue(.appeared(stream)) }
    }

    /// Unloads a module as PulseAudio does: its stream ends; a sink of its goes, the
    /// applications' streams on it to the default sink, and the modules whose streams played
    /// into it are unloaded too. Under `lock`.
    private func removeModule(_ index: UInt32) {
        guard let at = moduleList.firstIndex(where: { $0.index == index }) else { return }
        let module = moduleList.remove(at: at)
        changes += 1
        if let stream = moduleStreams.removeValue(forKey: index) { removeStream(stream) }
        guard ["module-null-sink", "module-remap-sink"].contains(module.name),
              let sink = Self.argument("sink_name", in: module.argument) else { return }
        sinkList.removeAll { $0 == sink }
        for stream in streamList where stream.sinkName == sink {
            if let owner = stream.ownerModule {
                removeModule(owner)
            } else if let i = streamList.firstIndex(where: { $0.index == stream.index }) {
                streamList[i].sinkName = defaultSinkName ?? ""
                for subscriber in subscribers { subscriber.queue(.changed(stream.index)) }
            }
        }
    }

    private func removeStream(_ index: UInt32) {
        guard let at = streamList.firstIndex(where: { $0.index == index }) else { return }
        streamList.remove(at: at)
        for subscriber in subscribers { subscriber.queue(.vanished(index)) }
    }

    private static func argument(_ key: String, in argument: String) -> String? {
        argument.split(separator: " ").first { $0.hasPrefix("\(key)=") }.map { String($0.dropFirst(key.count + 1)) }
    }

    private static let gone = ReelError(.sourceUnavailable, "the connection to PulseAudio was lost (Connection terminated)")

    /// Connects, unless the server is stopped.
    package func connect(server: String?, clientName: String) throws(ReelError) -> any PulseAudioRoutingConnection {
        guard isRunning else { throw ReelError(.sourceUnavailable, "PulseAudio is not running (connection refused)") }
        return Connection(server: self, generation: locked { generation })
    }

    fileprivate func checkRunning(_ connected: Int) throws(ReelError) {
        guard locked({ running && generation == connected }) else { throw Self.gone }
    }

    /// One connection to the scripted server.
    private final class Connection: PulseAudioRoutingConnection, @unchecked Sendable {
        let server: ScriptedPulseAudioRouting
        /// The server's generation when this connected.
        let generation: Int
        private var events: [StreamEvent] = []  // guarded by server.lock

        init(server: ScriptedPulseAudioRouting, generation: Int) {
            self.server = server
            self.generation = generation
        }

        private func checkRunning() throws(ReelError) { try server.checkRunning(generation) }

        var serverName: String? { server.name }

        func queue(_ event: StreamEvent) { events.append(event) }

        func serverProduct() throws(ReelError) -> String {
            try checkRunning()
            return server.product
        }

        func defaultSink() throws(ReelError) -> String? {
            try checkRunning()
            return server.locked { server.defaultSinkName }
        }

        func sinkNames() throws(ReelError) -> [String] {
            try checkRunning()
            return server.sinks
        }

        func playingStreams() throws(ReelError) -> [PlayingStream] {
            try checkRunning()
            return server.streams
        }

        func playingStream(_ index: UInt32) throws(ReelError) -> PlayingStream? {
            try checkRunning()
            return server.streams.first { $0.index == index }
        }

        func modules() throws(ReelError) -> [LoadedModule] {
            try checkRunning()
            return server.listModules()
        }

        func loadModule(_ name: String, argument: String) throws(ReelError) -> UInt32 {
            try checkRunning()
            return try server.locked { () throws(ReelError) -> UInt32 in
                guard !server.refusing else {
                    throw ReelError(.sourceUnavailable, "PulseAudio refused to load \(name) \(argument): Access denied")
                }
                let index = server.nextModule
                switch name {
                case "module-null-sink", "module-remap-sink":
                    guard let sink = ScriptedPulseAudioRouting.argument("sink_name", in: argument),
                          !server.sinkList.contains(sink),
                          name == "module-null-sink"
                            || ScriptedPulseAudioRouting.argument("master", in: argument).map(server.sinkList.contains) == true else {
                        throw ReelError(.sourceUnavailable, "PulseAudio refused to load \(name) \(argument): Module initialization failed")
                    }
                    server.sinkList.append(sink)
                    if let master = ScriptedPulseAudioRouting.argument("master", in: argument) {
                        server.addModuleStream(of: index, on: master)
                    }
                case "module-loopback":
                    guard let sink = ScriptedPulseAudioRouting.argument("sink", in: argument), server.sinkList.contains(sink),
                          let source = ScriptedPulseAudioRouting.argument("source", in: argument),
                          server.sinkList.contains(String(source.dropLast(".monitor".count))) else {
                        throw ReelError(.sourceUnavailable, "PulseAudio refused to load \(name) \(argument): Module initialization failed")
                    }
                    server.addModuleStream(of: index, on: sink)
                default:
                    break
                }
                server.nextModule += 1
                server.changes += 1
                server.moduleList.append(LoadedModule(index: index, name: name, argument: argument))
                return index
            }
        }

        func unloadModule(_ index: UInt32) throws(ReelError) {
            try checkRunning()
            try server.locked { () throws(ReelError) in
                guard let module = server.moduleList.first(where: { $0.index == index }) else {
                    throw ReelError(.sourceUnavailable, "PulseAudio refused to unload module \(index): No such entity")
                }
                server.removeModule(index)
                if server.lingeringAsks > 0 { server.lingering.append((module, server.lingeringAsks)) }
            }
        }

        func moveStream(_ index: UInt32, toSink sink: String) throws(ReelError) {
            try checkRunning()
            try server.locked { () throws(ReelError) in
                guard let at = server.streamList.firstIndex(where: { $0.index == index }) else {
                    throw ReelError(.sourceUnavailable, "PulseAudio refused to move stream \(index) to '\(sink)': No such entity")
                }
                guard !server.unmovable.contains(index), server.sinkList.contains(sink),
                      server.streamList[at].ownerModule.flatMap({ module in server.moduleList.first { $0.index == module } })?.name != "module-loopback" else {
                    throw ReelError(.sourceUnavailable, "PulseAudio refused to move stream \(index) to '\(sink)': Not supported")
                }
                server.streamList[at].sinkName = sink
                server.changes += 1
                // A recording of that stream alone ends with the move.
                server.recordingList.removeAll { $0.onlyOf == index }
                for subscriber in server.subscribers { subscriber.queue(.changed(index)) }
            }
        }

        func recordingStreams() throws(ReelError) -> [RecordingStream] {
            try checkRunning()
            return server.recordings
        }

        func suspendSink(_ sink: String, _ suspended: Bool) throws(ReelError) {
            try checkRunning()
            try server.locked { () throws(ReelError) in
                guard server.sinkList.contains(sink) else {
                    throw ReelError(.sourceUnavailable, "PulseAudio refused to suspend '\(sink)': No such entity")
                }
                if suspended { server.suspended.insert(sink) } else { server.suspended.remove(sink) }
            }
        }

        func subscribeToStreams() throws(ReelError) {
            try checkRunning()
            server.locked { server.subscribers.append(self) }
        }

        func nextEvents(timeoutMicroseconds: Int32) throws(ReelError) -> [StreamEvent] {
            try checkRunning()
            let taken = server.locked { () -> [StreamEvent] in defer { events.removeAll() }; return events }
            if taken.isEmpty { usleep(UInt32(max(0, min(timeoutMicroseconds, 5_000)))) }
            return taken
        }
    }
}

/// Several scripted servers, reached by their server strings; `nil` reaches the one the
/// environment names (as libpulse does with `PULSE_SERVER`).
package struct ScriptedPulseAudioServers: PulseAudioRoutingServer {
    let servers: [ScriptedPulseAudioRouting]
    let usual: ScriptedPulseAudioRouting

    /// `servers`, of which `usual` is reached with no server string.
    package init(_ servers: [ScriptedPulseAudioRouting], usual: ScriptedPulseAudioRouting) {
        self.servers = servers
        self.usual = usual
    }

    /// Connects to the server named `server`; an unknown name is refused as libpulse refuses.
    package func connect(server: String?, clientName: String) throws(ReelError) -> any PulseAudioRoutingConnection {
        guard let server else { return try usual.connect(server: nil, clientName: clientName) }
        guard let found = servers.first(where: { $0.name == server }) else {
            throw ReelError(.sourceUnavailable, "PulseAudio is not running at \(server) (connection refused)")
        }
        return try found.connect(server: server, clientName: clientName)
    }
}
