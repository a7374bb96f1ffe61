import Foundation
import ReelCore

/// What a recording of chosen applications tells its source as it goes: for the user to know,
/// or what the recording misses (see ``SourceEvent``).
package enum ApplicationAudioReport: Sendable, Equatable {
    /// Something the user should know (an application starts playing).
    case note(String)
    /// A named application has not played since the recording started (said for each, at the
    /// start, and again for those still waiting whenever another starts).
    case silent(String)
    /// A named application that had not played plays now (the source records again).
    case playing
    /// A chosen application's stream plays and is not recorded.
    case incomplete(String)
    /// Moving a chosen stream ended another program's recording of it (see
    /// ``SourceEvent/endedAnotherRecording(_:)``).
    case endedAnotherRecording(String)
}

/// Routes the streams of chosen applications into a sink that is recorded, so that the user
/// still hears everything, and puts everything back afterwards: how application audio is
/// recorded on a PulseAudio server (on PipeWire, ``ApplicationAudioLinker`` links instead).
///
/// The design: one null sink per recording, `reel-app-<pid>`, whose monitor is recorded (made
/// suspended, and resumed once the recording reads it, so that it renders in the recording's
/// short blocks from the start). For each sink that a chosen stream played into (usually just
/// the default), a relay `reel-app-<pid>-<n>`: a remap sink onto that original sink, so what
/// plays into the relay is heard on the original sink as it renders (no latency added for the
/// listener), and a loopback from the relay's monitor into the recorded sink. A chosen stream
/// is moved to the relay of its sink. Streams that start later are looked at as they appear;
/// streams that end need nothing. A stream that refuses to move (opened "dont-move") is
/// reported and plays on where it was, unrecorded.
///
/// Several recordings of one application: a stream on another recording's relay is taken as
/// any other, onto a relay of this recording whose master is that relay. The sound then plays
/// through both relays, and both record it. When the other recording ends first, it moves this
/// relay on to where its own played (see ``restore(_:on:)``); when this one ends first, the
/// stream goes back to the other's relay. A chosen stream that another recording takes from
/// this one's relay the same way is still recorded here; one moved anywhere else is reported.
///
/// Restoring moves every stream still on one of this recording's sinks back to the sink it
/// came from, then unloads the loopbacks and the sinks. What was changed is written to
/// ``stateFile`` before each change; ``restore(_:on:)`` works from that file and from what the
/// server shows (a module is this recording's when the sink it makes or connects is one of
/// its sinks), so it also works in another process.
package final class ApplicationAudioRouter {
    private var connection: any PulseAudioRoutingConnection
    private let choice: ApplicationChoice
    private let report: (ApplicationAudioReport) -> Void
    /// Where the route is written, or `nil` to keep it in memory only.
    package let stateFile: URL?
    /// What this recording changed so far.
    package private(set) var route: ApplicationAudioRoute
    /// The format the recorded sink is made in (the recording's, so that it is not converted
    /// twice), or `nil` for the server's default.
    private let recordedFormat: AudioFormat?
    /// The relay sink for each original sink.
    private var relays: [String: String] = [:]
    /// The applications asked for that played no stream yet.
    private var waitingFor: Set<ApplicationChoice.Part> = []
    /// The sinks kept at a low latency while recording (``ApplicationAudioSource`` paces
    /// them), or `nil` when nobody paces. A chosen stream that starts on another sink may have
    /// lost its start (see ``unpacedLoss``): that is said.
    package var pacedSinks: Set<String>?

    /// The sink whose monitor carries the chosen applications' sound.
    package var recordedSink: String { route.tag }

    /// The guard process that restores the routing if this process dies (saved with the route).
    package var guardPID: Int32? {
        get { route.guardPID }
        set { route.guardPID = newValue }
    }

    /// A router for the applications `names` (or, when `excluding`, every application but
    /// them) on `connection`.
    ///
    /// `sequence` tells apart the recordings of one process: the first's sinks are
    /// `reel-app-<pid>…`, the second's `reel-app-<pid>.2…`.
    package convenience init(names: [String], excluding: Bool, connection: any PulseAudioRoutingConnection, server: String?,
                             recorderPID: Int32, sequence: Int = 1, format: AudioFormat? = nil, stateFile: URL?,
                             report: @escaping (ApplicationAudioReport) -> Void) {
        self.init(choice: ApplicationChoice(names: names, excluding: excluding), connection: connection, server: server,
                  recorderPID: recorderPID, sequence: sequence, format: format, stateFile: stateFile, report: report)
    }

    /// A router for the applications `choice` takes, on `connection`.
    package init(choice: ApplicationChoice, connection: any PulseAudioRoutingConnection, server: String?,
                 recorderPID: Int32, sequence: Int = 1, format: AudioFormat? = nil, stateFile: URL?,
                 report: @escaping (ApplicationAudioReport) -> Void) {
        self.recordedFormat = format
        self.connection = connection
        self.choice = choice
        self.report = report
        self.stateFile = stateFile
        self.route = ApplicationAudioRoute(server: server, recorderPID: recorderPID,
                                           tag: "reel-app-\(recorderPID)" + (sequence == 1 ? "" : ".\(sequence)"))
    }

    /// Whether `stream` is to be recorded: a chosen application's that is not on one of this
    /// recording's sinks (one on another recording's relay is taken too, through it).
    package func wants(_ stream: PlayingStream) -> Bool {
        !route.owns(sink: stream.sinkName) && chosen(stream)
    }

    /// Whether `stream` is one of the chosen applications', wherever it plays.
    private func chosen(_ stream: PlayingStream) -> Bool {
        !stream.isModuleStream && choice.takes(applicationName: stream.applicationName, binary: stream.binary, processID: stream.processID)
    }

    /// What is said of a named application that has not played.
    static func notPlaying(_ name: String) -> String { ApplicationChoice.Part.name(name).notPlaying }

    /// Makes the recorded sink, suspended until ``startRouting(again:)`` (a null sink that runs
    /// with no reader renders seconds ahead, and its monitor would get its first sound that
    /// late).
    ///
    /// - Throws: when the server refuses to load the sink; what was done is undone first.
    package func setUp() throws(ReelError) {
        try save()
        do {
            let spec = recordedFormat.map { " rate=\($0.sampleRate) channels=\($0.channels)" } ?? ""
            _ = try connection.loadModule("module-null-sink", argument:
                "sink_name=\(route.tag)\(spec) sink_properties=device.description=Reel-application-audio")
            try connection.suspendSink(route.tag, true)
        } catch {
            restore()
            throw error
        }
    }

    /// Resumes the recorded sink (its recording stream is attached by now) and moves the chosen
    /// streams playing now to it. `again`: after the audio server restarted (a named
    /// application not playing then is no news).
    ///
    /// - Throws: when the server refuses; what was done is undone first.
    package func startRouting(again: Bool = false) throws(ReelError) {
        do {
            try connection.suspendSink(route.tag, false)
            let streams = try connection.playingStreams()
            if !again {
                let waiting = choice.waiting(among: streams.filter { !$0.isModuleStream }.map { ($0.applicationName, $0.binary, $0.processID) })
                waitingFor = Set(waiting)
                for part in waiting { report(.silent(part.notPlaying)) }
            }
            for stream in streams where wants(stream) { try take(stream) }
        } catch {
            restore()
            throw error
        }
    }

    /// Starts again on a server that restarted: what this recording had made went with the old
    /// one, so the route is empty; ``setUp()`` and ``startRouting(again:)`` make it anew.
    package func restart(on connection: any PulseAudioRoutingConnection) throws(ReelError) {
        self.connection = connection
        relays = [:]
        route.moved = []
        try save()
    }

    /// Looks at the streams that started or ended.
    package func handle(_ events: [StreamEvent]) throws(ReelError) {
        for event in events {
            switch event {
            case .appeared(let index):
                // A stream taken already (at the start, its news came later) is followed as it changes.
                guard !route.moved.contains(where: { $0.stream == index }),
                      let stream = try connection.playingStream(index), wants(stream) else { continue }
                if let part = waitingFor.first(where: { $0.matches(applicationName: stream.applicationName, binary: stream.binary, processID: stream.processID) }) {
                    waitingFor.remove(part)
                    report(.note(part.startedPlaying))
                    report(.playing)
                    for still in choice.parts where waitingFor.contains(still) { report(.silent(still.notPlaying)) }
                }
                try take(stream)
                sayLostStart(of: stream)
            case .vanished(let index):
                if let at = route.moved.firstIndex(where: { $0.stream == index }) {
                    route.moved.remove(at: at)
                    try save()
                }
            case .changed(let index):
                try follow(index)
            }
        }
    }

    /// How much of a stream's start a sink may render ahead, and keep, when nobody asks it for
    /// a low latency: PulseAudio's null and ALSA sinks render up to 2 s ahead.
    package static let unpacedLoss = 2.0

    /// Says that `stream`, just taken, may have lost its start: it started on a sink that is
    /// not paced (one that appeared during the recording), which may have rendered up to
    /// ``unpacedLoss`` of it ahead; that played there, unrecorded. How much exactly cannot be
    /// told (the sink's latency at the move says what it had rendered only once it renders).
    private func sayLostStart(of stream: PlayingStream) {
        guard let pacedSinks, !pacedSinks.contains(stream.sinkName), Self.tag(ofSink: stream.sinkName) == nil,
              route.moved.contains(where: { $0.stream == stream.index }) else { return }
        report(.incomplete("'\(stream.label)' started playing on '\(stream.sinkName)', a sink that was not there when the recording started "
            + "and that reel does not keep at a low latency: up to \(Self.unpacedLoss.formatted()) s of its start may have played there "
            + "before reel took it, and is not recorded"))
    }

    /// A stream this recording moved changed: still on its sinks, or on another recording's
    /// relay that plays into them, it is recorded; on another recording's relay that does not,
    /// it is taken again through that relay; elsewhere it was moved away (by the user, or by
    /// the server when its sink went).
    private func follow(_ index: UInt32) throws(ReelError) {
        guard let at = route.moved.firstIndex(where: { $0.stream == index }),
              let stream = try connection.playingStream(index), !route.owns(sink: stream.sinkName) else { return }
        if Self.tag(ofSink: stream.sinkName) != nil {
            if try leadsHere(stream.sinkName) { return }
            route.moved.remove(at: at)
            try take(stream)
            return
        }
        route.moved.remove(at: at)
        try save()
        report(.incomplete("the stream of '\(stream.label)' (\(index)) was moved away from reel's relay to '\(stream.sinkName)' "
            + "(by the user, or because its sink was removed): it is no longer recorded"))
    }

    /// Whether what plays into `sink` (another recording's relay) reaches one of this
    /// recording's relays, relay by relay.
    private func leadsHere(_ sink: String) throws(ReelError) -> Bool {
        let relays = RelayMap(modules: try connection.modules(), streams: try connection.playingStreams())
        var sink = sink
        for _ in 0..<16 {
            if route.owns(sink: sink) { return true }
            guard let next = relays.master(of: sink) else { return false }
            sink = next
        }
        return false
    }

    /// Moves `stream` to the relay of its sink, making the relay first if needed.
    private func take(_ stream: PlayingStream) throws(ReelError) {
        let relay = try relay(for: stream.sinkName)
        route.moved.append(.init(stream: stream.index, originalSink: stream.sinkName))
        try save()
        // Who records the monitor of the stream's sink now: PulseAudio ends a recording of the
        // stream alone when it moves, and that is said (it ended another program's recording
        // without a word).
        let listening = ((try? connection.recordingStreams()) ?? []).filter { $0.monitoredSink == stream.sinkName }
        do {
            try connection.moveStream(stream.index, toSink: relay)
            if !listening.isEmpty { sayEndedRecordings(listening, of: stream) }
        } catch {
            route.moved.removeLast()
            try save()
            // A stream that ended meanwhile is no news; one that refuses to move is.
            guard try connection.playingStream(stream.index) != nil else { return }
            report(.incomplete("the stream of '\(stream.label)' (\(stream.index)) cannot be moved (it was opened not to be moved): it plays on '\(stream.sinkName)' and is not recorded (\(error.message))"))
        }
    }

    /// Says which of `listening` (recording the monitor of `stream`'s sink before it moved) the
    /// move ended: a recording of that stream alone.
    private func sayEndedRecordings(_ listening: [RecordingStream], of stream: PlayingStream) {
        guard let now = try? connection.recordingStreams() else { return }
        let still = Set(now.map(\.index))
        for ended in listening where !still.contains(ended.index) {
            let who = ended.label.isEmpty ? "another program" : "'\(ended.label)'"
            report(.endedAnotherRecording("recording the stream of '\(stream.label)' (\(stream.index)) moved it into reel's relay, and PulseAudio ended "
                + "the recording of that stream alone by \(who) (record stream \(ended.index)): it records nothing more of it "
                + "(a recording of the whole sink '\(stream.sinkName)' goes on)"))
        }
    }

    private func relay(for sink: String) throws(ReelError) -> String {
        if let relay = relays[sink] { return relay }
        let relay = "\(route.tag)-\(relays.count + 1)"
        // A remap sink plays into its master as it renders, adding no latency for the listener.
        _ = try connection.loadModule("module-remap-sink", argument:
            "sink_name=\(relay) master=\(sink) sink_properties=device.description=Reel-relay-to-\(sink)")
        relays[sink] = relay
        _ = try connection.loadModule("module-loopback", argument:
            "source=\(relay).monitor sink=\(route.tag) latency_msec=\(Self.loopbackMilliseconds) source_dont_move=true sink_dont_move=true")
        return relay
    }

    /// The latency each loopback keeps, from a relay's monitor into the recorded sink: what it
    /// holds against the two sinks rendering out of step. PulseAudio renders each sink on its
    /// own thread; on a busy machine one catches up late, and when the recorded sink does so
    /// before the relay's master, a loopback holding less than that runs dry and the server
    /// renders digital silence into the recording, which no client is told of ("Could not peek
    /// into queue" in the server's log only; issue 26, N1). At 40 ms, a test server stopped for
    /// 150 ms eight times ran it dry 13 times a recording (3 of 3), leaving holes of 6 to 150 ms;
    /// at 200 ms, never (5 of 5; `anAudioServerThatStallsDoesNotRunTheLoopbackDry`). A stall
    /// longer than it holds still leaves a hole that nobody says. The listener does not hear
    /// this latency: the relay plays into its master as it renders.
    package static let loopbackMilliseconds = 200

    /// How much later than on the sink it played on the sound reaches the recording through
    /// the loopback: what the recording's times are corrected by. Measured, not the loopback's
    /// `latency_msec`: beeps recorded through the routing (`--app-audio=APP`) and from the
    /// original sink's monitor (`--mic=SINK.monitor`) at once came 195 ms apart with a 200 ms
    /// loopback, every beep alike (30 ms with a 40 ms one; PulseAudio 16, a null sink); the
    /// loopback's own latency includes what the recorded sink renders ahead, which its monitor
    /// does not delay.
    package static let loopbackDelay = MediaTime(value: 195, timescale: 1000)

    private func save() throws(ReelError) {
        guard let stateFile else { return }
        try Self.write(route, to: stateFile)
    }

    /// Puts everything back and removes the state file. Never throws: what cannot be undone
    /// (the server went away, which undoes it all anyway) is skipped.
    package func restore() {
        Self.restore(route, on: connection)
        relays = [:]
        if let stateFile { try? FileManager.default.removeItem(at: stateFile) }
    }
}
