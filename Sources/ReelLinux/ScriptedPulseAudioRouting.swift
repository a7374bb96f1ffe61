import Foundation
import ReelCore

/// A ``PulseAudioRoutingServer`` that keeps a small model of a PulseAudio server — sinks,
/// streams, modules — which a test changes as a script goes (an application starts or ends a
/// stream), so that what ``ApplicationAudioRouter`` moves, follows and restores is checked on
/// exact event sequences without a server.
///
/// It behaves as PulseAudio does where routing depends on it: loading `module-null-sink` or
/// `module-remap-sink` (onto an existing `master=`) makes its sink, `module-loopback` plays a module stream (no client) into its `sink=`;
/// unloading a null or remap sink moves the streams still on it to the default sink; a stream opened
/// "dont-move" refuses to move; every connection that subscribed hears of streams that start
/// and end.
package final class ScriptedPulseAudioRouting: PulseAudioRoutingServer, @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`.
    private var sinkList: [String]
    private var defaultSinkName: String?
    private var streamList: [PlayingStream] = []
    private var unmovable: Set<UInt32> = []
    private var moduleList: [LoadedModule] = []
    private var loopbackStreams: [UInt32: UInt32] = [:]
    private var nextStream: UInt32 = 0
    private var nextModule: UInt32 = 100
    private var subscribers: [Connection] = []
    private var running = true
    private var suspended: Set<String> = []
    private var changes = 0

    /// The server string that reaches this server, when a test has several
    /// (``ScriptedPulseAudioServers``).
    package let name: String?

    /// A server with `sinks` (the first is the default), reached as `name`.
    package init(sinks: [String], name: String? = nil) {
        self.name = name
        sinkList = sinks
        defaultSinkName = sinks.first
    }

    private func locked<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock.lock(); defer { lock.unlock() }
        return try body()
    }

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

    /// A stream ends; subscribers hear of it.
    package func end(_ index: UInt32) {
        locked { removeStream(index) }
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
        return Connection(server: self)
    }

    fileprivate func checkRunning() throws(ReelError) {
        guard isRunning else { throw Self.gone }
    }

    /// One connection to the scripted server.
    private final class Connection: PulseAudioRoutingConnection, @unchecked Sendable {
        let server: ScriptedPulseAudioRouting
        private var events: [StreamEvent] = []  // guarded by server.lock

        init(server: ScriptedPulseAudioRouting) { self.server = server }

        var serverName: String? { server.name }

        func queue(_ event: StreamEvent) { events.append(event) }

        func defaultSink() throws(ReelError) -> String? {
            try server.checkRunning()
            return server.locked { server.defaultSinkName }
        }

        func sinkNames() throws(ReelError) -> [String] {
            try server.checkRunning()
            return server.sinks
        }

        func playingStreams() throws(ReelError) -> [PlayingStream] {
            try server.checkRunning()
            return server.streams
        }

        func playingStream(_ index: UInt32) throws(ReelError) -> PlayingStream? {
            try server.checkRunning()
            return server.streams.first { $0.index == index }
        }

        func modules() throws(ReelError) -> [LoadedModule] {
            try server.checkRunning()
            return server.modules
        }

        func loadModule(_ name: String, argument: String) throws(ReelError) -> UInt32 {
            try server.checkRunning()
            return try server.locked { () throws(ReelError) -> UInt32 in
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
                case "module-loopback":
                    guard let sink = ScriptedPulseAudioRouting.argument("sink", in: argument), server.sinkList.contains(sink),
                          let source = ScriptedPulseAudioRouting.argument("source", in: argument),
                          server.sinkList.contains(String(source.dropLast(".monitor".count))) else {
                        throw ReelError(.sourceUnavailable, "PulseAudio refused to load \(name) \(argument): Module initialization failed")
                    }
                    let stream = server.nextStream
                    server.nextStream += 1
                    server.streamList.append(PlayingStream(index: stream, applicationName: "", binary: "", processID: nil,
                                                           sinkName: sink, isModuleStream: true))
                    server.loopbackStreams[index] = stream
                    for subscriber in server.subscribers { subscriber.queue(.appeared(stream)) }
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
            try server.checkRunning()
            try server.locked { () throws(ReelError) in
                guard let at = server.moduleList.firstIndex(where: { $0.index == index }) else {
                    throw ReelError(.sourceUnavailable, "PulseAudio refused to unload module \(index): No such entity")
                }
                let module = server.moduleList.remove(at: at)
                server.changes += 1
                if let stream = server.loopbackStreams.removeValue(forKey: index) { server.removeStream(stream) }
                if ["module-null-sink", "module-remap-sink"].contains(module.name), let sink = ScriptedPulseAudioRouting.argument("sink_name", in: module.argument) {
                    server.sinkList.removeAll { $0 == sink }
                    // As PulseAudio does: what still plays there goes to the default sink.
                    for i in server.streamList.indices where server.streamList[i].sinkName == sink {
                        server.streamList[i].sinkName = server.defaultSinkName ?? ""
                        for subscriber in server.subscribers { subscriber.queue(.changed(server.streamList[i].index)) }
                    }
                }
            }
        }

        func moveStream(_ index: UInt32, toSink sink: String) throws(ReelError) {
            try server.checkRunning()
            try server.locked { () throws(ReelError) in
                guard let at = server.streamList.firstIndex(where: { $0.index == index }) else {
                    throw ReelError(.sourceUnavailable, "PulseAudio refused to move stream \(index) to '\(sink)': No such entity")
                }
                guard !server.unmovable.contains(index), server.sinkList.contains(sink) else {
                    throw ReelError(.sourceUnavailable, "PulseAudio refused to move stream \(index) to '\(sink)': Not supported")
                }
                server.streamList[at].sinkName = sink
                server.changes += 1
                for subscriber in server.subscribers { subscriber.queue(.changed(index)) }
            }
        }

        func suspendSink(_ sink: String, _ suspended: Bool) throws(ReelError) {
            try server.checkRunning()
            try server.locked { () throws(ReelError) in
                guard server.sinkList.contains(sink) else {
                    throw ReelError(.sourceUnavailable, "PulseAudio refused to suspend '\(sink)': No such entity")
                }
                if suspended { server.suspended.insert(sink) } else { server.suspended.remove(sink) }
            }
        }

        func subscribeToStreams() throws(ReelError) {
            try server.checkRunning()
            server.locked { server.subscribers.append(self) }
        }

        func nextEvents(timeoutMicroseconds: Int32) throws(ReelError) -> [StreamEvent] {
            try server.checkRunning()
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
