import ReelCore
internal import CPulse

/// What a PulseAudio (or PipeWire-Pulse) server says about itself: its name and version, and
/// the default source and sink recordings use when no device is named.
public struct AudioServerInfo: Sendable, Hashable {
    /// The server's name: `pulseaudio`, or `PulseAudio (on PipeWire 0.3.65)`.
    public var name: String
    /// The server's version.
    public var version: String
    /// The default source (what `--mic` records), if the server has one.
    public var defaultSource: String?
    /// The default sink (whose monitor `--app-audio` records), if the server has one.
    public var defaultSink: String?

    /// Describes a server.
    public init(name: String, version: String, defaultSource: String?, defaultSink: String?) {
        self.name = name
        self.version = version
        self.defaultSource = defaultSource
        self.defaultSink = defaultSink
    }
}

extension PulseAudioDevices {
    /// Connects to the server and asks for its name, version and defaults.
    ///
    /// - Parameter server: a PulseAudio server string; `nil` uses `PULSE_SERVER` or the usual
    ///   default.
    /// - Throws: ``ReelError`` `.sourceUnavailable` when no server answers within about 5
    ///   seconds, `.permissionDenied` when it refuses this user.
    public static func serverInfo(server: String? = nil) throws -> AudioServerInfo {
        let connection = try PulseConnection(server: server, clientName: "Reel doctor")
        let box = ServerInfoBox()
        try withExtendedLifetime(box) { () throws(ReelError) in
            let op = pa_context_get_server_info(connection.context, { _, info, userdata in
                guard let userdata else { return }
                let box = Unmanaged<ServerInfoBox>.fromOpaque(userdata).takeUnretainedValue()
                if let info {
                    let i = info.pointee
                    box.info = AudioServerInfo(name: i.server_name.map { String(cString: $0) } ?? "",
                                               version: i.server_version.map { String(cString: $0) } ?? "",
                                               defaultSource: i.default_source_name.map { String(cString: $0) },
                                               defaultSink: i.default_sink_name.map { String(cString: $0) })
                }
                box.done = true
            }, Unmanaged.passUnretained(box).toOpaque())
            try connection.run([op], what: "asking the server about itself") { box.done }
        }
        guard let info = box.info else { throw connection.connectionError() }
        return info
    }
}

/// What the server-info callback of ``PulseAudioDevices/serverInfo(server:)`` found. Touched
/// only on the thread that iterates the main loop.
private final class ServerInfoBox {
    var info: AudioServerInfo?
    var done = false
}
