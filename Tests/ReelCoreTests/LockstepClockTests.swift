import Foundation
import Testing
import Synchronization
import ReelCore

/// A `.lockstep` manual clock (what `reel record --faster-than-real-time` runs on) keeps the
/// sources in step: one held back by its outputs holds the clock, so another cannot run ahead
/// of it. On a `.virtual` clock the other ran on (a tone seconds ahead of pictures that waited
/// for a slow encoder).
@Suite struct LockstepClockTests {
    /// A's run after its sleep to 0.1 s is held (as a picture waits for the encoder) while B
    /// sleeps every 10 ms: on a `.lockstep` clock B stays at 0.1 s until A sleeps again, then
    /// both go on; on a `.virtual` clock B runs through to its end meanwhile. Once A has
    /// ended (it never sleeps again), B waits no longer than the clock's patience.
    @Test(arguments: [ManualClock.Mode.lockstep, .virtual])
    func aSourceHeldBackHoldsTheOthers(mode: ManualClock.Mode) async throws {
        let clock = ManualClock(mode: mode)
        let held = DispatchSemaphore(value: 0)
        let aRuns = DispatchSemaphore(value: 0)
        let bReached = Atomic<Int>(0)
        let bDone = DispatchSemaphore(value: 0)
        let a = Thread {
            clock.sleep(until: MediaTime(value: 1, timescale: 10))
            aRuns.signal()
            held.wait()
            clock.sleep(until: MediaTime(value: 2, timescale: 10))
        }
        let b = Thread {
            for k in 1...30 {
                clock.sleep(until: MediaTime(value: Int64(k), timescale: 100))
                bReached.store(k, ordering: .sequentiallyConsistent)
            }
            bDone.signal()
        }
        // B starts once A runs (a thread counts from its first sleep: alone, it moves the clock).
        a.start()
        aRuns.wait()
        b.start()
        // However long A is held (well within the patience), B does not pass A's time.
        try await Task.sleep(for: .milliseconds(300))
        let whileHeld = bReached.load(ordering: .sequentiallyConsistent)
        held.signal()
        let finished = bDone.wait(timeout: .now() + 10) == .success
        #expect(finished, "B ended (A's thread gone, the clock waits no longer for it)")
        if mode == .lockstep {
            #expect(whileHeld <= 10, "B reached \(whileHeld) × 10 ms while A was held at 100 ms")
        } else {
            #expect(whileHeld == 30, "a virtual clock lets B run on: \(whileHeld)")
        }
        #expect(clock.now() >= MediaTime(value: 3, timescale: 10))
    }

    /// Waking the sleepers (a source being stopped) ends a `.lockstep` sleep that waits for
    /// another thread, as it ends a `.stepped` one.
    @Test func wakingEndsASleepThatWaitsForAnother() async throws {
        let clock = ManualClock(mode: .lockstep)
        let held = DispatchSemaphore(value: 0)
        let aRuns = DispatchSemaphore(value: 0)
        let bWoke = DispatchSemaphore(value: 0)
        Thread {
            clock.sleep(until: .zero)
            aRuns.signal()
            held.wait()
        }.start()
        aRuns.wait()
        Thread {
            clock.sleep(until: MediaTime(seconds: 5))
            bWoke.signal()
        }.start()
        try await Task.sleep(for: .milliseconds(100))
        clock.wakeSleepers()
        #expect(bWoke.wait(timeout: .now() + 0.5) == .success, "woken well within the patience")
        #expect(clock.now() < MediaTime(seconds: 5))
        held.signal()
    }
}
