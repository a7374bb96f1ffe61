/// The lifecycle of a capture session, as a value whose transitions return what to do.
///
/// idle → starting → running → stopping → stopped (or failed from starting/running).
/// The owner keeps one behind a lock, calls a transition, and acts on the returned action
/// outside the lock.
public struct SessionStateMachine: Sendable, Hashable {
    /// Where the session is.
    public enum State: Sendable, Hashable {
        case idle, starting, running, stopping, stopped
        case failed(ReelError)
    }

    /// What the owner must do after a transition.
    public enum Action: Sendable, Hashable {
        /// Open sources and outputs and start them.
        case start
        /// Stop sources, finish outputs.
        case stop
        /// Nothing to do: the request was a harmless repeat.
        case none
    }

    public private(set) var state: State = .idle

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

    /// A request to start.
    public mutating func start() throws -> Action {
        switch state {
        case .idle, .stopped, .failed:
            state = .starting
            return .start
        case .starting, .running:
            throw ReelError(.alreadyRunning, "the capture session is already running")
        case .stopping:
            throw ReelError(.alreadyRunning, "the capture session is still stopping", hint: "wait for stop() to return")
        }
    }

    /// Starting succeeded.
    public mutating func started() { if state == .starting { state = .running } }

    /// Starting or running failed.
    public mutating func fail(_ error: ReelError) { state = .failed(error) }

    /// A request to stop. Stopping what is not running is a no-op, not an error.
    public mutating func stop() -> Action {
        switch state {
        case .running, .starting:
            state = .stopping
            return .stop
        default:
            return .none
        }
    }

    /// Stopping finished.
    public mutating func stopped() { if state == .stopping { state = .stopped } }
}
