import Foundation
import ReelCore
import ReelSystem
import Synchronization

/// Records a PulseAudio source: a microphone, or the monitor of a sink (the audio that
/// applications play), in the spirit of ReplayKit's `.audioMic` and `.audioApp` buffers.
///
/// The source reads the server in 10 ms buffers (a backlog in buffers of 100 ms) on its own
/// thread (the asynchronous API on a private main loop that never blocks for more than 20 ms,
/// so ``stop()`` is prompt even when the device delivers nothing). Presentation times come from the count of samples, anchored to the
/// session clock: the newest sample that arrived was captured "now, minus the latency the server
/// reports". Arrivals can be late but never early, so the anchor follows the earliest of the
/// last second's arrivals; when that disagrees with the count by more than 30 ms — the device's
/// clock drifted, or the server dropped data — the count is re-anchored to the clock, so audio
/// stays in sync with video, while scheduling jitter moves nothing.
/// Buffers never overlap and never start before the session timeline's zero: samples that
/// would are discarded.
///
/// When the capture thread cannot read for a while (the process was stopped, the system
/// swapped), the server holds the sound (about 10 s of 48 kHz 32-bit stereo), and the backlog
/// keeps its place on the timeline. What the server dropped beyond that is silence in the
/// recording, reported as ``SourceEvent/droppedAudio(at:duration:)``; a device that delivers
/// nothing while it is read (a suspended sink) is a gap, and no loss. A gap the count leaves
/// in sound that kept arriving on time, with no stall and no pause to explain it (a timing
/// report that was off for a moment on a busy machine moved the count), is silence where sound
/// played: reported as ``SourceEvent/missedAudio(at:duration:)``. A recording that knows
/// what it lost (application audio linked on PipeWire) delivers silence in its place, and that
/// is reported too, at most once a second: sound its buffer could not hold as
/// ``SourceEvent/droppedAudio(at:duration:)``, the graph's cycles it missed while the machine
/// was busy as ``SourceEvent/missedAudio(at:duration:)`` (counted as dropped frames are).
///
/// If the server goes away while recording (it was restarted), the source reports
/// ``SourceEvent/lost(_:)``, tries to reconnect every second until it is stopped, and when the
/// server is back continues delivering, re-anchored to the clock: the recording carries on with
/// a gap.
///
/// Timing assumes a real-time session clock (``HostClock``); the reconnection attempts are paced
/// on the session clock too. What the source asks of the server goes through a
/// `PulseAudioServer`, so all of this is also tested on scripted answers.
public final class PulseAudioSource: CaptureSource {
    /// A human-readable name: "microphone (default)", "app audio of 'apps'".
    public let name: String
    /// `.micAudio` for a microphone, `.appAudio` for the monitor of a sink.
    public let kind: SampleKind
    /// The format delivered; the server converts the device's own format to it.
    public let format: AudioFormat
    /// The PulseAudio server string, or `nil` for the usual one (`PULSE_SERVER` or the default).
    public let server: String?
    /// The PulseAudio source recorded: a source name, `"@DEFAULT_MONITOR@"`, or `nil` for the
    /// default source (a stream on the default follows the default when it changes).
    public let sourceName: String?

    /// The name used to check that the device exists.
    private let lookupName: String
    /// What to say when `lookupName` does not exist.
    private let missingDevice: String
    /// How long the sound took to reach the recorded device on top of what the server reports
    /// (a loopback on the way): taken off the presentation times.
    private let upstreamLatency: MediaTime
    /// Whether it says when it delivers only digital silence (see ``DigitalSilenceWatch``): a
    /// microphone, or a sink's monitor the user chose (nothing plays on it), after a second of
    /// it; its first sound then is `resumed`.
    private let watchesSilence: Bool
    private let audioServer: any PulseAudioServer
    private let thread: CaptureThread<Handoff<any PulseAudioRecording>>
    /// The record stream opened by ``prepare()`` (a monitor's paced), for ``start(_:)`` to record.
    private let prepared = Mutex<Handoff<any PulseAudioRecording>?>(nil)
    /// Set by ``stop()``: a ``prepare()`` waiting for its monitor gives up.
    private let stopAsked = Atomic<Bool>(false)

