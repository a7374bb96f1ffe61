import Foundation
import ReelCore
import Synchronization

/// Records the sound of chosen applications only (or of every application but them), while the
/// user goes on hearing everything: like OBS's "Application Audio Capture".
///
/// ```swift
/// let game = ApplicationAudioSource(.only(["supertuxkart"]))
/// try session.addInput(game)
/// ```
///
/// Applications are named by `application.name` ("Firefox"), by program
/// (`application.process.binary`, "firefox") or by process id, ignoring case; see
/// ``PulseAudioDevices/applications(server:)`` or `reel devices` for what plays now. An
/// application that is not playing when the recording starts is recorded when it starts.
///
/// How: the recording makes a null sink `reel-app-<pid>` and records its monitor. For each sink
/// the chosen streams play into, a relay `reel-app-<pid>-<n>` — a remap sink onto that sink, so
/// the user hears what plays into it where it played, with no latency added — whose monitor a
/// loopback feeds into the recorded sink; the chosen streams are moved to the relay. Streams that start later are moved as they appear
/// (when they are chosen); streams that end need nothing; a stream opened "dont-move" cannot be
/// moved and plays on unrecorded. Streams played by modules (loopbacks) are never moved. Any
/// number of sources may record one application at once, in one process or several (the
/// second of a process uses `reel-app-<pid>.2`): a stream on another recording's relay is
/// moved to a relay of this one that plays into that relay (see `ApplicationAudioRouter`).
///
/// What the recording misses comes as the source's events: ``SourceEvent/silent(_:)`` for a
/// named application that has not played since the start (``SourceEvent/resumed`` when it
/// does), and for chosen applications that play but recorded only digital silence for a
/// second: muted or at volume 0 in the mixer (which applies before any recording can take the
/// sound, on PulseAudio and PipeWire alike; the source leaves the mixer as the user set it and
/// says so), or playing silence (``SourceEvent/resumed`` at their first sound);
/// ``SourceEvent/incomplete(_:)`` for a chosen stream that cannot be moved or was moved
/// away; a recorder lists them in ``RecordingSummary/shortfalls``. If the audio server restarts,
/// the source is interrupted; it makes its sink again on the new server, routes the chosen
/// applications there and resumes (or, if the server refuses, is lost). `notices` get what is
/// only for the user to know: an application that starts playing, the server being back.
///
/// When the source stops, every moved stream goes back to the sink it came from and the sinks
/// and loopbacks are unloaded. Each change is written first to a state file in
/// `$XDG_RUNTIME_DIR/reel`, so that a recording that crashes or is killed can still be undone:
/// given a `guardCommand`, the source starts that command with the state file as its last
/// argument and the read end of a pipe as its standard input; when the pipe closes without the
/// file having been removed (the recorder died, even by SIGKILL), the guard restores from the
/// file (the `reel` command line runs itself as its guard, see ``runGuard(stateFile:)``). And
/// ``restoreLeftovers(environment:scanningServer:)`` restores what a recording whose guard died too left
/// behind; `reel` calls it at each recording and in `reel doctor`.
public final class ApplicationAudioSource: CaptureSource {
    /// Which applications are recorded.
    public enum Selection: Sendable, Hashable {
        /// Only these applications (names, programs or process ids).
        case only([String])
        /// Every application but these.
        case allExcept([String])
        /// The application of this process and of the processes it started: a window's (see
        /// ``X11WindowSource/processID``), whose sound may come from a child process (a
        /// browser's often does).
        case processTree(Int32)

        /// The names given (none for ``processTree(_:)``).
        public var names: [String] {
            switch self {
            case .only(let names), .allExcept(let names): names
            case .processTree: []
            }
        }

        /// The rule the routing and the linking follow.
        var choice: ApplicationChoice {
            switch self {
            case .only(let names): ApplicationChoice(names: names, excluding: false)
            case .allExcept(let names): ApplicationChoice(names: names, excluding: true)
            case .processTree(let pid): ApplicationChoice(parts: [.processTree(pid)], excluding: false)
            }
        }
    }

