/// Which moments of the session clock a recording keeps, and where they land in the file.
///
/// A recording is a run of intervals on the session clock — from the first frame to the first
/// pause, from each resume to the next pause — all on the video's frame grid. Pausing and
/// resuming take effect at the next frame slot after the request, so the cut is exact: the
/// frame at the pause slot and the audio from that very sample on are left out, and recording
/// resumes with the frame at the resume slot and the audio sample at the same instant. In a
/// single file the gaps are taken out of the timestamps; with clips each interval is a clip
/// that starts at zero. An interval that would hold nothing (a pause at the very slot where
/// recording began or resumed: a recording that starts paused) is not kept, so every interval
/// is a clip with frames in it.
public struct RecordingTimeline: Sendable, Hashable {
    /// One recorded interval, `[start, end)` on the session clock; `end` is `nil` while open.
    public struct Interval: Sendable, Hashable {
        /// The first instant recorded (a frame slot).
        public var start: MediaTime
        /// The first instant no longer recorded (the pause's frame slot); `nil` while recording.
        public var end: MediaTime?
        /// Recorded time before this interval.
        public var offset: MediaTime

        /// The interval's length, if it has ended.
        public var duration: MediaTime? { end.map { $0 - start } }

        /// Whether `time` falls inside the interval.
        public func contains(_ time: MediaTime) -> Bool {
            time >= start && (end.map { time < $0 } ?? true)
        }
    }

    /// The grid that pauses and resumes snap to.
    public let frameDuration: MediaTime
    /// The recorded intervals, in time order.
    public private(set) var intervals: [Interval] = []

    /// Creates an empty timeline whose pauses and resumes snap to a grid of `frameDuration`.
    public init(frameDuration: MediaTime) {
        self.frameDuration = frameDuration
    }

    /// Whether recording has begun.
    public var hasBegun: Bool { zero != nil }
    /// Whether the recording is paused (or a pause has been asked for and its slot is set).
    public var isPaused: Bool { hasBegun && (intervals.last.map { $0.end != nil } ?? true) }
    /// The time zero of the recording on the session clock: where it began, and the origin
    /// of the grid of frame slots.
    public private(set) var zero: MediaTime?

    /// Starts the first interval at `time` (the first video frame's time, or zero).
    public mutating func begin(at time: MediaTime) {
        guard zero == nil else { return }
        zero = time
        intervals.append(Interval(start: time, end: nil, offset: .zero))
    }

    /// The first frame slot at or after `time`, on the grid that starts at zero.
    public func slot(atOrAfter time: MediaTime) -> MediaTime {
        guard let zero else { return time }
        if time <= zero { return zero }
        let rate = FrameRate(Int32(clamping: frameDuration.timescale), per: Int32(clamping: frameDuration.value))
        return zero + rate.time(ofFrame: rate.frameIndex(at: time - zero, rounding: .up))
    }

    /// Asks to pause at `time`; the interval ends at the next slot. Returns that slot, or `nil`
    /// if already paused (or not begun). An interval that the pause leaves empty (it ends
    /// where it started) is removed.
    @discardableResult
    public mutating func pause(at time: MediaTime) -> MediaTime? {
        guard let last = intervals.last, last.end == nil else { return nil }
        let end = max(last.start, slot(atOrAfter: time))
        if end == last.start {
            intervals.removeLast()
        } else {
            intervals[intervals.count - 1].end = end
        }
        return end
    }

    /// Asks to resume at `time`; a new interval starts at the next slot (never before the
    /// last one ended). Returns that slot, or `nil` if not paused.
    @discardableResult
    public mutating func resume(at time: MediaTime) -> MediaTime? {
        guard let zero, isPaused else { return nil }
        let last = intervals.last
        let start = max(last?.end ?? zero, slot(atOrAfter: time))
        let offset = last.map { $0.offset + (($0.end ?? $0.start) - $0.start) } ?? .zero
        intervals.append(Interval(start: start, end: nil, offset: offset))
        return start
    }

    /// The interval that holds `time`, by index.
    public func intervalIndex(containing time: MediaTime) -> Int? {
        // Recent intervals are the likely ones.
        for i in intervals.indices.reversed() where intervals[i].contains(time) { return i }
        return nil
    }

    /// Where `time` lands in a single file (gaps taken out), or `nil` if it is not recorded.
    public func recordedTime(for time: MediaTime) -> MediaTime? {
        guard let i = intervalIndex(containing: time) else { return nil }
        return intervals[i].offset + (time - intervals[i].start)
    }

    /// Recorded time up to `time` on the session clock (what a progress bar shows).
    public func recordedDuration(upTo time: MediaTime) -> MediaTime {
        guard let last = intervals.last else { return .zero }
        if let end = last.end { return last.offset + (min(end, max(time, last.start)) - last.start) }
        return last.offset + max(.zero, time - last.start)
    }

    /// The pieces of `[start, end)` that are recorded: each with its interval's index.
    public func split(from start: MediaTime, to end: MediaTime) -> [(interval: Int, start: MediaTime, end: MediaTime)] {
        var pieces: [(Int, MediaTime, MediaTime)] = []
        for (i, interval) in intervals.enumerated() {
            let a = max(start, interval.start)
            let b = interval.end.map { min(end, $0) } ?? end
            if a < b { pieces.append((i, a, b)) }
        }
        return pieces
    }
}
