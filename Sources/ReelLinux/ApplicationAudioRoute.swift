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

    /// Whether a module belongs to this recording: the sink it makes (`sink_name=`) or a
    /// loopback's ends (`source=`, `sink=`) are this recording's. (A relay of another recording
    /// may name one of this recording's relays as its `master=`: that one is not this one's.)
    package func owns(_ module: LoadedModule) -> Bool {
        Self.namedSinks(module).contains(where: owns(sink:))
    }

    /// The sinks (or monitors) a module's own arguments name: what it makes or connects.
    static func namedSinks(_ module: LoadedModule) -> [String] {
        ["sink_name", "sink", "source"].compactMap { LoadedModule.value($0, in: module.argument) }
    }
}

extension ApplicationAudioRouter {
    /// Puts back what `route` changed on `connection`'s server: the applications' streams on
    /// the route's relays go back to the sinks they came from (where the relay plays now when
    /// that one is gone, or the default sink); another recording's relay that plays into one of
    /// this route's (it took a stream from this one: see `ApplicationAudioRouter`) is moved on
    /// to where this route's relay plays, so that it goes on recording; then the route's
    /// loopbacks and sinks are unloaded.
    ///
    /// - Returns: how many streams were moved back and modules unloaded.
    @discardableResult
    package static func restore(_ route: ApplicationAudioRoute,
                                on connection: any PulseAudioRoutingConnection) -> (streams: Int, modules: Int) {
        var streamsBack = 0, unloaded = 0
        let sinks = (try? connection.sinkNames()) ?? []
        let modules = (try? connection.modules()) ?? []
        let streams = (try? connection.playingStreams()) ?? []
        let fallback = (try? connection.defaultSink()).flatMap { $0 }.flatMap { route.owns(sink: $0) ? nil : $0 }
        let relays = RelayMap(modules: modules, streams: streams)
        /// Where a relay of this route leads, past this route's own sinks.
        func beyond(_ sink: String) -> String? {
            var sink = sink
            for _ in 0..<16 {
                guard route.owns(sink: sink) else { return sinks.contains(sink) ? sink : nil }
                guard let next = relays.master(of: sink) else { return nil }
                sink = next
            }
            return nil
        }
        for stream in streams where route.owns(sink: stream.sinkName) {
            let target: String?
            if stream.isModuleStream {
                // This route's own loopbacks play into its recorded sink and go with it.
                guard let owner = stream.ownerModule, let module = modules.first(where: { $0.index == owner }),
                      module.name == "module-remap-sink", !route.owns(module) else { continue }
                target = beyond(stream.sinkName) ?? fallback
            } else {
                let original = route.moved.last(where: { $0.stream == stream.index })?.originalSink
                target = original.flatMap { sinks.contains($0) && !route.owns(sink: $0) ? $0 : nil }
                    ?? beyond(stream.sinkName) ?? fallback ?? sinks.first { !route.owns(sink: $0) }
            }
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
            for sink in ApplicationAudioRoute.namedSinks(module) { if let tag = tag(ofSink: sink) { tags.insert(tag) } }
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

/// Where each relay (a remap sink) plays now: its master when it was made, or the sink its
/// module stream was moved to since (a recording that ended moved another's relay on).
struct RelayMap {
    private var current: [String: String] = [:]

    init(modules: [LoadedModule], streams: [PlayingStream]) {
        for module in modules where module.name == "module-remap-sink" {
            guard let relay = LoadedModule.value("sink_name", in: module.argument) else { continue }
            current[relay] = streams.first { $0.ownerModule == module.index }?.sinkName
                ?? LoadedModule.value("master", in: module.argument)
        }
    }

    /// The sink `relay` plays into, or `nil` when it is not a relay.
    func master(of relay: String) -> String? { current[relay] }
}

extension PlayingStream {
    /// The application's name, binary or process id, whichever is known first.
    package var label: String {
        if !applicationName.isEmpty { return applicationName }
        if !binary.isEmpty { return binary }
        return processID.map { "process \($0)" } ?? "stream \(index)"
    }
}