    /// The longest ``prepare()`` waits for a monitor's first sound: a sink renders at most 2 s
    /// ahead (PulseAudio's null and ALSA sinks when nobody asks for less).
    static let pacingWait = MediaTime(value: 2500, timescale: 1000)

    /// How often a lost server is asked again.
    static let reconnectInterval = MediaTime(value: 1, timescale: 1)
    /// The longest nap while waiting to ask again, so that ``stop()`` stays prompt.
    static let reconnectNap = MediaTime(value: 50, timescale: 1000)

    /// How many buffers' worth a buffer of a backlog holds.
    static let backlogChunks = 10
    /// How far behind the clock what arrives must be to be a backlog.
    static let backlogLag = MediaTime(value: 200, timescale: 1000)

    /// The length of a delivered buffer, and of the server's fragments.
    private var framesPerBuffer: Int { max(1, format.sampleRate / 100) }

    private init(name: String, kind: SampleKind, sourceName: String?, lookupName: String, missingDevice: String,
                 server: String?, format: AudioFormat, audioServer: any PulseAudioServer, upstreamLatency: MediaTime = .zero,
                 watchesSilence: Bool = false) {
        self.watchesSilence = watchesSilence
        self.audioServer = audioServer
        self.upstreamLatency = upstreamLatency
        self.name = name
        self.kind = kind
        self.sourceName = sourceName
        self.lookupName = lookupName
        self.missingDevice = missingDevice
        self.server = server
        self.format = format
        self.thread = CaptureThread(threadName: "reel.pulse.\(kind.rawValue)")
    }

    /// A microphone: records a PulseAudio source.
    ///
    /// - Parameters:
    ///   - source: the PulseAudio source name (see `reel devices` or `pactl list short sources`);
    ///     `nil` records the server's default source and follows it when it changes.
    ///   - server: a PulseAudio server string such as `"unix:/tmp/pulse/native"`; `nil` uses
    ///     `PULSE_SERVER` or the default server.
    ///   - format: the format to deliver.
    public static func microphone(source: String? = nil, server: String? = nil,
                                  format: AudioFormat = AudioFormat(sampleFormat: .f32, sampleRate: 48_000, channels: 2)) -> PulseAudioSource {
        microphone(source: source, server: server, format: format, audioServer: SystemPulseAudioServer())
    }

    /// A microphone recorded through `audioServer` (a ``ScriptedPulseAudioServer`` in tests).
    package static func microphone(source: String?, server: String?, format: AudioFormat,
                                   audioServer: any PulseAudioServer) -> PulseAudioSource {
        PulseAudioSource(
            name: source.map { "microphone '\($0)'" } ?? "microphone (default)",
            kind: .micAudio, sourceName: source, lookupName: source ?? "@DEFAULT_SOURCE@",
            missingDevice: source.map { "PulseAudio has no source named '\($0)'" } ?? "PulseAudio has no default source",
            server: server, format: format, audioServer: audioServer, watchesSilence: true)
    }

    /// App audio: records the monitor of a PulseAudio sink, i.e. what applications play into it.
    ///
    /// - Parameters:
    ///   - sink: the sink name (see `reel devices` or `pactl list short sinks`), whose monitor
    ///     `"<sink>.monitor"` is recorded (a name that already ends in `.monitor` is used as it
    ///     is); `nil` records the monitor of the default sink, `"@DEFAULT_MONITOR@"`.
    ///   - server: a PulseAudio server string; `nil` uses `PULSE_SERVER` or the default server.
    ///   - format: the format to deliver.
    public static func appAudio(sink: String? = nil, server: String? = nil,
                                format: AudioFormat = AudioFormat(sampleFormat: .f32, sampleRate: 48_000, channels: 2)) -> PulseAudioSource {
        appAudio(sink: sink, server: server, format: format, audioServer: SystemPulseAudioServer(), watchesSilence: true)
    }

