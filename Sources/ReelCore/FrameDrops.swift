/// Why video frames were lost from a recording.
public enum FrameDropReason: String, Sendable, Hashable, CaseIterable {
    /// The recording could not keep up: its encoder (or the disk behind it) was still busy with
    /// earlier frames, so the recorder's queue was full, or every buffer of the source still
    /// waited to be encoded.
    case encoderBehind
    /// The capture missed the frame's time: the machine was too busy to take the picture when
    /// it was due, and the slots that passed meanwhile were skipped.
    case captureLate
    /// Nothing came for half a second or more at once: the process or its source was stopped or
    /// frozen (a debugger, a stop signal, a machine swapping, a device that hung).
    case stalled
    /// The source itself lost them: a camera's driver dropped them, or a picture came damaged.
    case source

    /// What happened, in words for a reader.
    public var explanation: String {
        switch self {
        case .encoderBehind: "the encoder could not keep up"
        case .captureLate: "the capture missed their time (the machine was busy)"
        case .stalled: "nothing came for half a second or more (reel or its source was stopped or frozen)"
        case .source: "the source lost them itself (its driver, or damaged pictures)"
        }
    }

    /// What helps, in the library's words; `nil` where nothing a
    /// recording sets does.
    public var hint: String? {
        switch self {
        case .encoderBehind: LibraryHint.encodeFaster
        case .captureLate: LibraryHint.captureLess
        case .stalled, .source: nil
        }
    }
}

/// Video frames lost, counted by why (``FrameDropReason``); the counts add up to ``total``.
public struct FrameDrops: Sendable, Hashable {
    /// The frames lost for each reason (reasons with none are left out).
    public private(set) var counts: [FrameDropReason: Int64] = [:]

    /// No frame lost.
    public init() {}

    /// Every frame lost.
    public var total: Int64 { counts.values.reduce(0, +) }

    /// The frames lost for `reason`.
    public subscript(reason: FrameDropReason) -> Int64 { counts[reason] ?? 0 }

    /// The reasons with their counts, the largest first.
    public var largestFirst: [(reason: FrameDropReason, count: Int64)] {
        FrameDropReason.allCases.compactMap { r in counts[r].map { (r, $0) } }
            .sorted { $0.count > $1.count }
    }

    /// Adds `count` frames lost for `reason`.
    package mutating func add(_ count: Int64, _ reason: FrameDropReason) {
        guard count > 0 else { return }
        counts[reason, default: 0] += count
    }

    /// Adds every count of `other`.
    package mutating func add(_ other: FrameDrops) {
        for (reason, count) in other.counts { add(count, reason) }
    }

    /// Takes `other` away, reason by reason, as far as these counts hold it; returns what they
    /// did not hold.
    @discardableResult
    package mutating func remove(_ other: FrameDrops) -> FrameDrops {
        var rest = FrameDrops()
        for (reason, count) in other.counts {
            let have = counts[reason] ?? 0
            let held = min(count, have)
            counts[reason] = have > held ? have - held : nil
            rest.add(count - held, reason)
        }
        return rest
    }

    /// The frames a run of missed slots must reach to be a stall at `rate`: half a second.
    package static func stallFrames(at rate: FrameRate) -> Int64 {
        max(2, rate.frameIndex(at: MediaTime(value: 1, timescale: 2), rounding: .up))
    }
}