    /// "app audio of 'A', 'B'" or "app audio except 'A'".
    public let name: String
    /// Always `.appAudio`.
    public let kind: SampleKind = .appAudio
    /// The applications chosen.
    public let selection: Selection
    /// The PulseAudio server string, or `nil` for the usual one.
    public let server: String?
    /// The format delivered.
    public let format: AudioFormat

    private let guardCommand: [String]?
    private let notices: @Sendable (String) -> Void
    private let routing: any PulseAudioRoutingServer
    private let audioServer: any PulseAudioServer
    private let processID: Int32
    /// Which of this process's application-audio sources this is, from 1.
    private let sequence: Int
    /// How many were made in this process.
    private static let made = Atomic<Int>(0)
    private let stateFile: URL?
    /// The PipeWire graph, when a PipeWire server is to be linked in directly (`nil`: always
    /// route through PulseAudio modules).
    private let graph: (any PipeWireGraph)?
    /// Records Reel's own sink on the PipeWire daemon given.
    private let capture: @Sendable (String?) -> any PulseAudioServer
    private let environment: [String: String]
    private let running = Mutex<Running?>(nil)
    /// Whether ``prepare()`` paces the sinks streams play on.
    private let pacesSinks: Bool
    /// The monitors that pace those sinks, from ``prepare()`` to ``stop()`` (routed), or to the
    /// start (linked).
    private let pacers = Mutex<[PulseAudioSource]>([])

    /// How a running source records, and what watches it for digital silence.
    private struct Running {
        enum Way {
            case routed(RoutedApplicationAudio)
            case linked(LinkedApplicationAudio)
        }
        var way: Way
        var silence: ApplicationSilenceWatch
        var mixer: MixerLook

        func finish() {
            switch way {
            case .routed(let routed): routed.finish()
            case .linked(let linked): linked.finish()
            }
            // The recording's thread is done: a silence shorter than the watch's second is said now.
            silence.finish()
            mixer.close()
        }
    }

    /// A source of the sound of `selection`.
    ///
    /// - Parameters:
    ///   - selection: the applications to record, or to leave out.
    ///   - server: a PulseAudio server string; `nil` uses `PULSE_SERVER` or the default server.
    ///   - format: the format to deliver.
    ///   - guardCommand: a program and its arguments that restores the routing if this process
    ///     dies while recording (see above); `nil` leaves that to ``restoreLeftovers(environment:scanningServer:)``.
    ///   - notices: told what the user should know besides the source's events: an application
    ///     that starts playing, the audio server being back. Called on the source's threads.
    public convenience init(_ selection: Selection, server: String? = nil,
                            format: AudioFormat = AudioFormat(sampleFormat: .f32, sampleRate: 48_000, channels: 2),
                            guardCommand: [String]? = nil, notices: @escaping @Sendable (String) -> Void = { _ in }) {
        let sequence = Self.made.add(1, ordering: .relaxed).newValue
        self.init(selection, server: server, format: format, guardCommand: guardCommand, notices: notices,
                  routing: SystemPulseAudioRouting(), audioServer: SystemPulseAudioServer(), processID: getpid(),
                  sequence: sequence, stateFile: ApplicationAudioRouter.stateFile(pid: getpid(), sequence: sequence),
                  graph: SystemPipeWireGraph(), capture: { PipeWireSinkCapture(remote: $0) }, pacesSinks: true)
    }

    /// A source working through the given seams (scripted ones in tests).
    package init(_ selection: Selection, server: String?, format: AudioFormat, guardCommand: [String]?,
                 notices: @escaping @Sendable (String) -> Void, routing: any PulseAudioRoutingServer,
                 audioServer: any PulseAudioServer, processID: Int32, sequence: Int = 1, stateFile: URL?,
                 graph: (any PipeWireGraph)? = nil, capture: @escaping @Sendable (String?) -> any PulseAudioServer = { _ in SystemPulseAudioServer() },
                 environment: [String: String] = ProcessInfo.processInfo.environment, pacesSinks: Bool = false) {
        self.pacesSinks = pacesSinks
        self.graph = graph
        self.capture = capture
        self.environment = environment
        self.sequence = sequence
        self.selection = selection
        self.server = server
        self.format = format
        self.guardCommand = guardCommand
        self.notices = notices
        self.routing = routing
        self.audioServer = audioServer
        self.processID = processID
        self.stateFile = stateFile
        let quoted = selection.names.map { "'\($0)'" }.joined(separator: ", ")
        switch selection {
        case .only: name = "app audio of \(quoted)"
        case .allExcept: name = "app audio except \(quoted)"
        case .processTree(let pid): name = "app audio of process \(pid) and the processes it started"
        }
    }

