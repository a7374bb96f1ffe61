/// Presentation times of audio derived from sample counts, anchored to the session clock and
/// re-anchored when the two disagree by more than `tolerance`.
///
/// Each observation says when, by the clock, the newest frame that arrived was captured. Data
/// can arrive late (the capture thread was not scheduled at once, or was stopped and now reads
/// what the server held meanwhile) but never early, so the anchor is the earliest that recent
/// observations allow: the minimum over about a second of the clock of the clock time less the
/// count time. The second is counted on the clock, not in frames, and does not move on while
/// frames arrive faster than the clock runs: a backlog read after a stall (seconds of frames
/// in a moment, or over seconds on a busy machine) is late arrivals, and moves nothing. A late arrival moves nothing; a lasting disagreement
/// (the device's clock drifts, the server dropped data) moves the minimum, and when it has moved
/// more than `tolerance` the count is re-anchored there. Data that arrives earlier than the
/// anchor allows re-anchors at once. For a stream opened before it is read
/// (``hasBacklog``), the first anchoring settles over half a window (longer while the backlog is
/// read): until then the anchor follows the earliest observation by more than a sixth of
/// `tolerance`, so that a late first arrival (the backlog comes over several reads) does not
/// leave the count late by up to `tolerance` for good. A stream read from its opening has no
/// backlog, and its first observations are not late: it does not settle, since an earlier
/// observation within the tolerance there is the latency's noise (a server's timing report is
/// a snapshot, 10 ms and more off for a moment) and following it would skip sound under way.
///
/// Times are kept in ticks of the sample rate, so consecutive buffers follow each other exactly
/// between re-anchorings.
package struct SampleTimeline: Sendable {
    /// Ticks per second.
    package let sampleRate: Int32
    /// How far the count may stray from the clock before it is re-anchored, in ticks.
    package let toleranceTicks: Int64
    /// The span of the clock, in ticks, of each of the two buckets the minimum is taken over.
    package let bucketTicks: Int64
    /// The presentation time of frame 0, in ticks.
    private var anchor: Int64?
    /// The minimum offset seen in the current and the previous bucket.
    private var currentMinimum = Int64.max
    private var previousMinimum = Int64.max
    /// When (on the clock, in ticks) the current bucket began; `nil` before the first observation.
    private var bucketStart: Int64?
    /// The previous observation: its clock time in ticks and its count.
    private var last: (clock: Int64, frames: Int64)?
    /// Until when (on the clock, in ticks) the first anchoring is still settling; `nil` once settled.
    private var settlingUntil: Int64?
    /// How many times the count was re-anchored after the first anchoring (and its settling).
    package private(set) var reanchorCount = 0
    /// Whether the stream was opened before it is read, so that its first observations come
    /// from a backlog and the first anchoring settles.
    package var hasBacklog: Bool

    /// Creates a timeline for `sampleRate` that re-anchors when the count strays more than
    /// `tolerance` from the clock, taking the minimum over `window`.
    package init(sampleRate: Int32, tolerance: MediaTime = MediaTime(value: 30, timescale: 1000),
         window: MediaTime = MediaTime(value: 1, timescale: 1), hasBacklog: Bool = true) {
        self.hasBacklog = hasBacklog
        self.sampleRate = sampleRate
        self.toleranceTicks = max(1, tolerance.convertedValue(to: sampleRate))
        self.bucketTicks = max(1, window.convertedValue(to: sampleRate) / 2)
    }

    /// Whether an anchor has been set.
    package var isAnchored: Bool { anchor != nil }

    /// Records that `framesReceived` frames have arrived in all (counted since the stream
    /// opened), the newest of them captured at `time` on the timeline, so that frame
    /// `framesReceived` begins at `time`.
    ///
    /// - Returns: how far the count was moved, in ticks: positive when it was re-anchored later
    ///   (frames the clock says were captured did not arrive: a gap), negative when earlier
    ///   (the first anchoring settling included), zero when it was not re-anchored (the first
    ///   anchoring included).
    @discardableResult
    package mutating func observe(framesReceived: Int64, capturedAt time: MediaTime) -> Int64 {
        let clockTicks = time.convertedValue(to: sampleRate)
        let offset = clockTicks - framesReceived
        // More frames than the clock ran since the last observation: a backlog is being read.
        let catchingUp = last.map { (framesReceived - $0.frames) - (clockTicks - $0.clock) > toleranceTicks } ?? false
        last = (clockTicks, framesReceived)
        if let start = bucketStart, clockTicks - start < bucketTicks || catchingUp {
            // Still in the current bucket.
        } else {
            previousMinimum = currentMinimum
            currentMinimum = .max
            bucketStart = clockTicks
        }
        currentMinimum = min(currentMinimum, offset)
        guard let anchor else {
            anchor = offset
            settlingUntil = hasBacklog ? clockTicks + bucketTicks : nil
            return 0
        }
        let estimate = min(currentMinimum, previousMinimum)
        if let until = settlingUntil {
            // A stream opened before it is read (to have its sound from the start) has a
            // backlog, which arrives over several reads, late: the first observation is the
            // latest of them. Until the backlog is read and half a window has passed, the anchor
            // follows the earliest observation by more than 5 ms, not only beyond the
            // tolerance, which would leave the count up to the tolerance late for good.
            if clockTicks >= until && !catchingUp {
                settlingUntil = nil
            } else if anchor - estimate > toleranceTicks / 6 {
                // (By more than a sixth of the tolerance, 5 ms: each move earlier cuts a buffer
                // already stamped, and arrivals jitter by a few milliseconds.)
                self.anchor = estimate
                return estimate - anchor
            }
        }
        guard abs(estimate - anchor) > toleranceTicks else { return 0 }
        self.anchor = estimate
        reanchorCount += 1
        return estimate - anchor
    }

    /// The presentation time of frame `frame`, in ticks of the sample rate. Call after the first
    /// `observe`.
    package func ticks(ofFrame frame: Int64) -> Int64 {
        (anchor ?? 0) + frame
    }

    /// Forgets the anchor and the history (after a reconnection the count starts again).
    package mutating func reset() {
        anchor = nil
        currentMinimum = .max
        previousMinimum = .max
        bucketStart = nil
        last = nil
        settlingUntil = nil
    }
}