/// What a recorder learns of its video source's lost frames as they are lost (its queue
/// refused one, the source said it skipped some), kept until the gap they leave between the
/// frames written is counted: the gap is then put down to those reasons, in order. What a gap
/// holds beyond them came too late to be numbered (``FrameDropReason/captureLate``), and the
/// late part of a gap of half a second or more is a stall.
package struct FrameDropLedger: Sendable {
    private struct Entry: Sendable {
        /// The source's frame number the loss came after.
        var after: Int64
        var count: Int64
        var reason: FrameDropReason
    }
    private var entries: [Entry] = []

    /// An empty ledger.
    package init() {}

    /// Whether nothing waits.
    package var isEmpty: Bool { entries.isEmpty }

    /// What was noted and not yet put down to a gap, by reason: a late run of `stallFrames`
    /// or more at once is a stall.
    package func noted(stallFrames: Int64) -> FrameDrops {
        var drops = FrameDrops()
        for entry in entries {
            drops.add(entry.count, entry.reason == .captureLate && entry.count >= stallFrames ? .stalled : entry.reason)
        }
        return drops
    }

    /// Notes `count` frames lost for `reason` after the source's frame `sequence`.
    package mutating func note(_ count: Int64, _ reason: FrameDropReason, after sequence: Int64) {
        guard count > 0 else { return }
        if let last = entries.last, last.after == sequence, last.reason == reason {
            entries[entries.count - 1].count += count
        } else if entries.count < 4096 {
            entries.append(Entry(after: sequence, count: count, reason: reason))
        } else {
            entries[entries.count - 1].count += count
        }
    }

    /// Takes what `other` noted (after what this one holds) and empties it.
    package mutating func take(_ other: inout FrameDropLedger) {
        entries += other.entries
        other.entries = []
    }

    /// Says why the `missing` frames before the source's frame `sequence` (`nil`: at the end,
    /// all that was noted) were lost, and forgets what was noted before it.
    package mutating func attribute(_ missing: Int64, before sequence: Int64?, stallFrames: Int64) -> FrameDrops {
        var drops = FrameDrops()
        var left = max(0, missing)
        let taken = entries.prefix { sequence == nil || $0.after < sequence! }.count
        for entry in entries.prefix(taken) {
            let n = min(left, entry.count)
            drops.add(n, entry.reason)
            left -= n
        }
        entries.removeFirst(taken)
        drops.add(left, .captureLate)
        let late = drops[.captureLate]
        if late >= stallFrames {
            var stalled = FrameDrops()
            for (reason, count) in drops.counts where reason != .captureLate { stalled.add(count, reason) }
            stalled.add(late, .stalled)
            drops = stalled
        }
        return drops
    }
}

/// A line to say while recording: frames began to be lost for a reason (see
/// ``RecordingEvent/framesDropped(_:)``).
public struct FrameDropNotice: Sendable, Hashable {
    /// Why they were lost.
    public var reason: FrameDropReason
    /// The frames lost for it since the last notice of it (or the start).
    public var count: Int64
    /// The recorded time when it is said.
    public var at: MediaTime
    /// Every frame lost so far, by reason.
    public var total: FrameDrops

    /// Describes a notice; each argument is the property of the same name.
    public init(reason: FrameDropReason, count: Int64, at: MediaTime, total: FrameDrops) {
        self.reason = reason
        self.count = count
        self.at = at
        self.total = total
    }
}

/// When lost frames are said while recording: a reason once it has lost ``least`` frames
/// since it was last said, and then not again for ``interval`` of recorded time, so that a
/// recording that keeps losing frames says so every so often, not at every frame.
package struct FrameDropNotices: Sendable {
    /// The frames a reason must lose before it is said.
    package static let least: Int64 = 5
    /// The recorded time between two notices of one reason.
    package static let interval = MediaTime(value: 10, timescale: 1)

    private var said = FrameDrops()
    private var lastSaid: [FrameDropReason: MediaTime] = [:]

    /// Nothing said yet.
    package init() {}

    /// The notices due now that `drops` have been lost by recorded time `at`.
    package mutating func notices(for drops: FrameDrops, at: MediaTime) -> [FrameDropNotice] {
        var due: [FrameDropNotice] = []
        for reason in FrameDropReason.allCases {
            let new = drops[reason] - said[reason]
            guard new >= Self.least else { continue }
            if let last = lastSaid[reason], at - last < Self.interval { continue }
            said.add(new, reason)
            lastSaid[reason] = at
            due.append(FrameDropNotice(reason: reason, count: new, at: at, total: drops))
        }
        return due
    }
}
