import Foundation
import ReelCore
@testable import ReelLinux
import Synchronization
import Testing

/// Application audio on a PipeWire server (issue 26, items 1, 3 and 4): chosen applications
/// are linked into a sink of the recording's own, nothing is moved, any number of recordings
/// link the same application, and a restarted daemon is linked again; on a scripted graph.
@Suite struct ApplicationAudioLinkingTests {
    typealias Collected = ApplicationAudioSharingTests.Collected

    /// A linker on its own connection to `graph`, its reports collected as lines.
    static func linker(_ graph: ScriptedPipeWireGraph, names: [String], excluding: Bool = false, sink: String = "reel-app-7",
                       reports: Collected<String>) throws -> (ApplicationAudioLinker, any PipeWireGraphConnection) {
        let connection = try graph.connect(remote: nil)
        let linker = ApplicationAudioLinker(names: names, excluding: excluding, sinkName: sink, connection: connection) { said in
            switch said {
            case .note(let text): reports.add(text)
            case .silent(let text): reports.add("silent: \(text)")
            case .playing: reports.add("playing")
            case .incomplete(let text): reports.add("incomplete: \(text)")
            case .endedAnotherRecording(let text): reports.add("ended: \(text)")
            }
        }
        try linker.handle(try connection.nextEvents(timeoutMicroseconds: 0))
        return (linker, connection)
    }

    @Test func onlyTheNamedApplicationsAreLinkedChannelByChannelAndAMonoOneToBoth() throws {
        let graph = ScriptedPipeWireGraph()
        let firefox = graph.play("Firefox", binary: "firefox", pid: 100)
        let music = graph.play("Music", binary: "rhythmbox", pid: 200)
        let game = graph.play("Game", binary: "supertuxkart", pid: 300, channels: ["MONO"])
        let reports = Collected<String>()
        let (linker, connection) = try Self.linker(graph, names: ["FIREFOX", "300"], reports: reports)
        let sink = graph.addSink("reel-app-7")
        try linker.handle(try connection.nextEvents(timeoutMicroseconds: 0))
        #expect(graph.nodes(linkedTo: sink) == [firefox, game])
        #expect(!graph.nodes(linkedTo: sink).contains(music))
        // Two links for the stereo one (FL, FR), two for the mono one (to each side).
        #expect(graph.links.count == 4)
        #expect(reports.all.isEmpty, "\(reports.all)")
        // Nothing is moved: every application keeps its own ports and plays on.
        #expect(graph.nodes.filter(\.isApplicationOutput).count == 3)
    }

    @Test func anApplicationNotPlayingIsSilentUntilItStartsAndIsLinkedThen() throws {
        let graph = ScriptedPipeWireGraph()
        graph.addSink("reel-app-7")
        let reports = Collected<String>()
        let (linker, connection) = try Self.linker(graph, names: ["A", "Never"], reports: reports)
        #expect(reports.all == ["silent: " + ApplicationAudioRouter.notPlaying("A"), "silent: " + ApplicationAudioRouter.notPlaying("Never")])
        let a = graph.play("A")
        try linker.handle(try connection.nextEvents(timeoutMicroseconds: 0))
        #expect(graph.nodes(linkedTo: graph.nodes.first { $0.name == "reel-app-7" }!.id) == [a])
        #expect(reports.all.suffix(3) == ["'A' started playing: recording its sound", "playing", "silent: " + ApplicationAudioRouter.notPlaying("Never")])
        // It stops and starts again: linked again, no news.
        graph.remove(a)
        let again = graph.play("A")
        try linker.handle(try connection.nextEvents(timeoutMicroseconds: 0))
        #expect(graph.nodes(linkedTo: graph.nodes.first { $0.name == "reel-app-7" }!.id) == [again])
        #expect(reports.all.count == 5)
    }

