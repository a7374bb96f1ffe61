import Foundation
import ReelCore
@testable import ReelLinux
import Synchronization
import Testing

/// Which streams application-audio routing moves, how it follows streams that start and end,
/// and that restoring puts the server back exactly as it was: on a scripted server.
@Suite("Application audio routing on a scripted server")
struct ApplicationAudioRoutingTests {
    final class Notices: Sendable {
        let lines = Mutex<[String]>([])
        func add(_ line: String) { lines.withLock { $0.append(line) } }
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
        // The loopbacks' own streams were not moved (they are module streams).
        #expect(server.streams.filter(\.isModuleStream).map(\.sinkName) == ["reel-app-4242"])
        router.restore()
        #expect(server.routing == before)
    }

    @Test func streamsThatStartLaterAreTakenOrLeftAndEndedOnesForgotten() throws {
        let server = ScriptedPulseAudioRouting(sinks: ["speakers"])
        let notices = Notices()
        let (router, connection) = try Self.router(server, names: ["A"], notices: notices)
        try router.setUp()
        try router.startRouting()
        #expect(notices.all == ["no application 'A' is playing now: its sound is recorded when it starts"])
        // Nothing to relay yet: only the recorded sink.
        #expect(server.sinks == ["speakers", "reel-app-4242"])
        let first = server.play("A")
        server.play("B")
        try router.handle(connection.nextEvents(timeoutMicroseconds: 0))
        #expect(Self.sinks(server) == ["A": ["reel-app-4242-1"], "B": ["speakers"]])
        #expect(notices.all.last == "'A' started playing: recording its sound")
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
        #expect(notices.all[0].contains("'A' (0) cannot be moved"))
        router.restore()
        #expect(server.modules.isEmpty)
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

    @Test func twoRecordingsOfOneProcessKeepToTheirOwnSinks() throws {
        let server = ScriptedPulseAudioRouting(sinks: ["speakers"])
        server.play("A")
        server.play("B")
        let first = try server.connect(server: nil, clientName: "first")
        let second = try server.connect(server: nil, clientName: "second")
        let a = ApplicationAudioRouter(names: ["A"], excluding: false, connection: first, server: nil, recorderPID: 7,
                                       stateFile: nil, report: { _ in })
        // The second records everyone but C: not A, which the first has routed.
        let b = ApplicationAudioRouter(names: ["C"], excluding: true, connection: second, server: nil, recorderPID: 7,
                                       sequence: 2, stateFile: nil, report: { _ in })
        try a.setUp()
        try a.startRouting()
        try b.setUp()
        try b.startRouting()
        #expect(Self.sinks(server) == ["A": ["reel-app-7-1"], "B": ["reel-app-7.2-1"]])
        a.restore()
        #expect(Self.sinks(server) == ["A": ["speakers"], "B": ["reel-app-7.2-1"]])
        #expect(Set(server.sinks) == ["speakers", "reel-app-7.2", "reel-app-7.2-1"])
        b.restore()
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
}
