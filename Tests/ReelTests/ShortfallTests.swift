import Foundation
import Synchronization
import Testing
import Reel
import ReelTestSupport

/// A tone that says what a source of application audio says at its start: silent (nothing
/// chosen plays), silent and then playing, or missing part of what it records.
final class SayingToneSource: CaptureSource {
    let name: String
    var kind: SampleKind { .appAudio }
    private let tone = ToneSource()
    private let words: [SourceEvent]

    init(name: String, saying words: [SourceEvent]) {
        self.name = name
        self.words = words
    }

    func prepare() throws -> SourceFormat { try tone.prepare() }

    func start(_ context: SourceContext) throws {
        for word in words { context.report(word) }
        try tone.start(context)
    }

    func stop() { tone.stop() }
}

/// What a recording's sources did not record is in its summary (issue 26): an application
/// that never played, part of one not recorded, a lost source; a silence that ended and a
/// recording with everything are complete.
@Suite struct ShortfallTests {
    func record(_ sources: [any CaptureSource]) async throws -> RecordingSummary {
        let dir = try TemporaryDirectory()
        let session = CaptureSession(clock: ManualClock())
        for source in sources { try session.addInput(source) }
        var settings = Recorder.Settings()
        settings.maxRecordedDuration = MediaTime(seconds: 1)
        settings.mixesAudio = false
        let recorder = Recorder(url: dir.url.appendingPathComponent("s.m4a"), settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        return summary
    }

    static let notPlaying = ReelError(.sourceUnavailable, "no application 'Nope' is playing")
    static let movedAway = ReelError(.sourceUnavailable, "the stream of 'A' was moved away")

    @Test func aSourceSilentToTheEndAndOneMissingAPartMakeAnIncompleteRecording() async throws {
        let summary = try await record([
            SayingToneSource(name: "never", saying: [.silent(Self.notPlaying)]),
            SayingToneSource(name: "later", saying: [.silent(Self.notPlaying), .resumed]),
            SayingToneSource(name: "part", saying: [.incomplete(Self.movedAway)]),
        ])
        #expect(!summary.isComplete)
        let said = summary.shortfalls.map { "\($0.source) \($0.kind.rawValue) \($0.error.message)" }.sorted()
        #expect(said == ["never silent no application 'Nope' is playing", "part incomplete the stream of 'A' was moved away"], "\(said)")
        // Silent from the start: at zero; the other when it was said, within the recording (on
        // the virtual clock, sources started earlier may have run ahead by then).
        #expect(summary.shortfalls.first { $0.kind == .silent }?.at == .zero)
        #expect(summary.shortfalls.allSatisfy { $0.at >= .zero && $0.at <= MediaTime(seconds: 1) })
    }

    /// Two named applications, one that starts playing and one that never does: the source
    /// says both silent, resumed when the first plays, and the second silent again; only the
    /// second is missing.
    @Test func aSilenceThatGoesOnAfterAnotherEndedIsStillMissing() async throws {
        let typo = ReelError(.sourceUnavailable, "no application 'Typo' has played")
        let summary = try await record([
            SayingToneSource(name: "two", saying: [.silent(Self.notPlaying), .silent(typo), .resumed, .silent(typo)]),
        ])
        #expect(summary.shortfalls.map(\.error.message) == ["no application 'Typo' has played"])
        #expect(summary.shortfalls.first?.kind == .silent)
    }

    @Test func aLostSourceIsAShortfallAndAllPresentIsComplete() async throws {
        let lost = try await record([SayingToneSource(name: "gone", saying: [.lost(ReelError(.sourceUnavailable, "unplugged"))]),
                                     SayingToneSource(name: "here", saying: [])])
        #expect(lost.shortfalls.map(\.kind) == [.lost])
        #expect(lost.shortfalls.first?.source == "gone")
        let complete = try await record([SayingToneSource(name: "here", saying: [])])
        #expect(complete.isComplete)
        #expect(complete.shortfalls.isEmpty)
    }

    static func milliseconds(_ value: Int64) -> MediaTime { MediaTime(value: value, timescale: 1000) }

    /// Sound a capture missed while the machine was busy is counted as dropped frames are
    /// (``RecordingSummary/droppedAudio``, one ``RecordingEvent/audioMissed(name:duration:)``
    /// in ten seconds) and the recording is complete; sound lost because nothing read it for
    /// longer than the server holds is a shortfall, said in milliseconds when short.
    @Test func missedSoundIsCountedAndLostSoundIsMissing() async throws {
        let missed: [SourceEvent] = [.missedAudio(at: Self.milliseconds(200), duration: Self.milliseconds(8)),
                                     .missedAudio(at: Self.milliseconds(400), duration: Self.milliseconds(5))]
        let (busy, events) = try await recordSaying(missed)
        #expect(busy.isComplete, "\(busy.shortfalls)")
        #expect(busy.droppedAudio == Self.milliseconds(13))
        let said = events.compactMap { if case .audioMissed(let name, let duration) = $0 { (name, duration) } else { nil } }
        #expect(said.count == 1 && said.first?.0 == "busy" && said.first?.1 == Self.milliseconds(8), "\(said)")
        #expect(!events.contains { if case .sourceIncomplete = $0 { true } else { false } })

        let (stalled, _) = try await recordSaying([.droppedAudio(at: Self.milliseconds(200), duration: Self.milliseconds(8))])
        #expect(!stalled.isComplete)
        #expect(stalled.droppedAudio == Self.milliseconds(8))
        #expect(stalled.shortfalls.map(\.kind) == [.incomplete])
        let message = stalled.shortfalls.first?.error.message ?? ""
        #expect(message.hasPrefix("8 ms of its sound was lost"), "\(message)")
    }

    /// A source whose start ended another program's recording (moving an application's stream
    /// on PulseAudio ends a recording of that stream alone) says so: a session event (what a
    /// ScreenRecorder's events are), a recording event, and a line of the summary; the
    /// recording is complete, it recorded all it was asked to. It was a notice on stderr only
    /// (s5 F14).
    @Test func anotherProgramsRecordingEndedIsAnEventAndInTheSummary() async throws {
        let said = "moving the stream of 'A' ended the recording of it by 'parec' (record stream 7)"
        let dir = try TemporaryDirectory()
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(SayingToneSource(name: "busy", saying: [.endedAnotherRecording(said)]))
        var settings = Recorder.Settings()
        settings.maxRecordedDuration = MediaTime(seconds: 1)
        let recorder = Recorder(url: dir.url.appendingPathComponent("s.m4a"), settings: settings)
        try session.addOutput(recorder)
        let sessionEvents = Task {
            var all: [String] = []
            for await event in session.events { if case .anotherRecordingEnded(let source, let message) = event { all.append("\(source): \(message)") } }
            return all
        }
        let events = Task { var all: [RecordingEvent] = []; for await event in recorder.events { all.append(event) }; return all }
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        let recorded = await events.value.compactMap { if case .anotherRecordingEnded(let name, let message) = $0 { "\(name): \(message)" } else { nil } }
        #expect(recorded == ["busy: \(said)"], "\(recorded)")
        #expect(summary.endedRecordings == ["busy: \(said)"], "\(summary.endedRecordings)")
        #expect(summary.isComplete && summary.isWhole, "\(summary.shortfalls)")
        sessionEvents.cancel()
        #expect(await sessionEvents.value == ["busy: \(said)"])
    }

    /// An app-audio track is named for what it records (the application), in the file and the
    /// summary; the default sink's is "App audio". Every one was "App audio" (s5 F12).
    @Test func theAppAudioTrackIsNamedForTheApplication() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("named.m4a")
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(SayingToneSource(name: "app audio of 'beeper'", saying: []))
        try session.addInput(SayingToneSource(name: "app audio (default)", saying: []))
        var settings = Recorder.Settings()
        settings.maxRecordedDuration = MediaTime(seconds: 0.5)
        settings.mixesAudio = false
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        #expect(summary.audioTracks == ["App audio of 'beeper'", "App audio"], "\(summary.audioTracks)")
        #expect(try MediaProbe.probe(url).audioStreams.map(\.title) == ["App audio of 'beeper'", "App audio"])
    }

