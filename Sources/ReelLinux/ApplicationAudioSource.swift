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
/// moved: it is reported through `notices` and plays on unrecorded. Streams played by modules
/// (loopbacks) and streams another recording routed are never moved. Several sources may run
/// at once, in one process or several (the second of a process uses `reel-app-<pid>.2`).
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

        /// The names given.
        public var names: [String] {
            switch self {
            case .only(let names), .allExcept(let names): names
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
    private let running = Mutex<Running?>(nil)

    /// A source of the sound of `selection`.
    ///
    /// - Parameters:
    ///   - selection: the applications to record, or to leave out.
    ///   - server: a PulseAudio server string; `nil` uses `PULSE_SERVER` or the default server.
    ///   - format: the format to deliver.
    ///   - guardCommand: a program and its arguments that restores the routing if this process
    ///     dies while recording (see above); `nil` leaves that to ``restoreLeftovers(environment:scanningServer:)``.
    ///   - notices: told what the user should know: an application that is not playing yet,
    ///     one that starts, a stream that cannot be moved. Called on the source's threads.
    public convenience init(_ selection: Selection, server: String? = nil,
                            format: AudioFormat = AudioFormat(sampleFormat: .f32, sampleRate: 48_000, channels: 2),
                            guardCommand: [String]? = nil, notices: @escaping @Sendable (String) -> Void = { _ in }) {
        let sequence = Self.made.add(1, ordering: .relaxed).newValue
        self.init(selection, server: server, format: format, guardCommand: guardCommand, notices: notices,
                  routing: SystemPulseAudioRouting(), audioServer: SystemPulseAudioServer(), processID: getpid(),
                  sequence: sequence, stateFile: ApplicationAudioRouter.stateFile(pid: getpid(), sequence: sequence))
    }

    /// A source working through the given seams (scripted ones in tests).
    package init(_ selection: Selection, server: String?, format: AudioFormat, guardCommand: [String]?,
                 notices: @escaping @Sendable (String) -> Void, routing: any PulseAudioRoutingServer,
                 audioServer: any PulseAudioServer, processID: Int32, sequence: Int = 1, stateFile: URL?) {
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
        }
    }

    /// Checks that the server answers and returns `.audio(format)`.
    ///
    /// - Throws: ``ReelError`` `.invalidConfiguration` when no application is named,
    ///   `.sourceUnavailable` when PulseAudio is not running.
    public func prepare() throws -> SourceFormat {
        guard !selection.names.isEmpty, !selection.names.contains(where: \.isEmpty) else {
            throw ReelError(.invalidConfiguration, "no application named for application audio",
                            hint: "name applications by name, program or process id (see PulseAudioDevices.applications)")
        }
        _ = try routing.connect(server: server, clientName: "Reel").defaultSink()
        return .audio(format)
    }

    /// Routes the chosen streams, starts the guard and records the routed sound.
    ///
    /// - Throws: what ``prepare()`` throws, `.alreadyRunning`, or the server's refusal to load a
    ///   sink; nothing stays changed on the server then.
    public func start(_ context: SourceContext) throws {
        try running.withLock { state in
            guard state == nil else { throw ReelError(.alreadyRunning, "\(name) is already recording") }
            let connection = try routing.connect(server: server, clientName: "Reel application audio")
            let names: [String], excluding: Bool
            switch selection {
            case .only(let chosen): (names, excluding) = (chosen, false)
            case .allExcept(let left): (names, excluding) = (left, true)
            }
            // The server as this process reaches it, so that a guard or a later run with
            // another environment restores on the same one.
            let reached = connection.serverName ?? server ?? ProcessInfo.processInfo.environment["PULSE_SERVER"]
            let router = ApplicationAudioRouter(names: names, excluding: excluding, connection: connection, server: reached,
                                                recorderPID: processID, sequence: sequence, format: format, stateFile: stateFile,
                                                report: notices)
            let guardian = try stateFile.flatMap { file in try guardCommand.map { try RoutingGuard(command: $0, stateFile: file) } }
            router.guardPID = guardian?.processID
            do {
                try router.setUp()
                try connection.subscribeToStreams()
                let recording = PulseAudioSource.appAudio(sink: router.recordedSink, server: server, format: format,
                                                          audioServer: audioServer)
                try recording.start(context)
                do {
                    try router.startRouting()
                } catch {
                    recording.stop()
                    throw error
                }
                state = Running(router: router, connection: connection, recording: recording, guardian: guardian,
                                notices: notices, name: name, report: context.report)
            } catch {
                router.restore()
                guardian?.release()
                throw error
            }
        }
    }

    /// Stops recording, puts every stream back on its sink and unloads what was loaded. Safe to
    /// call twice.
    public func stop() {
        guard let state = running.withLock({ state -> Running? in defer { state = nil }; return state }) else { return }
        state.finish()
    }

    // MARK: - After a crash

    /// Runs as the guard process: waits until standard input closes (the recorder ended or
    /// died), then restores the routing from `stateFile` if the recorder did not (the file is
    /// still there), and removes it. Ignores the terminal's signals, so that Ctrl-C on the
    /// recorder does not end the guard before it has done its work.
    ///
    /// - Returns: what was restored, for the guard to say; empty when nothing was left.
    public static func runGuard(stateFile: String) -> [String] {
        _ = setsid()
        for signalNumber in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE] { signal(signalNumber, SIG_IGN) }
        var byte: UInt8 = 0
        while true {
            let count = read(0, &byte, 1)
            if count == 0 || (count < 0 && errno != EINTR) { break }
        }
        let url = URL(fileURLWithPath: stateFile)
        guard let route = ApplicationAudioRouter.read(url) else { return [] }
        return [restore(route, from: url, routing: SystemPulseAudioRouting(), who: "reel process \(route.recorderPID) ended").said]
    }

    /// Restores the routing that recordings which ended without putting it back left behind
    /// (their process and their guard are gone): from their state files in
    /// `$XDG_RUNTIME_DIR/reel`, each on the server its file names, and, on the server this
    /// process reaches, every `reel-app-<pid>…` sink and module whose process is gone, also with
    /// no state file (streams on a relay go back to the sink it played into, streams on a
    /// recorded sink to the default sink).
    ///
    /// A state file is removed only once its server shows nothing of its routing any more.
    /// Without `scanningServer` only state files are looked at: no connection is made to the
    /// audio server unless one of them names it (a recording that uses no sound of the server
    /// has no reason to touch it, or to make libpulse write its files in the user's home).
    ///
    /// - Returns: a sentence for each recording whose routing was restored, or could not be.
    public static func restoreLeftovers(environment: [String: String] = ProcessInfo.processInfo.environment,
                                        scanningServer: Bool = true) -> [String] {
        restoreLeftovers(environment: environment, routing: SystemPulseAudioRouting(), scanningServer: scanningServer)
    }

    package static func restoreLeftovers(environment: [String: String], routing: any PulseAudioRoutingServer,
                                         scanningServer: Bool = true) -> [String] {
        let directory = ApplicationAudioRouter.stateDirectory(environment: environment)
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        var done: [String] = []
        // Tags a live recording or guard owns, or whose file could not be restored: not touched below.
        var spared: Set<String> = []
        for file in files.sorted() where file.hasPrefix("app-audio-") && file.hasSuffix(".json") {
            let url = directory.appendingPathComponent(file)
            guard let route = ApplicationAudioRouter.read(url) else { continue }
            if isAlive(route.recorderPID) || route.guardPID.map(isAlive) == true {
                spared.insert(route.tag)
                continue
            }
            let (said, restored) = restore(route, from: url, routing: routing, who: "reel process \(route.recorderPID) died")
            if !restored { spared.insert(route.tag) }
            done.append(said)
        }
        // No state file (another XDG_RUNTIME_DIR, a file lost): what the server itself shows.
        guard scanningServer, let connection = try? routing.connect(server: environment["PULSE_SERVER"], clientName: "Reel routing restore"),
              let routes = try? ApplicationAudioRouter.routesOnServer(connection) else { return done }
        for route in routes where !spared.contains(route.tag) && !isAlive(route.recorderPID) {
            let (streams, modules) = ApplicationAudioRouter.restore(route, on: connection)
            let left = (try? ApplicationAudioRouter.remains(of: route, on: connection)) ?? []
            let server = connection.serverName.map { " on \($0)" } ?? ""
            var sentence = "reel process \(route.recorderPID) ended without restoring its application-audio routing (\(route.tag)…\(server), no state file found): moved \(streams) stream(s) back to their sinks and unloaded \(modules) module(s)"
            if !left.isEmpty { sentence += "; still left: " + left.joined(separator: ", ") }
            done.append(sentence)
        }
        return done
    }

    /// Restores `route` on the server it names; removes `url` only when that server shows none
    /// of it afterwards, or is gone (a socket that is no longer there: its modules went with it).
    private static func restore(_ route: ApplicationAudioRoute, from url: URL, routing: any PulseAudioRoutingServer,
                                who: String) -> (said: String, restored: Bool) {
        let named = route.server.map { " \($0)" } ?? ""
        let connection: any PulseAudioRoutingConnection
        do {
            connection = try routing.connect(server: route.server, clientName: "Reel routing restore")
        } catch {
            if let socket = route.server.map({ $0.hasPrefix("unix:") ? String($0.dropFirst(5)) : $0 }), socket.hasPrefix("/"),
               !FileManager.default.fileExists(atPath: socket) {
                try? FileManager.default.removeItem(at: url)
                return ("\(who) without restoring its application-audio routing; the audio server\(named) is gone, so nothing was left", true)
            }
            return ("\(who) without restoring its application-audio routing, and its audio server\(named) cannot be reached now (\(error.message)); \(url.path) is kept so that a later run that reaches it restores it", false)
        }
        let (streams, modules) = ApplicationAudioRouter.restore(route, on: connection)
        let left: [String]
        do {
            left = try ApplicationAudioRouter.remains(of: route, on: connection)
        } catch {
            return ("\(who) without restoring its application-audio routing: moved \(streams) stream(s) back and unloaded \(modules) module(s), but the audio server\(named) could not be asked what is left (\(error.message)); \(url.path) is kept", false)
        }
        guard left.isEmpty else {
            return ("\(who) without restoring its application-audio routing: moved \(streams) stream(s) back and unloaded \(modules) module(s), but \(left.joined(separator: ", ")) could not be put back on the audio server\(named); \(url.path) is kept", false)
        }
        try? FileManager.default.removeItem(at: url)
        return ("\(who) without restoring its application-audio routing: moved \(streams) stream(s) back to their sinks and unloaded \(modules) module(s)", true)
    }

    /// Whether `pid` is a running process (not a zombie).
    package static func isAlive(_ pid: Int32) -> Bool {
        guard pid > 0, kill(pid, 0) == 0 || errno == EPERM else { return false }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return true }
        return !stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
    }
}

