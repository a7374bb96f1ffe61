import Foundation
import Synchronization

/// A clock that stamps samples and paces capture loops.
///
/// Every sample in a session carries a presentation time read from one clock. The host clock
/// (`HostClock`, in ReelSystem) is `CLOCK_MONOTONIC`; tests inject a ``ManualClock`` so that
/// recordings run faster than real time.
public protocol MediaClock: Sendable {
    /// The current time.
    func now() -> MediaTime
    /// Blocks the calling thread until `deadline` (returns at once if it has passed).
    /// Capture threads call this; it is never called from async code.
    func sleep(until deadline: MediaTime)
    /// Whether samples may be produced faster than real time: outputs then apply
    /// backpressure (block the producer) instead of dropping frames.
    var isRealTime: Bool { get }
    /// Wakes the threads asleep in ``sleep(until:)`` (a source being stopped), early: they
    /// check whether to stop and sleep again if not. Real clocks' sleeps end by themselves
    /// within a frame: by default nothing happens.
    func wakeSleepers()
}

extension MediaClock {
    /// Does nothing: the sleep ends by itself soon.
    public func wakeSleepers() {}
}

/// A clock that moves only when told to, for tests that run faster than real time.
///
/// In `.virtual` mode (the default) a `sleep(until:)` moves the clock forward to its deadline
/// at once, so paced sources produce as fast as the outputs consume. In `.lockstep` mode the
/// sources keep in step with each other as well (what a recording faster than real time
/// needs). In `.stepped` mode a sleeper waits until ``advance(by:)`` or ``advance(to:)`` moves
/// the clock past its deadline.
public final class ManualClock: MediaClock, @unchecked Sendable {
    /// How `sleep(until:)` behaves.
    public enum Mode: Sendable {
        /// `sleep(until:)` moves the clock to its deadline at once.
        case virtual
        /// The clock moves only when every thread that sleeps on it is asleep, to the earliest
        /// of their deadlines: a source held back by its outputs (a picture waiting for a
        /// slow encoder) holds the clock, and with it the other sources, so that none runs
        /// ahead of another. (In `.virtual` mode the sound ran on while the pictures waited:
        /// a recording stopped early had seconds more sound than pictures.) A thread that has
        /// not slept for ``lockstepPatience`` of real time (it ended, or is stuck) stops holding
        /// the clock until it sleeps again.
        case lockstep
        /// `sleep(until:)` waits until ``ManualClock/advance(by:)`` or ``ManualClock/advance(to:)``
        /// moves the clock past its deadline.
        case stepped
    }

    private let condition = NSCondition()
    private var current: MediaTime
    private let mode: Mode
    /// Counts ``wakeSleepers()``: a stepped sleeper returns when it changes.
    private var wakes = 0
    /// In `.lockstep` mode, each thread that sleeps on the clock: its deadline while asleep
    /// (`nil` while it runs), and when that last changed.
    private var pacers: [ObjectIdentifier: (deadline: MediaTime?, since: Date)] = [:]
    /// How long of real time a thread of a `.lockstep` clock may run without sleeping before
    /// the clock stops waiting for it.
    public static let lockstepPatience: TimeInterval = 1

    /// Creates a manual clock that starts at `start`.
    public init(start: MediaTime = .zero, mode: Mode = .virtual) {
        self.current = start.converted(to: MediaTime.nanosecondTimescale)
        self.mode = mode
    }

    public func now() -> MediaTime {
        condition.lock(); defer { condition.unlock() }
        return current
    }

    public func sleep(until deadline: MediaTime) {
        condition.lock(); defer { condition.unlock() }
        switch mode {
        case .virtual:
            if current < deadline { current = deadline.converted(to: MediaTime.nanosecondTimescale, rounding: .up) }
        case .stepped:
            let woken = wakes
            while current < deadline && wakes == woken { condition.wait() }
        case .lockstep:
            sleepInStep(until: deadline)
        }
    }

    /// `.lockstep`'s sleep (the lock held): asleep until the clock reaches `deadline`, moving it
    /// there when every thread on it is asleep and this one's deadline is the earliest.
    private func sleepInStep(until deadline: MediaTime) {
        let me = ObjectIdentifier(Thread.current)
        let woken = wakes
        pacers[me] = (deadline, Date())
        defer {
            pacers[me] = (nil, Date())
            condition.broadcast()
        }
        while current < deadline && wakes == woken {
            // (A sleeper whose deadline has come is let run first: until it does, it still
            // holds the earliest deadline, and the clock waits for it.)
            let waiting = pacers.values.compactMap(\.deadline)
            if waiting.count == pacers.count, let earliest = waiting.min(), current < earliest {
                current = earliest.converted(to: MediaTime.nanosecondTimescale, rounding: .up)
                condition.broadcast()
                continue
            }
            _ = condition.wait(until: Date(timeIntervalSinceNow: 0.05))
            // Checked at every wake, not only a timed-out one: another thread's broadcasts
            // (a sleeper whose deadlines have all passed) could otherwise keep a gone thread
            // holding the clock for ever.
            let patience = Date(timeIntervalSinceNow: -Self.lockstepPatience)
            pacers = pacers.filter { $0.value.deadline != nil || $0.value.since > patience }
        }
    }

    /// Wakes every sleeper early (a stepped clock's sleepers otherwise wait for the clock to
    /// move): a source being stopped then sees that it must stop.
    public func wakeSleepers() {
        condition.lock()
        wakes += 1
        condition.broadcast()
        condition.unlock()
    }

    /// Moves the clock forward by `delta` and wakes sleepers whose deadline has come.
    public func advance(by delta: MediaTime) {
        condition.lock()
        current = current + delta
        condition.broadcast()
        condition.unlock()
    }

    /// Moves the clock forward to `time` (never backward).
    public func advance(to time: MediaTime) {
        condition.lock()
        if current < time { current = time.converted(to: MediaTime.nanosecondTimescale, rounding: .up) }
        condition.broadcast()
        condition.unlock()
    }

    public var isRealTime: Bool { false }
}