    /// App audio recorded through `audioServer` (a ``ScriptedPulseAudioServer`` in tests),
    /// `upstreamLatency` after it was played (a loopback into the sink on the way). `describedAs`,
    /// if given, is what messages call it instead of the sink: the recording of one
    /// application's sound records a sink of reel's own (`reel-app-<pid>`), a name the user
    /// never gave, and is said as the application's (`app audio of 'firefox'`).
    /// `watchesSilence`: a sink the user chose, said silent (``SourceEvent/silent(_:)``) while
    /// nothing plays on it (as a chosen application that has not played is).
    package static func appAudio(sink: String?, server: String?, format: AudioFormat,
                                 audioServer: any PulseAudioServer, upstreamLatency: MediaTime = .zero,
                                 describedAs: String? = nil, watchesSilence: Bool = false) -> PulseAudioSource {
        let monitor = sink.map { $0.hasSuffix(".monitor") ? $0 : "\($0).monitor" } ?? "@DEFAULT_MONITOR@"
        return PulseAudioSource(
            name: describedAs ?? sink.map { "app audio of '\($0)'" } ?? "app audio (default)",
            kind: .appAudio, sourceName: monitor, lookupName: monitor,
            missingDevice: describedAs.map { "the sink reel made to record \($0) is gone" }
                ?? sink.map { "PulseAudio has no sink named '\($0)' (no source '\(monitor)')" }
                ?? "PulseAudio has no default sink to record from",
            server: server, format: format, audioServer: audioServer, upstreamLatency: upstreamLatency,
            watchesSilence: watchesSilence)
    }

    /// Connects, checks that the server and the device exist, opens the record stream for
    /// ``start(_:)`` and returns `.audio(format)`: the device delivers from before the
    /// recording's time zero, so the recording has its sound from the start.
    ///
    /// For the monitor of a sink (app audio, or a microphone that is one) this also waits (up
    /// to 2.5 s) until its first sound arrives: a sink renders what is played ahead of time, by
    /// the lowest latency its clients ask for (2 s when nobody asks), and a stream that opens
    /// on its monitor gets nothing of what was rendered before it opened — the sound that plays
    /// during the rest of that block. Opened before the recording's time zero, the monitor's
    /// low latency paces the sink from its next block on, so the recording has all the sound
    /// from its start (when the sink was 2 s ahead, the recording starts up to 2 s later).
    ///
    /// - Throws: ``ReelError`` `.sourceUnavailable` when PulseAudio is not running or the device
    ///   does not exist, `.unsupportedFormat` when PulseAudio cannot deliver `format`.
    public func prepare() throws -> SourceFormat {
        stopAsked.store(false, ordering: .relaxed)
        let stream = try audioServer.openRecording(request, isCancelled: { [self] in stopAsked.load(ordering: .relaxed) })
        if kind == .appAudio || stream.isMonitor {
            try Self.waitForFirstSound(stream, within: Self.pacingWait) { [self] in stopAsked.load(ordering: .relaxed) }
        }
        prepared.withLock { $0 = stopAsked.load(ordering: .relaxed) ? nil : Handoff(stream) }
        return .audio(format)
    }

    /// Reads `stream` until something arrives (and leaves it out: it is before the recording's
    /// time zero), `limit` passes on the host clock, or `isCancelled` returns true. A sink that
    /// delivers nothing for so long plays nothing: nothing is lost by going on.
    private static func waitForFirstSound(_ stream: any PulseAudioRecording, within limit: MediaTime,
                                          isCancelled: () -> Bool) throws(ReelError) {
        let clock = HostClock()
        let deadline = clock.now() + limit
        var scratch: [UInt8] = []
        while !isCancelled(), clock.now() < deadline {
            try stream.pump(timeoutMicroseconds: 20_000)
            if try stream.read(appendingTo: &scratch) > 0 { return }
        }
    }

    /// Connects, opens the record stream and starts delivering buffers on a dedicated thread.
    ///
    /// - Throws: what ``prepare()`` throws, or `.alreadyRunning`.
    public func start(_ context: SourceContext) throws {
        // Connecting and opening the stream happen outside any lock; a stop meanwhile makes
        // the connection give up.
        let opened = prepared.withLock { p in defer { p = nil }; return p }
        try thread.start(sourceName: name, open: { isCancelled in
            try opened ?? Handoff(try audioServer.openRecording(request, isCancelled: isCancelled))
        }) { [self] handoff, thread in
            guard let stream = handoff.take() else { return }
            captureLoop(thread, stream: stream, hasBacklog: opened != nil, context: context)
        }
    }

