/// Tells sound that an audio server dropped because its reader stalled from sound that was
/// never there, for a source that reads a server's record stream with a ``SampleTimeline``.
///
/// A server holds what its reader has not read yet, up to its buffer (PulseAudio: about 10 s
/// of 48 kHz 32-bit stereo); a reader stopped for longer (its process stopped, a swap storm, a
/// debugger) finds the newest part dropped. Once the reader has read the backlog, the count is
/// behind the clock by what was dropped, and the timeline re-anchors it later by that much. A
/// device that delivers nothing for a while (suspended, or a sink that renders nothing) makes
/// the timeline move the same way without any loss, while its reader reads on time. So a later
/// re-anchoring is loss only when it follows a stall of the reader while the device has
/// delivered without a pause since, and at most as much as the stall lasted.
package struct ReaderStallWatch: Sendable {
    /// A gap between two reads longer than this is a stall (a reader waits at most tens of
    /// milliseconds for data).
    package let threshold: MediaTime
    /// How long after a stall ended a later re-anchoring is put down to it (reading the backlog
    /// takes a moment, seconds on a busy machine, and the timeline follows the clock within a
    /// second after it).
    package let attribution: MediaTime
    /// When the reader last read, and when something last arrived.
    private var lastRead: MediaTime?
    private var lastData: MediaTime?
    /// The latest stall: when it ended and how long it lasted.
    private var stall: (end: MediaTime, length: MediaTime)?
    /// When something last arrived after the device delivered nothing for longer than
    /// `threshold` while it was read (a pause).
    private var pauseEnd: MediaTime?

    /// A watch that counts gaps between reads longer than `threshold` as stalls and puts a
    /// later re-anchoring within `attribution` after one down to it.
    package init(threshold: MediaTime = MediaTime(value: 250, timescale: 1000),
                 attribution: MediaTime = MediaTime(value: 5, timescale: 1)) {
        self.threshold = threshold
        self.attribution = attribution
    }

    /// The reader is about to read, at `now` (on any clock, the same for every call).
    package mutating func reading(at now: MediaTime) {
        defer { lastRead = now }
        if let lastRead, now - lastRead > threshold {
            // Stalls close together add up (a busy machine stalls the reading of a backlog).
            let carried = stall.map { lastRead - $0.end <= attribution ? $0.length : .zero } ?? .zero
            stall = (end: now, length: carried + (now - lastRead))
            lastData = now
        } else if stall != nil, let lastData, now - lastData > threshold {
            // Read on time and nothing arrived: the device paused, and what the timeline does
            // from here on is its pause, not the stall's loss.
            stall = nil
        }
    }

    /// Whether the reader stalled and what it read since has not been put down to it yet:
    /// what arrives may be the backlog the server held.
    package var hasStalled: Bool { stall != nil }

    /// Something arrived, at `now`.
    package mutating func delivered(at now: MediaTime) {
        if let lastData, now - lastData > threshold { pauseEnd = now }
        lastData = now
    }

    /// Whether a move of the count by `shift` (positive: later) at `now` leaves a hole in sound
    /// that kept arriving: no stall of the reader and no pause of the device explains it (both
    /// leave the timeline within `attribution`), so the recording has silence where sound
    /// played (a timing report that was off for a moment moved the count, or the server lost
    /// sound while it was read on time).
    package func isHole(shift: MediaTime, at now: MediaTime) -> Bool {
        guard shift > .zero, stall == nil else { return false }
        return pauseEnd.map { now - $0 > attribution } ?? true
    }

    /// The timeline moved its count by `shift` (positive: later) at `now`. Returns how much of
    /// the move is sound the server dropped during a stall: `nil` when none is.
    package mutating func reanchored(by shift: MediaTime, at now: MediaTime) -> MediaTime? {
        guard shift > .zero, let stall, now - stall.end <= attribution else { return nil }
        // A stall is put down to once: a second move is the device's own.
        self.stall = nil
        return min(shift, stall.length)
    }

    /// Forgets the reads and the stall (a new stream).
    package mutating func reset() {
        lastRead = nil
        lastData = nil
        stall = nil
        pauseEnd = nil
    }
}
