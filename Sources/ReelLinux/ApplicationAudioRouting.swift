import Foundation
import ReelCore

/// What a recording of application audio changed on the audio server, written to a state file
/// before each change so that it can be undone by the recorder, by its guard process after a
/// crash or SIGKILL, or by the next `reel` run.
package struct ApplicationAudioRoute: Codable, Sendable, Equatable {
    /// One stream moved away from its sink.
    package struct Move: Codable, Sendable, Equatable {
        /// The stream's index.
        package var stream: UInt32
        /// The sink it played into before.
        package var originalSink: String
    }

    /// The server string (`nil`: the usual one).
    package var server: String?
    /// The recording process.
    package var recorderPID: Int32
    /// The guard process that restores the routing if the recorder dies, once it runs.
    package var guardPID: Int32?
    /// The prefix of every sink this recording made, `reel-app-<pid>`: the recorded sink is
    /// named so, relay sinks `reel-app-<pid>-<n>`, and every module whose arguments name one of
    /// them belongs to this recording.
    package var tag: String
    /// The streams moved, with their sinks before.
    package var moved: [Move] = []

    package init(server: String?, recorderPID: Int32, tag: String) {
        self.server = server
        self.recorderPID = recorderPID
        self.tag = tag
    }

    /// Whether `sink` is one that this recording made.
    package func owns(sink: String) -> Bool {
        sink == tag || sink == "\(tag).monitor" || sink.hasPrefix("\(tag)-")
    }

    /// Whether a module belongs to this recording: one of its `key=value` arguments names a
    /// sink (or a sink's monitor) this recording made.
    package func owns(_ module: LoadedModule) -> Bool {
        module.argument.split(separator: " ").contains { token in
            guard let equals = token.firstIndex(of: "=") else { return false }
            return owns(sink: String(token[token.index(after: equals)...]))
        }
    }
}

