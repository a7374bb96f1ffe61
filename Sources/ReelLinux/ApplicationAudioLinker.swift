import ReelCore

/// Links the output of chosen applications to a sink that is recorded: how application audio is
/// recorded on a PipeWire server, as OBS's application capture does it.
///
/// The recording makes a sink of its own, `reel-app-<pid>` (an internal null sink: PulseAudio
/// clients do not see it), and reads its monitor (``PipeWireSinkCapture``). This follows the
/// graph: each chosen application's output node (`Stream/Output/Audio`, by `application.name`,
/// `application.process.binary` or `application.process.id`) gets its output ports linked to
/// the sink's input ports, channel by channel (a mono output to every channel, other channels by
/// their side). Nothing is moved: the application plays on where it plays, with nothing lost
/// at the start, and any number of recordings can link the same application. The links belong
/// to this connection: when the recording ends, crashes or is killed, they go with it, and
/// nothing is left to restore. A node that appears later is linked as it appears; the sink
/// made anew (after the daemon restarted) is linked to again as it appears.
package final class ApplicationAudioLinker {
    private var connection: any PipeWireGraphConnection
    private let choice: ApplicationChoice
    private let report: (ApplicationAudioReport) -> Void
    /// The recorded sink's `node.name`.
    package let sinkName: String

    private var nodes: [UInt32: PipeWireNode] = [:]
    private var ports: [UInt32: PipeWirePort] = [:]
    /// The links made, by the output port and the sink's input port they join.
    private var links: [Pair: UInt32] = [:]
    /// The applications asked for that played nothing yet (said silent at the start).
    private var waitingFor: Set<ApplicationChoice.Part> = []
    /// Whether the first look at the graph was taken.
    private var looked = false

    private struct Pair: Hashable {
        var output: UInt32
        var input: UInt32
    }

    /// A linker of the applications `names` (or, when `excluding`, of every application but
    /// them) into the sink `sinkName`, on `connection`.
    package convenience init(names: [String], excluding: Bool, sinkName: String, connection: any PipeWireGraphConnection,
                             report: @escaping (ApplicationAudioReport) -> Void) {
        self.init(choice: ApplicationChoice(names: names, excluding: excluding), sinkName: sinkName, connection: connection, report: report)
    }

    /// A linker of the applications `choice` takes into the sink `sinkName`, on `connection`.
    package init(choice: ApplicationChoice, sinkName: String, connection: any PipeWireGraphConnection,
                 report: @escaping (ApplicationAudioReport) -> Void) {
        self.choice = choice
        self.sinkName = sinkName
        self.connection = connection
        self.report = report
    }

    /// The links this linker holds now, as (output port, sink input port).
    package var linked: [(output: UInt32, input: UInt32)] { links.keys.map { ($0.output, $0.input) } }

    /// Whether `node` is to be recorded.
    private func chosen(_ node: PipeWireNode) -> Bool {
        node.isApplicationOutput && choice.takes(applicationName: node.applicationName, binary: node.binary, processID: node.processID)
    }

    /// Starts again on a daemon that restarted: what was known and linked went with the old
    /// connection.
    package func restart(on connection: any PipeWireGraphConnection) {
        self.connection = connection
        nodes = [:]
        ports = [:]
        links = [:]
    }

    /// Takes in what happened in the graph and links what is to be linked. The first call (with
    /// the graph as it was at the start) says which named applications are not playing.
    package func handle(_ events: [PipeWireGraphEvent]) throws(ReelError) {
        var failed: [(UInt32, String)] = []
        for event in events {
            switch event {
            case .nodeAdded(let node):
                nodes[node.id] = node
            case .nodeRemoved(let id):
                nodes[id] = nil
                for (pair, _) in links where ports[pair.output]?.node == id || ports[pair.input]?.node == id { links[pair] = nil }
                ports = ports.filter { $0.value.node != id }
            case .portAdded(let port):
                ports[port.id] = port
            case .portRemoved(let id):
                ports[id] = nil
                for (pair, _) in links where pair.output == id || pair.input == id { links[pair] = nil }
            case .linkFailed(let handle, let why):
                failed.append((handle, why))
            }
        }
        if !looked {
            looked = true
            let waiting = choice.waiting(among: nodes.values.filter(\.isApplicationOutput).map { ($0.applicationName, $0.binary, $0.processID) })
            waitingFor = Set(waiting)
            for part in waiting { report(.silent(part.notPlaying)) }
        } else if !waitingFor.isEmpty {
            let playing = nodes.values.filter(chosen)
            let started = choice.parts.filter { part in
                waitingFor.contains(part) && playing.contains { part.matches(applicationName: $0.applicationName, binary: $0.binary, processID: $0.processID) }
            }
            if !started.isEmpty {
                waitingFor.subtract(started)
                for part in started { report(.note(part.startedPlaying)) }
                report(.playing)
                for still in choice.parts where waitingFor.contains(still) { report(.silent(still.notPlaying)) }
            }
        }
        for (handle, why) in failed {
            guard let pair = links.first(where: { $0.value == handle })?.key else { continue }
            links[pair] = nil
            let label = ports[pair.output].flatMap { nodes[$0.node] }?.label ?? "an application"
            report(.incomplete("the sound of '\(label)' cannot be linked to reel's sink: \(why)"))
        }
        try linkWhatIsChosen()
    }

    /// The sink's input ports, once it is there.
    private var sinkInputs: [PipeWirePort] {
        guard let sink = nodes.values.first(where: { $0.name == sinkName && $0.mediaClass.hasPrefix("Audio/Sink") }) else { return [] }
        return ports.values.filter { $0.node == sink.id && !$0.isOutput }.sorted { $0.id < $1.id }
    }

    private func linkWhatIsChosen() throws(ReelError) {
        let inputs = sinkInputs
        guard !inputs.isEmpty else { return }
        for node in nodes.values where chosen(node) {
            for output in ports.values where output.node == node.id && output.isOutput && !output.isMonitor {
                for input in Self.inputs(for: output.channel, among: inputs) where links[Pair(output: output.id, input: input.id)] == nil {
                    do {
                        links[Pair(output: output.id, input: input.id)] = try connection.link(output, to: input)
                    } catch {
                        report(.incomplete("the sound of '\(node.label)' cannot be linked to reel's sink: \(error.message)"))
                    }
                }
            }
        }
    }

    /// The sink's inputs an output of channel `channel` goes to: the same channel; a mono (or
    /// unnamed) output, or a sink of one channel, to all; a left or right one to the sink's
    /// channel of that side; a centre one to all.
    static func inputs(for channel: String, among inputs: [PipeWirePort]) -> [PipeWirePort] {
        if let same = inputs.first(where: { $0.channel == channel }) { return [same] }
        if inputs.count == 1 || channel.isEmpty || channel == "MONO" { return inputs }
        let side: Character? = channel.hasSuffix("L") || channel.hasSuffix("LC") ? "L" : channel.hasSuffix("R") || channel.hasSuffix("RC") ? "R" : nil
        if let side, let match = inputs.first(where: { $0.channel.last == side }) { return [match] }
        return channel == "LFE" ? [] : inputs
    }
}