/// A running application-audio recording: the routing, the thread watching for new streams,
/// the record stream and the guard. The router and its connection are used by the watching
/// thread while it runs and by ``finish()`` after it has ended.
private final class Running: @unchecked Sendable {
    let router: ApplicationAudioRouter
    let connection: any PulseAudioRoutingConnection
    let recording: PulseAudioSource
    let guardian: RoutingGuard?
    var watcher: WorkerThread?

    /// How often the watching thread checks that the recorded sink is still there.
    static let sinkCheckInterval = Duration.milliseconds(250)

    init(router: ApplicationAudioRouter, connection: any PulseAudioRoutingConnection, recording: PulseAudioSource,
         guardian: RoutingGuard?, notices: @escaping @Sendable (String) -> Void, name: String,
         report: @escaping @Sendable (SourceEvent) -> Void) {
        self.router = router
        self.connection = connection
        self.recording = recording
        self.guardian = guardian
        watcher = WorkerThread(name: "reel.app-audio") { [self] thread in
            let clock = ContinuousClock()
            var nextCheck = clock.now
            while !thread.isStopRequested {
                do {
                    try self.router.handle(try self.connection.nextEvents(timeoutMicroseconds: 50_000))
                    guard clock.now >= nextCheck else { continue }
                    nextCheck = clock.now.advanced(by: Self.sinkCheckInterval)
                    let sink = self.router.recordedSink
                    guard try !self.connection.sinkNames().contains(sink) else { continue }
                    // Someone unloaded the recorded sink: nothing can be recorded any more (its
                    // monitor is gone), so the source is lost rather than retried for ever; the
                    // chosen streams go back to their sinks now.
                    self.recording.stop()
                    self.router.restore()
                    report(.lost(ReelError(.sourceUnavailable,
                                           "\(name) lost its recorded sink '\(sink)': it was unloaded by another program while recording",
                                           hint: "the chosen applications play on their own sinks again; record again to record them")))
                    return
                } catch {
                    notices("\(name) no longer follows new streams: \((error as? ReelError)?.message ?? "\(error)")")
                    return
                }
            }
        }
    }

