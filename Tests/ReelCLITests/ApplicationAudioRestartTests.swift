import Foundation
import Testing
import Reel
import ReelTestSupport

extension ApplicationAudioTests {
    /// The audio server restarts while `--app-audio=A` records (issue 26, item 3): the source
    /// says it is interrupted, and once the server is back and A plays again, it records A
    /// again and says so; the file holds A's tone before and after, and nothing of reel's
    /// routing is left on the new server.
    @Test func afterTheAudioServerRestartsTheApplicationIsRecordedAgain() throws {
        let setup = try Setup()
        _ = try setup.pulse.playTone(frequency: 440, seconds: 20, amplitude: 0.4, applicationName: "A")
        usleep(300_000)
        let url = setup.dir.url.appendingPathComponent("restart.m4a")
        let (process, errors) = try setup.startRecording(["--app-audio=A", "--duration", "7"], output: url)
        usleep(1_500_000)
        setup.pulse.stopServer()
        try setup.pulse.startServer()
        let restarted = Date()
        let again = try setup.pulse.playTone(frequency: 1000, seconds: 20, amplitude: 0.4, applicationName: "A")
        defer { again.stop() }
        let deadline = Date().addingTimeInterval(6)
        while Date() < deadline && !setup.events(process).contains("\"sourceResumed\"") { usleep(20_000) }
        let back = Date().timeIntervalSince(restarted)
        process.waitUntilExit()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let events = setup.events(process)
        #expect(events.contains("\"sourceInterrupted\""), "\(events)\n\(stderr)")
        #expect(events.contains("\"sourceResumed\""), "\(events)\n\(stderr)")
        #expect(stderr.contains("the audio server is back"), "\(stderr)")
        // A gap while the server was away: finalised, not complete.
        #expect(process.terminationStatus == 3, "\(stderr)")
        let audio = try MediaProbe.decodeAudio(url)
        #expect(Self.powers(audio, from: 0.3, to: 1.2, [440])[440]! > 0.02, "\(Self.profile(audio))")
        // From a second after it was back to the end: the tone A plays on the new server.
        let resumedAt = 1.5 + back + 1
        #expect(Double(audio.count) / 48_000 > resumedAt + 0.5, "\(audio.count) samples, back after \(back) s")
        for start in stride(from: resumedAt, to: Double(audio.count) / 48_000 - 0.3, by: 0.25) {
            #expect(Self.powers(audio, from: start, to: start + 0.25, [1000])[1000]! > 0.02, "at \(start) s\n\(Self.profile(audio))")
        }
        #expect(!(try setup.pactl(["list", "short", "modules"])).contains("reel-app-"))
        #expect(try setup.sinks(of: "A") == ["apps"])
    }
}
