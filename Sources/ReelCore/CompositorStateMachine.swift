/// The lifecycle of a compositor, as a value whose transitions say what is allowed.
///
/// idle → preparing → running → stopping → idle (at its finish); a preparation that fails goes
/// back to idle. The compositor keeps one behind its lock and acts outside it.
public struct CompositorStateMachine: Sendable, Hashable {
    /// Where the compositor is.
    public enum Phase: Sendable, Hashable {
        /// Not composing: outputs may be added.
        case idle
        /// The session is starting it: its outputs are being prepared.
        case preparing
        /// Composing.
        case running
        /// The session is stopping: nothing waits for sources any more.
        case stopping
    }

    /// Where the compositor is.
    public private(set) var phase = Phase.idle

    /// Creates a machine in the idle phase.
    public init() {}

    /// Whether outputs may be added.
    public var isConfigurable: Bool { phase == .idle }

    /// Whether composition may wait for sources (to keep them in step off real time): only
    /// while running, never once the session stops.
    public var waitsForSources: Bool { phase == .running }

    /// The session is starting the compositor. Throws unless it is idle.
    public mutating func prepare() throws {
        guard phase == .idle else { throw ReelError(.alreadyRunning, "the compositor is already running") }
        phase = .preparing
    }

    /// Preparing failed: the compositor can be started again.
    public mutating func preparationFailed() { if phase == .preparing { phase = .idle } }

    /// Its outputs are prepared and its thread starts.
    public mutating func prepared() { if phase == .preparing { phase = .running } }

    /// The session begins to stop.
    public mutating func sessionWillStop() { if phase == .running { phase = .stopping } }

    /// The compositor's thread and outputs have finished.
    public mutating func finished() { phase = .idle }
}
