/// What a source produces, known once it has been prepared.
public enum SourceFormat: Sendable, Hashable {
    /// Video frames of a size and pixel format, paced at a nominal frame rate.
    case video(size: PixelSize, pixelFormat: PixelFormat, frameRate: FrameRate)
    /// Audio in a format.
    case audio(AudioFormat)
}

/// Something that happened to a source while it ran.
public enum SourceEvent: Sendable {
    /// Frames the source could not deliver, and why: no buffer was free (the outputs held them
    /// all: ``FrameDropReason/encoderBehind``), it took its picture too late
    /// (``FrameDropReason/captureLate``), or it lost them itself (``FrameDropReason/source``,
    /// what a source that does not say why is taken to mean).
    case droppedFrames(Int, reason: FrameDropReason = .source)
    /// The source failed or went away; it delivers nothing more.
    case lost(ReelError)
    /// The source stopped delivering for a while (a network camera dropped, the audio server
    /// restarted) and is trying to come back; ``resumed`` follows if it does.
    case interrupted(ReelError)
    /// An interrupted or silent source delivers again (a silent one: something it was asked
    /// to record plays now).
    case resumed
    /// The source came to its natural end (a file played out).
    case ended
    /// The source runs but part (or all) of what it was asked to record has had nothing to
    /// deliver since it started: a chosen application that has not played (yet); one event for
    /// each such part. ``resumed`` ends every silence of the source: it says again the ones that
    /// go on. (A pause in what it records later is not a silence.) A silence that lasts to the
    /// end of a recording is in its summary: nothing of that part was recorded.
    case silent(ReelError)
    /// Part of what the source was asked to record plays but is not recorded (an
    /// application's stream that was moved away, or that another program keeps where it is);
    /// the recording goes on, and its summary says so.
    case incomplete(ReelError)
    /// Sound the source could not read in time and lost: `duration` of it from `at` on the
    /// session timeline, where the recording has silence (the source's reader was stalled for
    /// longer than its audio server holds sound). The recording goes on; its summary counts
    /// the loss and says the source is incomplete.
    case droppedAudio(at: MediaTime, duration: MediaTime)
    /// Sound the source's capture missed because the machine was busy: `duration` of it from
    /// `at` on the session timeline, where the recording has silence (the audio server ran its
    /// cycles, a few milliseconds each, without the capture, whose thread came too late). Like
    /// ``droppedFrames(_:reason:)`` it is counted (``RecordingSummary/droppedAudio``) and said
    /// while recording, and the source is not incomplete.
    case missedAudio(at: MediaTime, duration: MediaTime)
    /// Starting to record ended another program's recording, as `message` says: on a
    /// PulseAudio server, moving an application's stream to record it ends every recording of
    /// that stream alone (`parec --monitor-stream`, another program's per-application
    /// recorder). The source records all it was asked to, so the recording is complete; its
    /// summary lists what it ended (``RecordingSummary/endedRecordings``).
    case endedAnotherRecording(String)
}

extension SourceEvent {
    /// What ``droppedAudio(at:duration:)`` says, as the error its source is incomplete with.
    package static func droppedAudioError(duration: MediaTime) -> ReelError {
        ReelError(.sourceUnavailable,
                  "\(lengthWords(duration)) of its sound was lost: it was not read for longer than the audio server keeps sound (the process was stopped or the system too busy), so the recording has silence there",
                  hint: "keep the system less busy while recording")
    }

    /// Why sound was missed (``missedAudio(at:duration:)``), in words for a reader.
    package static let missedAudioExplanation = "its capture missed the audio server's cycles while the machine was busy, so the recording has silence there"
    /// What helps against missed sound, in the library's words.
    package static let missedAudioHint = "keep the machine less busy while recording (what loads its processors)"

    /// A length of lost sound in words: milliseconds under a tenth of a second (`8 ms`), else
    /// seconds to a tenth (`1.5 s`), so that a short loss never reads `0.0 s`.
    package static func lengthWords(_ length: MediaTime) -> String {
        let seconds = length.seconds
        if seconds < 0.0995 { return "\(max(1, Int((seconds * 1000).rounded()))) ms" }
        return String(format: "%.1f s", seconds)
    }
}

