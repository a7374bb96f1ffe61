import Foundation
import ReelCore
@testable import ReelLinux
import Synchronization
import Testing

/// Several recordings of one application's sound on a PulseAudio server, started and stopped in
/// any order and one of them killed, and an audio server that restarts: on a scripted server
/// (issue 26, items 1 and 3).
@Suite struct ApplicationAudioSharingTests {
    /// What came, in order, from any thread.
    final class Collected<Item: Sendable>: Sendable {
        private let items = Mutex<[Item]>([])
        func add(_ item: Item) { items.withLock { $0.append(item) } }
        var all: [Item] { items.withLock { $0 } }
    }

    /// A router of its own connection, for the recording of process `pid`.
    final class Recording {
        let router: ApplicationAudioRouter
        let connection: any PulseAudioRoutingConnection
        let reports = Collected<ApplicationAudioReport>()

        init(_ server: ScriptedPulseAudioRouting, pid: Int32, names: [String], folder: URL) throws {
            connection = try server.connect(server: nil, clientName: "recording \(pid)")
            try connection.subscribeToStreams()
            let file = ApplicationAudioRouter.stateFile(pid: pid, environment: ["XDG_RUNTIME_DIR": folder.path])
            let reports = self.reports
            router = ApplicationAudioRouter(names: names, excluding: false, connection: connection, server: nil, recorderPID: pid,
                                            stateFile: file, report: reports.add)
            try router.setUp()
            try router.startRouting()
        }

        var tag: String { router.recordedSink }
    }

    /// Lets every recording handle what happened until nothing more does.
    static func settle(_ recordings: [Recording]) throws {
        for _ in 0..<10 {
            var any = false
            for recording in recordings {
                let events = try recording.connection.nextEvents(timeoutMicroseconds: 0)
                any = any || !events.isEmpty
                try recording.router.handle(events)
            }
            if !any { return }
        }
    }

    /// The recordings whose recorded sink what plays on `stream` reaches: relay by relay, each
    /// relay's loopback carries it into its recording's sink.
    static func recordings(reached stream: UInt32, on server: ScriptedPulseAudioRouting) -> Set<String> {
        let relays = RelayMap(modules: server.modules, streams: server.streams)
        guard var sink = server.streams.first(where: { $0.index == stream })?.sinkName else { return [] }
        var reached: Set<String> = []
        for _ in 0..<16 {
            guard let next = relays.master(of: sink) else { break }
            if let tag = ApplicationAudioRouter.tag(ofSink: sink),
               server.modules.contains(where: { $0.name == "module-loopback" && $0.argument.hasPrefix("source=\(sink).monitor sink=\(tag) ") }) {
                reached.insert(tag)
            }
            sink = next
        }
        return reached
    }

