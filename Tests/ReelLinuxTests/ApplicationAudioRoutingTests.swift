import Foundation
import ReelCore
@testable import ReelLinux
import Synchronization
import Testing

/// Which streams application-audio routing moves, how it follows streams that start and end,
/// and that restoring puts the server back exactly as it was: on a scripted server.
@Suite("Application audio routing on a scripted server")
struct ApplicationAudioRoutingTests {
    /// What a router reported, each as a line: a note as it is, the others after their kind.
    final class Notices: Sendable {
        let lines = Mutex<[String]>([])
        func add(_ report: ApplicationAudioReport) {
            let line = switch report {
            case .note(let text): text
            case .silent(let text): "silent: \(text)"
            case .playing: "playing"
            case .incomplete(let text): "incomplete: \(text)"
            case .endedAnotherRecording(let text): "ended: \(text)"
            }
            lines.withLock { $0.append(line) }
        }
        var all: [String] { lines.withLock { $0 } }
    }

    static func router(_ server: ScriptedPulseAudioRouting, names: [String], excluding: Bool = false,
                       stateFile: URL? = nil, notices: Notices = Notices()) throws -> (ApplicationAudioRouter, any PulseAudioRoutingConnection) {
        let connection = try server.connect(server: nil, clientName: "test")
        try connection.subscribeToStreams()
        let router = ApplicationAudioRouter(names: names, excluding: excluding, connection: connection, server: nil,
                                            recorderPID: 4242, stateFile: stateFile, report: notices.add)
        return (router, connection)
    }

    /// Where each application's streams play, by application name.
    static func sinks(_ server: ScriptedPulseAudioRouting) -> [String: [String]] {
        Dictionary(grouping: server.streams.filter { !$0.isModuleStream }, by: \.applicationName).mapValues { $0.map(\.sinkName) }
    }

    @Test func onlyTheNamedApplicationMovesAndEveryStreamComesBack() throws {
        let server = ScriptedPulseAudioRouting(sinks: ["speakers", "headset"])
        server.play("Firefox", binary: "firefox", pid: 100)
        server.play("Music", binary: "rhythmbox", pid: 200, sink: "headset")
        server.play("Game", binary: "supertuxkart", pid: 300, sink: "headset")
        let before = server.routing
        let (router, _) = try Self.router(server, names: ["firefox", "300"])
        try router.setUp()
        try router.startRouting()
        // By program (any case) and by pid; each moved to the relay of its own sink.
        #expect(Self.sinks(server) == ["Firefox": ["reel-app-4242-1"], "Music": ["headset"], "Game": ["reel-app-4242-2"]])
        #expect(Set(server.sinks) == ["speakers", "headset", "reel-app-4242", "reel-app-4242-1", "reel-app-4242-2"])
        // Each relay plays into its original sink (a remap sink onto it) and is recorded.
        let remaps = server.modules.filter { $0.name == "module-remap-sink" }.map(\.argument)
        #expect(remaps.count == 2)
        #expect(remaps.contains { $0.hasPrefix("sink_name=reel-app-4242-1 master=speakers ") })
        #expect(remaps.contains { $0.hasPrefix("sink_name=reel-app-4242-2 master=headset ") })
        let loopbacks = server.modules.filter { $0.name == "module-loopback" }.map(\.argument)
        #expect(loopbacks.count == 2)
        #expect(loopbacks.contains { $0.hasPrefix("source=reel-app-4242-1.monitor sink=reel-app-4242 ") })
        #expect(loopbacks.contains { $0.hasPrefix("source=reel-app-4242-2.monitor sink=reel-app-4242 ") })
        #expect(router.route.moved.map(\.originalSink).sorted() == ["headset", "speakers"])
        router.restore()
        #expect(server.routing == before)
    }

