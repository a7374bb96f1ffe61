import Foundation
import ReelCore
import ReelSystem
@testable import ReelLinux
import ReelTestSupport
import Synchronization
import Testing

/// Collects what a source delivers and reports.
private final class Capture: Sendable {
    let buffers = Mutex<[AudioBuffer]>([])
    let events = Mutex<[SourceEvent]>([])
    let clock = HostClock()
    let origin: MediaTime

    init() { origin = clock.now() }

    var context: SourceContext {
        SourceContext(id: SourceID(1), clock: clock, origin: origin,
                      deliver: { [self] sample in
                          if case .audio(let buffer) = sample { buffers.withLock { $0.append(buffer) } }
                      },
                      report: { [self] event in events.withLock { $0.append(event) } })
    }

    var received: [AudioBuffer] { buffers.withLock { $0 } }
    var seconds: Double { received.reduce(0) { $0 + $1.duration.seconds } }
    var lostCount: Int {
        events.withLock { $0.filter { if case .interrupted = $0 { return true } else { return false } }.count }
    }
    var resumedCount: Int {
        events.withLock { $0.filter { if case .resumed = $0 { return true } else { return false } }.count }
    }

    /// Polls `condition` until it holds or `timeout` seconds pass.
    func wait(timeout: Double, until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            if Date() >= deadline { return false }
            usleep(10_000)
        }
        return true
    }
}

/// The `ReelError` that `body` throws, if it throws one.
private func reelError(_ body: () throws -> Void) -> ReelError? {
    do {
        try body()
        return nil
    } catch let error as ReelError {
        return error
    } catch {
        Issue.record("expected a ReelError, got \(error)")
        return nil
    }
}

/// Checks that consecutive buffers follow each other: each starts where the last ended.
private func expectContinuous(_ buffers: [AudioBuffer], tolerance: Double = 0.001,
                              sourceLocation: SourceLocation = #_sourceLocation) {
    for (previous, next) in zip(buffers, buffers.dropFirst()) {
        let gap = (next.presentationTime - previous.endTime).seconds
        #expect(abs(gap) <= tolerance, "gap of \(gap) s after \(previous.presentationTime)", sourceLocation: sourceLocation)
    }
}

/// The power of `frequency` in each quarter of the first second of `buffers` (48 kHz) on the
/// recording's timeline, silence where nothing came.
private func firstSecondsQuarters(_ buffers: [AudioBuffer], frequency: Double) -> [Double] {
    quarters(buffers, from: 0, seconds: 1, frequency: frequency)
}

/// The power of `frequency` in each quarter second of `buffers` (48 kHz) from `start` on the
/// recording's timeline, for `seconds`: silence where nothing came.
private func quarters(_ buffers: [AudioBuffer], from start: Double, seconds: Double, frequency: Double) -> [Double] {
    let rate = 48_000
    let first = Int(start * Double(rate)), count = Int(seconds * 4) * rate / 4
    var timeline = [Float](repeating: 0, count: count)
    for buffer in buffers {
        let mono = ToneAnalysis.mono([buffer])
        let at = Int(buffer.presentationTime.convertedValue(to: Int32(rate), rounding: .nearest)) - first
        for (i, value) in mono.enumerated() where (0..<count).contains(at + i) { timeline[at + i] = value }
    }
    return (0..<(count / (rate / 4))).map { q in
        ToneAnalysis.power(of: Array(timeline[(q * rate / 4)..<((q + 1) * rate / 4)]), sampleRate: rate, frequency: frequency)
    }
}

@Suite("PulseAudio sources and devices", .tags(.realTime))
struct PulseAudioTests {
    @Test func devicesListShowsSinkMonitorAndMicrophoneWithDefaults() throws {
        let pulse = try PulseServer()
        let (sources, sinks) = try PulseAudioDevices.list(server: pulse.server)

        let apps = try #require(sinks.first { $0.name == PulseServer.sinkName })
        #expect(apps.isDefault)
        #expect(!apps.isMonitor)
        #expect(apps.sampleRate == 48_000)
        #expect(apps.channels == 2)
        #expect(!apps.description.isEmpty)

        let monitor = try #require(sources.first { $0.name == PulseServer.monitorName })
        #expect(monitor.isMonitor)
        #expect(!monitor.isDefault)

        let mic = try #require(sources.first { $0.name == PulseServer.microphoneName })
        #expect(mic.isDefault)
        #expect(!mic.isMonitor)
        #expect(mic.sampleRate == 48_000)
        #expect(sources.filter(\.isDefault).count == 1)
        #expect(sinks.filter(\.isDefault).count == 1)
    }

