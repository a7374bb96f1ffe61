import Foundation
import Synchronization

/// A dedicated thread that runs one loop until asked to stop, and can be joined.
///
/// Hot paths (capture loops, encoding) run on these, never on the cooperative pool.
public final class WorkerThread: Sendable {
    private let stopFlag = Atomic<Bool>(false)
    private let finished = Mutex<Bool>(false)
    private let done = NSCondition()
    private let name: String

    /// Starts a thread named `name` that runs `body`; `body` should return soon after
    /// `isStopRequested` becomes true.
    public init(name: String, body: @escaping @Sendable (WorkerThread) -> Void) {
        self.name = name
        let thread = Thread { [self] in
            body(self)
            self.done.lock()
            self.finished.withLock { $0 = true }
            self.done.broadcast()
            self.done.unlock()
        }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Whether `requestStop()` has been called.
    public var isStopRequested: Bool { stopFlag.load(ordering: .acquiring) }

    /// Asks the loop to end.
    public func requestStop() { stopFlag.store(true, ordering: .releasing) }

    /// Waits until the loop has returned.
    public func join() {
        done.lock()
        while !finished.withLock({ $0 }) { done.wait() }
        done.unlock()
    }

    /// Whether the loop has returned.
    public var isFinished: Bool { finished.withLock { $0 } }
}