/// Routes the streams of chosen applications into a sink that is recorded, so that the user
/// still hears everything, and puts everything back afterwards.
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
/// Restoring moves every stream still on one of this recording's sinks back to the sink it
/// came from (the default sink if that one is gone), then unloads the loopbacks and the sinks.
/// What was changed is written to ``stateFile`` before each change; ``restore(_:on:)`` works
/// from that file and from what the server shows (a module is this recording's when one of its
/// arguments names one of its sinks), so it also works in another process.
package final class ApplicationAudioRouter {
    private let connection: any PulseAudioRoutingConnection
    private let names: [String]
    private let excludes: Bool
    private let report: (String) -> Void
    /// Where the route is written, or `nil` to keep it in memory only.
    package let stateFile: URL?
    /// What this recording changed so far.
    package private(set) var route: ApplicationAudioRoute
    /// The format the recorded sink is made in (the recording's, so that it is not converted
    /// twice), or `nil` for the server's default.
    private let recordedFormat: AudioFormat?
    /// The relay sink for each original sink.
    private var relays: [String: String] = [:]
    /// The names that matched no stream yet (reported once when one starts).
    private var waitingFor: Set<String> = []
    /// The streams said to be recorded by another recording.
    private var reportedElsewhere: Set<UInt32> = []

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
    package init(names: [String], excluding: Bool, connection: any PulseAudioRoutingConnection, server: String?,
                 recorderPID: Int32, sequence: Int = 1, format: AudioFormat? = nil, stateFile: URL?,
                 report: @escaping (String) -> Void) {
        self.recordedFormat = format
        self.connection = connection
        self.names = names
        self.excludes = excluding
        self.report = report
        self.stateFile = stateFile
        self.route = ApplicationAudioRoute(server: server, recorderPID: recorderPID,
                                           tag: "reel-app-\(recorderPID)" + (sequence == 1 ? "" : ".\(sequence)"))
    }

    /// Whether `stream` is to be recorded.
    package func wants(_ stream: PlayingStream) -> Bool {
        // Streams already routed, by this recording or another one, stay where they are.
        if stream.sinkName.hasPrefix("reel-app-") { return false }
        return chosen(stream)
    }

    /// Whether `stream` is one of the chosen applications', wherever it plays.
    private func chosen(_ stream: PlayingStream) -> Bool {
        if stream.isModuleStream { return false }
        let named = names.contains { stream.isPlayed(by: $0) }
        return excludes ? !named : named
    }

    /// Says so (once per stream) when a chosen stream plays on another running recording's
    /// sink: that recording has it, this one does not.
    private func reportIfRecordedElsewhere(_ stream: PlayingStream) {
        guard chosen(stream), !route.owns(sink: stream.sinkName), let tag = Self.tag(ofSink: stream.sinkName),
              !reportedElsewhere.contains(stream.index) else { return }
        reportedElsewhere.insert(stream.index)
        let pid = tag.dropFirst("reel-app-".count).prefix { $0.isNumber }
        report("'\(stream.label)' (stream \(stream.index)) is already being recorded by another reel, process \(pid) "
            + "(it plays on its sink '\(stream.sinkName)'): this recording does not get its sound")
    }

    /// Says which named applications never played during the recording; called when it ends.
    package func reportNeverPlayed() {
        for name in waitingFor.sorted() {
            report("'\(name)' never played during the recording: nothing of it was recorded")
        }
    }

    /// Makes the recorded sink, suspended until ``startRouting()`` (a null sink that runs with no
    /// reader renders seconds ahead, and its monitor would get its first sound that late).
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
    /// streams playing now to it.
    ///
    /// - Throws: when the server refuses; what was done is undone first.
    package func startRouting() throws(ReelError) {
        do {
            try connection.suspendSink(route.tag, false)
            let streams = try connection.playingStreams()
            if !excludes {
                waitingFor = Set(names.filter { name in !streams.contains { $0.isPlayed(by: name) } })
                for name in waitingFor.sorted() {
                    report("no application '\(name)' is playing now: its sound is recorded when it starts")
                }
            }
            for stream in streams {
                if wants(stream) { try take(stream) } else { reportIfRecordedElsewhere(stream) }
            }
        } catch {
            restore()
            throw error
        }
    }

    /// Looks at the streams that started or ended.
    package func handle(_ events: [StreamEvent]) throws(ReelError) {
        for event in events {
            switch event {
            case .appeared(let index):
                guard let stream = try connection.playingStream(index) else { continue }
                guard wants(stream) else {
                    reportIfRecordedElsewhere(stream)
                    continue
                }
                if let name = waitingFor.first(where: { stream.isPlayed(by: $0) }) {
                    waitingFor.remove(name)
                    report("'\(name)' started playing: recording its sound")
                }
                try take(stream)
            case .vanished(let index):
                reportedElsewhere.remove(index)
                if let at = route.moved.firstIndex(where: { $0.stream == index }) {
                    route.moved.remove(at: at)
                    try save()
                }
            case .changed(let index):
                // A stream this recording moved that is no longer on its sinks was moved away:
                // by the user, or by the server when its sink went.
                guard let at = route.moved.firstIndex(where: { $0.stream == index }),
                      let stream = try connection.playingStream(index), !route.owns(sink: stream.sinkName) else { continue }
                route.moved.remove(at: at)
                try save()
                report("the stream of '\(stream.label)' (\(index)) was moved away from reel's relay to '\(stream.sinkName)' "
                    + "(by the user, or because its sink was removed): it is no longer recorded")
            }
        }
    }

    /// Moves `stream` to the relay of its sink, making the relay first if needed.
    private func take(_ stream: PlayingStream) throws(ReelError) {
        let relay = try relay(for: stream.sinkName)
        route.moved.append(.init(stream: stream.index, originalSink: stream.sinkName))
        try save()
        do {
            try connection.moveStream(stream.index, toSink: relay)
        } catch {
            route.moved.removeLast()
            try save()
            // A stream that ended meanwhile is no news; one that refuses to move is.
            guard try connection.playingStream(stream.index) != nil else { return }
            report("the stream of '\(stream.label)' (\(stream.index)) cannot be moved (it was opened not to be moved): it plays on '\(stream.sinkName)' and is not recorded (\(error.message))")
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
            "source=\(relay).monitor sink=\(route.tag) latency_msec=40 source_dont_move=true sink_dont_move=true")
        return relay
    }

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

    /// Puts back what `route` changed on `connection`'s server: streams on the route's sinks go
    /// back to their original sinks (or the default one when that is gone), then the route's
    /// loopbacks and sinks are unloaded.
    ///
    /// - Returns: how many streams were moved back and modules unloaded.
    @discardableResult
    package static func restore(_ route: ApplicationAudioRoute,
                                on connection: any PulseAudioRoutingConnection) -> (streams: Int, modules: Int) {
        var streamsBack = 0, unloaded = 0
        let sinks = (try? connection.sinkNames()) ?? []
        let fallback = (try? connection.defaultSink()).flatMap { $0 }.flatMap { route.owns(sink: $0) ? nil : $0 }
        // A relay plays into its master, the sink its streams came from: where a stream goes
        // back when the route does not say (no state file, or a move not written yet).
        var masters: [String: String] = [:]
        for module in (try? connection.modules()) ?? [] where module.name == "module-remap-sink" && route.owns(module) {
            if let relay = LoadedModule.value("sink_name", in: module.argument), let master = LoadedModule.value("master", in: module.argument) {
                masters[relay] = master
            }
        }
        for stream in (try? connection.playingStreams()) ?? [] where route.owns(sink: stream.sinkName) && !stream.isModuleStream {
            let original = route.moved.last(where: { $0.stream == stream.index })?.originalSink ?? masters[stream.sinkName]
            let target = original.flatMap { sinks.contains($0) && !route.owns(sink: $0) ? $0 : nil } ?? fallback
                ?? sinks.first { !route.owns(sink: $0) }
            guard let target else { continue }
            if (try? connection.moveStream(stream.index, toSink: target)) != nil { streamsBack += 1 }
        }
        let ours = ((try? connection.modules()) ?? []).filter(route.owns)
        // Loopbacks first, so that no sound is routed into a sink that is going away.
        for module in ours.sorted(by: { ($0.name == "module-loopback" ? 0 : 1, $0.index) < ($1.name == "module-loopback" ? 0 : 1, $1.index) }) {
            if (try? connection.unloadModule(module.index)) != nil { unloaded += 1 }
        }
        return (streamsBack, unloaded)
    }

    /// What of `route` is still on `connection`'s server: its modules, and the streams on its
    /// sinks. Empty once a restore has done its work.
    package static func remains(of route: ApplicationAudioRoute, on connection: any PulseAudioRoutingConnection) throws(ReelError) -> [String] {
        let modules = try connection.modules().filter(route.owns).map { "module \($0.index) (\($0.name))" }
        let streams = try connection.playingStreams().filter { route.owns(sink: $0.sinkName) && !$0.isModuleStream }
            .map { "stream \($0.index) of '\($0.label)' on \($0.sinkName)" }
        return modules + streams
    }

    /// The recordings whose sinks (`reel-app-<pid>…`) are on `connection`'s server: each as a
    /// route with no moves, by its recorder's process id, read off the sinks' and modules' names.
    package static func routesOnServer(_ connection: any PulseAudioRoutingConnection) throws(ReelError) -> [ApplicationAudioRoute] {
        var tags: Set<String> = []
        for sink in try connection.sinkNames() { if let tag = tag(ofSink: sink) { tags.insert(tag) } }
        for module in try connection.modules() {
            for token in module.argument.split(separator: " ") {
                guard let equals = token.firstIndex(of: "=") else { continue }
                if let tag = tag(ofSink: String(token[token.index(after: equals)...])) { tags.insert(tag) }
            }
        }
        return tags.sorted().compactMap { tag in
            let digits = tag.dropFirst("reel-app-".count).prefix { $0.isNumber }
            return Int32(digits).map { ApplicationAudioRoute(server: connection.serverName, recorderPID: $0, tag: tag) }
        }
    }

    /// The tag of a sink a recording made: `reel-app-<pid>` or `reel-app-<pid>.<n>`, from that
    /// name, its relays (`…-<n>`) or their monitors; `nil` for other sinks.
    package static func tag(ofSink sink: String) -> String? {
        var rest = Substring(sink)
        guard rest.hasPrefix("reel-app-") else { return nil }
        rest = rest.dropFirst("reel-app-".count)
        if rest.hasSuffix(".monitor") { rest = rest.dropLast(".monitor".count) }
        let pid = rest.prefix { $0.isNumber }
        guard !pid.isEmpty else { return nil }
        var tag = "reel-app-" + pid
        rest = rest.dropFirst(pid.count)
        if rest.hasPrefix(".") {
            let sequence = rest.dropFirst().prefix { $0.isNumber }
            guard !sequence.isEmpty else { return nil }
            tag += "." + sequence
            rest = rest.dropFirst(1 + sequence.count)
        }
        if rest.isEmpty { return tag }
        guard rest.hasPrefix("-"), rest.count > 1, rest.dropFirst().allSatisfy(\.isNumber) else { return nil }
        return tag
    }

    // MARK: - State files

    /// The folder of the state files: `$XDG_RUNTIME_DIR/reel`, or `/tmp/reel-<uid>`.
    package static func stateDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            return URL(fileURLWithPath: runtime, isDirectory: true).appendingPathComponent("reel", isDirectory: true)
        }
        return URL(fileURLWithPath: "/tmp/reel-\(getuid())", isDirectory: true)
    }

    /// The state file of the recording by `pid` (its `sequence`th).
    package static func stateFile(pid: Int32, sequence: Int = 1,
                                  environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        stateDirectory(environment: environment)
            .appendingPathComponent("app-audio-\(pid)" + (sequence == 1 ? "" : ".\(sequence)") + ".json")
    }

    /// Writes `route` to `url` atomically (a reader sees the old or the new one).
    package static func write(_ route: ApplicationAudioRoute, to url: URL) throws(ReelError) {
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            try JSONEncoder().encode(route).write(to: url, options: .atomic)
        } catch {
            throw ReelError(.ioFailure, "cannot write the application-audio state file \(url.path): \(error.localizedDescription)",
                            hint: "check that \(url.deletingLastPathComponent().path) is writable")
        }
    }

    /// Reads a state file, or `nil` when it is missing or unreadable.
    package static func read(_ url: URL) -> ApplicationAudioRoute? {
        guard let data = try? Data(contentsOf: url) else { return nil }
        return try? JSONDecoder().decode(ApplicationAudioRoute.self, from: data)
    }
}

extension LoadedModule {
    /// The value of `key=` among a module's arguments.
    static func value(_ key: String, in argument: String) -> String? {
        argument.split(separator: " ").first { $0.hasPrefix("\(key)=") }.map { String($0.dropFirst(key.count + 1)) }
    }
}

extension PlayingStream {
    /// The application's name, binary or process id, whichever is known first.
    var label: String {
        if !applicationName.isEmpty { return applicationName }
        if !binary.isEmpty { return binary }
        return processID.map { "process \($0)" } ?? "stream \(index)"
    }
}