    @Test func exceptMovesEveryApplicationButTheNamedOnesAndNoModuleStream() throws {
        let server = ScriptedPulseAudioRouting(sinks: ["speakers"])
        server.play("A")
        server.play("B")
        server.play("Call", binary: "zoom")
        let before = server.routing
        let (router, _) = try Self.router(server, names: ["a", "ZOOM"], excluding: true)
        try router.setUp()
        try router.startRouting()
        #expect(Self.sinks(server) == ["A": ["speakers"], "B": ["reel-app-4242-1"], "Call": ["speakers"]])
        // The loopback's and the relay's own streams were not moved (they are module streams).
        #expect(server.streams.filter(\.isModuleStream).map(\.sinkName).sorted() == ["reel-app-4242", "speakers"])
        router.restore()
        #expect(server.routing == before)
    }

    @Test func streamsThatStartLaterAreTakenOrLeftAndEndedOnesForgotten() throws {
        let server = ScriptedPulseAudioRouting(sinks: ["speakers"])
        let notices = Notices()
        let (router, connection) = try Self.router(server, names: ["A"], notices: notices)
        try router.setUp()
        try router.startRouting()
        #expect(notices.all == ["silent: " + ApplicationAudioRouter.notPlaying("A")])
        // Nothing to relay yet: only the recorded sink.
        #expect(server.sinks == ["speakers", "reel-app-4242"])
        let first = server.play("A")
        server.play("B")
        try router.handle(connection.nextEvents(timeoutMicroseconds: 0))
        #expect(Self.sinks(server) == ["A": ["reel-app-4242-1"], "B": ["speakers"]])
        #expect(notices.all.suffix(2) == ["'A' started playing: recording its sound", "playing"])
        server.end(first)
        let second = server.play("A")
        try router.handle(connection.nextEvents(timeoutMicroseconds: 0))
        #expect(router.route.moved.map(\.stream) == [second])
        // The relay made for the first stream serves the second.
        #expect(server.sinks.count == 3)
        router.restore()
        #expect(Self.sinks(server) == ["A": ["speakers"], "B": ["speakers"]])
        #expect(server.modules.isEmpty)
    }

    @Test func aStreamThatRefusesToMoveIsReportedAndLeftPlaying() throws {
        let server = ScriptedPulseAudioRouting(sinks: ["speakers"])
        server.play("A", dontMove: true)
        let notices = Notices()
        let (router, _) = try Self.router(server, names: ["A"], notices: notices)
        try router.setUp()
        try router.startRouting()
        #expect(Self.sinks(server) == ["A": ["speakers"]])
        #expect(router.route.moved.isEmpty)
        #expect(notices.all.count == 1)
        #expect(notices.all[0].hasPrefix("incomplete: ") && notices.all[0].contains("'A' (0) cannot be moved"))
        router.restore()
        #expect(server.modules.isEmpty)
    }

    /// Another program records the chosen stream alone (`parec --monitor-stream`): the move
    /// into the relay ends that recording (the server's doing), and that is said, naming it; a
    /// program recording the whole sink goes on and is not named. It ended without a word.
    @Test func aRecordingOfTheStreamAloneThatTheMoveEndsIsSaid() throws {
        let server = ScriptedPulseAudioRouting(sinks: ["speakers"])
        let stream = server.play("A")
        let alone = server.record("parec", onlyOf: stream)
        server.record("whole", monitorOf: "speakers")
        let notices = Notices()
        let (router, _) = try Self.router(server, names: ["A"], notices: notices)
        try router.setUp()
        try router.startRouting()
        #expect(server.recordings.map(\.label) == ["whole"])
        // An event of the source, not a note: it reaches the recording's events and summary.
        let said = notices.all.filter { $0.hasPrefix("ended: ") }
        #expect(said.count == 1, "\(notices.all)")
        #expect(said.first?.contains("the recording of that stream alone by 'parec' (record stream \(alone))") == true, "\(said)")
        #expect(!(said.first?.contains("by 'whole'") ?? true), "\(said)")
        router.restore()
    }

