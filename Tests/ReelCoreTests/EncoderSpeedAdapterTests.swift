import Testing
import ReelCore

/// The adapter's decisions on scripted backlogs: overload, settling, recovery, backing off
/// after a flap, refusals, and the ladder of presets.
@Suite struct EncoderSpeedAdapterTests {
    static let frame = MediaTime(value: 1, timescale: 30)
    /// The default thresholds, judged from the first frame (the warm-up has a test of its own).
    static let noWarmUp: EncoderSpeedAdapter.Thresholds = {
        var t = EncoderSpeedAdapter.Thresholds()
        t.warmUp = .zero
        return t
    }()

    /// Feeds `backlogs` one frame apart from `start`, taking every step; returns the steps with
    /// the frame number each came at.
    static func run(_ adapter: inout EncoderSpeedAdapter, _ backlogs: [Int], from start: Int = 0) -> [(frame: Int, step: EncoderSpeedAdapter.Step)] {
        var steps: [(Int, EncoderSpeedAdapter.Step)] = []
        for (i, backlog) in backlogs.enumerated() {
            let time = frame * Int64(start + i)
            if let step = adapter.observe(backlog: backlog, at: time) {
                adapter.stepTaken(step, at: time)
                steps.append((start + i, step))
            }
        }
        return steps
    }

    @Test func laddersGoFromTheUsersPresetToUltrafast() {
        #expect(EncoderSpeedAdapter.ladder(from: "veryfast") == ["veryfast", "superfast", "ultrafast"])
        #expect(EncoderSpeedAdapter.ladder(from: "medium") == ["medium", "veryfast", "superfast", "ultrafast"])
        #expect(EncoderSpeedAdapter.ladder(from: "superfast") == ["superfast", "ultrafast"])
        #expect(EncoderSpeedAdapter.ladder(from: "ultrafast") == ["ultrafast"])
    }

    @Test func stepsFasterOnlyAfterASustainedBacklog() {
        var adapter = EncoderSpeedAdapter(preset: "veryfast", thresholds: Self.noWarmUp)
        // A single spike (a keyframe) and two in a row are not overload; three are.
        let steps = Self.run(&adapter, [0, 3, 0, 2, 2, 0, 2, 2, 2, 0])
        #expect(steps.map(\.frame) == [8])
        #expect(steps.first?.step == .init(faster: true, from: "veryfast", to: "superfast", backlog: 2))
        #expect(adapter.preset == "superfast")
    }

    @Test func waitsForTheNewEncoderToSettleBeforeJudgingAgain() {
        var adapter = EncoderSpeedAdapter(preset: "veryfast", thresholds: Self.noWarmUp)
        // Overloaded for 2 s straight: one step at frame 2, the next only a settle time (1 s,
        // 30 frames) later, at frame 32 (the run of three counts again from frame 32).
        let steps = Self.run(&adapter, Array(repeating: 4, count: 60))
        #expect(steps.map(\.frame) == [2, 34])
        #expect(steps.map(\.step.to) == ["superfast", "ultrafast"])
        // At the fastest preset there is nowhere to go.
        #expect(Self.run(&adapter, Array(repeating: 4, count: 60), from: 60).isEmpty)
    }

    @Test func stepsBackAfterStayingCalmAndNeverPastTheUsersPreset() {
        var adapter = EncoderSpeedAdapter(preset: "veryfast", thresholds: Self.noWarmUp)
        _ = Self.run(&adapter, [3, 3, 3])
        #expect(adapter.preset == "superfast")
        // A backlog of one is neither overload nor calm: it holds the recovery back.
        var backlogs = Array(repeating: 0, count: 30 * 9) + [1] + Array(repeating: 0, count: 30 * 12)
        var steps = Self.run(&adapter, backlogs, from: 3)
        // Settled at frame 2 + 30 = 32; calm from then, broken at frame 273, calm again from
        // 274: ten seconds (300 frames) later, frame 574.
        #expect(steps.map(\.frame) == [574])
        #expect(steps.first?.step == .init(faster: false, from: "superfast", to: "veryfast", backlog: 0))
        backlogs = Array(repeating: 0, count: 30 * 30)
        steps = Self.run(&adapter, backlogs, from: 634)
        #expect(steps.isEmpty, "never slower than veryfast, the preset asked for")
    }

    @Test func aStepBackThatOverloadsAgainDoublesTheWait() {
        var adapter = EncoderSpeedAdapter(preset: "veryfast", thresholds: Self.noWarmUp)
        var frame = 0
        func feed(_ backlogs: [Int]) -> [Int] {
            defer { frame += backlogs.count }
            return Self.run(&adapter, backlogs, from: frame).map(\.frame)
        }
        // Down at frame 2; settled at 32, calm for 10 s (300 frames): back up at 332.
        #expect(feed([3, 3, 3]) == [2])
        #expect(feed(Array(repeating: 0, count: 360)) == [332])
        // Overloaded again at once (frames 363–365): down at 365, a flap.
        #expect(feed([3, 3, 3]) == [365])
        // So the next step back waits 20 s of calm, not 10: settled at 395, up at 395 + 600.
        #expect(feed(Array(repeating: 0, count: 750)) == [995])
    }

    @Test func judgesNothingInTheFirstSecond() {
        var adapter = EncoderSpeedAdapter(preset: "veryfast")
        let steps = Self.run(&adapter, Array(repeating: 4, count: 40))
        #expect(steps.map(\.frame) == [32], "frames 30, 31, 32 are the first judged")
    }

    @Test func aRefusedStepStopsAdapting() {
        var adapter = EncoderSpeedAdapter(preset: "veryfast", thresholds: Self.noWarmUp)
        var step: EncoderSpeedAdapter.Step?
        for i in 0..<3 { step = adapter.observe(backlog: 5, at: Self.frame * Int64(i)) ?? step }
        #expect(step?.to == "superfast")
        adapter.stepRefused()
        #expect(adapter.isStopped)
        #expect(adapter.preset == "veryfast")
        for i in 3..<100 { #expect(adapter.observe(backlog: 5, at: Self.frame * Int64(i)) == nil) }
    }
}
