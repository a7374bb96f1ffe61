import Foundation
import Testing
import Reel
import ReelTestSupport

/// Application audio linked on PipeWire when reel's process is stopped for a moment: the
/// graph goes on without reel's capture, and what it missed is said (an event, `droppedAudio`,
/// exit 3) as long as the silence the file has there.
extension SharedApplicationAudioTests {
    /// Stopped for 150 ms: shorter than a stall the reader watches for (250 ms), so before the
    /// capture counted the graph's cycles it missed the count fell behind the clock, was
    /// re-anchored later (a gap in the file), and the recording was said complete (exit 0).
    @Test func onPipeWireCyclesMissedWhileReelIsStoppedAreSaid() throws {
        let bench = try AudioBench(.pipeWire)
        let tone = try bench.play("A", seconds: 20)
        defer { tone.stop() }
        usleep(500_000)
        let run = try bench.record(["--app-audio=A", "--duration", "5"], to: "stopped.m4a")
        usleep(2_000_000)
        kill(run.process.processIdentifier, SIGSTOP)
        usleep(150_000)
        kill(run.process.processIdentifier, SIGCONT)
        let (status, errors) = run.finish()
        let events = run.json.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let finished = events.last { $0["event"] as? String == "finished" }
        let dropped = finished?["droppedAudio"] as? Double ?? 0
        let incomplete = events.filter { $0["event"] as? String == "sourceIncomplete" }
        #expect(status == 3, "exit \(status): the recording misses sound\n\(errors)\n\(run.json)")
        #expect(incomplete.count == 1, "one event says the application's sound lost some: \(incomplete)")
        #expect(dropped >= 0.1 && dropped < 1, "droppedAudio \(dropped) s")
        // The silence in the file is where reel was stopped, and as long as said.
        let silences = AudioStallTests.silences(try MediaProbe.decodeAudio(run.output, onTimeline: true)).filter { $0.length >= 0.1 }
        let stop = silences.filter { $0.at > 1 && $0.at < 4 }
        #expect(stop.count == 1, "silences in the tone (s): \(silences)")
        if let silence = stop.first {
            #expect(abs(silence.length - dropped) < 0.06, "the file has \(silence.length) s of silence at \(silence.at) s; reel says \(dropped) s")
        }
    }
}
