import Foundation
import ReelCore
import Synchronization
import Testing

/// The start / stop lifecycle every source shares: the value state machine on its own, and
/// its owner with a stop that comes while the device is being opened.
@Suite struct CaptureThreadTests {
    /// A device the tests open: counts how often it is open and whether a thread used it.
    final class Device: Sendable {
        let opened = Atomic<Int>(0)
        let closed = Atomic<Int>(0)
        let ran = Atomic<Bool>(false)
        var isOpen: Bool { opened.load(ordering: .relaxed) > closed.load(ordering: .relaxed) }
        var hasRun: Bool { ran.load(ordering: .relaxed) }
        func open() -> Device { opened.add(1, ordering: .relaxed); return self }
        func close() { closed.add(1, ordering: .relaxed) }
    }

    @Test func theLifecycleRunsIdleStartingRunningIdle() {
        var lifecycle = CaptureThreadLifecycle()
        #expect(lifecycle.startRequested() == .open)
        #expect(lifecycle.startRequested() == .refuse, "a second start while starting is refused")
        #expect(lifecycle.opened() == .launch)
        let worker = WorkerThread(name: "test") { _ in }
        guard case .none = lifecycle.launched(worker) else { Issue.record("a launched thread runs"); return }
        #expect(lifecycle.worker === worker)
        #expect(lifecycle.startRequested() == .refuse, "a start while running is refused")
        guard case .stop(let stopped) = lifecycle.stopRequested() else { Issue.record("a stop stops the thread"); return }
        #expect(stopped === worker)
        guard case .none = lifecycle.stopRequested() else { Issue.record("a second stop does nothing"); return }
        #expect(lifecycle.startRequested() == .open, "a stopped source starts again")
        worker.join()
    }

    @Test func aStopWhileOpeningAbandonsTheDevice() {
        var lifecycle = CaptureThreadLifecycle()
        _ = lifecycle.startRequested()
        guard case .waitForStart = lifecycle.stopRequested() else { Issue.record("the stop waits for the start"); return }
        #expect(lifecycle.isStopRequested)
        #expect(lifecycle.opened() == .abandon)
        lifecycle.startEnded()
        #expect(!lifecycle.isStarting)
        #expect(lifecycle.worker == nil)
    }

    @Test func aStopWhileLaunchingStopsTheNewThread() {
        var lifecycle = CaptureThreadLifecycle()
        _ = lifecycle.startRequested()
        #expect(lifecycle.opened() == .launch)
        guard case .waitForStart = lifecycle.stopRequested() else { Issue.record("the stop waits for the start"); return }
        let worker = WorkerThread(name: "test") { _ in }
        guard case .stop(let stopped) = lifecycle.launched(worker) else { Issue.record("the new thread is stopped"); return }
        #expect(stopped === worker)
        #expect(lifecycle.isStarting, "the start is over only once the thread has been stopped")
        lifecycle.startEnded()
        #expect(lifecycle.worker == nil)
        worker.join()
    }

    @Test func aFailedOpeningLeavesTheSourceIdle() {
        var lifecycle = CaptureThreadLifecycle()
        _ = lifecycle.startRequested()
        lifecycle.startEnded()
        #expect(lifecycle.startRequested() == .open)
    }

    @Test func aStopDuringStartLeavesNothingRunningOrOpen() throws {
        let thread = CaptureThread<Device>(threadName: "reel.test")
        let device = Device()
        let opening = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let startError = Mutex<(any Error)?>(nil)
        Thread.detachNewThread {
            do {
                try thread.start(sourceName: "test device", open: { isCancelled in
                    let opened = device.open()
                    opening.signal()
                    // A slow device: it finishes opening only once the stop has come.
                    while !isCancelled() { usleep(1_000) }
                    return opened
                }, release: { $0.close() }) { device, _ in
                    device.ran.store(true, ordering: .relaxed)
                    device.close()
                }
            } catch {
                startError.withLock { $0 = error }
            }
            started.signal()
        }
        opening.wait()
        thread.stop()
        // The stop returned: the device is closed already, and no thread ran on it.
        #expect(!device.isOpen)
        #expect(!device.hasRun)
        #expect(!thread.isRunning)
        started.wait()
        #expect(startError.withLock { $0 } == nil, "a start that a stop overtook is not a failure")
        // The source can start again.
        try thread.start(sourceName: "test device", open: { _ in device.open() }) { device, worker in
            device.ran.store(true, ordering: .relaxed)
            while !worker.isStopRequested { usleep(1_000) }
            device.close()
        }
        #expect(thread.isRunning)
        #expect(thread.current === device)
        thread.stop()
        #expect(device.hasRun)
        #expect(!device.isOpen)
        #expect(thread.current == nil)
    }

    @Test func aSecondStartIsRefused() throws {
        let thread = CaptureThread<Void>(threadName: "reel.test")
        try thread.start(sourceName: "test device", open: { _ in }) { _, worker in
            while !worker.isStopRequested { usleep(1_000) }
        }
        #expect(throws: ReelError.self) {
            try thread.start(sourceName: "test device", open: { _ in }) { _, _ in }
        }
        thread.stop()
        thread.stop()
    }
}