    func finish() {
        watcher?.requestStop()
        watcher?.join()
        router.reportNeverPlayed()
        recording.stop()
        router.restore()
        guardian?.release()
    }
}

/// The guard process of a recording: started with a pipe on its standard input whose write end
/// only this process holds (close-on-exec), so the pipe closes when this process ends, however
/// it ends.
private final class RoutingGuard: @unchecked Sendable {
    let processID: Int32
    private let writeEnd = Mutex<Int32>(-1)

    init(command: [String], stateFile: URL) throws(ReelError) {
        guard let program = command.first else {
            throw ReelError(.invalidConfiguration, "the application-audio guard command is empty")
        }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw ReelError(.ioFailure, "cannot make a pipe for the application-audio guard", errno: errno)
        }
        // Neither end may leak into other programs this process starts (Glibc's Swift overlay
        // has no pipe2).
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the copy: the guard keeps the read end as stdin.
        posix_spawn_file_actions_adddup2(&actions, ends[0], 0)
        let arguments = command + [stateFile.path]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        // In a session of its own from the start: the terminal's Ctrl-C, meant for the
        // recorder, never reaches the guard (glibc's POSIX_SPAWN_SETSID, 0x80 in spawn.h, is
        // not imported into Swift).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(0x80))
        var pid: pid_t = 0
        let status = posix_spawn(&pid, program, &actions, &attributes, &argv, environ)
        close(ends[0])
        guard status == 0 else {
            close(ends[1])
            throw ReelError(.ioFailure, "cannot start the application-audio guard '\(program)'", errno: status)
        }
        processID = pid
        writeEnd.withLock { $0 = ends[1] }
    }

    /// Closes the pipe (the guard finds the state file gone and ends) and reaps the guard.
    func release() {
        let fd = writeEnd.withLock { fd in defer { fd = -1 }; return fd }
        guard fd >= 0 else { return }
        close(fd)
        var status: Int32 = 0
        for _ in 0..<200 {
            let reaped = waitpid(processID, &status, WNOHANG)
            if reaped != 0 { return }
            usleep(10_000)
        }
    }

    deinit { release() }
}
