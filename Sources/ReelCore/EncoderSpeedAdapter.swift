/// Decides when a video encoder that falls behind steps to a faster preset, and when it steps
/// back: a value type fed one observation per video frame, returning what to do.
///
/// The signal is the encoder's backlog: how many video frames wait, already captured, while the
/// encoder takes one (the recorder counts the video frames in its queue; each holds one of its
/// source's pooled buffers, so a backlog that stays up runs the pool dry and frames are lost).
///
/// - Overloaded: the backlog stays at ``Thresholds/overloadBacklog`` or more for
///   ``Thresholds/overloadFrames`` frames in a row → one step faster along the ladder (the
///   user's preset, then those of veryfast, superfast and ultrafast that are faster).
/// - Recovered: the backlog stays at ``Thresholds/calmBacklog`` or less for
///   ``Thresholds/recoveryTime`` → one step back, never slower than the user's preset.
/// - Hysteresis: nothing is judged in the recording's first ``Thresholds/warmUp``; after any step the encoder gets ``Thresholds/settleTime`` to drain what piled
///   up before it is judged again, and a step back that ends in overload again within the
///   recovery time doubles the recovery time (up to ``Thresholds/longestRecoveryTime``), so a
///   machine that is just short of time does not flap between two presets.
package struct EncoderSpeedAdapter: Sendable {
    /// When to step.
    package struct Thresholds: Sendable, Hashable {
        /// Frames waiting that count as overloaded.
        package var overloadBacklog = 2
        /// How many frames in a row must be overloaded.
        package var overloadFrames = 3
        /// Frames waiting that count as calm.
        package var calmBacklog = 0
        /// How long the backlog must stay calm before a step back.
        package var recoveryTime = MediaTime(value: 10, timescale: 1)
        /// The longest recovery time that backing off after a flap reaches.
        package var longestRecoveryTime = MediaTime(value: 120, timescale: 1)
        /// How long after a step the backlog is not judged.
        package var settleTime = MediaTime(value: 1, timescale: 1)
        /// How long from the start of the recording the backlog is not judged: opening the
        /// file and the encoder's first pictures make a backlog that is gone a moment later.
        package var warmUp = MediaTime(value: 1, timescale: 1)

        /// The default thresholds.
        package init() {}
    }

    /// A step to take.
    package struct Step: Sendable, Hashable {
        /// Faster (the encoder was overloaded) or slower (it recovered).
        package var faster: Bool
        /// The preset so far.
        package var from: String
        /// The preset to go on with.
        package var to: String
        /// The frames waiting when the step was decided.
        package var backlog: Int

        /// A step; each argument is the property of the same name.
        package init(faster: Bool, from: String, to: String, backlog: Int) {
            self.faster = faster
            self.from = from
            self.to = to
            self.backlog = backlog
        }
    }

    /// The presets to step through: the user's first, then faster ones.
    package let ladder: [String]
    package let thresholds: Thresholds
    /// Where on the ``ladder`` the encoder is.
    package private(set) var rung = 0
    /// Whether adapting has stopped (a step was refused: the encoder cannot change speed).
    package private(set) var isStopped = false
    private var overloadedRun = 0
    private var calmSince: MediaTime?
    private var settledAt: MediaTime?
    private var recoveryTime: MediaTime
    private var lastStepBack: MediaTime?

    /// The faster presets a recording at `preset` may step to (x264's names, see
    /// ``VideoCodec/presetNames``): veryfast, superfast and ultrafast, those faster than it.
    package static func ladder(from preset: String) -> [String] {
        let names = VideoCodec.presetNames
        guard let start = names.firstIndex(of: preset) else { return [preset] }
        let faster = ["veryfast", "superfast", "ultrafast"].filter { (names.firstIndex(of: $0) ?? start) < start }
        return [preset] + faster
    }

    /// An adapter for an encoder started at `preset`.
    package init(preset: String, thresholds: Thresholds = Thresholds()) {
        ladder = Self.ladder(from: preset)
        self.thresholds = thresholds
        recoveryTime = thresholds.recoveryTime
    }

    /// The preset the encoder is at.
    package var preset: String { ladder[rung] }

    /// Takes the backlog seen as a frame of recording time `time` was taken for encoding;
    /// returns a step to take now, if any. Call ``stepTaken(_:at:)`` or ``stepRefused()``
    /// with the outcome.
    package mutating func observe(backlog: Int, at time: MediaTime) -> Step? {
        guard !isStopped, time >= thresholds.warmUp else { return nil }
        if let settled = settledAt, time < settled { return nil }
        if backlog >= thresholds.overloadBacklog {
            overloadedRun += 1
            calmSince = nil
            if overloadedRun >= thresholds.overloadFrames, rung + 1 < ladder.count {
                return Step(faster: true, from: preset, to: ladder[rung + 1], backlog: backlog)
            }
            return nil
        }
        overloadedRun = 0
        guard backlog <= thresholds.calmBacklog else {
            calmSince = nil
            return nil
        }
        let since = calmSince ?? time
        calmSince = since
        if rung > 0, time - since >= recoveryTime {
            return Step(faster: false, from: preset, to: ladder[rung - 1], backlog: backlog)
        }
        return nil
    }

    /// The encoder now runs at `step.to`, since recording time `time`.
    package mutating func stepTaken(_ step: Step, at time: MediaTime) {
        guard let index = ladder.firstIndex(of: step.to) else { return }
        if step.faster, let back = lastStepBack, time - back < recoveryTime + thresholds.settleTime {
            // Stepped back too soon: wait longer before the next step back.
            recoveryTime = min(thresholds.longestRecoveryTime, recoveryTime + recoveryTime)
        }
        if !step.faster { lastStepBack = time }
        rung = index
        overloadedRun = 0
        calmSince = nil
        settledAt = time + thresholds.settleTime
    }

    /// The step could not be taken: the encoder keeps its preset, and adapting stops (what
    /// refused it would refuse again).
    package mutating func stepRefused() {
        isStopped = true
    }
}
