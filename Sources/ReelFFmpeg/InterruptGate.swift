import Foundation
internal import CFFmpeg
import ReelCore
import Synchronization

/// What libavformat's interrupt callback asks while it blocks in a network read or connect:
/// whether the owner wants it to give up, because a deadline has passed (the peer does not
/// answer) or because the source is stopping.
///
/// An ``InputFile`` that was opened with a gate retains it, so the pointer libavformat holds
/// stays valid for as long as the format context lives.
final class InterruptGate: Sendable {
    private let cancelled = Atomic<Bool>(false)
    /// `CLOCK_MONOTONIC` nanoseconds after which blocking calls give up; `Int64.max` for never.
    private let deadline = Atomic<Int64>(Int64.max)

    init() {}

    /// Makes blocking calls give up from now on, for good.
    func cancel() { cancelled.store(true, ordering: .releasing) }

    /// Whether ``cancel()`` has been called.
    var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    /// Lets blocking calls run for `timeout` from now.
    func arm(_ timeout: MediaTime) {
        deadline.store(Self.now() &+ max(0, timeout.nanoseconds), ordering: .releasing)
    }

    /// Lets blocking calls run without a deadline.
    func disarm() { deadline.store(Int64.max, ordering: .releasing) }

    /// Whether the deadline has passed.
    var hasExpired: Bool { Self.now() >= deadline.load(ordering: .acquiring) }

    /// Whether libavformat should abandon what it is doing.
    var shouldInterrupt: Bool { isCancelled || hasExpired }

    /// The callback to put into an `AVFormatContext` before opening it.
    var callback: AVIOInterruptCB {
        AVIOInterruptCB(callback: { opaque in
            guard let opaque else { return 0 }
            return Unmanaged<InterruptGate>.fromOpaque(opaque).takeUnretainedValue().shouldInterrupt ? 1 : 0
        }, opaque: Unmanaged.passUnretained(self).toOpaque())
    }

    private static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}