    @Test func restoringFromTheStateFileInAnotherProcessPutsEverythingBack() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reel-route-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = ScriptedPulseAudioRouting(sinks: ["speakers", "headset"])
        server.play("A", sink: "headset")
        server.play("B")
        let before = server.routing
        let file = ApplicationAudioRouter.stateFile(pid: 4242, environment: ["XDG_RUNTIME_DIR": folder.path])
        let (router, connection) = try Self.router(server, names: ["A"], stateFile: file)
        try router.setUp()
        try router.startRouting()
        let later = server.play("A")
        try router.handle(connection.nextEvents(timeoutMicroseconds: 0))
        // The recorder dies here: only its state file is left.
        let saved = try #require(ApplicationAudioRouter.read(file))
        #expect(saved == router.route)
        #expect(saved.moved.map(\.originalSink) == ["headset", "speakers"])
        let guardConnection = try server.connect(server: nil, clientName: "guard")
        let (streams, modules) = ApplicationAudioRouter.restore(saved, on: guardConnection)
        #expect(streams == 2)
        #expect(modules == 5)
        #expect(server.routing.filter { !$0.hasPrefix("stream \(later) ") } == before)
        #expect(Self.sinks(server)["A"] == ["headset", "speakers"])
    }

    @Test func aModuleLoadedJustBeforeADeathIsFoundByItsArguments() throws {
        let server = ScriptedPulseAudioRouting(sinks: ["speakers"])
        let connection = try server.connect(server: nil, clientName: "test")
        let unrelated = try connection.loadModule("module-null-sink", argument: "sink_name=reel-app-42421")
        // Written to the file before the move, but the module's index never was.
        _ = try connection.loadModule("module-null-sink", argument: "sink_name=reel-app-4242")
        let route = ApplicationAudioRoute(server: nil, recorderPID: 4242, tag: "reel-app-4242")
        ApplicationAudioRouter.restore(route, on: connection)
        #expect(server.modules.map(\.index) == [unrelated])
    }

    @Test func leftoversOfADeadRecorderAreRestoredAndThoseOfALiveOneKept() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reel-left-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let environment = ["XDG_RUNTIME_DIR": folder.path]
        let server = ScriptedPulseAudioRouting(sinks: ["speakers"])
        server.play("A")
        // A process that has ended: a child that exited and was reaped.
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/true")
        try child.run()
        child.waitUntilExit()
        let dead = child.processIdentifier
        let connection = try server.connect(server: nil, clientName: "test")
        let deadRouter = ApplicationAudioRouter(names: ["A"], excluding: false, connection: connection, server: nil, recorderPID: dead,
                                                stateFile: ApplicationAudioRouter.stateFile(pid: dead, environment: environment), report: { _ in })
        try deadRouter.setUp()
        try deadRouter.startRouting()
        let live = getpid()
        let liveFile = ApplicationAudioRouter.stateFile(pid: live, environment: environment)
        try ApplicationAudioRouter.write(ApplicationAudioRoute(server: nil, recorderPID: live, tag: "reel-app-\(live)"), to: liveFile)
        #expect(Self.sinks(server) == ["A": ["reel-app-\(dead)-1"]])
        let said = ApplicationAudioSource.restoreLeftovers(environment: environment, routing: server)
        #expect(said == ["reel process \(dead) died without restoring its application-audio routing: moved 1 stream(s) back to their sinks and unloaded 3 module(s)"])
        #expect(Self.sinks(server) == ["A": ["speakers"]])
        #expect(server.modules.isEmpty)
        #expect(FileManager.default.fileExists(atPath: liveFile.path))
        #expect(!FileManager.default.fileExists(atPath: ApplicationAudioRouter.stateFile(pid: dead, environment: environment).path))
    }

    /// A server that answers an unload a moment before the module is gone: the routing that
    /// was put back is said to be, not "could not be put back" (issue 26 item 18).
    @Test func routingPutBackIsSaidSoWhenTheServerUnloadsLater() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reel-left-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let environment = ["XDG_RUNTIME_DIR": folder.path]
        let server = ScriptedPulseAudioRouting(sinks: ["speakers"])
        server.play("A")
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/true")
        try child.run()
        child.waitUntilExit()
        let dead = child.processIdentifier
        let connection = try server.connect(server: nil, clientName: "test")
        let router = ApplicationAudioRouter(names: ["A"], excluding: false, connection: connection, server: nil, recorderPID: dead,
                                            stateFile: ApplicationAudioRouter.stateFile(pid: dead, environment: environment), report: { _ in })
        try router.setUp()
        try router.startRouting()
        server.unloadsLater(by: 2)
        let said = ApplicationAudioSource.restoreLeftovers(environment: environment, routing: server)
        #expect(said == ["reel process \(dead) died without restoring its application-audio routing: moved 1 stream(s) back to their sinks and unloaded 3 module(s)"])
        #expect(server.modules.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: ApplicationAudioRouter.stateFile(pid: dead, environment: environment).path))
    }

    @Test func twoRecordingsOfOneProcessKeepToTheirOwnSinks() throws {
        let server = ScriptedPulseAudioRouting(sinks: ["speakers"])
        server.play("A")
        server.play("B")
        let first = try server.connect(server: nil, clientName: "first")
        let second = try server.connect(server: nil, clientName: "second")
        let a = ApplicationAudioRouter(names: ["A"], excluding: false, connection: first, server: nil, recorderPID: 7,
                                       stateFile: nil, report: { _ in })
        // The second records everyone but C: A too, through the first's relay.
        let b = ApplicationAudioRouter(names: ["C"], excluding: true, connection: second, server: nil, recorderPID: 7,
                                       sequence: 2, stateFile: nil, report: { _ in })
        try a.setUp()
        try a.startRouting()
        try b.setUp()
        try b.startRouting()
        #expect(Self.sinks(server) == ["A": ["reel-app-7.2-1"], "B": ["reel-app-7.2-2"]])
        #expect(server.modules.contains { $0.argument.hasPrefix("sink_name=reel-app-7.2-1 master=reel-app-7-1 ") })
        a.restore()
        // The second's relay plays on into the speakers, where the first's did.
        #expect(Self.sinks(server) == ["A": ["reel-app-7.2-1"], "B": ["reel-app-7.2-2"]])
        #expect(Set(server.sinks) == ["speakers", "reel-app-7.2", "reel-app-7.2-1", "reel-app-7.2-2"])
        #expect(server.streams.filter { $0.isModuleStream && $0.sinkName == "speakers" }.count == 2)
        b.restore()
        #expect(Self.sinks(server) == ["A": ["speakers"], "B": ["speakers"]])
        #expect(server.modules.isEmpty)
        #expect(ApplicationAudioRouter.stateFile(pid: 7, sequence: 2, environment: ["XDG_RUNTIME_DIR": "/run/x"]).path
                == "/run/x/reel/app-audio-7.2.json")
    }

    @Test func isPlayedByMatchesNameBinaryOrPidIgnoringCase() {
        let stream = PlayingStream(index: 1, applicationName: "Firefox", binary: "firefox-esr", processID: 77, sinkName: "s")
        #expect(stream.isPlayed(by: "FIREFOX"))
        #expect(stream.isPlayed(by: "Firefox-ESR"))
        #expect(stream.isPlayed(by: "77"))
        #expect(!stream.isPlayed(by: "7"))
        #expect(!stream.isPlayed(by: "fire"))
    }

    @Test func aLoadRefusalUndoesWhatWasDone() throws {
        let server = ScriptedPulseAudioRouting(sinks: ["speakers", "reel-app-4242-1"])
        server.play("A")
        let (router, _) = try Self.router(server, names: ["A"])
        // The relay's name is taken: loading it fails after the recorded sink was made.
        try router.setUp()
        #expect(throws: ReelError.self) { try router.startRouting() }
        #expect(server.modules.isEmpty)
        #expect(Self.sinks(server) == ["A": ["speakers"]])
    }

    @Test func theSourceRestoresWhenItStopsAndPreparingWithoutAServerSaysSo() throws {
        let server = ScriptedPulseAudioRouting(sinks: ["speakers"])
        server.play("A")
        let before = server.routing
        let clock = ManualClock()
        let audio = ScriptedPulseAudioServer(clock: clock, answers: [.stream([.data(frames: 480, after: .zero)])])
        let source = ApplicationAudioSource(.only(["A"]), server: nil, format: ScriptedPulseAudioTests.format, guardCommand: nil,
                                            notices: { _ in }, routing: server, audioServer: audio, processID: 4242, stateFile: nil)
        #expect(try source.prepare() == .audio(ScriptedPulseAudioTests.format))
        try source.start(SourceContext(id: SourceID(1), clock: clock, origin: .zero, deliver: { _ in }, report: { _ in }))
        #expect(Self.sinks(server) == ["A": ["reel-app-4242-1"]])
        // The recorded sink is made in the recording's format, so it is converted once.
        #expect(server.modules.first?.argument.hasPrefix("sink_name=reel-app-4242 rate=48000 channels=2 ") == true)
        // A stream that starts while recording is followed by the source's own thread.
        let later = server.play("A")
        let deadline = Date().addingTimeInterval(5)
        while Self.sinks(server)["A"] != ["reel-app-4242-1", "reel-app-4242-1"] && Date() < deadline { usleep(5_000) }
        #expect(Self.sinks(server)["A"] == ["reel-app-4242-1", "reel-app-4242-1"])
        source.stop()
        #expect(server.routing.filter { !$0.hasPrefix("stream \(later) ") } == before)
        #expect(Self.sinks(server)["A"] == ["speakers", "speakers"])

        server.isRunning = false
        #expect(throws: ReelError.self) { try source.prepare() }
    }

    /// A process id no process has: a child that exited and was reaped.
    static func deadPID() throws -> Int32 {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/true")
        try child.run()
        child.waitUntilExit()
        return child.processIdentifier
    }

    @Test func aStateFileIsRestoredOnTheServerItNamesAndKeptWhenThatOneCannotBeReached() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reel-srv-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let recorded = ScriptedPulseAudioRouting(sinks: ["speakers"], name: "tcp:localhost:4713")
        let other = ScriptedPulseAudioRouting(sinks: ["speakers"], name: "/tmp/other/native")
        let servers = ScriptedPulseAudioServers([recorded, other], usual: other)
        recorded.play("A")
        let before = recorded.routing
        let dead = try Self.deadPID()
        let file = ApplicationAudioRouter.stateFile(pid: dead, environment: ["XDG_RUNTIME_DIR": folder.path])
        let clock = ManualClock()
        let audio = ScriptedPulseAudioServer(clock: clock, answers: [.stream([.data(frames: 480, after: .zero)])])
        // Recorded with no server string: the file still names the server that was reached.
        let source = ApplicationAudioSource(.only(["A"]), server: nil, format: ScriptedPulseAudioTests.format, guardCommand: nil,
                                            notices: { _ in }, routing: ScriptedPulseAudioServers([recorded], usual: recorded),
                                            audioServer: audio, processID: dead, stateFile: file)
        try source.start(SourceContext(id: SourceID(1), clock: clock, origin: .zero, deliver: { _ in }, report: { _ in }))
        #expect(ApplicationAudioRouter.read(file)?.server == "tcp:localhost:4713")
        // The recorder dies (its state file stays); a later run reaches another server.
        let copy = try Data(contentsOf: file)
        source.stop()
        try copy.write(to: file)
        recorded.isRunning = false
        let unreachable = ApplicationAudioSource.restoreLeftovers(environment: ["XDG_RUNTIME_DIR": folder.path], routing: servers)
        #expect(unreachable.count == 1)
        #expect(unreachable.first?.contains("cannot be reached now") == true, "\(unreachable)")
        #expect(FileManager.default.fileExists(atPath: file.path))
        // Once that server answers again, the file is restored on it, and only then removed.
        recorded.isRunning = true
        let connection = try recorded.connect(server: nil, clientName: "test")
        let router = ApplicationAudioRouter(names: ["A"], excluding: false, connection: connection, server: recorded.name,
                                            recorderPID: dead, stateFile: file, report: { _ in })
        try router.setUp()
        try router.startRouting()
        #expect(Self.sinks(recorded) == ["A": ["reel-app-\(dead)-1"]])
        let said = ApplicationAudioSource.restoreLeftovers(environment: ["XDG_RUNTIME_DIR": folder.path], routing: servers)
        #expect(said == ["reel process \(dead) died without restoring its application-audio routing: moved 1 stream(s) back to their sinks and unloaded 3 module(s)"])
        #expect(recorded.routing == before)
        #expect(other.modules.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: file.path))

        // A socket that is gone took the routing with it: the file goes too.
        try ApplicationAudioRouter.write(ApplicationAudioRoute(server: "/nonexistent-\(UUID().uuidString)/native", recorderPID: dead,
                                                               tag: "reel-app-\(dead)"), to: file)
        let gone = ApplicationAudioSource.restoreLeftovers(environment: ["XDG_RUNTIME_DIR": folder.path], routing: servers)
        #expect(gone.first?.contains("is gone, so nothing was left") == true, "\(gone)")
        #expect(!FileManager.default.fileExists(atPath: file.path))
    }

    @Test func routingOfADeadRecorderWithNoStateFileIsFoundOnTheServerAndPutBack() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reel-nofile-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = ScriptedPulseAudioRouting(sinks: ["speakers", "headset"])
        server.play("A", sink: "headset")
        server.play("B")
        server.play("C")
        let before = server.routing
        let dead = try Self.deadPID()
        let connection = try server.connect(server: nil, clientName: "test")
        // A recording in another runtime folder (or whose state file was lost) died.
        let deadRouter = ApplicationAudioRouter(names: ["A", "B"], excluding: false, connection: connection, server: nil,
                                                recorderPID: dead, stateFile: nil, report: { _ in })
        try deadRouter.setUp()
        try deadRouter.startRouting()
        // Something played straight into its recorded sink too.
        let onRecorded = server.play("D", sink: "reel-app-\(dead)")
        // A live recording's routing is left alone.
        let liveRouter = ApplicationAudioRouter(names: ["C"], excluding: false, connection: connection, server: nil,
                                                recorderPID: getpid(), stateFile: nil, report: { _ in })
        try liveRouter.setUp()
        try liveRouter.startRouting()
        #expect(Self.sinks(server) == ["A": ["reel-app-\(dead)-1"], "B": ["reel-app-\(dead)-2"], "C": ["reel-app-\(getpid())-1"],
                                       "D": ["reel-app-\(dead)"]])
        let said = ApplicationAudioSource.restoreLeftovers(environment: ["XDG_RUNTIME_DIR": folder.path], routing: server)
        #expect(said == ["reel process \(dead) ended without restoring its application-audio routing (reel-app-\(dead)…, no state file found): moved 3 stream(s) back to their sinks and unloaded 5 module(s)"])
        // Streams on a relay go back to the sink it played into; the one on the recorded sink to the default.
        #expect(Self.sinks(server) == ["A": ["headset"], "B": ["speakers"], "C": ["reel-app-\(getpid())-1"], "D": ["speakers"]])
        #expect(server.modules.allSatisfy { $0.argument.contains("reel-app-\(getpid())") })
        liveRouter.restore()
        #expect(server.routing.filter { !$0.hasPrefix("stream \(onRecorded) ") } == before)
        // Nothing left: said once.
        #expect(ApplicationAudioSource.restoreLeftovers(environment: ["XDG_RUNTIME_DIR": folder.path], routing: server).isEmpty)
    }

    @Test func theTagOfASinkIsReadOffItsName() {
        #expect(ApplicationAudioRouter.tag(ofSink: "reel-app-12") == "reel-app-12")
        #expect(ApplicationAudioRouter.tag(ofSink: "reel-app-12-3") == "reel-app-12")
        #expect(ApplicationAudioRouter.tag(ofSink: "reel-app-12.2-3.monitor") == "reel-app-12.2")
        #expect(ApplicationAudioRouter.tag(ofSink: "reel-app-12.monitor") == "reel-app-12")
        #expect(ApplicationAudioRouter.tag(ofSink: "reel-app-x") == nil)
        #expect(ApplicationAudioRouter.tag(ofSink: "reel-app-12-a") == nil)
        #expect(ApplicationAudioRouter.tag(ofSink: "speakers") == nil)
    }

    @Test func aStreamAnotherReelRecordsIsRecordedThroughItsRelayAndOneMovedAwayOrNeverPlayingIsSaid() throws {
        let server = ScriptedPulseAudioRouting(sinks: ["speakers", "headset"])
        let a = server.play("A")
        // Another reel, running (this process), records B.
        let otherConnection = try server.connect(server: nil, clientName: "other")
        try otherConnection.subscribeToStreams()
        let other = ApplicationAudioRouter(names: ["B"], excluding: false, connection: otherConnection, server: nil,
                                           recorderPID: getpid(), stateFile: nil, report: { _ in })
        try other.setUp()
        let b = server.play("B")
        try other.startRouting()
        let otherRelay = "reel-app-\(getpid())-1"
        let notices = Notices()
        let (router, connection) = try Self.router(server, names: ["A", "B", "Never"], notices: notices)
        try router.setUp()
        try router.startRouting()
        // B is taken through the other reel's relay: it plays through both, and both record it.
        #expect(server.streams.first { $0.index == b }?.sinkName == "reel-app-4242-2")
        #expect(server.modules.contains { $0.argument.hasPrefix("sink_name=reel-app-4242-2 master=\(otherRelay) ") })
        #expect(notices.all == ["silent: " + ApplicationAudioRouter.notPlaying("Never")], "\(notices.all)")
        // A second stream of B, which the other reel takes first: taken from there too.
        let b2 = server.play("B")
        try other.handle(otherConnection.nextEvents(timeoutMicroseconds: 0))
        try router.handle(connection.nextEvents(timeoutMicroseconds: 0))
        try router.handle(connection.nextEvents(timeoutMicroseconds: 0))
        #expect(server.streams.first { $0.index == b2 }?.sinkName == "reel-app-4242-2")
        // A third that this one takes first: the other takes it through this one's relay, and
        // this one, finding its relay on the way, leaves it there.
        let b3 = server.play("B")
        try router.handle(connection.nextEvents(timeoutMicroseconds: 0))
        try other.handle(otherConnection.nextEvents(timeoutMicroseconds: 0))
        try router.handle(connection.nextEvents(timeoutMicroseconds: 0))
        try other.handle(otherConnection.nextEvents(timeoutMicroseconds: 0))
        let b3Sink = try #require(server.streams.first { $0.index == b3 }?.sinkName)
        #expect(b3Sink.hasPrefix("reel-app-\(getpid())-"), "\(server.routing)")
        #expect(server.modules.contains { $0.argument.hasPrefix("sink_name=\(b3Sink) master=reel-app-4242-1 ") }, "\(server.routing)")
        #expect(router.route.moved.contains { $0.stream == b3 })
        #expect(notices.all.count == 1, "\(notices.all)")
        // The user moves A away from the relay: no longer recorded, said once.
        server.move(a, to: "headset")
        try router.handle(connection.nextEvents(timeoutMicroseconds: 0))
        try router.handle(connection.nextEvents(timeoutMicroseconds: 0))
        #expect(notices.all.filter { $0.contains("was moved away") } == ["incomplete: the stream of 'A' (\(a)) was moved away from reel's relay to 'headset' (by the user, or because its sink was removed): it is no longer recorded"])
        #expect(!router.route.moved.contains { $0.stream == a })
        // A stream whose relay is removed goes to the default sink: said too.
        let a2 = server.play("A", sink: "headset")
        try router.handle(connection.nextEvents(timeoutMicroseconds: 0))
        let headsetRelay = try #require(server.streams.first { $0.index == a2 }?.sinkName)
        let relay = try #require(server.modules.first { $0.argument.hasPrefix("sink_name=\(headsetRelay) ") })
        try otherConnection.unloadModule(relay.index)
        try router.handle(connection.nextEvents(timeoutMicroseconds: 0))
        #expect(notices.all.contains { $0.hasPrefix("incomplete: the stream of 'A' (\(a2)) was moved away from reel's relay to 'speakers'") }, "\(notices.all)")
        // Whichever ends first, the other keeps B, and nothing is left after both.
        let beforeRestore = server.routing
        router.restore()
        let bSinks = server.streams.filter { $0.applicationName == "B" }.map(\.sinkName)
        #expect(bSinks.allSatisfy { $0.hasPrefix("reel-app-\(getpid())-") }, "\(beforeRestore)\n\(server.routing)")
        #expect(bSinks.filter { $0 == otherRelay }.count == 2, "\(server.routing)")
        // The other's relay that played into this one's plays into the speakers now.
        #expect(RelayMap(modules: server.modules, streams: server.streams).master(of: b3Sink) == "speakers")
        other.restore()
        #expect(server.modules.isEmpty)
        #expect(Set(server.streams.filter { !$0.isModuleStream }.map(\.sinkName)).isSubset(of: ["speakers", "headset"]))
    }

    @Test func theSourceIsLostAndTheRoutingPutBackWhenItsRecordedSinkIsUnloaded() throws {
        let server = ScriptedPulseAudioRouting(sinks: ["speakers"])
        server.play("A")
        let before = server.routing
        let clock = ManualClock()
        let audio = ScriptedPulseAudioServer(clock: clock, answers: [.stream([.data(frames: 480, after: .zero)])])
        let source = ApplicationAudioSource(.only(["A"]), server: nil, format: ScriptedPulseAudioTests.format, guardCommand: nil,
                                            notices: { _ in }, routing: server, audioServer: audio, processID: 4242, stateFile: nil)
        let events = Mutex<[String]>([])
        try source.start(SourceContext(id: SourceID(1), clock: clock, origin: .zero, deliver: { _ in }, report: { event in
            if case .lost(let error) = event { events.withLock { $0.append(error.message) } }
        }))
        #expect(Self.sinks(server) == ["A": ["reel-app-4242-1"]])
        let other = try server.connect(server: nil, clientName: "someone")
        let recorded = try #require(server.modules.first { $0.argument.hasPrefix("sink_name=reel-app-4242 ") })
        try other.unloadModule(recorded.index)
        let deadline = Date().addingTimeInterval(5)
        while events.withLock({ $0.isEmpty }) && Date() < deadline { usleep(5_000) }
        #expect(events.withLock { $0 } == ["app audio of 'A' can no longer be recorded: the sink reel made to record it was unloaded by another program while recording"])
        // Put back at once, not when the session stops the source.
        #expect(server.routing == before)
        source.stop()
        #expect(server.routing == before)
    }
}
