#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import ReelCore

/// The host's monotonic clock (`CLOCK_MONOTONIC`), in nanoseconds: the session clock of every
/// real recording.
public struct HostClock: MediaClock {
    /// Creates the host clock (all instances read the same clock).
    public init() {}

    /// The current reading of `CLOCK_MONOTONIC`.
    public func now() -> MediaTime {
        var ts = timespec()
        // Cannot fail for CLOCK_MONOTONIC with a valid pointer.
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MediaTime(nanoseconds: Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec))
    }

    /// Blocks the calling thread until the clock reads `deadline`; returns at once if it has
    /// passed (a deadline before the clock's zero is one that has passed).
    public func sleep(until deadline: MediaTime) {
        let ns = max(0, deadline.nanoseconds)
        var ts = timespec(tv_sec: Int(ns / 1_000_000_000), tv_nsec: Int(ns % 1_000_000_000))
        // Interruptions are retried by the funnel; with a valid absolute time on a clock that
        // exists the sleep has no other way to fail, and if it did, the caller would only wake
        // early, as for a deadline that has passed.
        _ = try? Syscall.callReturningError("sleeping") {
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil)
        }
    }

    /// `true`: the host clock runs in real time.
    public var isRealTime: Bool { true }
}
