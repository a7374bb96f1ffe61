import Foundation
import Testing
import Reel
import ReelTestSupport

/// `reel record` with sound from PulseAudio, against a real server, when reel is stopped
/// (SIGSTOP) for a while — as a frozen or swapping machine stops it — and when its microphone
/// is the monitor of a sink that renders ahead: checked by decoding the file.
@Suite(.serialized, .tags(.realTime)) struct AudioStallTests {
    /// Runs `reel record ARGUMENTS --json -o URL` against `pulse`, calls `step` with its
    /// process id once it has started, and waits (up to `timeout` s) for it to end.
    static func record(_ arguments: [String], to url: URL, pulse: PulseServer, timeout: Double,
                       step: (pid_t) async throws -> Void = { _ in }) async throws -> (status: Int32, events: [[String: Any]], stderr: String) {
        let eventsURL = url.appendingPathExtension("jsonl")
        _ = FileManager.default.createFile(atPath: eventsURL.path, contents: nil)
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record"] + arguments + ["--json", "-o", url.path]
        process.environment = ProcessInfo.processInfo.environment.merging(pulse.environment) { $1 }
        process.standardOutput = try FileHandle(forWritingTo: eventsURL)
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let started = Date().addingTimeInterval(15)
        while Date() < started, process.isRunning,
              !((try? String(contentsOf: eventsURL, encoding: .utf8))?.contains("\"started\"") ?? false) {
            try await Task.sleep(for: .milliseconds(5))
        }
        try await step(process.processIdentifier)
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        if process.isRunning { kill(process.processIdentifier, SIGCONT); process.terminate() }
        process.waitUntilExit()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let lines = ((try? String(contentsOf: eventsURL, encoding: .utf8)) ?? "").split(separator: "\n")
        let events = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        return (process.terminationStatus, events, stderr)
    }

    /// The runs of silence (10 ms windows without sound) between the first and the last sound
    /// of `samples` (mono, 48 kHz): where each begins and how long it lasts, in seconds.
    static func silences(_ samples: [Float]) -> [(at: Double, length: Double)] {
        let window = 480
        let loud = stride(from: 0, to: samples.count - window + 1, by: window).map {
            ToneAnalysis.rms(of: Array(samples[$0..<($0 + window)])) > 0.05
        }
        guard let first = loud.firstIndex(of: true), let last = loud.lastIndex(of: true) else { return [] }
        var runs: [(at: Double, length: Double)] = []
        var start: Int?
        for k in first...last {
            if !loud[k], start == nil { start = k }
            if loud[k], let s = start {
                runs.append((Double(s) / 100, Double(k - s) / 100))
                start = nil
            }
        }
        return runs
    }

    /// reel stopped twice while it records a microphone that hears a tone: for 3 s, which the
    /// server holds all of (the file has all of it: it was silence at the place of the stall,
    /// 1.5 to 2 s of it, and said nowhere), then for 16 s, longer than the server holds (about
    /// 11 s of 48 kHz 32-bit stereo): the rest is lost, and said (an event, `droppedAudio`, the
    /// summary's shortfall, exit 3) as long as the silence the file has.
    @Test func soundLostWhileReelIsStoppedIsSaidAndHeldSoundIsKept() async throws {
        let pulse = try PulseServer()
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("stall.mp4")
        let tone = try pulse.playTone(frequency: 700, seconds: 60, amplitude: 0.5)
        defer { tone.stop() }
        let run = try await Self.record(["--test-pattern", "--mic=\(PulseServer.monitorName)", "--duration", "28"],
                                        to: url, pulse: pulse, timeout: 60) { pid in
            try await Task.sleep(for: .seconds(2))
            kill(pid, SIGSTOP)
            try await Task.sleep(for: .seconds(3))
            kill(pid, SIGCONT)
            try await Task.sleep(for: .seconds(3))
            kill(pid, SIGSTOP)
            try await Task.sleep(for: .seconds(16))
            kill(pid, SIGCONT)
        }
        let finished = run.events.last { $0["event"] as? String == "finished" }
        let dropped = finished?["droppedAudio"] as? Double ?? 0
        let incomplete = run.events.filter { $0["event"] as? String == "sourceIncomplete" }
        let silences = Self.silences(try MediaProbe.decodeAudio(url, onTimeline: true))
        // A player starved on a loaded machine leaves holes of tens of milliseconds in what it
        // plays; a stall's are hundreds.
        let long = silences.filter { $0.length >= 0.3 }
        #expect(run.status == 3, "exit \(run.status): the recording misses sound: \(run.stderr)")
        #expect(incomplete.count == 1, "one event says the microphone lost sound: \(incomplete)")
        #expect(finished?["complete"] as? Bool == false)
        // One silence in the file, where the server dropped what reel did not read in the
        // second stall, and as long as reel says; none for the first.
        #expect(long.count == 1, "silences in the tone (s): \(silences)")
        #expect(dropped > 1, "droppedAudio \(dropped) s")
        if let silence = long.first {
            #expect(abs(silence.length - dropped) < 0.3, "the file has \(silence.length) s of silence at \(silence.at) s; reel says \(dropped) s")
            #expect(silence.at > 8, "the silence is in the second stall: at \(silence.at) s")
        }
    }

    /// A microphone that is the monitor of a sink rendering 2 s ahead (a null sink's monitor as
    /// the default source, a player with a long buffer): the recording has its sound from its
    /// start; it missed the first 0.6 to 1.5 s.
    @Test func aMicrophoneThatIsAMonitorHasItsSoundFromTheStart() async throws {
        let pulse = try PulseServer(keepsSinkLatencyLow: false)
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("mic.mp4")
        let defaultSource = try Subprocess.run(["pactl", "set-default-source", PulseServer.monitorName], environment: pulse.environment)
        #expect(defaultSource.status == 0)
        let tone = try pulse.playTone(frequency: 660, seconds: 30, amplitude: 0.5, latencyMilliseconds: 4000)
        defer { tone.stop() }
        // Early in the sink's first block, which began when the player came.
        try await Task.sleep(for: .milliseconds(300))
        let run = try await Self.record(["--test-pattern", "--mic", "--duration", "2"], to: url, pulse: pulse, timeout: 30)
        #expect(run.status == 0, "\(run.stderr)")
        let samples = try MediaProbe.decodeAudio(url, onTimeline: true)
        let window = 480
        let firstSound = stride(from: 0, to: samples.count - window + 1, by: window).first {
            ToneAnalysis.rms(of: Array(samples[$0..<($0 + window)])) > 0.05
        }
        let at = firstSound.map { Double($0) / 48_000 } ?? -1
        #expect(at >= 0 && at <= 0.05, "the tone starts at \(at) s of the file")
        #expect(Self.silences(samples).filter { $0.length >= 0.3 }.isEmpty, "no gap in the tone")
    }
}
