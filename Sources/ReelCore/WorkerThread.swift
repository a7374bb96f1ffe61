import Foundation
import Synchronization

/// A dedicated thread that runs one loop until asked to stop, and can be joined.
///
/// Hot paths (capture loops, encoding) run on these, never on the cooperative pool.
package final class WorkerThread: Sendable {
    private let stopFlag = Atomic<Bool>(false)
    private let finished = Mutex<Bool>(false)
    private let done = NSCondition()
    private let name: String

    /// Starts a thread named `name` that runs `body`; `body` should return soon after
    /// `isStopRequested` becomes true.
    package init(name: String, body: @escaping @Sendable (WorkerThread) -> Void) {
        self.name = name
        let thread = Thread { [self] in
            Self.nameInKernel(name)
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

    /// Foundation's thread name does not reach the kernel: the calling thread names itself
    /// there too (Linux's `/proc/thread-self/comm`, 15 bytes at most; elsewhere nothing
    /// happens), so that top, perf and /proc tell the compositor from the encoder.
    private static func nameInKernel(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }

    /// Whether `requestStop()` has been called.
    package var isStopRequested: Bool { stopFlag.load(ordering: .acquiring) }

    /// Asks the loop to end.
    package func requestStop() { stopFlag.store(true, ordering: .releasing) }

    /// Waits until the loop has returned.
    package func join() {
        done.lock()
        while !finished.withLock({ $0 }) { done.wait() }
        done.unlock()
    }

    /// Whether the loop has returned.
    package var isFinished: Bool { finished.withLock { $0 } }
}
