import ReelCore

/// A node of the PipeWire graph: an application's output stream (`Stream/Output/Audio`), a sink
/// (`Audio/Sink…`), anything else.
package struct PipeWireNode: Sendable, Equatable {
    /// Its global id.
    package var id: UInt32
    /// `media.class`.
    package var mediaClass: String
    /// `node.name`.
    package var name: String
    /// `application.name`, or "".
    package var applicationName: String
    /// `application.process.binary`, or "".
    package var binary: String
    /// `application.process.id`, or `nil`.
    package var processID: Int32?

    package init(id: UInt32, mediaClass: String, name: String, applicationName: String = "", binary: String = "",
                 processID: Int32? = nil) {
        self.id = id
        self.mediaClass = mediaClass
        self.name = name
        self.applicationName = applicationName
        self.binary = binary
        self.processID = processID
    }

    /// Whether it is an application's sound going out (what application audio records).
    package var isApplicationOutput: Bool { mediaClass == "Stream/Output/Audio" }

    /// Whether `name` names its application (see ``PlayingStream/isPlayed(by:)``).
    package func isPlayed(by name: String) -> Bool {
        PlayingStream.names(name, applicationName: applicationName, binary: binary, processID: processID)
    }

    /// The application's name, program or process id, whichever is known first.
    package var label: String {
        if !applicationName.isEmpty { return applicationName }
        if !binary.isEmpty { return binary }
        return processID.map { "process \($0)" } ?? "node \(id)"
    }
}

/// A port of a node.
package struct PipeWirePort: Sendable, Equatable {
    /// Its global id.
    package var id: UInt32
    /// Its node's id.
    package var node: UInt32
    /// Whether sound goes out of it.
    package var isOutput: Bool
    /// Whether it is a sink's monitor port.
    package var isMonitor: Bool
    /// `audio.channel`: "FL", "FR", "MONO", … or "".
    package var channel: String

    package init(id: UInt32, node: UInt32, isOutput: Bool, isMonitor: Bool = false, channel: String) {
        self.id = id
        self.node = node
        self.isOutput = isOutput
        self.isMonitor = isMonitor
        self.channel = channel
    }
}

/// What happened in the graph.
package enum PipeWireGraphEvent: Sendable, Equatable {
    case nodeAdded(PipeWireNode)
    case nodeRemoved(UInt32)
    case portAdded(PipeWirePort)
    case portRemoved(UInt32)
    /// A link this connection asked for was refused (its handle, and why).
    case linkFailed(UInt32, String)
}

/// What application audio on a PipeWire server asks of it, behind a seam like
/// ``PulseAudioRoutingServer``: ``SystemPipeWireGraph`` through libpipewire, a scripted graph in
/// tests.
package protocol PipeWireGraph: Sendable {
    /// Connects to the daemon `remote` (a socket name or path; `nil`: the usual one). The first
    /// ``PipeWireGraphConnection/nextEvents(timeoutMicroseconds:)`` brings the graph as it is.
    ///
    /// - Throws: `.sourceUnavailable` when no PipeWire answers there.
    func connect(remote: String?) throws(ReelError) -> any PipeWireGraphConnection
}

/// One connection to the graph; what it links goes when it closes. Used by one thread at a time.
package protocol PipeWireGraphConnection: AnyObject {
    /// Waits at most `timeoutMicroseconds` and returns what happened meanwhile.
    ///
    /// - Throws: when the connection is lost (the daemon went away).
    func nextEvents(timeoutMicroseconds: Int32) throws(ReelError) -> [PipeWireGraphEvent]
    /// Links `output` to `input`; returns a handle for ``unlink(_:)``. A refusal may come later,
    /// as ``PipeWireGraphEvent/linkFailed(_:_:)``.
    func link(_ output: PipeWirePort, to input: PipeWirePort) throws(ReelError) -> UInt32
    /// Removes a link made here.
    func unlink(_ handle: UInt32)
}
