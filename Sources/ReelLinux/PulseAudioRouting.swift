import ReelCore

/// A stream that an application plays into a PulseAudio sink (a "sink input"), as
/// ``PulseAudioDevices/applications(server:)`` lists them and ``ApplicationAudioSource``
/// chooses among them.
public struct PlayingStream: Sendable, Hashable {
    /// The server's index of the stream (`pactl list short sink-inputs`); valid while it plays.
    public var index: UInt32
    /// The application's name (`application.name`: "Firefox", "paplay"), or "" when it gives none.
    public var applicationName: String
    /// The file name of the application's program (`application.process.binary`), or "".
    public var binary: String
    /// The process that plays it (`application.process.id`), or `nil` when it does not say.
    public var processID: Int32?
    /// The sink it plays into.
    public var sinkName: String
    /// Whether a PulseAudio module plays it (a loopback, a recorder's routing) rather than an
    /// application; such streams are never moved.
    public var isModuleStream: Bool
    /// The module that plays a module stream (a relay's remap sink plays into its master
    /// through one), or `nil`.
    package var ownerModule: UInt32?
    /// Whether the user muted the stream in the mixer (`pactl set-sink-input-mute`,
    /// pavucontrol). The sink applies it as it mixes the stream, before any monitor of it, so
    /// a muted stream reaches a recording as digital silence.
    package var isMuted = false
    /// Whether the stream's volume in the mixer is 0 on every channel, or so low on every
    /// channel (below one step of 16-bit sound: 3 % and less) that its sound reaches a
    /// recording as digital silence: as muted for a recording.
    package var isAtVolumeZero = false
    /// The stream's loudest channel's volume in the mixer, in percent (100: as the
    /// application plays it); `nil` for a stream without a volume of its own.
    package var volumePercent: Int?

    /// The name of sink `index` among `sinks` (the server's sinks by index), as a stream's
    /// ``sinkName``: a sink gone by the time it is asked for (removed while the stream moved)
    /// is said to be gone, never named by its bare index, which means nothing to a reader.
    /// A stream on no sink (`PA_INVALID_INDEX`: PipeWire's for a stream not linked to one) says
    /// so (s6 N13: it was "a sink removed meanwhile (#4294967295)").
    package static func sinkName(index: UInt32, in sinks: [UInt32: String]) -> String {
        if let name = sinks[index], !name.isEmpty { return name }
        if index == UInt32.max { return "no sink (not linked to one)" }
        return "a sink removed meanwhile (#\(index))"
    }

    /// Describes a stream.
    public init(index: UInt32, applicationName: String, binary: String, processID: Int32?, sinkName: String,
                isModuleStream: Bool = false) {
        self.index = index
        self.applicationName = applicationName
        self.binary = binary
        self.processID = processID
        self.sinkName = sinkName
        self.isModuleStream = isModuleStream
    }

    /// Whether `name` names this stream's application: its name or binary (ignoring case), or
    /// its process id.
    public func isPlayed(by name: String) -> Bool {
        Self.names(name, applicationName: applicationName, binary: binary, processID: processID)
    }

    /// Whether `name` names the application `applicationName`, `binary`, `processID`: its name
    /// or program (ignoring case), or its process id. One rule for every way of recording an
    /// application.
    package static func names(_ name: String, applicationName: String, binary: String, processID: Int32?) -> Bool {
        if let pid = Int32(name) { return processID == pid }
        let wanted = name.lowercased()
        return applicationName.lowercased() == wanted || binary.lowercased() == wanted
    }
}

/// A change to the server's streams, as a subscription reports it.
/// A program recording from the server (a source output): what a move of a playing stream can
/// end. PulseAudio ends a recording of one stream (`parec --monitor-stream`, which records the
/// monitor of that stream's sink, of that stream only) when the stream is moved.
package struct RecordingStream: Sendable, Hashable {
    /// Its index on the server.
    package var index: UInt32
    /// The program recording: its application name, else its binary.
    package var label: String
    /// The sink whose monitor it records, if it records a monitor.
    package var monitoredSink: String?

    package init(index: UInt32, label: String, monitoredSink: String?) {
        self.index = index
        self.label = label
        self.monitoredSink = monitoredSink
    }
}

package enum StreamEvent: Sendable, Equatable {
    /// A stream started (it may already be gone when it is looked up).
    case appeared(UInt32)
    /// A stream ended.
    case vanished(UInt32)
    /// A stream changed: moved to another sink, or anything else about it.
    case changed(UInt32)
}

/// A loaded PulseAudio module.
package struct LoadedModule: Sendable, Equatable {
    /// Its index.
    package var index: UInt32
    /// Its name ("module-null-sink").
    package var name: String
    /// Its arguments as given when it was loaded.
    package var argument: String

    package init(index: UInt32, name: String, argument: String) {
        self.index = index
        self.name = name
        self.argument = argument
    }
}

/// What application-audio routing asks of the audio server, behind a seam like
/// ``PulseAudioServer``: ``SystemPulseAudioRouting`` through libpulse, a scripted server in
/// tests (which streams move, new ones, restoring).
package protocol PulseAudioRoutingServer: Sendable {
    /// Connects to `server` (`nil`: the usual one).
    ///
    /// - Throws: the errors the audio sources give when there is no server.
    func connect(server: String?, clientName: String) throws(ReelError) -> any PulseAudioRoutingConnection
}

/// One connection that moves streams and loads modules. Used by one thread at a time.
package protocol PulseAudioRoutingConnection: AnyObject {
    /// The server this connection reached, as a server string that reaches it again from
    /// another environment (a socket path, `tcp:host:port`), or `nil` when it cannot say.
    var serverName: String? { get }
    /// The server's name as it gives it: `pulseaudio`, or `PulseAudio (on PipeWire 0.3.65)`.
    func serverProduct() throws(ReelError) -> String
    /// The server's default sink.
    func defaultSink() throws(ReelError) -> String?
    /// The names of the sinks.
    func sinkNames() throws(ReelError) -> [String]
    /// The streams playing now.
    func playingStreams() throws(ReelError) -> [PlayingStream]
    /// One stream, or `nil` when it is gone.
    func playingStream(_ index: UInt32) throws(ReelError) -> PlayingStream?
    /// The loaded modules.
    func modules() throws(ReelError) -> [LoadedModule]
    /// Loads a module and returns its index.
    func loadModule(_ name: String, argument: String) throws(ReelError) -> UInt32
    /// Unloads a module.
    func unloadModule(_ index: UInt32) throws(ReelError)
    /// Moves a stream to a sink. Throws when the stream refuses (it was opened "dont-move") or
    /// is gone.
    func moveStream(_ index: UInt32, toSink sink: String) throws(ReelError)
    /// The programs recording from the server now (its source outputs).
    func recordingStreams() throws(ReelError) -> [RecordingStream]
    /// Suspends or resumes a sink. A null sink that was suspended while its first clients
    /// attached renders small blocks from the start (one that runs with none renders seconds
    /// ahead, and a monitor of it gets its first sound that late).
    func suspendSink(_ sink: String, _ suspended: Bool) throws(ReelError)
    /// Starts reporting streams that start and end to ``nextEvents(timeoutMicroseconds:)``.
    func subscribeToStreams() throws(ReelError)
    /// Waits at most `timeoutMicroseconds` and returns what happened to the streams meanwhile.
    ///
    /// - Throws: when the connection is lost.
    func nextEvents(timeoutMicroseconds: Int32) throws(ReelError) -> [StreamEvent]
}