    @Test func exceptLinksEveryApplicationButTheNamedOnesAndNoSink() throws {
        let graph = ScriptedPipeWireGraph()
        let a = graph.play("A")
        let call = graph.play("Call", binary: "zoom")
        graph.addSink("speakers", mediaClass: "Audio/Sink")
        let sink = graph.addSink("reel-app-7")
        let reports = Collected<String>()
        let (linker, connection) = try Self.linker(graph, names: ["zoom"], excluding: true, reports: reports)
        #expect(graph.nodes(linkedTo: sink) == [a])
        #expect(!graph.nodes(linkedTo: sink).contains(call))
        #expect(reports.all.isEmpty)
        withExtendedLifetime((linker, connection)) {}
    }

    @Test func aRefusedLinkIsSaid() throws {
        let graph = ScriptedPipeWireGraph()
        graph.play("A")
        graph.refusesLinks = true
        let reports = Collected<String>()
        let (linker, connection) = try Self.linker(graph, names: ["A"], reports: reports)
        graph.addSink("reel-app-7")
        try linker.handle(try connection.nextEvents(timeoutMicroseconds: 0))
        try linker.handle(try connection.nextEvents(timeoutMicroseconds: 0))
        #expect(reports.all.contains { $0.hasPrefix("incomplete: the sound of 'A' cannot be linked to reel's sink") }, "\(reports.all)")
    }

    @Test func threeRecordingsLinkOneApplicationAndWhatOneMadeGoesWithIt() throws {
        let graph = ScriptedPipeWireGraph()
        let a = graph.play("A")
        let reports = Collected<String>()
        var recordings: [(ApplicationAudioLinker, (any PipeWireGraphConnection)?, UInt32)] = []
        for n in 1...3 {
            let (linker, connection) = try Self.linker(graph, names: ["A"], sink: "reel-app-\(n)", reports: reports)
            let sink = graph.addSink("reel-app-\(n)")
            recordings.append((linker, connection, sink))
            for (linker, connection, _) in recordings { try linker.handle(try connection!.nextEvents(timeoutMicroseconds: 0)) }
        }
        #expect(recordings.allSatisfy { graph.nodes(linkedTo: $0.2) == [a] })
        // The second ends (its connection closes, as when its process is killed): the others keep A.
        recordings[1].1 = nil
        graph.remove(recordings[1].2)
        #expect(graph.nodes(linkedTo: recordings[0].2) == [a])
        #expect(graph.nodes(linkedTo: recordings[2].2) == [a])
        #expect(graph.links.count == 4)
        #expect(reports.all.isEmpty)
    }

    /// Records what a capture on the scripted graph would: the audio of a scripted PulseAudio
    /// server, and the recording's sink appearing in the graph when the recording opens (and
    /// going when it closes).
    struct SinkMakingCapture: PulseAudioServer {
        let audio: ScriptedPulseAudioServer
        let graph: ScriptedPipeWireGraph

        func checkDevice(_ request: PulseRecordRequest) throws(ReelError) {}

        func openRecording(_ request: PulseRecordRequest, isCancelled: @escaping () -> Bool) throws(ReelError) -> any PulseAudioRecording {
            let recording = try audio.openRecording(request, isCancelled: isCancelled)
            graph.addSink(String((request.device ?? "").dropLast(".monitor".count)))
            return recording
        }
    }