    /// Checks that the server answers and returns `.audio(format)`.
    ///
    /// - Throws: ``ReelError`` `.invalidConfiguration` when no application is named,
    ///   `.sourceUnavailable` when PulseAudio is not running.
    public func prepare() throws -> SourceFormat {
        if case .processTree(let pid) = selection {
            guard pid > 0 else { throw ReelError(.invalidConfiguration, "process \(pid) is no process for application audio") }
        } else if selection.names.isEmpty || selection.names.contains(where: \.isEmpty) {
            throw ReelError(.invalidConfiguration, "no application named for application audio",
                            hint: "name applications by name, program or process id (see PulseAudioDevices.applications)")
        }
        let connection = try routing.connect(server: server, clientName: "Reel")
        _ = try connection.defaultSink()
        if pacesSinks { try pace(connection) }
        return .audio(format)
    }

    /// Opens a monitor on each sink a stream may play on (every sink but the recordings'), and
    /// on each a chosen application plays on now (another recording's relay too), and waits
    /// until they pace their sinks (``PulseAudioSource/prepare()``, at once for all). A
    /// sink renders ahead by the lowest latency its clients ask for, up to 2 s; what a stream
    /// had handed to the sink it is taken from plays there and is not recorded, so a stream
    /// taken from an unpaced sink lost up to that much: of its start when it played already
    /// (1.95 s of `paplay` in a row, a null sink), and as much when it started during the
    /// recording (a 5 s `paplay` kept 3.1 s, a 2 s one 0.2 s). Paced, it loses about the
    /// monitor's latency. On a PulseAudio server the monitors pace for the whole recording (a
    /// stream that starts later is born on a paced sink); linked on PipeWire, nothing is taken
    /// from a sink, and they close at the start.
    private func pace(_ connection: any PulseAudioRoutingConnection) throws {
        let choice = selection.choice
        let playing = try connection.playingStreams()
            .filter { !$0.isModuleStream && choice.takes(applicationName: $0.applicationName, binary: $0.binary, processID: $0.processID) }
            .map(\.sinkName)
        let sinks = Set(try connection.sinkNames().filter { ApplicationAudioRouter.tag(ofSink: $0) == nil } + playing).sorted()
        let opened = sinks.map { PulseAudioSource.appAudio(sink: $0, server: server, format: Self.pacingFormat, audioServer: audioServer) }
        stopPacing()
        pacers.withLock { $0 = opened }
        // A sink that cannot be paced (gone meanwhile) only loses what it would have lost.
        DispatchQueue.concurrentPerform(iterations: opened.count) { _ = try? opened[$0].prepare() }
    }

    /// What the pacing monitors read (and leave): little, so that the server converts little.
    private static let pacingFormat = AudioFormat(sampleFormat: .s16, sampleRate: 48_000, channels: 1)

    /// Keeps the pacing monitors of the sinks streams are born on reading, and leaving what
    /// they read, until ``stop()`` (a monitor that is not read fills the server's buffer and
    /// overruns); closes those of other recordings' relays, whose streams are taken by now.
    ///
    /// - Returns: the sinks paced from now on.
    private func keepPacing(_ context: SourceContext) -> Set<String> {
        let leave = SourceContext(id: context.id, clock: context.clock, origin: context.origin, deliver: { _ in }, report: { _ in })
        let (kept, closed) = pacers.withLock { pacers in
            defer { pacers.removeAll(where: Self.pacesARecording) }
            return (pacers.filter { !Self.pacesARecording($0) }, pacers.filter(Self.pacesARecording))
        }
        for pacer in closed { pacer.stop() }
        var paced: Set<String> = []
        for pacer in kept {
            // A pacer that cannot start (its sink went away) paces nothing.
            guard (try? pacer.start(leave)) != nil else { pacer.stop(); continue }
            if let monitor = pacer.sourceName { paced.insert(String(monitor.dropLast(".monitor".count))) }
        }
        return paced
    }

