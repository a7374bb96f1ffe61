import Foundation

/// The one bounded channel between producers and one consumer thread: a ``ChannelBuffer``
/// (which decides what is taken, dropped and counted) under a lock, with the waiting around it.
///
/// Bounded in items (``init(capacity:policy:)``) or in bytes (``init(maxBytes:policy:holdsUntilDone:)``);
/// when full, the policy says whether a sender waits for room (``ChannelPolicy/block``:
/// backpressure, so that nothing is lost off real time or in a file), is refused
/// (``ChannelPolicy/dropNewest``: the producer drops and counts), or drops whole groups
/// (``ChannelPolicy/dropGroups``). Memory never grows past the bound (plus one element
/// bigger than it, alone).
///
/// A consumer waits in ``receive()``; ``close()`` lets it take what waits, then it gets `nil`;
/// ``cancel()`` lets go of what waits at once. Every change of state wakes every waiter, and
/// every wait re-checks its condition under the lock, so that no wakeup is lost.
package final class Channel<Element: Sendable>: @unchecked Sendable {
    /// What ``send(_:weight:)`` did with an element.
    package enum SendResult: Sendable, Hashable {
        /// The element waits for the consumer.
        case queued
        /// The policy dropped it (the channel was full).
        case dropped
        /// The channel is closed or cancelled: nothing more is taken.
        case closed
    }

    private enum State { case open, closed, cancelled }

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var buffer: ChannelBuffer<Element>
    private var state = State.open
    private var sendersWaiting = 0

    /// The bound: items, or bytes.
    package let bound: Int64
    /// What happens when full.
    package let policy: ChannelPolicy

    /// A channel of at most `capacity` elements (at least one), all of its room made now.
    package init(capacity: Int, policy: ChannelPolicy) {
        let buffer = ChannelBuffer<Element>(bound: Int64(max(1, capacity)), policy: policy, reserve: max(1, capacity))
        self.buffer = buffer
        bound = buffer.bound
        self.policy = policy
    }

    /// A channel of at most `maxBytes` bytes (each element weighed as it is sent). With
    /// `holdsUntilDone`, an element taken keeps its room until the consumer calls ``done(_:)``.
    package init(maxBytes: Int64, policy: ChannelPolicy, holdsUntilDone: Bool = false) {
        let buffer = ChannelBuffer<Element>(bound: maxBytes, policy: policy, holdsUntilDone: holdsUntilDone)
        self.buffer = buffer
        bound = buffer.bound
        self.policy = policy
    }

    /// Hands `element` to the consumer: waits for room under ``ChannelPolicy/block`` (until the
    /// channel closes), else takes or drops it as the policy says.
    @discardableResult
    package func send(_ element: Element, weight: ChannelWeight = .one) -> SendResult {
        condition.lock()
        defer { condition.unlock() }
        if policy == .block {
            while state == .open && !buffer.hasRoom(for: weight.cost) {
                sendersWaiting += 1
                condition.wait()
                sendersWaiting -= 1
            }
        }
        guard state == .open else { return .closed }
        guard buffer.offer(element, weight: weight) else { return .dropped }
        condition.broadcast()
        return .queued
    }

    /// Takes the oldest element, waiting for one; `nil` once the channel is closed and empty
    /// (or cancelled).
    package func receive() -> Element? {
        receiveWeighed()?.element
    }

    /// ``receive()``, with the element's weight (for ``done(_:)``).
    package func receiveWeighed() -> (element: Element, weight: ChannelWeight)? {
        condition.lock()
        defer { condition.unlock() }
        while buffer.isEmpty && state == .open { condition.wait() }
        guard let taken = buffer.take() else { return nil }
        condition.broadcast()
        return taken
    }

    /// Frees the room of an element taken, in a channel that holds it until done.
    package func done(_ weight: ChannelWeight) {
        condition.lock()
        buffer.done(weight)
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until nothing waits and nothing taken is still being worked on, or the channel is cancelled.
    package func waitUntilIdle() {
        condition.lock()
        defer { condition.unlock() }
        while state != .cancelled && !buffer.isIdle { condition.wait() }
    }

    /// Ends the channel: what waits can still be received, further sends are refused.
    package func close() {
        condition.lock()
        if state == .open { state = .closed }
        condition.broadcast()
        condition.unlock()
    }

    /// Ends the channel at once: what waits goes (not counted as dropped), senders and the
    /// consumer stop waiting, further sends are refused.
    package func cancel() {
        condition.lock()
        state = .cancelled
        buffer.discardAll()
        condition.broadcast()
        condition.unlock()
    }

    /// Whether ``close()`` or ``cancel()`` has been called.
    package var isClosed: Bool { locked { _ in state != .open } }
    /// The elements waiting.
    package var pendingCount: Int { locked { $0.count } }
    /// The cost held: bytes (or items) waiting, and taken but not done.
    package var pendingCost: Int64 { locked { $0.cost } }
    /// The most cost held at once.
    package var mostPendingCost: Int64 { locked { $0.mostCost } }
    /// What the policy has dropped.
    package var drops: ChannelDrops { locked { $0.drops } }
    /// Whether a sender is waiting for room.
    package var hasSendersWaiting: Bool { locked { _ in sendersWaiting > 0 } }

    private func locked<T>(_ body: (inout ChannelBuffer<Element>) -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body(&buffer)
    }
}
