import Foundation
import Testing
import Reel
import ReelTestSupport

/// A microphone that records nothing (s5 F5, issue 26): muted, or a monitor of a sink that
/// plays nothing, its every sample digital zero. It is a source event (`sourceSilent`), a
/// `missing` line of the summary and exit 3, where it was a whole recording of silence, exit 0
/// and "complete". A muted one says so at once, with how to unmute it.
@Suite(.serialized, .tags(.realTime)) struct SilentMicrophoneTests {
    func pactl(_ arguments: [String], _ pulse: PulseServer) throws {
        let r = try Subprocess.run(["pactl"] + arguments, environment: pulse.environment)
        #expect(r.status == 0, "pactl \(arguments): \(r.stderr)")
    }

    func record(_ arguments: [String], _ pulse: PulseServer) async throws -> (status: Int32, events: [[String: Any]], stderr: String) {
        let dir = try TemporaryDirectory()
        return try await AudioStallTests.record(arguments, to: dir.url.appendingPathComponent("mic.m4a"), pulse: pulse, timeout: 20)
    }

    @Test func aMutedMicrophoneIsSaidAtOnceAndMakesTheRecordingIncomplete() async throws {
        let pulse = try PulseServer()
        let feed = try pulse.feedMicrophone(frequency: 1000, seconds: 10)
        defer { feed.stop() }
        try pactl(["set-source-mute", PulseServer.microphoneName, "1"], pulse)
        let r = try await record(["--mic=\(PulseServer.microphoneName)", "--duration", "2"], pulse)
        let silent = r.events.filter { $0["event"] as? String == "sourceSilent" }
        let finished = r.events.last { $0["event"] as? String == "finished" }
        #expect(r.status == 3, "exit \(r.status)\n\(r.stderr)\n\(r.events)")
        #expect(silent.count == 1, "\(silent)")
        let message = silent.first?["message"] as? String ?? ""
        #expect(message.contains("is muted") && message.contains("pactl set-source-mute \(PulseServer.microphoneName) 0"), "\(message)")
        #expect(finished?["complete"] as? Bool == false)
        // Said before the recording's first progress past its start: at once.
        let order = r.events.compactMap { $0["event"] as? String }
        #expect((order.firstIndex(of: "sourceSilent") ?? .max) < (order.lastIndex(of: "progress") ?? 0), "\(order)")
    }

    @Test func aMonitorOfASinkThatPlaysNothingIsDigitalSilence() async throws {
        let pulse = try PulseServer()
        try pactl(["suspend-sink", PulseServer.sinkName, "0"], pulse)
        let r = try await record(["--mic=\(PulseServer.monitorName)", "--duration", "2"], pulse)
        let silent = r.events.filter { $0["event"] as? String == "sourceSilent" }
        let finished = r.events.last { $0["event"] as? String == "finished" }
        #expect(r.status == 3, "exit \(r.status)\n\(r.stderr)\n\(r.events)")
        #expect(silent.count == 1 && (silent.first?["message"] as? String ?? "").contains("digital silence"), "\(silent)")
        let shortfalls = finished?["shortfalls"] as? [[String: Any]] ?? []
        #expect(shortfalls.map { $0["kind"] as? String } == ["silent"], "\(shortfalls)")
    }

    /// The same microphone unmuted, hearing a tone: complete, nothing said.
    @Test func aMicrophoneThatHearsSomethingIsComplete() async throws {
        let pulse = try PulseServer()
        let feed = try pulse.feedMicrophone(frequency: 1000, seconds: 10)
        defer { feed.stop() }
        let r = try await record(["--mic=\(PulseServer.microphoneName)", "--duration", "2"], pulse)
        #expect(r.status == 0, "exit \(r.status)\n\(r.stderr)\n\(r.events)")
        #expect(!r.events.contains { $0["event"] as? String == "sourceSilent" })
    }

    /// Plain `--app-audio` (the default sink's monitor, every application's sound) on which
    /// nothing plays during the whole recording: said (`sourceSilent`), a `missing` line and
    /// exit 3, as a microphone of digital silence or an application that never played is. It
    /// recorded a silent track with exit 0 and nothing said.
    @Test func appAudioOfASinkOnWhichNothingPlaysIsSilent() async throws {
        let pulse = try PulseServer()
        try pactl(["suspend-sink", PulseServer.sinkName, "0"], pulse)
        let r = try await record(["--app-audio", "--duration", "2"], pulse)
        let silent = r.events.filter { $0["event"] as? String == "sourceSilent" }
        let finished = r.events.last { $0["event"] as? String == "finished" }
        #expect(r.status == 3, "exit \(r.status)\n\(r.stderr)\n\(r.events)")
        #expect(silent.count == 1 && (silent.first?["message"] as? String ?? "").contains("nothing has played on the sink"), "\(silent)")
        let shortfalls = finished?["shortfalls"] as? [[String: Any]] ?? []
        #expect(shortfalls.map { $0["kind"] as? String } == ["silent"], "\(shortfalls)")
    }

    /// A sink on which sound starts a second and a half into the recording: complete (exit 0),
    /// its silence said and then ended (`sourceResumed`), as for an application that starts
    /// playing later.
    @Test func appAudioWhoseSoundStartsLateIsComplete() async throws {
        let pulse = try PulseServer()
        let dir = try TemporaryDirectory()
        var feed: ToneFeed?
        defer { feed?.stop() }
        let r = try await AudioStallTests.record(["--app-audio", "--duration", "3"], to: dir.url.appendingPathComponent("late.m4a"),
                                                 pulse: pulse, timeout: 20) { _ in
            try await Task.sleep(for: .seconds(1.5))
            feed = try pulse.playTone(frequency: 1000, seconds: 5, amplitude: 0.4)
        }
        #expect(r.status == 0, "exit \(r.status)\n\(r.stderr)\n\(r.events)")
        let finished = r.events.last { $0["event"] as? String == "finished" }
        #expect(finished?["complete"] as? Bool == true, "\(r.events)")
        let order = r.events.compactMap { $0["event"] as? String }.filter { $0.hasPrefix("source") }
        #expect(order == ["sourceSilent", "sourceResumed"] || order.isEmpty, "\(order)")
    }
}