    /// Whether `pacer` paces a sink of a recording (a relay of another).
    private static func pacesARecording(_ pacer: PulseAudioSource) -> Bool {
        pacer.sourceName.flatMap(ApplicationAudioRouter.tag(ofSink:)) != nil
    }

    /// Closes the monitors that paced the sinks.
    private func stopPacing() {
        for pacer in pacers.withLock({ p in defer { p = [] }; return p }) { pacer.stop() }
    }

    /// Routes the chosen streams, starts the guard and records the routed sound.
    ///
    /// - Throws: what ``prepare()`` throws, `.alreadyRunning`, or the server's refusal to load a
    ///   sink; nothing stays changed on the server then.
    public func start(_ context: SourceContext) throws {
        try running.withLock { state in
            guard state == nil else { throw ReelError(.alreadyRunning, "\(name) is already recording") }
            let silences = Silences()
            let mixer = MixerLook(routing: routing, server: server, choice: selection.choice)
            let silence = ApplicationSilenceWatch(rate: Int32(format.sampleRate), others: silences, report: context.report, explain: mixer.words)
            do {
                if let linked = try startLinking(context, silences: silences, silence: silence) {
                    // Linked, nothing is taken from a sink: the sinks need no pacing.
                    stopPacing()
                    state = Running(way: .linked(linked), silence: silence, mixer: mixer)
                } else {
                    let routed = try startRouting(context, pacedSinks: keepPacing(context), silences: silences, silence: silence)
                    state = Running(way: .routed(routed), silence: silence, mixer: mixer)
                }
            } catch {
                mixer.close()
                stopPacing()
                throw error
            }
        }
    }

    /// What the routing says, as the recording's events and notices.
    /// `silences` holds what is silent now, to be said again after the recording's own
    /// `resumed` (which ends every silence of the source); `silence` counts its second again
    /// when an application starts playing (that `resumed` ended what it said).
    private func reporter(_ context: SourceContext, silences: Silences, silence: ApplicationSilenceWatch) -> @Sendable (ApplicationAudioReport) -> Void {
        let notices = self.notices
        return { said in
            switch said {
            case .note(let text): notices(text)
            case .silent(let text):
                let error = ReelError(.sourceUnavailable, text, hint: ApplicationChoice.recordedOnceItPlays)
                silences.add(error)
                context.report(.silent(error))
            case .playing:
                // The routing or the linking says again what is still silent.
                silences.clear()
                context.report(.resumed)
                silence.restart()
            case .incomplete(let text): context.report(.incomplete(ReelError(.sourceUnavailable, text)))
            case .endedAnotherRecording(let text): context.report(.endedAnotherRecording(text))
            }
        }
    }

    /// The context the recording of the sink reports through: its `resumed` (after the audio
    /// server restarted) ends every silence of the source, so those still going on are said
    /// again (and `silence` counts its second again); `back` learns when the recording is lost
    /// and back. What it delivers is watched for digital silence (`silence`).
    private static func recordingContext(_ context: SourceContext, silences: Silences, silence: ApplicationSilenceWatch,
                                         back: ReturnFlag?) -> SourceContext {
        SourceContext(id: context.id, clock: context.clock, origin: context.origin, deliver: { sample in
            if case .audio(let buffer) = sample { silence.delivered(buffer) }
            context.deliver(sample)
        }, report: { event in
            if case .interrupted = event { back?.clear() }
            context.report(event)
            if case .resumed = event {
                back?.set()
                for error in silences.all { context.report(.silent(error)) }
                silence.restart()
            }
        })
    }