    /// The buffers of `buffers` that are not whole fragments of `frames` and begin more than a
    /// second after the first one: where a count cut one after it settled.
    static func cutBuffers(_ buffers: [AudioBuffer], of frames: Int) -> [MediaTime] {
        guard let first = buffers.first?.presentationTime else { return [] }
        return buffers.dropFirst().filter { $0.frameCount % frames != 0 && $0.presentationTime > first + MediaTime(value: 1, timescale: 1) }
            .map(\.presentationTime)
    }

    @Test func microphoneCapturesTheToneFedIntoTheFIFO() throws {
        let pulse = try PulseServer()
        let source = PulseAudioSource.microphone(server: pulse.server)
        #expect(source.kind == .micAudio)
        #expect(try source.prepare() == .audio(AudioFormat(sampleFormat: .f32, sampleRate: 48_000, channels: 2)))

        let capture = Capture()
        try source.start(capture.context)
        let feed = try pulse.feedMicrophone(frequency: 1000, seconds: 3, amplitude: 0.5)
        let enough = capture.wait(timeout: 5) { capture.seconds >= 1.8 }
        source.stop()
        feed.stop()
        #expect(enough, "only \(capture.seconds) s of microphone audio arrived")

        let buffers = capture.received
        #expect(buffers.allSatisfy { $0.format == AudioFormat(sampleFormat: .f32, sampleRate: 48_000, channels: 2) })
        // The first buffer may be cut at the timeline's zero, and others where the count
        // settled on the clock, in its first second at most (SampleTimeline).
        #expect(Self.cutBuffers(buffers, of: 480).isEmpty, "cut after the count settled: \(Self.cutBuffers(buffers, of: 480))")
        expectContinuous(buffers)
        let samples = ToneAnalysis.mono(buffers)
        #expect(ToneAnalysis.dominantFrequency(of: samples, sampleRate: 48_000, candidates: [440, 660, 1000, 1500, 2500]) == 1000)
        // A 0.5 sine has a power of 0.125; allow for the start before the feed.
        let power = ToneAnalysis.power(of: samples, sampleRate: 48_000, frequency: 1000)
        #expect(power > 0.08 && power < 0.14, "power \(power)")
        #expect(ToneAnalysis.power(of: samples, sampleRate: 48_000, frequency: 660) < power / 100)
        #expect(capture.lostCount == 0)
    }

    @Test func appAudioCapturesAToneInAnotherFormat() throws {
        let pulse = try PulseServer()
        let format = AudioFormat(sampleFormat: .s16, sampleRate: 44_100, channels: 1)
        let source = PulseAudioSource.appAudio(sink: PulseServer.sinkName, server: pulse.server, format: format)
        #expect(source.kind == .appAudio)
        #expect(source.sourceName == PulseServer.monitorName)
        #expect(try source.prepare() == .audio(format))

        let capture = Capture()
        try source.start(capture.context)
        let tone = try pulse.playTone(frequency: 660, seconds: 3, amplitude: 0.5)
        // Wait until the tone has been on for half a second.
        let heard = capture.wait(timeout: 5) {
            let recent = capture.received.suffix(50)
            return recent.count == 50
                && ToneAnalysis.power(of: ToneAnalysis.mono(Array(recent)), sampleRate: 44_100, frequency: 660) > 0.1
        }
        source.stop()
        tone.stop()
        #expect(heard, "the tone did not arrive in \(capture.seconds) s of app audio")

        let buffers = capture.received
        #expect(buffers.allSatisfy { $0.format == format })
        #expect(Self.cutBuffers(buffers, of: 441).isEmpty, "cut after the count settled: \(Self.cutBuffers(buffers, of: 441))")
        expectContinuous(buffers)
        let recent = ToneAnalysis.mono(Array(buffers.suffix(50)))
        #expect(ToneAnalysis.dominantFrequency(of: recent, sampleRate: 44_100, candidates: [440, 660, 1000]) == 660)
    }

