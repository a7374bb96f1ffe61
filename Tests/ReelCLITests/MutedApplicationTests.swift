import Foundation
import Testing
import Reel
import ReelTestSupport

/// An application muted, or at volume 0, in the mixer while `reel record --app-audio=APP`
/// records it (issue 26, F10 of the black-box pass): the mixer applies to the sound before any
/// recording can take it (PulseAudio as the sink mixes the stream, PipeWire in the stream's own
/// node), so the file is digital silence, and reel leaves the user's mixer as it is. It said
/// nothing: exit 0, `"complete": true`. Now it is said as a muted microphone is
/// (`sourceSilent` naming the cause, a `silent` shortfall, exit 3); an application unmuted
/// while recorded is recorded from then on, and the recording is complete.
@Suite(.serialized, .tags(.realTime)) struct MutedApplicationTests {
    /// The index of the stream (sink input) application `name` plays, once it plays.
    static func streamIndex(of name: String, _ bench: AudioBench) throws -> String {
        let deadline = Date().addingTimeInterval(5)
        repeat {
            if let block = try bench.pactl(["list", "sink-inputs"]).components(separatedBy: "Sink Input #").dropFirst()
                .first(where: { $0.contains("application.name = \"\(name)\"") }) {
                return String(block.prefix { $0.isNumber })
            }
            usleep(20_000)
        } while Date() < deadline
        throw ReelError(.sourceUnavailable, "no stream of '\(name)' on the test server")
    }

    /// The `Mute:` and `Volume:` lines of stream `index`, as `pactl` shows them.
    static func mixer(of index: String, _ bench: AudioBench) throws -> [String] {
        let block = try bench.pactl(["list", "sink-inputs"]).components(separatedBy: "Sink Input #").first { $0.hasPrefix("\(index)\n") } ?? ""
        return block.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { $0.hasPrefix("Mute:") || $0.hasPrefix("Volume:") }
    }

    /// Plays a tone as `name`, sets its stream in the mixer with `pactl ARGS INDEX VALUE`,
    /// records `--app-audio=NAME` for `duration` seconds, calling `during` once it has started:
    /// the exit status, the events, standard error, the file's samples, and the mixer's lines
    /// of the stream before and after.
    func record(_ kind: AudioServerKind, name: String, mixer setting: [String], amplitude: Double = 0.4, duration: Int = 3,
                during: (AudioBench, String) throws -> Void = { _, _ in })
        throws -> (status: Int32, events: [[String: Any]], stderr: String, audio: [Float], mixer: (before: [String], after: [String])) {
        let bench = try AudioBench(kind)
        let tone = try bench.play(name, seconds: Double(duration) + 20, amplitude: amplitude)
        defer { tone.stop() }
        let index = try Self.streamIndex(of: name, bench)
        if !setting.isEmpty { _ = try bench.pactl([setting[0], index] + setting.dropFirst()) }
        usleep(300_000)
        let before = try Self.mixer(of: index, bench)
        let run = try bench.record(["--app-audio=\(name)", "--duration", "\(duration)"], to: "\(name).m4a")
        try during(bench, index)
        let (status, stderr) = run.finish()
        let after = try Self.mixer(of: index, bench)
        let events = run.json.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        return (status, events, stderr, (try? MediaProbe.decodeAudio(run.output)) ?? [], (before, after))
    }

    /// The run said its silence once, in `words`, and ended incomplete (exit 3, `"complete":
    /// false`); returns its `finished` event.
    @discardableResult
    func expectSaidSilentOnce(_ status: Int32, _ events: [[String: Any]], _ stderr: String, kind: AudioServerKind, words: [String],
                              sourceLocation: SourceLocation = #_sourceLocation) -> [String: Any]? {
        let silent = events.filter { $0["event"] as? String == "sourceSilent" }
        let finished = events.last { $0["event"] as? String == "finished" }
        #expect(status == 3, "\(kind): exit \(status)\n\(stderr)\n\(events)", sourceLocation: sourceLocation)
        #expect(silent.count == 1, "\(kind): \(silent)", sourceLocation: sourceLocation)
        let message = silent.first?["message"] as? String ?? ""
        #expect(words.allSatisfy { message.contains($0) }, "\(kind): \(message)", sourceLocation: sourceLocation)
        #expect(finished?["complete"] as? Bool == false, "\(kind): \(events)", sourceLocation: sourceLocation)
        return finished
    }

    /// Muted in the mixer: said, with how to unmute it; a `silent` shortfall, exit 3. The file
    /// holds nothing of the tone (reel records after the mixer), and the stream is still muted
    /// (reel did not unmute it).
    @Test(arguments: AudioServerKind.allCases)
    func aMutedApplicationIsSaidAndTheRecordingIsIncomplete(kind: AudioServerKind) throws {
        let r = try record(kind, name: "mutey", mixer: ["set-sink-input-mute", "1"])
        let finished = expectSaidSilentOnce(r.status, r.events, r.stderr, kind: kind,
                                            words: ["'mutey' is muted in the mixer", "unmute it, e.g. in pavucontrol"])
        let shortfalls = finished?["shortfalls"] as? [[String: Any]] ?? []
        #expect(shortfalls.map { $0["kind"] as? String } == ["silent"], "\(kind): \(shortfalls)")
        #expect(!r.audio.isEmpty && r.audio.allSatisfy { $0 == 0 }, "\(kind): the file is digital silence: \(ApplicationAudioTests.profile(r.audio))")
        #expect(r.mixer.before.contains("Mute: yes") && r.mixer.after == r.mixer.before, "\(kind): \(r.mixer)")
    }

    /// At volume 0 in the mixer: said as such; a `silent` shortfall, exit 3; the volume is left at 0.
    @Test(arguments: AudioServerKind.allCases)
    func anApplicationAtVolumeZeroIsSaidAndTheRecordingIsIncomplete(kind: AudioServerKind) throws {
        let r = try record(kind, name: "hushed", mixer: ["set-sink-input-volume", "0"])
        _ = expectSaidSilentOnce(r.status, r.events, r.stderr, kind: kind,
                                 words: ["'hushed' is at volume 0 in the mixer", "turn it up, e.g. in pavucontrol"])
        #expect(r.mixer.before.contains { $0.hasPrefix("Volume:") && $0.contains(" 0%") } && r.mixer.after == r.mixer.before, "\(kind): \(r.mixer)")
    }

    /// Turned down to 1 % in the mixer (its sound scaled by a millionth, no sample above zero):
    /// said as turned down, with the percentage, not as an application that plays silence of
    /// its own (s43 stranger: "paused, or muted in the application itself"). PulseAudio's
    /// mixer leaves 16-bit zeros; PipeWire's mixes in floating point and a trace of the sound
    /// is left, which is no silence to say.
    @Test(arguments: [AudioServerKind.pulseAudio])
    func anApplicationTurnedDownToOnePercentIsSaidSo(kind: AudioServerKind) throws {
        let r = try record(kind, name: "faint", mixer: ["set-sink-input-volume", "1%"])
        _ = expectSaidSilentOnce(r.status, r.events, r.stderr, kind: kind,
                                 words: ["'faint' is turned down to 1 % in the mixer", "turn it up, e.g. in pavucontrol"])
        #expect(r.mixer.after == r.mixer.before, "\(kind): the mixer is left as it was: \(r.mixer)")
    }

    /// Muted, then unmuted 2 s into a 4 s recording: the silence is said after its first second
    /// and ended by the sound (`sourceSilent`, `sourceResumed`), the recording complete (exit 0),
    /// and the file holds the tone from soon after the unmuting.
    @Test(arguments: AudioServerKind.allCases)
    func anApplicationUnmutedWhileRecordedIsComplete(kind: AudioServerKind) throws {
        let r = try record(kind, name: "mutey", mixer: ["set-sink-input-mute", "1"], duration: 4) { bench, index in
            usleep(2_000_000)
            _ = try bench.pactl(["set-sink-input-mute", index, "0"])
        }
        let finished = r.events.last { $0["event"] as? String == "finished" }
        #expect(r.status == 0, "\(kind): exit \(r.status)\n\(r.stderr)\n\(r.events)")
        #expect(finished?["complete"] as? Bool == true, "\(kind): \(r.events)")
        let order = r.events.compactMap { $0["event"] as? String }.filter { $0.hasPrefix("source") }
        #expect(order == ["sourceSilent", "sourceResumed"], "\(kind): \(order)\n\(r.events)")
        #expect(ApplicationAudioTests.powers(r.audio, from: 0.2, to: 1.5, [440])[440]! == 0, "\(kind): \(ApplicationAudioTests.profile(r.audio))")
        #expect(ApplicationAudioTests.quartersWithout(440, in: r.audio, from: 2.75, to: 3.75).isEmpty, "\(kind): \(ApplicationAudioTests.profile(r.audio))")
    }

    /// An application that plays, but only digital silence (a paused player often does): said
    /// as that ("played only digital silence"), exit 3.
    @Test(arguments: AudioServerKind.allCases)
    func anApplicationThatPlaysOnlyDigitalSilenceIsSaid(kind: AudioServerKind) throws {
        let r = try record(kind, name: "quiet", mixer: [], amplitude: 0)
        let silent = r.events.filter { $0["event"] as? String == "sourceSilent" }
        #expect(r.status == 3, "\(kind): exit \(r.status)\n\(r.stderr)\n\(r.events)")
        #expect(silent.count == 1 && (silent.first?["message"] as? String ?? "").contains("'quiet' played only digital silence"), "\(kind): \(silent)")
    }

    /// Without `--json`, the words are on standard error and the end says what is missing.
    @Test func theWordsAreOnStandardErrorWithoutJSON() throws {
        let bench = try AudioBench(.pulseAudio)
        let tone = try bench.play("mutey", seconds: 20)
        defer { tone.stop() }
        _ = try bench.pactl(["set-sink-input-mute", try Self.streamIndex(of: "mutey", bench), "1"])
        let r = try ReelBinary.run(["record", "--app-audio=mutey", "--duration", "2", "-o", bench.dir.url.appendingPathComponent("text.m4a").path],
                                   environment: bench.environment)
        #expect(r.status == 3, "exit \(r.status)\n\(r.stderr)")
        #expect(r.stderr.contains("'mutey' is muted in the mixer") && r.stderr.contains("unmute it, e.g. in pavucontrol"), "\(r.stderr)")
    }
}