    /// Records by linking on the PipeWire daemon behind the PulseAudio server
    /// (``ApplicationAudioLinker``), or returns `nil` when the server is PulseAudio itself, or
    /// PipeWire cannot be reached directly (a note says so; the routing serves then).
    private func startLinking(_ context: SourceContext, silences: Silences, silence: ApplicationSilenceWatch) throws -> LinkedApplicationAudio? {
        guard let graph else { return nil }
        let way = try ApplicationAudioMethod.find(server: server, routing: routing, graph: graph, environment: environment, notices: notices)
        guard case .linking(let remote, let connection, let first) = way else { return nil }
        let sinkName = "reel-app-\(processID)" + (sequence == 1 ? "" : ".\(sequence)")
        let linker = ApplicationAudioLinker(choice: selection.choice, sinkName: sinkName, connection: connection,
                                            report: reporter(context, silences: silences, silence: silence))
        let recording = PulseAudioSource.appAudio(sink: sinkName, server: nil, format: format, audioServer: capture(remote), describedAs: name)
        try linker.handle(first)
        // Following the graph from now: the chosen applications are linked as soon as the
        // recording's sink appears, before its first sound is read.
        let linked = LinkedApplicationAudio(linker: linker, connection: connection, recording: recording, name: name, notices: notices,
                                            report: context.report, reconnect: { () throws(ReelError) in try graph.connect(remote: remote) })
        do {
            try recording.start(Self.recordingContext(context, silences: silences, silence: silence, back: nil))
        } catch {
            linked.finish()
            throw error
        }
        return linked
    }

    /// Records through the routing of a PulseAudio server (`ApplicationAudioRouter`).
    /// `pacedSinks`: the sinks kept at a low latency (a stream that starts on another may lose
    /// its start, and that is said).
    private func startRouting(_ context: SourceContext, pacedSinks: Set<String>?, silences: Silences,
                              silence: ApplicationSilenceWatch) throws -> RoutedApplicationAudio {
        let server = self.server, routing = self.routing
        let connection = try routing.connect(server: server, clientName: "Reel application audio")
        // The server as this process reaches it, so that a guard or a later run with
        // another environment restores on the same one.
        let reached = connection.serverName ?? server ?? ProcessInfo.processInfo.environment["PULSE_SERVER"]
        let router = ApplicationAudioRouter(choice: selection.choice, connection: connection, server: reached,
                                            recorderPID: processID, sequence: sequence, format: format, stateFile: stateFile,
                                            report: reporter(context, silences: silences, silence: silence))
        let guardian = try stateFile.flatMap { file in try guardCommand.map { try RoutingGuard(command: $0, stateFile: file) } }
        router.guardPID = guardian?.processID
        router.pacedSinks = pacesSinks ? pacedSinks : nil
        do {
            try router.setUp()
            try connection.subscribeToStreams()
            // The sound comes through a loopback, which delays it by its latency: taken off.
            let recording = PulseAudioSource.appAudio(sink: router.recordedSink, server: server, format: format, audioServer: audioServer,
                                                      upstreamLatency: ApplicationAudioRouter.loopbackDelay, describedAs: name)
            // The record stream coming back after the server restarted lets the routing start again.
            let back = ReturnFlag()
            try recording.start(Self.recordingContext(context, silences: silences, silence: silence, back: back))
            do {
                try router.startRouting()
            } catch {
                recording.stop()
                throw error
            }
            let parts = RoutedApplicationAudio.Parts(router: router, connection: connection, recording: recording, guardian: guardian,
                                                     recordingBack: back, reconnect: { () throws(ReelError) in
                                                         try routing.connect(server: server, clientName: "Reel application audio")
                                                     })
            return RoutedApplicationAudio(parts, name: name, notices: notices, report: context.report)
        } catch {
            router.restore()
            guardian?.release()
            throw error
        }
    }

    /// Stops recording, puts every stream back on its sink and unloads what was loaded. Safe to
    /// call twice.
    public func stop() {
        stopPacing()
        guard let state = running.withLock({ state -> Running? in defer { state = nil }; return state }) else { return }
        state.finish()
    }
}

/// What an application-audio source has said is silent and not yet ended.
final class Silences: Sendable {
    private let errors = Mutex<[ReelError]>([])
    func add(_ error: ReelError) { errors.withLock { if !$0.contains(error) { $0.append(error) } } }
    func clear() { errors.withLock { $0 = [] } }
    var all: [ReelError] { errors.withLock { $0 } }
}