    /// A sink renders ahead by the lowest latency its clients ask for: here a player with a
    /// 4 s buffer alone, as a desktop's null sink or a long-buffered player makes it. A monitor
    /// opened mid-block got nothing of that block, and lost what played in the rest of it
    /// (0.9-1.9 s of `reel record --app-audio=SINK`'s start). Opened and paced while prepared,
    /// before the recording's time zero, it has the sound from zero: each quarter second of the
    /// first second holds the tone.
    @Test func appAudioHasWhatPlaysFromTheStartWhenTheSinkRendersAhead() throws {
        let pulse = try PulseServer(keepsSinkLatencyLow: false)
        // The sink's latency is about half the player's buffer, at most 2 s: 2 s blocks.
        let tone = try pulse.playTone(frequency: 660, seconds: 30, amplitude: 0.5, latencyMilliseconds: 4000)
        defer { tone.stop() }
        // Early in the sink's first block, which began when the player came.
        usleep(300_000)
        let source = PulseAudioSource.appAudio(sink: PulseServer.sinkName, server: pulse.server)
        _ = try source.prepare()
        // Time zero after the preparation, as a session sets it.
        let capture = Capture()
        try source.start(capture.context)
        let enough = capture.wait(timeout: 10) { (capture.received.last?.endTime.seconds ?? 0) >= 1.0 }
        source.stop()
        #expect(enough, "\(capture.seconds) s of app audio arrived")

        let quarters = firstSecondsQuarters(capture.received, frequency: 660)
        let first = capture.received.first?.presentationTime.seconds ?? -1
        #expect(quarters.allSatisfy { $0 > 0.05 }, "the tone's power per quarter second from zero: \(quarters); first buffer at \(first) s")
    }

    /// An application playing into such a sink when the recording starts is taken from it to
    /// the recording's relay; what it had handed to the sink played there, unrecorded (1.95 s
    /// of every `reel record --app-audio=APP` of a player with a 2 s buffer). The sink paced
    /// while the source is prepared, the recording has its sound from the moment the routing
    /// took the stream (the source's start makes its sinks first: about 0.1 s after zero here):
    /// from a quarter second on, every quarter holds the tone.
    @Test func applicationAudioHasWhatWasPlayingFromTheStart() throws {
        let pulse = try PulseServer(keepsSinkLatencyLow: false)
        let tone = try pulse.playTone(frequency: 660, seconds: 30, amplitude: 0.5, applicationName: "long-buffered",
                                      latencyMilliseconds: 4000)
        defer { tone.stop() }
        usleep(300_000)
        let source = ApplicationAudioSource(.only(["long-buffered"]), server: pulse.server)
        _ = try source.prepare()
        let capture = Capture()
        try source.start(capture.context)
        let enough = capture.wait(timeout: 10) { (capture.received.last?.endTime.seconds ?? 0) >= 1.0 }
        source.stop()
        #expect(enough, "\(capture.seconds) s of application audio arrived")
        let quarters = firstSecondsQuarters(capture.received, frequency: 660)
        let first = capture.received.first?.presentationTime.seconds ?? -1
        #expect(quarters.dropFirst().allSatisfy { $0 > 0.05 }, "the tone's power per quarter second from zero: \(quarters); first buffer at \(first) s")
    }

