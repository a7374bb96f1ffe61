import Foundation
import Testing
import Reel
import ReelTestSupport

/// Short audio-only recordings through a real PulseAudio server: a second of microphone or
/// app audio is written, however late and in however large chunks the server delivers it.
@Suite(.serialized, .tags(.realTime)) struct ShortAudioTests {
    @Test(arguments: [1.0, 1.5])
    func aShortMicrophoneRecordingIsWritten(seconds: Double) throws {
        let pulse = try PulseServer()
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("mic.mp4")
        let feed = try pulse.feedMicrophone(frequency: 440, seconds: seconds + 3)
        defer { feed.stop() }
        let r = try ReelBinary.run(["record", "--mic", "--duration", String(seconds), "-o", url.path], environment: pulse.environment)
        #expect(r.status == 0, "\(r.stderr)")
        let probe = try MediaProbe.probe(url)
        #expect(probe.audioStreams.count == 1)
        #expect(abs(probe.duration - seconds) < 0.05, "duration \(probe.duration)")
    }

    /// A microphone whose first sound reaches the server more than the recording's length
    /// after the recording started (a device waking up, a server with a large latency).
    @Test(arguments: [1.0, 1.5])
    func aMicrophoneThatDeliversLate(seconds: Double) async throws {
        let pulse = try PulseServer()
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("late-mic.mp4")
        let events = dir.url.appendingPathComponent("events.jsonl")
        _ = FileManager.default.createFile(atPath: events.path, contents: nil)
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--mic", "--duration", String(seconds), "--json", "-o", url.path]
        process.environment = ProcessInfo.processInfo.environment.merging(pulse.environment) { $1 }
        process.standardOutput = try FileHandle(forWritingTo: events)
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        // Until reel reads the microphone (its record stream is on the server): `started` comes
        // only with the first sample, which this microphone gives late.
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline,
              (try? Subprocess.run(["pactl", "list", "short", "source-outputs"], environment: pulse.environment))?.stdout.isEmpty ?? true {
            try await Task.sleep(for: .milliseconds(20))
        }
        try await Task.sleep(for: .seconds(seconds + 0.3))
        let feed = try pulse.feedMicrophone(frequency: 440, seconds: seconds + 3)
        defer { feed.stop() }
        process.waitUntilExit()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(stderr)")
        let probe = try MediaProbe.probe(url)
        #expect(abs(probe.duration - seconds) < 0.05, "duration \(probe.duration)")
        let audio = try MediaProbe.decodeAudio(url)
        let power = ToneAnalysis.power(of: Array(audio.suffix(24_000)), sampleRate: 48_000, frequency: 440)
        #expect(power > 0.01, "the file ends with the microphone's tone, not silence")
    }

    @Test func aShortAppAudioRecordingIsWritten() throws {
        let pulse = try PulseServer()
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("apps.mp4")
        let tone = try pulse.playTone(frequency: 440, seconds: 5)
        defer { tone.stop() }
        let r = try ReelBinary.run(["record", "--app-audio", "--duration", "1", "-o", url.path], environment: pulse.environment)
        #expect(r.status == 0, "\(r.stderr)")
        let probe = try MediaProbe.probe(url)
        #expect(probe.audioStreams.count == 1)
        #expect(abs(probe.duration - 1) < 0.05, "duration \(probe.duration)")
    }
}