    /// Stops delivering and waits for the capture thread to end (within a few tens of
    /// milliseconds: the thread never blocks on the server for longer). Safe to call twice.
    public func stop() {
        stopAsked.store(true, ordering: .relaxed)
        prepared.withLock { $0 = nil }
        thread.stop()
    }

    // MARK: - Capture

    /// What this source records, as the server is asked for it.
    private var request: PulseRecordRequest {
        PulseRecordRequest(server: server, device: sourceName, lookupName: lookupName, missingDevice: missingDevice,
                           format: format, fragmentFrames: framesPerBuffer, description: name)
    }

    /// Reads `initial` (opened by ``prepare()`` when `hasBacklog`: what arrived since comes
    /// first, late) and delivers buffers until the thread is asked to stop.
    private func captureLoop(_ thread: WorkerThread, stream initial: any PulseAudioRecording, hasBacklog: Bool, context: SourceContext) {
        var stream: (any PulseAudioRecording)? = initial
        let format = self.format
        let bytesPerFrame = format.bytesPerFrame
        let chunkFrames = framesPerBuffer
        let chunkBytes = chunkFrames * bytesPerFrame
        let rate = Int32(format.sampleRate)
        var timeline = SampleTimeline(sampleRate: rate, hasBacklog: hasBacklog)
        var stalls = ReaderStallWatch()
        // What the recording says it lost: cycles missed on a busy machine, and sound that
        // did not fit its buffer.
        var missed = LossReport()
        var overflowed = LossReport()
        var pending: [UInt8] = []
        pending.reserveCapacity(chunkBytes * 8)
        // The index of the first frame in `pending`, counted since the stream was opened.
        var nextFrame: Int64 = 0
        // Where the last delivered buffer ended, in ticks: buffers never start before the
        // timeline's zero nor overlap (after the count was re-anchored backwards).
        var deliveredEnd: Int64 = 0
        let clock = context.clock
        let upstreamLatency = self.upstreamLatency
        var lastAttempt = clock.now()
        // A microphone that delivers only digital silence records nothing: said (silent).
        var silence = DigitalSilenceWatch(enabled: watchesSilence, rate: rate)
        if kind == .micAudio, initial.isMuted { context.report(.silent(mutedError)); silence.saidMuted() }

        while !thread.isStopRequested {
            guard let current = stream else {
                // Lost: try again about once a second, napping briefly so that stop() is prompt.
                let nextAttempt = lastAttempt + Self.reconnectInterval
                clock.sleep(until: min(clock.now() + Self.reconnectNap, nextAttempt))
                guard clock.now() >= nextAttempt, !thread.isStopRequested else { continue }
                lastAttempt = clock.now()
                let request = self.request
                if let reopened = try? audioServer.openRecording(request, isCancelled: { thread.isStopRequested }) {
                    stream = reopened
                    context.report(.resumed)
                    silence = DigitalSilenceWatch(enabled: watchesSilence, rate: rate)
                    if kind == .micAudio, reopened.isMuted { context.report(.silent(mutedError)); silence.saidMuted() }
                    timeline.reset()
                    // Opened to be read at once: no backlog.
                    timeline.hasBacklog = false
                    stalls.reset()
                    pending.removeAll(keepingCapacity: true)
                    nextFrame = 0
                }
                continue
            }
            do {
                stalls.reading(at: clock.now())
                try current.pump(timeoutMicroseconds: 20_000)
                guard try current.read(appendingTo: &pending) > 0 else { continue }
                stalls.delivered(at: clock.now())
                // The end of what has arrived was captured `latency` ago.
                let received = nextFrame + Int64(pending.count / bytesPerFrame)
                let capturedAt = context.timelineNow() - current.latency - upstreamLatency
                let shift = timeline.observe(framesReceived: received, capturedAt: capturedAt)
                // Far behind the clock after a stall: a backlog, which comes a fragment
                // at a time, goes in buffers of 100 ms, so that seconds of it fit the
                // recorder's queue.
                let inBacklog = stalls.hasStalled && capturedAt - MediaTime(value: timeline.ticks(ofFrame: received), timescale: rate) > Self.backlogLag
                if shift != 0, let lost = stalls.reanchored(by: MediaTime(value: shift, timescale: rate), at: clock.now()) {
                    // What the server dropped while this thread did not read: silence from
                    // where the last buffer ended. A recording that says its losses held what
                    // was not read (it says what it could not): the gap is cycles it missed
                    // unseen on a busy machine (the graph changed its driver meanwhile).
                    let at = MediaTime(value: deliveredEnd, timescale: rate)
                    context.report(current.saysItsLosses ? .missedAudio(at: at, duration: lost) : .droppedAudio(at: at, duration: lost))
                } else if stalls.isHole(shift: MediaTime(value: shift, timescale: rate), at: clock.now()) {
                    // Sound kept arriving, read on time, and the count moved later all the
                    // same: a hole of silence in the recording where sound played. On a busy
                    // machine a timing report that was off for a moment (the reply came late)
                    // moved the count earlier, and it comes back when that report is
                    // forgotten; or the server lost sound while it was read. Said, as missed.
                    missed.add(start: deliveredEnd, frames: shift)
                }
                // What the recording says it lost (silence in what it delivers), at its place.
                for loss in current.takeLosses() {
                    let start = timeline.ticks(ofFrame: loss.start)
                    switch loss.kind {
                    case .missedCycles: missed.add(start: start, frames: loss.frames)
                    case .overflow: overflowed.add(start: start, frames: loss.frames)
                    }
                }
                if let (at, duration) = missed.due(at: clock.now(), rate: rate) { context.report(.missedAudio(at: at, duration: duration)) }
                if let (at, duration) = overflowed.due(at: clock.now(), rate: rate) { context.report(.droppedAudio(at: at, duration: duration)) }
                var consumed = 0
                while pending.count - consumed >= chunkBytes {
                    let chunks = (pending.count - consumed) / chunkBytes
                    if inBacklog && chunks < Self.backlogChunks { break }
                    let frames = chunkFrames * (chunks >= Self.backlogChunks ? Self.backlogChunks : 1)
                    let start = timeline.ticks(ofFrame: nextFrame)
                    let end = start + Int64(frames)
                    if end > deliveredEnd {
                        let skip = Int(max(0, deliveredEnd - start))
                        let bytes = Array(pending[(consumed + skip * bytesPerFrame)..<(consumed + frames * bytesPerFrame)])
                        let pts = MediaTime(value: start + Int64(skip), timescale: rate)
                        switch silence.delivered(bytes, frames: bytes.count / bytesPerFrame) {
                        case .silent?: context.report(.silent(silenceError))
                        case .sounds?: context.report(.resumed)
                        case nil: break
                        }
                        context.deliver(.audio(AudioBuffer(format: format, presentationTime: pts, wholeFrames: bytes)))
                        deliveredEnd = end
                    }
                    consumed += frames * bytesPerFrame
                    nextFrame += Int64(frames)
                }
                pending.removeFirst(consumed)
            } catch {
                context.report(.interrupted(ReelError(
                    .sourceUnavailable, "\(name) lost its stream on the audio server: \(error.message)",
                    hint: "the audio server stopped or the device went away; Reel retries every second and carries on when it is back",
                    errno: error.errno)))
                stream = nil
                lastAttempt = clock.now()
            }
        }
        if let (at, duration) = missed.due(at: nil, rate: rate) { context.report(.missedAudio(at: at, duration: duration)) }
        if let (at, duration) = overflowed.due(at: nil, rate: rate) { context.report(.droppedAudio(at: at, duration: duration)) }
        if silence.endsSilent { context.report(.silent(silenceError)) }
    }

