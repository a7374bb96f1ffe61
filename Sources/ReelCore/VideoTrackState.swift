/// Where a recording's video track is, as the recorder's thread sees it: whether frames are
/// still coming and still recorded, and what decides where the recording ends.
///
/// awaitingFrames → sourceGone (the video source went for good) → complete (the duration
/// limit was reached); awaitingFrames → complete. Once complete, the end is fixed by the limit
/// and a source that goes away changes nothing.
public enum VideoTrackState: Sendable, Hashable {
    /// Frames come and are recorded; they decide the recorded time.
    case awaitingFrames
    /// The video source has gone for good: frames still queued are recorded, and the recording
    /// goes on with its audio, which decides the recorded time (if there is any audio).
    case sourceGone
    /// The duration limit was reached: later frames are left out.
    case complete

    /// The video source went away for good.
    public mutating func sourceWentAway() {
        if self == .awaitingFrames { self = .sourceGone }
    }

    /// A frame reached the duration limit.
    public mutating func reachedLimit() { self = .complete }

    /// Whether frames that arrive are recorded.
    public var recordsFrames: Bool { self != .complete }

    /// Whether the video decides where the recording ends (else its audio does): not once its
    /// source has gone while audio goes on.
    public func videoDecidesEnd(hasAudio: Bool) -> Bool { !(self == .sourceGone && hasAudio) }

    /// Whether the limit waits for no more frames: they reached it, or no more will come and
    /// audio goes on.
    public func isDone(hasAudio: Bool) -> Bool { self == .complete || (self == .sourceGone && hasAudio) }

    /// Whether the recording should hold audio that runs ahead of the video until the video
    /// catches up: only while frames still come.
    public var expectsFrames: Bool { self == .awaitingFrames }
}
