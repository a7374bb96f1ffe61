import ReelCore

/// Where a ``LiveStream``'s connection is, and what its sending thread does next: whether to
/// report a loss or a return, how long to pause before the next attempt, how many reconnects
/// there were. Decided here as values; the thread connects, sends, reports and sleeps.
///
/// A stream that was never connected (an SRT listener waiting for its first caller) reports
/// nothing while it waits; once connected, the first failure is reported once, however many
/// attempts follow, and the next connection is a reconnect, reported too. The pause between
/// attempts doubles from the initial one up to the maximum, and starts over once connected.
struct LiveStreamLink {
    /// The connection's state.
    enum State: Equatable {
        /// Not connected yet (a listener waiting for a caller).
        case awaitingFirstConnection
        /// Sending.
        case connected
        /// Lost, trying again; the loss has been reported.
        case reconnecting
    }

    private(set) var state: State
    /// Connections made after one was lost.
    private(set) var reconnects = 0
    /// The pause before the next attempt.
    private(set) var backoff: MediaTime
    private let initialBackoff: MediaTime
    private let maximumBackoff: MediaTime

    init(connected: Bool, initialBackoff: MediaTime, maximumBackoff: MediaTime) {
        state = connected ? .connected : .awaitingFirstConnection
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
        backoff = initialBackoff
    }

    /// A connection was made; returns whether it is a return to report.
    mutating func connected() -> Bool {
        defer {
            state = .connected
            backoff = initialBackoff
        }
        guard state == .reconnecting else { return false }
        reconnects += 1
        return true
    }

    /// An attempt to connect failed; returns whether to report the loss (only if it has not
    /// been) and how long to pause before the next attempt.
    mutating func connectFailed() -> (report: Bool, pause: MediaTime) {
        let pause = backoff
        backoff = min(backoff + backoff, maximumBackoff)
        guard state == .connected else { return (false, pause) }
        state = .reconnecting
        return (true, pause)
    }

    /// Sending broke the connection; returns whether to report the loss.
    mutating func broke() -> Bool {
        guard state == .connected else { return false }
        state = .reconnecting
        return true
    }
}
