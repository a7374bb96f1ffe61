import Foundation
import ReelCore

/// Which way application audio is recorded on the audio server this machine has: linked on
/// PipeWire when the PulseAudio server is PipeWire's (pipewire-pulse) and PipeWire itself can be
/// reached (``ApplicationAudioLinker``), else routed through PulseAudio modules
/// (`ApplicationAudioRouter`).
package enum ApplicationAudioMethod {
    /// Linking on the PipeWire daemon `remote` (`nil`: the usual one), through `connection`,
    /// with the graph as `first` announced it.
    case linking(remote: String?, connection: any PipeWireGraphConnection, first: [PipeWireGraphEvent])
    /// Routing through PulseAudio modules, for `reason`.
    case routing(reason: String)

    /// Finds the way on `server`: asks the PulseAudio server what it is and, when it is
    /// PipeWire's, connects to that PipeWire daemon and checks that it is the same one (its
    /// sinks are the server's). When it is PipeWire's but cannot be reached, or is not the same,
    /// `notices` is told why the routing serves instead.
    ///
    /// - Throws: when the PulseAudio server cannot be reached (nothing can record then).
    package static func find(server: String?, routing: any PulseAudioRoutingServer, graph: any PipeWireGraph,
                             environment: [String: String], notices: (String) -> Void) throws(ReelError) -> ApplicationAudioMethod {
        let pulse = try routing.connect(server: server, clientName: "Reel application audio")
        let product = try pulse.serverProduct()
        guard product.contains("PipeWire") else { return .routing(reason: "the audio server is \(product)") }
        let remote = remote(pulseServer: pulse.serverName ?? server, environment: environment)
        let place = remote.map { " at \($0)" } ?? ""
        do {
            let connection = try graph.connect(remote: remote)
            let first = try connection.nextEvents(timeoutMicroseconds: 0)
            let sinks = Set(first.compactMap { event -> String? in
                if case .nodeAdded(let node) = event, node.mediaClass.hasPrefix("Audio/Sink") { return node.name }
                return nil
            })
            let pulseSinks = try pulse.sinkNames()
            guard pulseSinks.isEmpty || !sinks.isDisjoint(with: pulseSinks) else {
                let reason = "the PipeWire daemon\(place) is not the one behind the audio server (none of its sinks is)"
                notices("\(reason): recording application audio through PulseAudio modules instead")
                return .routing(reason: reason)
            }
            return .linking(remote: remote, connection: connection, first: first)
        } catch {
            let reason = "the audio server is \(product), but PipeWire\(place) cannot be reached directly (\(error.message))"
            notices("\(reason): recording application audio through PulseAudio modules instead")
            return .routing(reason: reason)
        }
    }

    /// The PipeWire daemon behind a PulseAudio server string: `PIPEWIRE_REMOTE` when set; else,
    /// for pipewire-pulse's socket `<dir>/pulse/native`, `<dir>/pipewire-0` when it is there;
    /// else `nil` (PipeWire's usual one, in `XDG_RUNTIME_DIR`).
    package static func remote(pulseServer: String?, environment: [String: String]) -> String? {
        if let remote = environment["PIPEWIRE_REMOTE"], !remote.isEmpty { return remote }
        guard var path = pulseServer ?? environment["PULSE_SERVER"] else { return nil }
        if path.hasPrefix("unix:") { path.removeFirst("unix:".count) }
        guard path.hasPrefix("/"), path.hasSuffix("/pulse/native") else { return nil }
        let beside = URL(fileURLWithPath: path).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("pipewire-0").path
        return FileManager.default.fileExists(atPath: beside) ? beside : nil
    }
}
