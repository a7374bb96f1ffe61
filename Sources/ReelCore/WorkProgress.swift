/// How far a long piece of work has come — merging clips, encoding them again, recovering a
/// recording, making a GIF — in the shape of Foundation's `Progress`: units done of a total, the fraction
/// done, and an estimate of the time left.
///
/// The units are bytes of the inputs read: ``completedUnitCount`` of ``totalUnitCount``.
/// Reports come from the thread doing the work, at most a few times a second, always with one
/// at the start and one at the end (``fractionCompleted`` 1).
public struct WorkProgress: Sendable, Hashable {
    /// What the work is doing now.
    public enum Stage: String, Sendable, Hashable, CaseIterable {
        /// Joining clips by copying their packets.
        case merging
        /// Joining clips by decoding and encoding them again (they differ, or are FLAC).
        case reencoding
        /// Making a cut-off recording into a finalised file.
        case recovering
        /// Making a recording into a file of another kind from its intermediate (a GIF, at the
        /// stop or when recovered): the intermediate is read twice, once to fit the palette,
        /// once to write the pictures.
        case converting
    }

    /// What the work is doing now; a merge that finds the clips differ starts again at
    /// ``Stage/reencoding``.
    public var stage: Stage
    /// The units (bytes of the inputs) done so far.
    public var completedUnitCount: Int64
    /// The units (bytes of the inputs) in all.
    public var totalUnitCount: Int64
    /// How long the stage has run.
    public var elapsed: MediaTime

    /// Progress of `stage`: `completed` of `total` units after `elapsed`.
    public init(stage: Stage, completedUnitCount: Int64, totalUnitCount: Int64, elapsed: MediaTime) {
        self.stage = stage
        self.completedUnitCount = completedUnitCount
        self.totalUnitCount = totalUnitCount
        self.elapsed = elapsed
    }

    /// The fraction done, 0 to 1 (0 while the total is unknown).
    public var fractionCompleted: Double {
        guard totalUnitCount > 0 else { return 0 }
        return min(1, max(0, Double(completedUnitCount) / Double(totalUnitCount)))
    }

    /// Whether the work is done (``fractionCompleted`` is 1).
    public var isFinished: Bool { totalUnitCount > 0 && completedUnitCount >= totalUnitCount }

    /// The time left if the work goes on at the pace it has had: `nil` until a hundredth of it
    /// is done and half a second has passed (an estimate from less says nothing), zero once
    /// it is finished.
    public var estimatedTimeRemaining: MediaTime? {
        if isFinished { return .zero }
        let fraction = fractionCompleted
        guard fraction >= 0.01, elapsed.seconds >= 0.5 else { return nil }
        return MediaTime(seconds: elapsed.seconds * (1 - fraction) / fraction)
    }
}

/// Turns the position of a piece of work into ``WorkProgress`` reports for a handler: the first
/// at once, then at most one each `interval` of `clock` time, and the last when the work is
/// done. Used by the one thread doing the work; without a handler it does nothing.
package final class ProgressMeter {
    private let handler: (@Sendable (WorkProgress) -> Void)?
    private let clock: any MediaClock
    private let interval: MediaTime
    private var stage: WorkProgress.Stage
    private var total: Int64
    private var started: MediaTime
    private var lastReport: MediaTime?
    private var finished = false

    /// A meter of `total` units of `stage`, reporting to `handler`.
    package init(stage: WorkProgress.Stage, total: Int64, clock: any MediaClock,
                 interval: MediaTime = MediaTime(value: 1, timescale: 5),
                 handler: (@Sendable (WorkProgress) -> Void)?) {
        self.handler = handler
        self.clock = clock
        self.interval = interval
        self.stage = stage
        self.total = max(0, total)
        started = clock.now()
    }

    /// Whether anyone listens (the work may skip measuring when not).
    package var isActive: Bool { handler != nil }

    /// The work has done `completed` units: reported if it is the first report, or `interval`
    /// has passed since the last one.
    package func update(completed: Int64) {
        guard let handler, !finished else { return }
        let now = clock.now()
        if let last = lastReport, now - last < interval { return }
        lastReport = now
        let done = min(max(0, completed), max(0, total - 1))   // the end is reported by finish()
        handler(WorkProgress(stage: stage, completedUnitCount: done, totalUnitCount: total, elapsed: now - started))
    }

    /// The work goes on as another stage over `total` units (a merge that must encode again):
    /// counted from zero, reported at once.
    package func restart(as stage: WorkProgress.Stage, total: Int64) {
        self.stage = stage
        self.total = max(0, total)
        started = clock.now()
        lastReport = nil
        finished = false
        update(completed: 0)
    }

    /// The work is done: reported once, as complete.
    package func finish() {
        guard let handler, !finished else { return }
        finished = true
        let whole = max(total, 1)
        handler(WorkProgress(stage: stage, completedUnitCount: whole, totalUnitCount: whole, elapsed: clock.now() - started))
    }
}