    @Test func threeRecordingsOfOneApplicationStartedAndStoppedInAnyOrderAndOneKilledEachKeepIt() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reel-share-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = ScriptedPulseAudioRouting(sinks: ["speakers", "headset"])
        let a = server.play("A")
        server.play("B")
        let before = server.routing
        let first = try Recording(server, pid: 11, names: ["A"], folder: folder)
        #expect(Self.recordings(reached: a, on: server) == [first.tag])
        let second = try Recording(server, pid: 22, names: ["a"], folder: folder)
        try Self.settle([first, second])
        #expect(Self.recordings(reached: a, on: server) == [first.tag, second.tag], "\(server.routing)")
        let third = try Recording(server, pid: 33, names: ["A", "B"], folder: folder)
        try Self.settle([first, second, third])
        #expect(Self.recordings(reached: a, on: server) == [first.tag, second.tag, third.tag], "\(server.routing)")
        // The second is killed: its guard restores from its state file, in another process.
        let file = try #require(second.router.stateFile)
        let route = try #require(ApplicationAudioRouter.read(file))
        ApplicationAudioRouter.restore(route, on: try server.connect(server: nil, clientName: "guard"))
        try Self.settle([first, third])
        #expect(Self.recordings(reached: a, on: server) == [first.tag, third.tag], "\(server.routing)")
        // A stream that starts now, on the other sink, is taken by both.
        let later = server.play("A", sink: "headset")
        try Self.settle([first, third])
        #expect(Self.recordings(reached: later, on: server) == [first.tag, third.tag], "\(server.routing)")
        // The first stops; a fourth starts; the third stops.
        first.router.restore()
        try Self.settle([third])
        #expect(Self.recordings(reached: a, on: server) == [third.tag], "\(server.routing)")
        #expect(Self.recordings(reached: later, on: server) == [third.tag], "\(server.routing)")
        let fourth = try Recording(server, pid: 44, names: ["A"], folder: folder)
        try Self.settle([third, fourth])
        #expect(Self.recordings(reached: a, on: server) == [third.tag, fourth.tag], "\(server.routing)")
        third.router.restore()
        try Self.settle([fourth])
        #expect(Self.recordings(reached: a, on: server) == [fourth.tag], "\(server.routing)")
        #expect(Self.recordings(reached: later, on: server) == [fourth.tag], "\(server.routing)")
        fourth.router.restore()
        // Nothing was ever said to be missing, and everything is back where it was.
        for recording in [first, second, third, fourth] {
            #expect(!recording.reports.all.contains { if case .incomplete = $0 { true } else { false } })
        }
        #expect(server.routing.filter { !$0.hasPrefix("stream \(later) ") } == before)
        #expect(server.streams.first { $0.index == later }?.sinkName == "headset")
    }

    /// An application-audio source on scripted servers, its events and notices collected.
    final class Source {
        let clock = ManualClock()
        let events = Collected<String>()
        let notices = Collected<String>()
        let source: ApplicationAudioSource

        init(_ routing: ScriptedPulseAudioRouting, audio: [ScriptedPulseAudioServer.Answer]) throws {
            let notices = self.notices
            source = ApplicationAudioSource(.only(["A"]), server: nil, format: ScriptedPulseAudioTests.format, guardCommand: nil,
                                            notices: notices.add, routing: routing,
                                            audioServer: ScriptedPulseAudioServer(clock: clock, answers: audio),
                                            processID: 4242, stateFile: nil)
            let events = self.events
            try source.start(SourceContext(id: SourceID(1), clock: clock, origin: .zero, deliver: { _ in }, report: { event in
                let word = switch event {
                case .interrupted: "interrupted"
                case .resumed: "resumed"
                case .lost(let error): "lost: \(error.message)"
                case .silent: "silent"
                case .incomplete(let error): "incomplete: \(error.message)"
                case .endedAnotherRecording(let text): "ended another: \(text)"
                case .droppedFrames, .ended, .droppedAudio, .missedAudio: "other"
                }
                events.add(word)
            }))
        }

        func wait(_ what: String, until done: () -> Bool) {
            let deadline = Date().addingTimeInterval(10)
            while !done() && Date() < deadline { usleep(10_000) }
            #expect(done(), "\(what): \(events.all) \(notices.all)")
        }
    }

    /// Another program records the chosen stream alone: the source's start, moving the stream,
    /// ends that recording, and the source says so as its event (for the recording's events
    /// and summary), not as a notice only a command-line tool prints (s5 F14).
    @Test func aRecordingTheMoveEndsIsTheSourcesEvent() throws {
        let server = ScriptedPulseAudioRouting(sinks: ["speakers"])
        let stream = server.play("A")
        let alone = server.record("parec", onlyOf: stream)
        let steady = Array(repeating: ScriptedPulseAudioServer.Step.data(frames: 480, after: MediaTime(value: 10, timescale: 1000)), count: 5)
        let recording = try Source(server, audio: [.stream(steady)])
        recording.wait("said as an event") { recording.events.all.contains { $0.hasPrefix("ended another: ") } }
        let said = recording.events.all.filter { $0.hasPrefix("ended another: ") }
        #expect(said.count == 1 && said[0].contains("by 'parec' (record stream \(alone))"), "\(said)")
        #expect(!recording.notices.all.contains { $0.contains("parec") }, "\(recording.notices.all)")
        recording.source.stop()
    }

    @Test func afterTheServerRestartsTheApplicationIsRoutedAgainAndTheSourceResumes() throws {
        let server = ScriptedPulseAudioRouting(sinks: ["speakers"])
        server.play("A")
        let steady = Array(repeating: ScriptedPulseAudioServer.Step.data(frames: 480, after: MediaTime(value: 10, timescale: 1000)), count: 20)
        let recording = try Source(server, audio: [.stream(steady + [.serverGone(after: MediaTime(value: 10, timescale: 1000))]),
                                                   .stream(steady)])
        #expect(ApplicationAudioRoutingTests.sinks(server) == ["A": ["reel-app-4242-1"]])
        // The server restarts; the application connects again and plays.
        server.restart()
        let again = server.play("A")
        recording.wait("routed again on the restarted server") {
            server.streams.first { $0.index == again }?.sinkName == "reel-app-4242-1"
        }
        recording.wait("interrupted, then resumed") { recording.events.all == ["interrupted", "resumed"] }
        #expect(recording.notices.all.contains { $0.contains("the audio server is back") })
        #expect(server.modules.contains { $0.argument.hasPrefix("sink_name=reel-app-4242 ") })
        recording.source.stop()
        #expect(server.modules.isEmpty)
        #expect(ApplicationAudioRoutingTests.sinks(server) == ["A": ["speakers"]])
    }

    @Test func aServerThatComesBackRefusingTheRoutingEndsTheSourceSayingSo() throws {
        let server = ScriptedPulseAudioRouting(sinks: ["speakers"])
        server.play("A")
        let steady = Array(repeating: ScriptedPulseAudioServer.Step.data(frames: 480, after: MediaTime(value: 10, timescale: 1000)), count: 20)
        let recording = try Source(server, audio: [.stream(steady + [.serverGone(after: MediaTime(value: 10, timescale: 1000))])])
        server.refusesModules = true
        server.restart()
        recording.wait("lost, truthfully") { recording.events.all.contains { $0.hasPrefix("lost: ") } }
        let lost = recording.events.all.first { $0.hasPrefix("lost: ") } ?? ""
        #expect(lost.contains("cannot route the applications' sound on the restarted audio server"), "\(lost)")
        #expect(!recording.events.all.contains("resumed"))
        recording.source.stop()
    }
}
