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
/// at once, so paced sources produce as fast as the outputs consume. In `.stepped` mode a
/// sleeper waits until ``advance(by:)`` or ``advance(to:)`` moves the clock past its deadline.
public final class ManualClock: MediaClock, @unchecked Sendable {
    /// How `sleep(until:)` behaves.
    public enum Mode: Sendable {
        /// `sleep(until:)` moves the clock to its deadline at once.
        case virtual
        /// `sleep(until:)` waits until ``ManualClock/advance(by:)`` or ``ManualClock/advance(to:)``
        /// moves the clock past its deadline.
        case stepped
    }

    private let condition = NSCondition()
    private var current: MediaTime
    private let mode: Mode
    /// Counts ``wakeSleepers()``: a stepped sleeper returns when it changes.
    private var wakes = 0

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