    /// An application that starts playing during the recording is born on its sink, and
    /// taken to the recording's relay when its stream appears; what it had handed to the sink
    /// by then played there, unrecorded. A sink with nobody asking for low latency renders as
    /// far ahead as the player allows (2 s): `paplay` of a 5 s tone started 1 s into
    /// `reel record --app-audio=paplay` kept 3.1 s, a 2 s tone 0.2 s, and the recording was
    /// said complete. Every quarter second of the 3 s tone (but its first) is recorded.
    @Test func applicationAudioHasAnApplicationThatStartsDuringTheRecording() throws {
        let pulse = try PulseServer(keepsSinkLatencyLow: false)
        let source = ApplicationAudioSource(.only(["late-player"]), server: pulse.server)
        _ = try source.prepare()
        let capture = Capture()
        try source.start(capture.context)
        defer { source.stop() }
        #expect(capture.wait(timeout: 10) { (capture.received.last?.endTime.seconds ?? 0) >= 1.0 })
        let startedAt = capture.context.timelineNow().seconds
        let tone = try pulse.playTone(frequency: 660, seconds: 3, amplitude: 0.5, applicationName: "late-player",
                                      latencyMilliseconds: 4000)
        defer { tone.stop() }
        let enough = capture.wait(timeout: 15) { (capture.received.last?.endTime.seconds ?? 0) >= startedAt + 3.5 }
        source.stop()
        #expect(enough, "\(capture.seconds) s of application audio arrived")
        let heard = quarters(capture.received, from: startedAt, seconds: 3, frequency: 660)
        let kept = Double(heard.filter { $0 > 0.05 }.count) / 4
        print("late-player: \(kept) s of its 3 s tone recorded")
        #expect(heard.dropFirst().allSatisfy { $0 > 0.05 }, "the tone's power per quarter second from its start: \(heard)")
        let said = capture.events.withLock { $0.filter { if case .incomplete = $0 { true } else { false } } }
        #expect(said.isEmpty, "\(said)")
    }

    /// A sink that appears during the recording is not paced: an application that starts on
    /// it may lose up to 2 s of its start before it is taken. That is said, naming the
    /// application, the sink and the seconds (the recording is then incomplete).
    @Test func anApplicationStartingOnASinkThatAppearedMeanwhileMayLoseItsStartAndThatIsSaid() throws {
        let pulse = try PulseServer()
        let source = ApplicationAudioSource(.only(["late-player"]), server: pulse.server)
        _ = try source.prepare()
        let capture = Capture()
        try source.start(capture.context)
        defer { source.stop() }
        let connection = try SystemPulseAudioRouting().connect(server: pulse.server, clientName: "test")
        _ = try connection.loadModule("module-null-sink", argument: "sink_name=late")
        let tone = try pulse.playTone(frequency: 660, seconds: 3, amplitude: 0.5, applicationName: "late-player",
                                      sink: "late", latencyMilliseconds: 4000)
        defer { tone.stop() }
        let incomplete = { capture.events.withLock { $0.compactMap { if case .incomplete(let e) = $0 { e.message } else { nil } } } }
        #expect(capture.wait(timeout: 10) { !incomplete().isEmpty }, "nothing was said")
        // The stream was taken nonetheless: the rest of it is recorded.
        let player = try connection.playingStreams().first { $0.applicationName == "late-player" }
        #expect(player?.sinkName.hasPrefix("reel-app-") == true, "\(String(describing: player))")
        source.stop()
        let said = incomplete().joined(separator: "\n")
        #expect(said.contains("'late-player'") && said.contains("'late'") && said.contains("up to 2 s"), "\(said)")
    }

    @Test func defaultAppAudioHasContinuousTimesStartingNearZero() throws {
        let pulse = try PulseServer()
        let source = PulseAudioSource.appAudio(server: pulse.server)
        #expect(source.sourceName == "@DEFAULT_MONITOR@")
        _ = try source.prepare()

        let capture = Capture()
        try source.start(capture.context)
        let enough = capture.wait(timeout: 5) { capture.seconds >= 1.0 }
        let elapsed = capture.context.timelineNow()
        source.stop()
        #expect(enough)

        let buffers = capture.received
        let first = try #require(buffers.first)
        #expect(first.presentationTime >= .zero)
        expectContinuous(buffers)
        // The count is never ahead of the clock: the last buffer ended before we looked. (How
        // closely the count follows the clock is asserted exactly, on a manual clock, in
        // ScriptedPulseAudioTests; here a loaded machine only makes the lag longer.)
        let last = try #require(buffers.last)
        let lag = (elapsed - last.endTime).seconds
        #expect(lag > -0.005, "last buffer ends \(-lag) s after now")
        print("first buffer at \(first.presentationTime.seconds) s, last ends \(lag) s before now")
    }