    /// Records 1 s of a tone named "busy" that says `words` at its start: the summary and the
    /// recorder's events.
    func recordSaying(_ words: [SourceEvent]) async throws -> (RecordingSummary, [RecordingEvent]) {
        let dir = try TemporaryDirectory()
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(SayingToneSource(name: "busy", saying: words))
        var settings = Recorder.Settings()
        settings.maxRecordedDuration = MediaTime(seconds: 1)
        let recorder = Recorder(url: dir.url.appendingPathComponent("s.m4a"), settings: settings)
        try session.addOutput(recorder)
        let events = Task { var all: [RecordingEvent] = []; for await event in recorder.events { all.append(event) }; return all }
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        return (summary, await events.value)
    }
}

/// A second of tone at once, and then nothing; ``interrupt()`` says its server is gone: an
/// application's sound whose audio server died and never came back.
final class ToneThenInterrupted: CaptureSource, @unchecked Sendable {
    let name = "app"
    let kind = SampleKind.appAudio
    private let tone = OneSecondOfTone()
    private let context = Mutex<SourceContext?>(nil)

    func prepare() throws -> SourceFormat { try tone.prepare() }

    func start(_ context: SourceContext) throws {
        self.context.withLock { $0 = context }
        try tone.start(context)
    }

    /// Returns once the second of sound has been delivered.
    func delivered() async throws { try await tone.delivered() }

