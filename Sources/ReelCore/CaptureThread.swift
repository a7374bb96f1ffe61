import Foundation

/// The start / stop of a source's capture thread, shared by every source: decides under its
/// lock (through ``CaptureThreadLifecycle``) and acts outside it — the device is opened, the
/// thread started and joined without the lock held.
///
/// A `stop()` that comes while `start(...)` is still opening the device is not lost: the
/// opening can see it (`isCancelled`) and give up, whatever it opened is released, no thread is
/// left running, and the `stop()` returns only once that is so. The `start` then returns
/// without an error, as if it had finished just before the stop.
///
/// `Resource` is what the opening produces (a connection, a stream, a device) and the thread
/// then owns; ``current`` shows it to the source while the thread runs.
package final class CaptureThread<Resource: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var lifecycle = CaptureThreadLifecycle()
    private var resource: Resource?
    private let threadName: String

    /// A capture thread named `threadName` when it runs (`reel.x11`, `reel.v4l2`).
    package init(threadName: String) {
        self.threadName = threadName
    }

    /// Opens the source's device with `open` and runs `run` on it on a new thread.
    ///
    /// - Parameters:
    ///   - sourceName: the source's name, for the error when it is running already.
    ///   - open: opens the device, outside the lock; `isCancelled` turns true when a `stop()`
    ///     comes meanwhile, so a slow opening may give up.
    ///   - release: releases an opened device that no thread will use (a stop came while it
    ///     was opened).
    ///   - run: the capture loop on the new thread; it owns the device and releases it when
    ///     it returns, which it does soon after `thread.isStopRequested`.
    /// - Throws: `.alreadyRunning`, or what `open` throws (unless a stop came meanwhile: then
    ///   nothing is thrown and nothing runs).
    package func start(sourceName: String,
                       open: (_ isCancelled: @escaping @Sendable () -> Bool) throws -> Resource,
                       release: (Resource) -> Void = { _ in },
                       run: @escaping @Sendable (Resource, WorkerThread) -> Void) throws {
        guard locked({ $0.startRequested() }) == .open else {
            throw ReelError(.alreadyRunning, "\(sourceName) is already running")
        }
        let opened: Resource
        do {
            opened = try open { [self] in locked { $0.isStopRequested } }
        } catch {
            let stopped = locked { $0.isStopRequested }
            endStart()
            if stopped { return }
            throw error
        }
        if locked({ $0.opened() }) == .abandon {
            release(opened)
            endStart()
            return
        }
        let worker = WorkerThread(name: threadName) { thread in run(opened, thread) }
        let action = locked { lifecycle -> CaptureThreadLifecycle.LaunchedAction in
            let action = lifecycle.launched(worker)
            if case .none = action { resource = opened }
            return action
        }
        if case .stop(let worker) = action {
            worker.requestStop()
            worker.join()
            endStart()
        }
    }

    /// Stops the thread and waits for it; when a start is under way, tells it and waits until
    /// it has ended with nothing running. Safe to call twice, and when nothing runs.
    ///
    /// - Parameter interrupt: called once the stop has been asked for and before waiting, to
    ///   abandon a blocking read or connection of the source (its cancel handles).
    package func stop(interrupt: () -> Void = {}) {
        let action = locked { lifecycle -> CaptureThreadLifecycle.StopAction in
            let action = lifecycle.stopRequested()
            if case .stop = action { resource = nil }
            return action
        }
        switch action {
        case .none:
            interrupt()
        case .stop(let worker):
            worker.requestStop()
            interrupt()
            worker.join()
        case .waitForStart:
            interrupt()
            condition.lock()
            while lifecycle.isStarting { condition.wait() }
            condition.unlock()
        }
    }

    /// The running thread's device, or `nil` when no thread runs.
    package var current: Resource? {
        condition.lock(); defer { condition.unlock() }
        return resource
    }

    /// Whether the capture thread runs.
    package var isRunning: Bool {
        condition.lock(); defer { condition.unlock() }
        return lifecycle.worker != nil
    }

    private func endStart() {
        condition.lock()
        lifecycle.startEnded()
        condition.broadcast()
        condition.unlock()
    }

    private func locked<T>(_ body: (inout CaptureThreadLifecycle) -> T) -> T {
        condition.lock(); defer { condition.unlock() }
        return body(&lifecycle)
    }
}