/// The session's side of a running source: where to deliver samples and the shared clock.
public struct SourceContext: Sendable {
    /// The source's identity within the session.
    public let id: SourceID
    /// The session clock.
    public let clock: any MediaClock
    /// The clock reading at which the session's timeline starts (presentation time zero).
    public let origin: MediaTime
    /// Delivers a sample. Called on the source's own thread; under a real-time clock it never
    /// blocks, under a manual clock it may wait for the outputs (backpressure).
    public let deliver: @Sendable (Sample) -> Void
    /// Reports an event.
    public let report: @Sendable (SourceEvent) -> Void

    /// Creates a context; the session makes one for each source it starts (tests make their own).
    public init(id: SourceID, clock: any MediaClock, origin: MediaTime,
                deliver: @escaping @Sendable (Sample) -> Void, report: @escaping @Sendable (SourceEvent) -> Void) {
        self.id = id
        self.clock = clock
        self.origin = origin
        self.deliver = deliver
        self.report = report
    }

    /// The current time on the session timeline.
    public func timelineNow() -> MediaTime { clock.now() - origin }

    /// Where a starting source's timeline begins: now under a real-time clock; zero under a
    /// manual clock, where other sources may already have moved the clock ahead while this
    /// one was starting.
    public func startTime() -> MediaTime { clock.isRealTime ? timelineNow() : .zero }
}

/// A capture source: a screen, a camera, a microphone, a synthetic pattern.
///
/// A source runs on its own thread between `start` and `stop`, stamping each sample on the
/// session clock and handing it to `SourceContext.deliver`.
public protocol CaptureSource: AnyObject, Sendable {
    /// A human-readable name ("screen :0", "microphone (default)").
    var name: String { get }
    /// What kind of samples the source delivers.
    var kind: SampleKind { get }
    /// Opens what the source needs and reports its format. Throws a ``ReelError`` when the
    /// device, server or file is unavailable. May be called more than once.
    func prepare() throws -> SourceFormat
    /// Starts delivering samples.
    func start(_ context: SourceContext) throws
    /// Stops delivering and waits for the source's thread to end. Safe to call twice.
    func stop()
}

/// An output of a capture session: a recorder, a frame handler.
public protocol CaptureOutput: AnyObject, Sendable {
    /// Called once before the session starts, with the sources the output will see, the
    /// session clock and the clock reading that is time zero of the samples' presentation times.
    /// Throws a ``ReelError`` if the output cannot work with them.
    func prepare(sources: [SourceDescriptor], clock: any MediaClock, origin: MediaTime) throws
    /// Receives a sample on the source's thread. Must not block under a real-time clock.
    func consume(_ sample: SourcedSample)
    /// Receives a source event.
    func sourceEvent(_ event: SourceEvent, from source: SourceID)
    /// Called when the session stops: finish writing and return when done.
    func finish() async
    /// Called when the session begins to stop, before its sources stop: an output that makes
    /// sources wait (off real time) lets them go.
    func sessionWillStop()
    /// Called when the session is stopped while it starts, possibly while ``prepare(sources:clock:origin:)``
    /// runs on another thread: an output whose preparation waits on something slow (a
    /// streaming server connecting) gives it up at once, and its `prepare` may then throw.
    func cancelStart()
}

extension CaptureOutput {
    /// Does nothing.
    public func sessionWillStop() {}
    /// Does nothing.
    public func cancelStart() {}
}

/// An output that takes pictures whose zoom is left to it (``VideoFrame/view``): the recorder,
/// whose encoder converts every picture anyway and crops and scales in the same pass. Every
/// other output is handed the zoomed picture made.
package protocol DeferredViewTaker: CaptureOutput {}

/// A source as outputs see it.
public struct SourceDescriptor: Sendable, Hashable {
    /// The source's identity within the session.
    public let id: SourceID
    /// The source's human-readable name.
    public let name: String
    /// What the source delivers.
    public let kind: SampleKind
    /// The format the source reported when it was prepared.
    public let format: SourceFormat
    /// Whether the pictures' size is one a filter made (a crop, a scale, a pad) rather than
    /// the source's own: a recorder of a size of its own fits them into it with their aspect
    /// kept, black bars around them, rather than stretch what the filter shaped (issue 26, F3:
    /// a 4:3 crop recorded at a 16:9 size was stretched). Set by the session and the compositor.
    package var sizeMadeByFilter = false

    /// Creates a descriptor; each argument is the property of the same name.
    public init(id: SourceID, name: String, kind: SampleKind, format: SourceFormat) {
        self.id = id
        self.name = name
        self.kind = kind
        self.format = format
    }
}