    /// What it says when it delivered only digital silence: a microphone, a sink's monitor.
    private var silenceError: ReelError { kind == .appAudio ? Self.nothingPlayed : Self.digitalSilence }

    /// What a sink's monitor on which nothing has played says (as an application that has
    /// not played does: the recording's `resumed` follows when something plays).
    static let nothingPlayed = ReelError(
        .sourceUnavailable,
        "nothing has played on the sink since the recording started: every sample is digital silence (exactly zero)",
        hint: "check that the sound plays on that sink (the audio server lists its sinks)")

    /// What a microphone that delivered only digital silence says.
    static let digitalSilence = ReelError(
        .sourceUnavailable,
        "every sample it delivered was digital silence (exactly zero): it recorded nothing. A microphone's own noise is never exactly zero: the device is muted, or is the monitor of a sink that plays nothing",
        hint: "unmute it or choose another (see the audio sources the server lists)")

    /// What a microphone whose device is muted says at once.
    private var mutedError: ReelError {
        let device = sourceName ?? "@DEFAULT_SOURCE@"
        return ReelError(.sourceUnavailable, "the PulseAudio source '\(device)' is muted: it records silence until it is unmuted",
                         hint: "unmute it (pactl set-source-mute \(device) 0, or in the sound settings)")
    }
}

