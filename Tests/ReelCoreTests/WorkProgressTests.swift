import Foundation
import Synchronization
import Testing
@testable import ReelCore

/// Progress of long work: the fraction, the time left, and a meter that reports the first
/// position at once, then at most one each interval, and the end once.
@Suite struct WorkProgressTests {
    @Test func fractionAndTimeLeft() {
        var p = WorkProgress(stage: .merging, completedUnitCount: 25, totalUnitCount: 100, elapsed: MediaTime(seconds: 10))
        #expect(p.fractionCompleted == 0.25)
        #expect(p.estimatedTimeRemaining == MediaTime(seconds: 30))
        #expect(!p.isFinished)
        p.elapsed = MediaTime(seconds: 0.2)
        #expect(p.estimatedTimeRemaining == nil, "too early to tell")
        p.elapsed = MediaTime(seconds: 10)
        p.completedUnitCount = 0
        #expect(p.estimatedTimeRemaining == nil, "nothing done yet")
        p.completedUnitCount = 100
        #expect(p.isFinished && p.fractionCompleted == 1 && p.estimatedTimeRemaining == .zero)
        p.completedUnitCount = 150
        #expect(p.fractionCompleted == 1)
        #expect(WorkProgress(stage: .recovering, completedUnitCount: 5, totalUnitCount: 0, elapsed: .zero).fractionCompleted == 0)
    }

    final class Heard: Sendable {
        let reports = Mutex<[WorkProgress]>([])
        var all: [WorkProgress] { reports.withLock { $0 } }
        var handler: @Sendable (WorkProgress) -> Void { { p in self.reports.withLock { $0.append(p) } } }
    }

    @Test func theMeterReportsTheFirstThenEachIntervalThenTheEnd() {
        let clock = ManualClock()
        let heard = Heard()
        let meter = ProgressMeter(stage: .merging, total: 1000, clock: clock, interval: MediaTime(seconds: 0.2), handler: heard.handler)
        meter.update(completed: 0)
        meter.update(completed: 100)                       // within the interval: not reported
        clock.advance(by: MediaTime(seconds: 0.25))
        meter.update(completed: 300)
        clock.advance(by: MediaTime(seconds: 0.1))
        meter.update(completed: 400)                       // too soon again
        clock.advance(by: MediaTime(seconds: 0.1))
        meter.update(completed: 1000)                      // the end comes from finish()
        meter.finish()
        meter.finish()
        meter.update(completed: 1000)
        #expect(heard.all.map(\.completedUnitCount) == [0, 300, 999, 1000])
        #expect(heard.all.map(\.elapsed) == [.zero, MediaTime(seconds: 0.25), MediaTime(seconds: 0.45), MediaTime(seconds: 0.45)])
        #expect(heard.all.last?.isFinished == true)
        #expect(heard.all.dropLast().allSatisfy { !$0.isFinished })
    }

    @Test func aRestartCountsAnotherStageFromZero() {
        let clock = ManualClock()
        let heard = Heard()
        let meter = ProgressMeter(stage: .merging, total: 1000, clock: clock, handler: heard.handler)
        meter.update(completed: 0)
        clock.advance(by: MediaTime(seconds: 1))
        meter.update(completed: 500)
        meter.restart(as: .reencoding, total: 800)
        clock.advance(by: MediaTime(seconds: 2))
        meter.finish()
        #expect(heard.all.map(\.stage) == [.merging, .merging, .reencoding, .reencoding])
        #expect(heard.all.map(\.completedUnitCount) == [0, 500, 0, 800])
        #expect(heard.all.last?.elapsed == MediaTime(seconds: 2))
    }

    @Test func withoutAListenerNothingIsMeasured() {
        let meter = ProgressMeter(stage: .recovering, total: 10, clock: ManualClock(), handler: nil)
        #expect(!meter.isActive)
        meter.update(completed: 5)
        meter.finish()
    }
}
