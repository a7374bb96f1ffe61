import Foundation

/// A bounded first-in first-out queue between one producer thread and one consumer thread.
///
/// When full, `push` either refuses the element (the producer drops and counts it: the policy
/// for real-time capture) or waits for room (backpressure: the policy when the clock is not
/// real time, so tests lose nothing). Memory never grows past `capacity` elements.
package final class BoundedQueue<Element: Sendable>: @unchecked Sendable {
    /// What `push` does when the queue is full.
    package enum Policy: Sendable { case dropNewest, block }

    private let condition = NSCondition()
    private var storage: [Element?]
    private var head = 0
    private var queued = 0
    private var closed = false
    /// The most elements the queue holds.
    package let capacity: Int
    /// What happens when full.
    package let policy: Policy

    /// A queue of `capacity` elements (at least one).
    package init(capacity: Int, policy: Policy) {
        self.capacity = max(1, capacity)
        self.policy = policy
        self.storage = Array(repeating: nil, count: self.capacity)
    }

    /// Whether ``close()`` has been called.
    package var isClosed: Bool {
        condition.lock(); defer { condition.unlock() }
        return closed
    }

    /// Adds an element. Returns `false` if it was dropped (queue full under `.dropNewest`, or closed).
    @discardableResult
    package func push(_ element: Element) -> Bool {
        condition.lock(); defer { condition.unlock() }
        while queued == capacity && !closed {
            if policy == .dropNewest { return false }
            condition.wait()
        }
        if closed { return false }
        storage[(head + queued) % capacity] = element
        queued += 1
        condition.broadcast()
        return true
    }

    /// Takes the oldest element, waiting for one; `nil` once the queue is closed and empty.
    package func pop() -> Element? {
        condition.lock(); defer { condition.unlock() }
        while queued == 0 && !closed { condition.wait() }
        guard queued > 0 else { return nil }
        let element = storage[head]
        storage[head] = nil
        head = (head + 1) % capacity
        queued -= 1
        condition.broadcast()
        return element
    }

    /// Ends the queue: pending elements can still be popped, further pushes are refused.
    package func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    /// The number of waiting elements.
    package var pendingCount: Int {
        condition.lock(); defer { condition.unlock() }
        return queued
    }
}
