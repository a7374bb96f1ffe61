/// The lifecycle of a source's capture thread as a value: each event returns what the owner
/// (``CaptureThread``) must do, and the owner does it outside its lock.
///
/// ```
/// idle ──start──► starting ──opened, launched──► running ──stop──► idle
///                    │  ▲
///         stop: the start ends by itself (the device it opened is released, or the thread it
///               launched is stopped at once), and the stop waits for that
/// ```
///
/// A `stop` while the source is still opening its device is not lost: it is remembered in
/// `.starting(stopRequested: true)`, the opening may look at it to give up early, and the start
/// ends with nothing left running.
package struct CaptureThreadLifecycle: Sendable {
    /// Where the source is.
    package enum Phase: Sendable {
        /// Nothing is open, no thread runs.
        case idle
        /// A `start` is opening the device or launching the thread; `stopRequested` once a
        /// `stop` came meanwhile.
        case starting(stopRequested: Bool)
        /// The capture thread runs.
        case running(WorkerThread)
    }

    /// What the owner does on a `start`.
    package enum StartAction: Sendable, Equatable {
        /// Open the device (outside the lock).
        case open
        /// Refuse: the source is starting or running already.
        case refuse
    }

    /// What the owner does once the device is open.
    package enum OpenedAction: Sendable, Equatable {
        /// Launch the capture thread on it.
        case launch
        /// A stop came while opening: release the device, launch nothing, then ``startEnded()``.
        case abandon
    }

    /// What the owner does once the thread is launched.
    package enum LaunchedAction: Sendable {
        /// Nothing: the source runs.
        case none
        /// A stop came while launching: stop and join this thread, then ``startEnded()``.
        case stop(WorkerThread)
    }

    /// What the owner does on a `stop`.
    package enum StopAction: Sendable {
        /// Nothing runs: nothing to do.
        case none
        /// Ask this thread to stop and wait for it.
        case stop(WorkerThread)
        /// A start is under way: it has been told, and ends with nothing running; wait until
        /// the phase has left `.starting`.
        case waitForStart
    }

    /// The current phase.
    package private(set) var phase: Phase = .idle

    /// Creates an idle lifecycle.
    package init() {}

    /// Whether a `stop` has come while starting (an opening in progress should give up).
    package var isStopRequested: Bool {
        if case .starting(stopRequested: true) = phase { return true }
        return false
    }

    /// Whether a start is under way.
    package var isStarting: Bool {
        if case .starting = phase { return true }
        return false
    }

    /// The running thread, if any.
    package var worker: WorkerThread? {
        if case .running(let worker) = phase { return worker }
        return nil
    }

    /// A `start` was asked for.
    package mutating func startRequested() -> StartAction {
        guard case .idle = phase else { return .refuse }
        phase = .starting(stopRequested: false)
        return .open
    }

    /// The device is open.
    package mutating func opened() -> OpenedAction {
        isStopRequested ? .abandon : .launch
    }

    /// The thread has been launched.
    package mutating func launched(_ worker: WorkerThread) -> LaunchedAction {
        if isStopRequested { return .stop(worker) }
        phase = .running(worker)
        return .none
    }

    /// The start is over without a running thread: it failed, or a stop came meanwhile and
    /// whatever it opened has been released.
    package mutating func startEnded() {
        if case .starting = phase { phase = .idle }
    }

    /// A `stop` was asked for.
    package mutating func stopRequested() -> StopAction {
        switch phase {
        case .idle:
            return .none
        case .starting:
            phase = .starting(stopRequested: true)
            return .waitForStart
        case .running(let worker):
            phase = .idle
            return .stop(worker)
        }
    }
}