/// Whether a microphone has delivered only digital silence (every sample exactly zero) since
/// it started: a muted device, or the monitor of a sink that plays nothing. A real
/// microphone's noise floor is never exactly zero, so this is no quiet room: it records nothing.
/// Said once a second of it has been delivered (or at the end, if shorter), and ended by the
/// first sound.
struct DigitalSilenceWatch {
    enum Change { case silent, sounds }
    private let enabled: Bool
    private let patience: Int
    private var heard = false
    private var silentFrames = 0
    private var said = false

    init(enabled: Bool, rate: Int32) {
        self.enabled = enabled
        patience = Int(rate)
    }

    /// A silence was said already (the device is muted).
    mutating func saidMuted() { said = true }

    /// The silence ``delivered(_:frames:)`` said was not said after all (there was nothing to
    /// say yet: no chosen application plays): it is said when another `patience` of it has
    /// been delivered.
    mutating func postpone() {
        said = false
        silentFrames = 0
    }

    /// Whether something other than digital silence was delivered.
    var hasHeard: Bool { heard }

    /// `bytes` (`frames` frames) were delivered: whether the source is now to say it is
    /// silent, or that it sounds after it said so.
    mutating func delivered(_ bytes: [UInt8], frames: Int) -> Change? {
        guard enabled, !heard else { return nil }
        if bytes.contains(where: { $0 != 0 }) {
            heard = true
            return said ? .sounds : nil
        }
        silentFrames += frames
        guard !said, silentFrames >= patience else { return nil }
        said = true
        return .silent
    }

    /// Whether the source ends having delivered only digital silence, not said yet.
    var endsSilent: Bool { enabled && !heard && !said && silentFrames > 0 }
}

/// The losses a recording says it had, said at most once a second: a busy machine's missed
/// cycles come tens of milliseconds at a time, and each would be an event of its own.
private struct LossReport {
    /// Where (ticks on the timeline) the first loss not said yet began, and how many frames
    /// are lost since (within the recording: what was lost before its zero is not).
    private var start: Int64?
    private var frames: Int64 = 0
    private var since: MediaTime?

    mutating func add(start lossStart: Int64, frames count: Int64) {
        let end = lossStart + count
        guard end > 0 else { return }
        start = start ?? max(0, lossStart)
        frames += end - max(0, lossStart)
    }

    /// What to say now (`at` the host clock's time; `nil`: at the end, all of it).
    mutating func due(at now: MediaTime?, rate: Int32) -> (MediaTime, MediaTime)? {
        guard let first = start else { return nil }
        if let now {
            guard let since else { self.since = now; return nil }
            guard now - since >= MediaTime(value: 1, timescale: 1) else { return nil }
        }
        defer { start = nil; frames = 0; since = nil }
        return (MediaTime(value: first, timescale: rate), MediaTime(value: frames, timescale: rate))
    }
}

/// Moves a value that is not `Sendable` to the one thread that will use it from then on.
final class Handoff<Value>: @unchecked Sendable {
    private var value: Value?
    init(_ value: Value) { self.value = value }
    /// Called once, by the receiving thread.
    func take() -> Value? {
        defer { value = nil }
        return value
    }
}
