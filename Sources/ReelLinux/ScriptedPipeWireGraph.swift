import Foundation
import ReelCore

/// A ``PipeWireGraph`` that keeps a small model of a PipeWire graph — nodes, ports, links —
/// which a test changes as a script goes (an application starts or ends a stream, a sink is
/// made, the daemon restarts), so that what ``ApplicationAudioLinker`` links is checked on exact
/// event sequences without a daemon.
///
/// It behaves as PipeWire does where linking depends on it: a link joins an output port to an
/// input port that both exist, and goes when either goes or when the connection that made it
/// closes; every connection hears of nodes and ports as they come and go (and of all there are
/// when it connects); a restart loses every connection and everything they made.
package final class ScriptedPipeWireGraph: PipeWireGraph, @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`.
    private var nodeList: [PipeWireNode] = []
    private var portList: [PipeWirePort] = []
    private var linkList: [(handle: UInt32, output: UInt32, input: UInt32, owner: ObjectIdentifier)] = []
    private var nextID: UInt32 = 30
    private var nextHandle: UInt32 = 1
    /// The connections open now (held weakly: one closes when its last user lets go of it).
    private var open: [WeakConnection] = []
    private struct WeakConnection { weak var connection: Connection? }
    private var connections: [Connection] { open.compactMap(\.connection) }
    private var running = true
    private var refusedLinks = false

    package init() {}

    private func locked<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock.lock(); defer { lock.unlock() }
        return try body()
    }

    /// Whether the daemon runs; a stopped one refuses connections, and loses those it had.
    package var isRunning: Bool {
        get { locked { running } }
        set {
            locked {
                running = newValue
                if !newValue { dropConnections() }
            }
        }
    }

    /// Whether links are refused (after they are asked for, as a daemon does).
    package var refusesLinks: Bool {
        get { locked { refusedLinks } }
        set { locked { refusedLinks = newValue } }
    }

    /// The nodes now.
    package var nodes: [PipeWireNode] { locked { nodeList } }

    /// The links now, as (output port, input port).
    package var links: [(output: UInt32, input: UInt32)] { locked { linkList.map { ($0.output, $0.input) } } }

    /// The nodes whose output reaches the node `sink` through a link: what a recording of that
    /// sink hears.
    package func nodes(linkedTo sink: UInt32) -> Set<UInt32> {
        locked {
            let inputs = Set(portList.filter { $0.node == sink && !$0.isOutput }.map(\.id))
            let outputs = linkList.filter { inputs.contains($0.input) }.map(\.output)
            return Set(portList.filter { outputs.contains($0.id) }.map(\.node))
        }
    }

    /// An application starts playing with `channels` ("FL", "FR"; "MONO"): its output node and
    /// ports appear. Returns the node's id.
    @discardableResult
    package func play(_ application: String, binary: String = "", pid: Int32? = nil, channels: [String] = ["FL", "FR"]) -> UInt32 {
        locked {
            let node = PipeWireNode(id: take(), mediaClass: "Stream/Output/Audio", name: application, applicationName: application,
                                    binary: binary, processID: pid)
            add(node, ports: channels.map { PipeWirePort(id: 0, node: node.id, isOutput: true, channel: $0) })
            return node.id
        }
    }

    /// A sink named `name` with `channels` appears (a recording made it). Returns its id.
    @discardableResult
    package func addSink(_ name: String, channels: [String] = ["FL", "FR"], mediaClass: String = "Audio/Sink/Internal") -> UInt32 {
        locked {
            let node = PipeWireNode(id: take(), mediaClass: mediaClass, name: name)
            add(node, ports: channels.map { PipeWirePort(id: 0, node: node.id, isOutput: false, channel: $0) }
                + channels.map { PipeWirePort(id: 0, node: node.id, isOutput: true, isMonitor: true, channel: $0) })
            return node.id
        }
    }

    /// A node goes (the application stopped playing, the sink's recording ended), with its
    /// ports and their links.
    package func remove(_ node: UInt32) {
        locked {
            let gone = portList.filter { $0.node == node }
            for port in gone { removePort(port.id) }
            nodeList.removeAll { $0.id == node }
            for connection in connections { connection.queue(.nodeRemoved(node)) }
        }
    }

    /// The daemon restarts: every connection is lost, and every node and link is gone (the
    /// applications connect again on their own).
    package func restart() {
        locked {
            dropConnections()
            nodeList = []
            portList = []
            linkList = []
        }
    }

    // Under `lock`.
    private func take() -> UInt32 {
        defer { nextID += 1 }
        return nextID
    }

    private func add(_ node: PipeWireNode, ports: [PipeWirePort]) {
        nodeList.append(node)
        for connection in connections { connection.queue(.nodeAdded(node)) }
        for var port in ports {
            port.id = take()
            portList.append(port)
            for connection in connections { connection.queue(.portAdded(port)) }
        }
    }

    private func removePort(_ id: UInt32) {
        linkList.removeAll { $0.output == id || $0.input == id }
        portList.removeAll { $0.id == id }
        for connection in connections { connection.queue(.portRemoved(id)) }
    }

    private func dropConnections() {
        for connection in connections { connection.lost = true }
        let owners = Set(connections.map(ObjectIdentifier.init))
        linkList.removeAll { owners.contains($0.owner) }
        open = []
    }

    package func connect(remote: String?) throws(ReelError) -> any PipeWireGraphConnection {
        try locked { () throws(ReelError) -> Connection in
            guard running else { throw ReelError(.sourceUnavailable, "cannot connect to PipeWire: Connection refused") }
            let connection = Connection(graph: self)
            connection.queued = nodeList.map { .nodeAdded($0) } + portList.map { .portAdded($0) }
            open.append(WeakConnection(connection: connection))
            return connection
        }
    }

    /// One connection to the scripted graph.
    private final class Connection: PipeWireGraphConnection, @unchecked Sendable {
        let graph: ScriptedPipeWireGraph
        // Guarded by graph.lock.
        var queued: [PipeWireGraphEvent] = []
        var lost = false

        init(graph: ScriptedPipeWireGraph) { self.graph = graph }

        deinit {
            let me = ObjectIdentifier(self)
            graph.locked {
                graph.linkList.removeAll { $0.owner == me }
                graph.open.removeAll { $0.connection == nil || $0.connection === self }
            }
        }

        func queue(_ event: PipeWireGraphEvent) { queued.append(event) }

        func nextEvents(timeoutMicroseconds: Int32) throws(ReelError) -> [PipeWireGraphEvent] {
            let (events, gone) = graph.locked { () -> ([PipeWireGraphEvent], Bool) in
                defer { queued = [] }
                return (queued, lost)
            }
            if gone && events.isEmpty { throw ReelError(.sourceUnavailable, "the PipeWire connection failed: Broken pipe") }
            if events.isEmpty { usleep(UInt32(max(0, min(timeoutMicroseconds, 5_000)))) }
            return events
        }

        func link(_ output: PipeWirePort, to input: PipeWirePort) throws(ReelError) -> UInt32 {
            try graph.locked { () throws(ReelError) -> UInt32 in
                guard !lost else { throw ReelError(.sourceUnavailable, "the PipeWire connection failed: Broken pipe") }
                let handle = graph.nextHandle
                graph.nextHandle += 1
                let ports = Set(graph.portList.map(\.id))
                if graph.refusedLinks || !ports.contains(output.id) || !ports.contains(input.id) {
                    queued.append(.linkFailed(handle, "no such port, or not allowed"))
                } else {
                    graph.linkList.append((handle, output.id, input.id, ObjectIdentifier(self)))
                }
                return handle
            }
        }

        func unlink(_ handle: UInt32) {
            graph.locked { graph.linkList.removeAll { $0.handle == handle } }
        }
    }
}
