// What a recording lost and what it wrote: the frames dropped, with why, and the frames and
// time the recording holds.

extension RecordingMachine {
    /// Frames missing between frames written: frames the source or the recorder dropped.
    package var droppedFrames: Int64 { drops.total }
    /// Whether the recorder learnt of lost frames whose gap is not counted yet.
    package var holdsNotedDrops: Bool { !ledger.isEmpty }
    /// The frames counted lost, and those the recorder learnt are being lost whose gap is not
    /// counted yet (the next frame has not come): what is said while recording. Only while it
    /// records: frames lost in a pause (a schedule's wait, a preview not recording) have no
    /// slot and are never counted, so they are not said either.
    package var dropsSoFar: FrameDrops {
        guard !ledger.isEmpty, timeline.hasBegun, !timeline.isPaused else { return drops }
        var all = drops
        all.add(ledger.noted(stallFrames: FrameDrops.stallFrames(at: configuration.frameRate)))
        return all
    }

    /// Takes what the recorder learnt of the video source's lost frames (see ``FrameDropLedger``),
    /// for the gaps still to be counted.
    package mutating func noteDrops(_ noted: inout FrameDropLedger) {
        ledger.take(&noted)
    }

    /// Forgets what was noted of frames lost before the video source's frame `sequence`, which
    /// leaves no gap: it came in a pause (the frames lost had no slot), or the frame mode
    /// leaves it out as a repeat (their slots repeat the picture before, as its does).
    mutating func forgetLost(before sequence: Int64) {
        guard !ledger.isEmpty else { return }
        _ = ledger.attribute(0, before: sequence, stallFrames: FrameDrops.stallFrames(at: configuration.frameRate))
    }

    /// Counts `missing` frames lost before the video source's frame `sequence` (`nil`: past
    /// the last frame), with why, in interval `interval` (the one the frame after the gap, or
    /// the end, falls in).
    mutating func countLost(_ missing: Int64, before sequence: Int64?, interval: Int) {
        let lost = ledger.attribute(missing, before: sequence, stallFrames: FrameDrops.stallFrames(at: configuration.frameRate))
        drops.add(lost)
        if lost.total > 0 { dropsByInterval[interval, default: FrameDrops()].add(lost) }
    }

    /// The frames counted lost in interval `interval` (a clip, in clip mode), by why: the gap
    /// before each of its frames (frames lost at its resume count to it), and, for the last
    /// interval, the slots after the last frame up to the end. They add up to ``drops`` over
    /// all intervals.
    package func drops(inInterval interval: Int) -> FrameDrops {
        dropsByInterval[interval] ?? FrameDrops()
    }

    /// How much of the session time `[start, end)` the recording holds (pauses and what lies
    /// past the limit taken out).
    package func recordedLength(from start: MediaTime, to end: MediaTime) -> MediaTime {
        var total = MediaTime.zero
        for piece in timeline.split(from: start, to: end) {
            var a = timeline.intervals[piece.interval].offset + (piece.start - timeline.intervals[piece.interval].start)
            var b = a + (piece.end - piece.start)
            if let limit = configuration.limit { a = min(a, limit); b = min(b, limit) }
            if b > a { total += b - a }
        }
        return total
    }

    /// The frames written, as runs; `limitedTo` frames at most (a size limit left the last out).
    package func writtenRuns(limitedTo frames: Int64? = nil) -> [RecordedFrames.Run] {
        guard let frames else { return writtenRuns }
        var runs = writtenRuns
        var excess = runs.reduce(0) { $0 + $1.count } - frames
        while excess > 0, let last = runs.last {
            let cut = min(excess, last.count)
            if cut == last.count { runs.removeLast() } else { runs[runs.count - 1].count -= cut }
            excess -= cut
        }
        return runs
    }
}