    @Test func theSourceOnPipeWireLinksMovesNothingAndComesBackAfterARestart() throws {
        let pulse = ScriptedPulseAudioRouting(sinks: ["auto_null"])
        pulse.product = "PulseAudio (on PipeWire 0.3.65)"
        let graph = ScriptedPipeWireGraph()
        graph.addSink("auto_null", mediaClass: "Audio/Sink")
        let a = graph.play("A")
        let clock = ManualClock()
        let steady = Array(repeating: ScriptedPulseAudioServer.Step.data(frames: 480, after: MediaTime(value: 10, timescale: 1000)), count: 20)
        // The recording's own loss and return are PulseAudioSource's (see ScriptedPulseAudioTests);
        // here its sink is made anew by hand when the daemon is back.
        let audio = ScriptedPulseAudioServer(clock: clock, answers: [.stream(steady)])
        let events = Collected<String>(), notices = Collected<String>()
        let source = ApplicationAudioSource(.only(["A"]), server: nil, format: ScriptedPulseAudioTests.format, guardCommand: nil,
                                            notices: notices.add, routing: pulse, audioServer: audio, processID: 4242, stateFile: nil,
                                            graph: graph, capture: { _ in SinkMakingCapture(audio: audio, graph: graph) })
        try source.start(SourceContext(id: SourceID(1), clock: clock, origin: .zero, deliver: { _ in }, report: { event in
            switch event {
            case .interrupted: events.add("interrupted")
            case .resumed: events.add("resumed")
            default: events.add("\(event)")
            }
        }))
        func sink() -> UInt32? { graph.nodes.first { $0.name == "reel-app-4242" }?.id }
        func wait(_ what: String, _ done: () -> Bool) {
            let deadline = Date().addingTimeInterval(10)
            while !done() && Date() < deadline { usleep(5_000) }
            #expect(done(), "\(what): \(events.all) \(notices.all)")
        }
        wait("A linked into the recording's sink") { sink().map { graph.nodes(linkedTo: $0) == [a] } ?? false }
        // Nothing moved, nothing loaded on the PulseAudio side.
        #expect(pulse.modules.isEmpty)
        #expect(pulse.changeCount == 0)
        // The daemon restarts; A plays again; the recording makes its sink anew; A is linked again.
        graph.restart()
        graph.addSink("auto_null", mediaClass: "Audio/Sink")
        let again = graph.play("A")
        graph.addSink("reel-app-4242")
        wait("A linked again after the restart") { sink().map { graph.nodes(linkedTo: $0) == [again] } ?? false }
        #expect(notices.all.contains { $0.contains("PipeWire is back") })
        #expect(events.all.isEmpty, "\(events.all)")
        source.stop()
        // The links went with the source's connection.
        #expect(graph.links.isEmpty)
    }

    @Test func pulseAudioItselfOrAPipeWireThatCannotBeReachedIsRouted() throws {
        let pulse = ScriptedPulseAudioRouting(sinks: ["speakers"])
        let graph = ScriptedPipeWireGraph()
        graph.addSink("speakers", mediaClass: "Audio/Sink")
        let notices = Collected<String>()
        func method() throws -> String {
            switch try ApplicationAudioMethod.find(server: nil, routing: pulse, graph: graph, environment: [:], notices: notices.add) {
            case .linking: "linking"
            case .routing(let reason): "routing: \(reason)"
            }
        }
        #expect(try method() == "routing: the audio server is pulseaudio")
        #expect(notices.all.isEmpty)
        pulse.product = "PulseAudio (on PipeWire 0.3.65)"
        #expect(try method() == "linking")
        // Another PipeWire than the one behind the server: its sinks are not the server's.
        let other = ScriptedPipeWireGraph()
        other.addSink("elsewhere", mediaClass: "Audio/Sink")
        let elsewhere = try ApplicationAudioMethod.find(server: nil, routing: pulse, graph: other, environment: [:], notices: notices.add)
        if case .linking = elsewhere { Issue.record("another daemon's graph was taken") }
        #expect(notices.all.last?.contains("is not the one behind the audio server") == true, "\(notices.all)")
        graph.isRunning = false
        #expect(try method().hasPrefix("routing: the audio server is PulseAudio (on PipeWire 0.3.65), but PipeWire cannot be reached directly"))
        #expect(notices.all.last?.hasSuffix("recording application audio through PulseAudio modules instead") == true)
        // pipewire-pulse's socket names the daemon beside it.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reel-pw-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("pulse"), withIntermediateDirectories: true)
        #expect(ApplicationAudioMethod.remote(pulseServer: "unix:\(folder.path)/pulse/native", environment: [:]) == nil)
        _ = FileManager.default.createFile(atPath: folder.appendingPathComponent("pipewire-0").path, contents: nil)
        #expect(ApplicationAudioMethod.remote(pulseServer: "unix:\(folder.path)/pulse/native", environment: [:]) == folder.path + "/pipewire-0")
        #expect(ApplicationAudioMethod.remote(pulseServer: "unix:\(folder.path)/pulse/native", environment: ["PIPEWIRE_REMOTE": "x"]) == "x")
        #expect(ApplicationAudioMethod.remote(pulseServer: "tcp:host:4713", environment: [:]) == nil)
    }
}
