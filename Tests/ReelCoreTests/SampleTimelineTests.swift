import Testing
import ReelCore

/// The drift-corrected audio clock, fed by hand: every time is given in ticks of 48 kHz, so
/// each expectation is exact.
@Suite struct SampleTimelineTests {
    let rate: Int32 = 48_000

    /// A timeline time of `ticks` at 48 kHz.
    func at(_ ticks: Int64) -> MediaTime { MediaTime(value: ticks, timescale: rate) }

    @Test func theFirstObservationAnchorsTheCount() {
        var timeline = SampleTimeline(sampleRate: rate)
        #expect(!timeline.isAnchored)
        // 480 frames have arrived, the newest captured 110 ms into the timeline: frame 0 was at 100 ms.
        timeline.observe(framesReceived: 480, capturedAt: at(5_280))
        #expect(timeline.isAnchored)
        #expect(timeline.ticks(ofFrame: 0) == 4_800)
        #expect(timeline.ticks(ofFrame: 480) == 5_280)
        #expect(timeline.reanchorCount == 0)
    }

    @Test func lateArrivalsMoveNothing() {
        var timeline = SampleTimeline(sampleRate: rate)
        timeline.observe(framesReceived: 480, capturedAt: at(480))
        // Ten seconds of 10 ms buffers, every third one seen 25 ms late, one seen 200 ms late.
        var received: Int64 = 480
        for step in 1...1_000 {
            received += 480
            let late: Int64 = step == 500 ? 9_600 : (step % 3 == 0 ? 1_200 : 0)
            timeline.observe(framesReceived: received, capturedAt: at(received + late))
            #expect(timeline.ticks(ofFrame: received) == received)
        }
        #expect(timeline.reanchorCount == 0)
    }

    @Test func aDriftingDeviceIsPulledBackWithinTheTolerance() {
        // The device runs 0.1 % slow: 480 frames take 10.01 ms of the session clock.
        var timeline = SampleTimeline(sampleRate: rate)
        var received: Int64 = 0
        var worst: Int64 = 0
        for step in 1...6_000 {  // a minute
            received += 480
            let clock = Int64(step) * 48_048 / 100
            timeline.observe(framesReceived: received, capturedAt: at(clock))
            worst = max(worst, abs(timeline.ticks(ofFrame: received) - clock))
        }
        // 60 ms of drift in a minute: corrected at least once, never more than 30 ms (plus the
        // window's lag of about 1 ms) off.
        #expect(timeline.reanchorCount >= 1)
        #expect(worst <= timeline.toleranceTicks + 96, "the count strayed \(worst) ticks from the clock")
    }

    @Test func aGapInTheDataIsClosedWithinAWindow() {
        var timeline = SampleTimeline(sampleRate: rate)
        var received: Int64 = 0
        var clock: Int64 = 0
        for _ in 1...100 {
            received += 480; clock += 480
            timeline.observe(framesReceived: received, capturedAt: at(clock))
        }
        // The server dropped 100 ms: the clock moves on without the count.
        clock += 4_800
        var caughtUpAfter: Int64?
        var moves: [Int64] = []
        for step in 1...200 {
            received += 480; clock += 480
            let shift = timeline.observe(framesReceived: received, capturedAt: at(clock))
            if shift != 0 { moves.append(shift) }
            if caughtUpAfter == nil, timeline.ticks(ofFrame: received) == clock { caughtUpAfter = Int64(step) * 480 }
        }
        #expect(timeline.reanchorCount == 1)
        #expect(moves == [4_800], "the re-anchoring says how far it moved the count")
        #expect(timeline.ticks(ofFrame: received) == clock)
        // The minimum is taken over two half-second buckets: caught up within a second.
        #expect((caughtUpAfter ?? .max) <= 48_000, "caught up after \(caughtUpAfter.map(String.init) ?? "never") ticks")
    }

    @Test func dataEarlierThanTheAnchorAllowsReanchorsAtOnce() {
        var timeline = SampleTimeline(sampleRate: rate)
        var received: Int64 = 0
        var clock: Int64 = 48_000
        for _ in 1...60 {  // settled: 600 ms on time
            received += 480; clock += 480
            timeline.observe(framesReceived: received, capturedAt: at(clock))
        }
        // 50 ms earlier than the count allows: the anchor came from late arrivals.
        received += 480; clock += 480
        #expect(timeline.observe(framesReceived: received, capturedAt: at(clock - 2_400)) == -2_400)
        #expect(timeline.reanchorCount == 1)
        #expect(timeline.ticks(ofFrame: received) == clock - 2_400)
        // 20 ms earlier still is within the tolerance once settled: no change.
        received += 480; clock += 480
        #expect(timeline.observe(framesReceived: received, capturedAt: at(clock - 2_400 - 960)) == 0)
        #expect(timeline.reanchorCount == 1)
    }