    @Test func stopReturnsPromptlyWhenTheDeviceIsSilent() throws {
        let pulse = try PulseServer()
        // Nothing feeds the FIFO, so the microphone delivers no data at all.
        let source = PulseAudioSource.microphone(source: PulseServer.microphoneName, server: pulse.server)
        let capture = Capture()
        try source.start(capture.context)
        usleep(300_000)
        // A capture thread blocked on the silent device would never return: stop() returning
        // at all is the behaviour (how fast is bench/'s business).
        let stopped = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            source.stop()
            stopped.signal()
        }
        #expect(stopped.wait(timeout: .now() + 30) == .success, "stop() did not return")
        #expect(capture.received.isEmpty)
        source.stop()  // twice is fine
    }

    /// A sink suspended for 2 s while it is recorded: its monitor delivers nothing, and the
    /// source reads on time all along. The recording has a gap there, and no sound is said
    /// lost (nothing played that was not recorded).
    @Test func aSuspendedSinkIsAGapNotLostSound() throws {
        let pulse = try PulseServer()
        let tone = try pulse.playTone(frequency: 660, seconds: 30, amplitude: 0.5)
        defer { tone.stop() }
        let source = PulseAudioSource.appAudio(sink: PulseServer.sinkName, server: pulse.server)
        _ = try source.prepare()
        let capture = Capture()
        try source.start(capture.context)
        let suspend = { (on: Bool) in
            let r = try Subprocess.run(["pactl", "suspend-sink", PulseServer.sinkName, on ? "1" : "0"], environment: pulse.environment)
            #expect(r.status == 0, "pactl: \(r.stderr)")
        }
        let started = capture.wait(timeout: 10) { (capture.received.last?.endTime.seconds ?? 0) >= 1 }
        try suspend(true)
        usleep(2_000_000)
        try suspend(false)
        let resumed = capture.context.timelineNow().seconds
        let after = capture.wait(timeout: 10) { (capture.received.last?.endTime.seconds ?? 0) >= resumed + 2 }
        source.stop()
        #expect(started && after, "\(capture.seconds) s of app audio arrived")
        let gaps = zip(capture.received, capture.received.dropFirst()).map { ($1.presentationTime - $0.endTime).seconds }
        #expect(gaps.contains { $0 > 1 }, "the suspended sink is a gap: \(gaps.filter { $0 > 0.01 })")
        let lost = capture.events.withLock { $0.filter { if case .droppedAudio = $0 { true } else { false } } }
        #expect(lost.isEmpty, "nothing was lost: \(lost)")
    }

    @Test func noServerIsSourceUnavailableWithAHint() throws {
        let missing = "unix:/tmp/reel-no-such-pulse-\(UUID().uuidString.prefix(8))/native"
        let prepare = reelError { _ = try PulseAudioSource.microphone(server: missing).prepare() }
        #expect(prepare?.code == .sourceUnavailable)
        #expect(prepare?.message.contains("PulseAudio is not running") == true, "\(String(describing: prepare))")
        #expect(prepare?.hint?.contains("pulseaudio --start") == true)

        let start = reelError { try PulseAudioSource.appAudio(server: missing).start(Capture().context) }
        #expect(start?.code == .sourceUnavailable)

        let list = reelError { _ = try PulseAudioDevices.list(server: missing) }
        #expect(list?.code == .sourceUnavailable)
        #expect(list?.message.contains("not running") == true)
    }

    @Test func unknownDeviceIsSourceUnavailableNamingIt() throws {
        let pulse = try PulseServer()
        let mic = reelError { _ = try PulseAudioSource.microphone(source: "no-such-mic", server: pulse.server).prepare() }
        #expect(mic?.code == .sourceUnavailable)
        #expect(mic?.message.contains("no-such-mic") == true, "\(String(describing: mic))")
        #expect(mic?.hint?.contains("CaptureDevice.devices(for: .audio)") == true, "a library hint names the library's list, not the command line's")

        let app = reelError { _ = try PulseAudioSource.appAudio(sink: "no-such-sink", server: pulse.server).prepare() }
        #expect(app?.code == .sourceUnavailable)
        #expect(app?.message.contains("no-such-sink") == true)

        let start = reelError { try PulseAudioSource.microphone(source: "no-such-mic", server: pulse.server).start(Capture().context) }
        #expect(start?.code == .sourceUnavailable)
    }

    @Test func unsupportedFormatIsRefused() throws {
        let source = PulseAudioSource.microphone(format: AudioFormat(sampleFormat: .f32, sampleRate: 48_000, channels: 64))
        #expect(reelError { _ = try source.prepare() }?.code == .unsupportedFormat)
    }

    @Test func recordingCarriesOnWhenTheServerRestarts() throws {
        let pulse = try PulseServer()
        let source = PulseAudioSource.appAudio(server: pulse.server)
        let capture = Capture()
        try source.start(capture.context)
        defer { source.stop() }
        #expect(capture.wait(timeout: 5) { capture.seconds >= 0.3 })

        pulse.stopServer()
        #expect(capture.wait(timeout: 3) { capture.lostCount == 1 }, "no .interrupted event")
        let before = capture.received.count
        let lastBefore = try #require(capture.received.last)
        try pulse.startServer()

        #expect(capture.wait(timeout: 4) { capture.received.count >= before + 20 }, "no audio after the restart")
        source.stop()
        let after = capture.received.dropFirst(before)
        let resumed = try #require(after.first)
        // Re-anchored to the clock: after the outage, not straight on from the last buffer.
        #expect(resumed.presentationTime > lastBefore.endTime)
        expectContinuous(Array(after))
        #expect(capture.lostCount == 1)
        #expect(capture.resumedCount == 1)
        if case .interrupted(let error)? = capture.events.withLock({ $0.first }) {
            #expect(error.code == .sourceUnavailable)
        }
    }

    // MARK: - Timing without a server

    @Test func sampleTimelineAnchorsAndFollowsTheCount() {
        var timeline = SampleTimeline(sampleRate: 48_000)
        #expect(!timeline.isAnchored)
        // 480 frames arrived, the last captured at 0.1 s: frame 0 starts at 0.09 s.
        timeline.observe(framesReceived: 480, capturedAt: MediaTime(value: 100, timescale: 1000))
        #expect(timeline.ticks(ofFrame: 0) == 4_320)
        #expect(timeline.ticks(ofFrame: 480) == 4_800)
        // Arrivals on time, and one 50 ms late (the thread was not scheduled): the count holds.
        var frames: Int64 = 480
        func arrive(lateBy ms: Int64 = 0) {
            frames += 480
            timeline.observe(framesReceived: frames,
                             capturedAt: MediaTime(value: 4_320 + frames, timescale: 48_000) + MediaTime(value: ms, timescale: 1000))
        }
        for _ in 0..<50 { arrive() }
        arrive(lateBy: 50)
        for _ in 0..<50 { arrive() }
        #expect(timeline.reanchorCount == 0)
        #expect(timeline.ticks(ofFrame: frames) == 4_320 + frames)
        // 40 ms of data went missing: once every arrival in the last second shows it, the count
        // re-anchors to the clock.
        for _ in 0..<50 { arrive(lateBy: 40) }
        #expect(timeline.reanchorCount == 0)
        for _ in 0..<100 { arrive(lateBy: 40) }
        #expect(timeline.reanchorCount == 1)
        #expect(timeline.ticks(ofFrame: frames) == 4_320 + frames + 1_920)
        // Data that arrives before the anchor allows re-anchors at once.
        timeline.observe(framesReceived: frames, capturedAt: MediaTime(value: 4_320 + frames - 2_400, timescale: 48_000))
        #expect(timeline.reanchorCount == 2)
        #expect(timeline.ticks(ofFrame: frames) == 4_320 + frames - 2_400)
        timeline.reset()
        #expect(!timeline.isAnchored)
    }
}
