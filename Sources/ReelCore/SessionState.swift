/// The lifecycle of a capture session, as a value whose transitions return what to do.
///
/// idle → starting → running → stopping → stopped (or failed from starting/running). A stop
/// asked for while starting moves to `stopRequestedWhileStarting`: the start goes on to its end
/// (or gives up early) and then stops what it started itself, and the stop waits for that.
/// The owner keeps one behind a lock, calls a transition, and acts on the returned action
/// outside the lock.
public struct SessionStateMachine: Sendable, Hashable {
    /// Where the session is.
    public enum State: Sendable, Hashable {
        /// Nothing started yet; inputs and outputs may be changed.
        case idle
        /// Sources and outputs are being opened.
        case starting
        /// Capturing.
        case running
        /// Sources are stopping and outputs finishing.
        case stopping
        /// Stopped; the session may be started again.
        case stopped
        /// `stop()` came while starting: the start stops what it started, then the session is
        /// stopped.
        case stopRequestedWhileStarting
        /// The start failed with this error; nothing is left running.
        case failed(ReelError)
    }

    /// What the owner must do after a transition.
    public enum Action: Sendable, Hashable {
        /// Open sources and outputs and start them.
        case start
        /// Stop sources, finish outputs.
        case stop
        /// Wait for the start under way: it stops what it started, then calls ``stopped()``.
        case waitForStart
        /// Wait for the stop under way to finish (every output finished, files complete).
        case waitForStop
        /// Nothing to do: the request was a harmless repeat.
        case none
    }

    /// Where the session is.
    public private(set) var state: State = .idle

    /// Creates a machine in the idle state.
    public init() {}

    /// Whether inputs and outputs may be changed.
    public var isConfigurable: Bool {
        switch state {
        case .idle, .stopped, .failed: return true
        default: return false
        }
    }

    /// Whether the session is running.
    public var isRunning: Bool { state == .running }

    /// Whether a start under way should give up at its next step: a stop was asked for.
    public var isStartCancelled: Bool { state == .stopRequestedWhileStarting }

    /// A request to start.
    public mutating func start() throws -> Action {
        switch state {
        case .idle, .stopped, .failed:
            state = .starting
            return .start
        case .starting, .running:
            throw ReelError(.alreadyRunning, "the capture session is already running")
        case .stopping, .stopRequestedWhileStarting:
            throw ReelError(.alreadyRunning, "the capture session is still stopping", hint: "wait for stop() to return")
        }
    }

    /// Starting succeeded. Returns `.stop` when a stop was asked for meanwhile: the starter
    /// then stops what it started and calls ``stopped()``.
    public mutating func started() -> Action {
        switch state {
        case .starting:
            state = .running
            return .none
        case .stopRequestedWhileStarting:
            state = .stopping
            return .stop
        default:
            return .none
        }
    }

    /// Starting or running failed.
    public mutating func fail(_ error: ReelError) { state = .failed(error) }

    /// A request to stop. Stopping what is not running is a no-op, not an error; a stop while
    /// starting waits for the start (``Action/waitForStart``).
    public mutating func stop() -> Action {
        switch state {
        case .running:
            state = .stopping
            return .stop
        case .starting:
            state = .stopRequestedWhileStarting
            return .waitForStart
        case .stopRequestedWhileStarting:
            return .waitForStart
        case .stopping:
            return .waitForStop
        default:
            return .none
        }
    }

    /// Stopping finished.
    public mutating func stopped() { if state == .stopping { state = .stopped } }
}