    /// A stream opened before it is read (a monitor, to have its sound from the start) delivers
    /// its backlog over several reads: the first observation is late by what had not arrived
    /// yet, here 25 ms (within the tolerance). The anchor settles on the earliest observation
    /// of the first half second, so the count is on the clock, not 25 ms late for good (an
    /// application's sound measured 15-25 ms off its sink's monitor this way).
    @Test func aLateFirstObservationSettlesOnTheClock() {
        var timeline = SampleTimeline(sampleRate: rate)
        // The first read got 100 ms of the backlog while 125 ms were captured: 25 ms (1,200
        // ticks) more were on their way.
        #expect(timeline.observe(framesReceived: 4_800, capturedAt: at(6_000)) == 0)
        #expect(timeline.ticks(ofFrame: 4_800) == 6_000)
        // The rest arrives 5 ms later by the clock; from then on 10 ms buffers on time.
        var received: Int64 = 6_240
        var clock: Int64 = 6_240
        #expect(timeline.observe(framesReceived: received, capturedAt: at(clock)) == -1_200)
        for _ in 1...200 {
            received += 480; clock += 480
            #expect(timeline.observe(framesReceived: received, capturedAt: at(clock)) == 0)
        }
        #expect(timeline.ticks(ofFrame: received) == clock)
        #expect(timeline.reanchorCount == 0, "settling is the first anchoring")
        // Settled, the same early arrival within the tolerance moves nothing.
        received += 480; clock += 480
        #expect(timeline.observe(framesReceived: received, capturedAt: at(clock - 960)) == 0)
    }

    /// While settling, late arrivals (a thread not scheduled at once) still move nothing.
    @Test func settlingFollowsOnlyEarlierArrivals() {
        var timeline = SampleTimeline(sampleRate: rate)
        var received: Int64 = 480
        var clock: Int64 = 480
        timeline.observe(framesReceived: received, capturedAt: at(clock))
        for step in 1...40 {
            received += 480; clock += 480
            let late: Int64 = step % 4 == 0 ? 1_200 : 0
            #expect(timeline.observe(framesReceived: received, capturedAt: at(clock + late)) == 0)
            #expect(timeline.ticks(ofFrame: received) == clock)
        }
    }

    /// A stream read from its opening has no backlog, and does not settle: an earlier
    /// observation within the tolerance there is the latency's noise (a server's timing report
    /// is a snapshot: PulseAudio's FIFO microphone said 10 ms for a moment, a routed
    /// application's sink monitor 11 ms, while sound came on time) and moves nothing. Followed,
    /// it skipped 10 ms of sound under way in the first half second.
    @Test func aStreamWithoutABacklogDoesNotSettle() {
        var timeline = SampleTimeline(sampleRate: rate, hasBacklog: false)
        var received: Int64 = 480
        var clock: Int64 = 480
        timeline.observe(framesReceived: received, capturedAt: at(clock))
        for _ in 1...10 {  // 100 ms on time
            received += 480; clock += 480
            #expect(timeline.observe(framesReceived: received, capturedAt: at(clock)) == 0)
        }
        // 110 ms in, the latency is said to be 10 ms more for 50 ms.
        for _ in 1...5 {
            received += 480; clock += 480
            #expect(timeline.observe(framesReceived: received, capturedAt: at(clock - 480)) == 0)
            #expect(timeline.ticks(ofFrame: received) == clock)
        }
        #expect(timeline.reanchorCount == 0)
    }

    @Test func aServerRestartStartsTheCountAgain() {
        var timeline = SampleTimeline(sampleRate: rate)
        var received: Int64 = 0
        for step in 1...300 {
            received += 480
            timeline.observe(framesReceived: received, capturedAt: at(Int64(step) * 480))
        }
        // The server went away at 3 s and is back at 5 s; the new stream counts from zero.
        timeline.reset()
        #expect(!timeline.isAnchored)
        timeline.observe(framesReceived: 480, capturedAt: at(240_480))
        #expect(timeline.ticks(ofFrame: 0) == 240_000)
        #expect(timeline.reanchorCount == 0, "anchoring a new stream is not a correction")
        // And the old history does not pull the new anchor back.
        for step in 2...200 {
            timeline.observe(framesReceived: Int64(step) * 480, capturedAt: at(240_000 + Int64(step) * 480))
        }
        #expect(timeline.ticks(ofFrame: 0) == 240_000)
        #expect(timeline.reanchorCount == 0)
    }

    @Test func aBacklogReadAfterAStallMovesNothing() {
        var timeline = SampleTimeline(sampleRate: rate)
        var received: Int64 = 0
        var clock: Int64 = 0
        for _ in 1...100 {
            received += 480; clock += 480
            #expect(timeline.observe(framesReceived: received, capturedAt: at(clock)) == 0)
        }
        // The reader was stopped for 5 s; the server held it all. It is read in 100 ms pieces,
        // a millisecond apart (seconds of frames in a moment), then on time again.
        clock += 240_000
        for _ in 1...50 {
            received += 4_800; clock += 48
            #expect(timeline.observe(framesReceived: received, capturedAt: at(clock)) == 0)
        }
        received = clock  // what was captured while the backlog was read arrives too
        for _ in 1...300 {
            received += 480; clock += 480
            #expect(timeline.observe(framesReceived: received, capturedAt: at(clock)) == 0)
        }
        #expect(timeline.reanchorCount == 0)
        #expect(timeline.ticks(ofFrame: received) == clock)
    }
}
