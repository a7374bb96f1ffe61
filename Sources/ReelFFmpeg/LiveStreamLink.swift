import ReelCore

/// Where a ``LiveStream``'s connection is, and what its sending thread does next: whether to
/// report a loss or a return, how long to pause before the next attempt, how many reconnects
/// there were. Decided here as values; the thread connects, sends, reports and sleeps.
///
/// A stream that was never connected (an SRT listener waiting for its first caller) reports
/// nothing while it waits; once connected, the first failure is reported once, however many
/// attempts follow, and the next connection is a reconnect, reported too. The pause between
/// attempts doubles from the initial one up to the maximum, and starts over once connected.
/// A stream to a server that is still down when the recording stops ended early
/// (``endedEarly()``); a listener's caller that left is a player gone, not a loss.
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
    /// Whether the stream waits for callers (an SRT listener) rather than calling a server.
    private let isListener: Bool
    /// The loss reported last, while it lasts.
    private(set) var outage: ReelError?

    init(connected: Bool, isListener: Bool = false, initialBackoff: MediaTime, maximumBackoff: MediaTime) {
        state = connected ? .connected : .awaitingFirstConnection
        self.isListener = isListener
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
        backoff = initialBackoff
    }

    /// A connection was made; returns whether it is a return to report.
    mutating func connected() -> Bool {
        defer {
            state = .connected
            outage = nil
            backoff = initialBackoff
        }
        guard state == .reconnecting else { return false }
        reconnects += 1
        return true
    }

    /// An attempt to connect failed; returns whether to report the loss (only if it has not
    /// been) and how long to pause before the next attempt.
    mutating func connectFailed(_ error: ReelError) -> (report: Bool, pause: MediaTime) {
        let pause = backoff
        backoff = min(backoff + backoff, maximumBackoff)
        return (broke(error), pause)
    }

    /// Sending broke the connection (`error` says how); returns whether to report the loss.
    mutating func broke(_ error: ReelError) -> Bool {
        guard state == .connected else { return false }
        state = .reconnecting
        outage = error
        return true
    }

    /// At the stop: why the stream ended before the recording did — a server lost and not back
    /// by then, so that nothing after the loss reached it — or `nil`.
    func endedEarly() -> ReelError? {
        guard !isListener, state == .reconnecting, let outage else { return nil }
        return ReelError(outage.code, outage.message + "; it was not back when the recording stopped",
                         hint: outage.hint, errno: outage.errno, averror: outage.averror)
    }
}