    /// Says that the source is interrupted (its server went away).
    func interrupt() {
        context.withLock { $0 }?.report(.interrupted(ReelError(.sourceUnavailable, "the audio server went away")))
    }

    func stop() {}
}

/// A recording of sound alone whose source is interrupted when it is stopped (its audio server
/// died and never came back) keeps the time since as silence, to the stop, as it keeps an
/// interruption in the middle; it ended where the sound stopped, seconds short of the session
/// (issue 26, F7). Said as before: interrupted at 1 s. A source that simply delivers less
/// (not interrupted) ends where its sound does.
@Suite struct InterruptedToTheEndTests {
    @Test(arguments: [true, false])
    func soundInterruptedToTheStopIsKeptAsSilence(interrupted: Bool) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("gone.m4a")
        let clock = ManualClock()
        let session = CaptureSession(clock: clock)
        let source = ToneThenInterrupted()
        try session.addInput(source)
        let recorder = Recorder(url: url, settings: Recorder.Settings())
        try session.addOutput(recorder)
        try await session.start()
        try await source.delivered()
        clock.advance(to: MediaTime(seconds: 1))
        if interrupted { source.interrupt() }
        clock.advance(to: MediaTime(seconds: 4))
        try await Task.sleep(for: .milliseconds(200))  // the sound reaches the recorder
        await session.stop()
        let summary = try await recorder.result()
        let seconds = summary.duration.seconds
        let samples = try MediaProbe.decodeAudio(url)
        if interrupted {
            #expect(abs(seconds - 4) < 0.05, "kept to the stop: \(seconds) s")
            #expect(abs(Double(samples.count) / 48_000 - 4) < 0.05, "\(samples.count) samples")
            #expect(samples.dropFirst(48_000 + 2048).allSatisfy { $0 == 0 }, "the time since is silence")
            #expect(summary.shortfalls.map(\.kind) == [.interrupted] && !summary.isComplete, "\(summary.shortfalls)")
            #expect(abs((summary.shortfalls.first?.at.seconds ?? -1) - 1) < 0.05, "said at 1 s: \(summary.shortfalls)")
        } else {
            #expect(abs(seconds - 1) < 0.05, "ends with its sound: \(seconds) s")
            #expect(summary.isComplete)
        }
        // The tone is where it was, whole.
        let tone = ToneAnalysis.meanPower(of: Array(samples[16_000..<36_000]), sampleRate: 48_000, frequency: 1000)
        #expect(tone > 0.01, "\(tone)")
    }
}
