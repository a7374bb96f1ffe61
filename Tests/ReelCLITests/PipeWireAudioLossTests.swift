import Foundation
import Testing
import Reel
import ReelTestSupport

/// Application audio linked on PipeWire when reel's process is stopped: the graph goes on
/// without reel's capture. A moment (a busy machine's missed cycles, or a short stop) is
/// counted as dropped frames are (`droppedAudio`, an `audioMissed` event, exit 0); a stop longer
/// than the capture holds (about 4 s) is a shortfall (`sourceIncomplete`, exit 3). Either way
/// the file has silence there, as long as said.
extension SharedApplicationAudioTests {
    /// Runs `reel record --app-audio=A --duration DURATION` on PipeWire while A plays a tone,
    /// stops reel (SIGSTOP) for `stop` seconds 2 s in: the exit status, the events, the
    /// `droppedAudio` of `finished`, and the silences of the file from 1 s to half a second after
    /// the stop ended.
    func recordStopped(for stop: Double, duration: Int) throws -> (status: Int32, events: [[String: Any]], dropped: Double,
                                                                  silences: [(at: Double, length: Double)], stderr: String) {
        let bench = try AudioBench(.pipeWire)
        let tone = try bench.play("A", seconds: Double(duration) + stop + 10)
        defer { tone.stop() }
        usleep(500_000)
        let run = try bench.record(["--app-audio=A", "--duration", "\(duration)"], to: "stopped.m4a")
        usleep(2_000_000)
        kill(run.process.processIdentifier, SIGSTOP)
        usleep(UInt32(stop * 1_000_000))
        kill(run.process.processIdentifier, SIGCONT)
        let (status, errors) = run.finish()
        let events = run.json.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let finished = events.last { $0["event"] as? String == "finished" }
        let silences = AudioStallTests.silences(try MediaProbe.decodeAudio(run.output, onTimeline: true)).filter { $0.length >= 0.1 }
        return (status, events, finished?["droppedAudio"] as? Double ?? 0, silences.filter { $0.at > 1 && $0.at < 2.5 + stop }, errors)
    }

    /// Stopped for 150 ms: shorter than a stall the reader watches for (250 ms), so before the
    /// capture counted the graph's cycles it missed the count fell behind the clock, was
    /// re-anchored later (a gap in the file), and nothing was said; then it was said as a
    /// shortfall (exit 3), as were a busy machine's missed cycles of a few milliseconds. Now it
    /// is counted, said while recording, and the recording is complete.
    @Test func onPipeWireCyclesMissedWhileReelIsStoppedAreCountedNotMissing() throws {
        let r = try recordStopped(for: 0.15, duration: 5)
        let incomplete = r.events.filter { $0["event"] as? String == "sourceIncomplete" }
        let missed = r.events.filter { $0["event"] as? String == "audioMissed" }
        let finished = r.events.last { $0["event"] as? String == "finished" }
        #expect(r.status == 0, "exit \(r.status): missed cycles are counted, not missing\n\(r.stderr)\n\(r.events)")
        #expect(incomplete.isEmpty, "\(incomplete)")
        #expect(finished?["complete"] as? Bool == true)
        #expect(missed.count == 1, "one event says the application's capture missed some: \(missed)")
        #expect(r.dropped >= 0.1 && r.dropped < 1, "droppedAudio \(r.dropped) s")
        // The silence in the file is where reel was stopped, and as long as said (the
        // longest: the player of the tone, on a busy machine, may leave dips of its own).
        #expect(!r.silences.isEmpty, "silences in the tone (s): \(r.silences), said \(r.dropped) s\n\(r.stderr)")
        if let silence = r.silences.max(by: { $0.length < $1.length }) {
            #expect(abs(silence.length - r.dropped) < 0.06, "the file has \(silence.length) s of silence at \(silence.at) s; reel says \(r.dropped) s; silences \(r.silences)")
        }
    }

    /// Stopped for 5 s, longer than the capture holds (4 s): reel missed more than a moment,
    /// and the recording misses that sound (exit 3, one `sourceIncomplete`), said as long as
    /// the silence in the file.
    @Test func onPipeWireAStopLongerThanTheCaptureHoldsIsMissing() throws {
        let r = try recordStopped(for: 5, duration: 9)
        let incomplete = r.events.filter { $0["event"] as? String == "sourceIncomplete" }
        #expect(r.status == 3, "exit \(r.status): the recording misses sound\n\(r.stderr)\n\(r.events)")
        #expect(incomplete.count == 1, "\(incomplete)")
        #expect(r.dropped > 4.5 && r.dropped < 6, "droppedAudio \(r.dropped) s")
        #expect(!r.silences.isEmpty, "silences in the tone (s): \(r.silences), said \(r.dropped) s\n\(r.stderr)")
        if let silence = r.silences.max(by: { $0.length < $1.length }) {
            // (As AudioStallTests allows on PulseAudio: 1 run of 6 had 0.12 s more silence than
            // said, not looked into yet.)
            #expect(abs(silence.length - r.dropped) < 0.3, "the file has \(silence.length) s of silence at \(silence.at) s; reel says \(r.dropped) s; silences \(r.silences)")
        }
    }
}
