import ReelCore

/// What a ``PulseAudioSource`` asks of the audio server, behind a seam like ``V4L2Driver``:
/// ``SystemPulseAudioServer`` talks to PulseAudio (or PipeWire-Pulse) through libpulse,
/// ``ScriptedPulseAudioServer`` answers from a script, so the source's timing, drift correction
/// and reconnection are tested without a server.
package protocol PulseAudioServer: Sendable {
    /// Connects once and checks that the device of `request` exists and can deliver its format.
    ///
    /// - Throws: `.sourceUnavailable` (no server, no such device), `.unsupportedFormat`,
    ///   `.permissionDenied`, `.invalidConfiguration` (a bad server string).
    func checkDevice(_ request: PulseRecordRequest) throws(ReelError)

    /// Connects, checks the device and opens a record stream on it.
    ///
    /// - Parameter isCancelled: polled while waiting for the server; when it returns true the
    ///   opening gives up with `.notRunning`.
    func openRecording(_ request: PulseRecordRequest, isCancelled: @escaping () -> Bool) throws(ReelError) -> any PulseAudioRecording
}

/// One open record stream. Used by one thread at a time; the stream and its connection close
/// when the last reference goes.
package protocol PulseAudioRecording: AnyObject {
    /// Waits at most `timeoutMicroseconds` for something to happen on the connection.
    ///
    /// - Throws: when the connection or the stream has failed (the server went away).
    func pump(timeoutMicroseconds: Int32) throws(ReelError)

    /// Appends every byte that has arrived to `buffer` (holes in the stream as silence) and
    /// returns how many were added.
    func read(appendingTo buffer: inout [UInt8]) throws(ReelError) -> Int

    /// How long ago the newest sample that has arrived was captured (zero until known).
    var latency: MediaTime { get }

    /// Whether the device is the monitor of a sink: it delivers what the sink renders, and the
    /// sink renders ahead of time by the lowest latency its clients ask for.
    var isMonitor: Bool { get }

    /// Takes the losses the recording noted since the last call, oldest first: sound it knows
    /// it lost before it was read, where ``read(appendingTo:)`` delivers silence instead.
    func takeLosses() -> [RecordedLoss]

    /// Whether the recording says all it loses (``takeLosses()``): what it could not hold
    /// while it was not read is among them, so a gap the count shows after a stall of the
    /// reader is no sound the server dropped.
    var saysItsLosses: Bool { get }

    /// Whether the device was muted (its mute switch on) when the recording opened: it
    /// delivers silence, every sample zero.
    var isMuted: Bool { get }
}

extension PulseAudioRecording {
    /// None: the server says nothing of what it dropped (the source finds it from the clock).
    package func takeLosses() -> [RecordedLoss] { [] }
    /// No: PulseAudio's own stream does not.
    package var saysItsLosses: Bool { false }
    /// Not known: not muted.
    package var isMuted: Bool { false }
}

/// Sound a recording lost before it was read: `frames` frames from frame `start`, counted since
/// the recording opened as ``PulseAudioRecording/read(appendingTo:)`` delivers them.
package struct RecordedLoss: Sendable, Equatable {
    /// Why it was lost.
    package enum Kind: Sendable, Equatable {
        /// The audio graph ran cycles without the capture (its thread came too late on a busy
        /// machine, a few milliseconds at a time): like dropped frames, counted and said, and
        /// the recording is still complete (``SourceEvent/missedAudio(at:duration:)``).
        case missedCycles
        /// What arrived did not fit what the capture holds, because nothing read it for longer
        /// (or the process was stopped for longer than the capture holds, about 4 s): the
        /// recording misses it (``SourceEvent/droppedAudio(at:duration:)``).
        case overflow
    }

    package var start: Int64
    package var frames: Int64
    package var kind: Kind

    package init(start: Int64, frames: Int64, kind: Kind) {
        self.start = start
        self.frames = frames
        self.kind = kind
    }
}

/// What to record: the server, the device and the format.
package struct PulseRecordRequest: Sendable {
    /// The server string, or `nil` for the usual one.
    package var server: String?
    /// The device to record (a source name, `"@DEFAULT_MONITOR@"`), or `nil` for the default
    /// source.
    package var device: String?
    /// The name to look up to check that the device exists.
    package var lookupName: String
    /// What to say when it does not.
    package var missingDevice: String
    /// The format to deliver; the server converts to it.
    package var format: AudioFormat
    /// The length of the server's fragments, in frames.
    package var fragmentFrames: Int
    /// The stream's name as the server shows it.
    package var description: String

    /// Describes a recording.
    package init(server: String?, device: String?, lookupName: String, missingDevice: String, format: AudioFormat,
                 fragmentFrames: Int, description: String) {
        self.server = server
        self.device = device
        self.lookupName = lookupName
        self.missingDevice = missingDevice
        self.format = format
        self.fragmentFrames = fragmentFrames
        self.description = description
    }
}
