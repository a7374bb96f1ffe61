/// The lifecycle of a recorder, as a value whose transitions return what to do.
///
/// idle → preparing → recording → (sourcesGone →) finished; a preparation that fails goes
/// back to idle. While recording it keeps the pause and resume requests, immediate and
/// scheduled, in the order the recorder's thread applies them, and which sources have gone
/// for good. The recorder keeps one behind its lock, calls a transition, and acts on the
/// returned action (building the pipeline, starting its thread, closing its queue) outside.
public struct RecorderStateMachine: Sendable, Hashable {
    /// Where the recorder is.
    public enum Phase: Sendable, Hashable {
        /// Not started yet (or its preparation failed).
        case idle
        /// The session is starting it: its file and encoders are being made.
        case preparing
        /// Recording (paused or not).
        case recording
        /// Every source has gone for good: the recording ends by itself with what it has.
        case sourcesGone
        /// The recording has ended (finished or failed); a recorder records once.
        case finished
    }

    /// A request the recorder's thread applies in order with the samples.
    public enum Control: Sendable, Hashable {
        /// Pause at the first frame slot at or after this session time.
        case pause(MediaTime)
        /// Resume at the first frame slot at or after this session time.
        case resume(MediaTime)
        /// The video source has gone for good: the recording goes on with its audio.
        case videoSourceGone
    }

    /// What the owner must do after a source went away.
    public struct SourceGoneAction: Sendable, Hashable {
        /// The video source went: let audio stop waiting for it (a ``Control/videoSourceGone`` is queued).
        public var videoSourceGone = false
        /// Every source has gone: close the queue so that the recording ends.
        public var endRecording = false

        /// Nothing to do.
        public init(videoSourceGone: Bool = false, endRecording: Bool = false) {
            self.videoSourceGone = videoSourceGone
            self.endRecording = endRecording
        }
    }

    /// Where the recorder is.
    public private(set) var phase: Phase = .idle
    /// Requests not yet taken by the recorder's thread, in order.
    public private(set) var pendingControls: [Control] = []
    /// Pause (true) and resume (false) edges by session time, in the order they were asked
    /// for: what ``isPaused(at:)`` reads. Edges in the past but the last are dropped.
    private var edges: [Edge] = []
    private struct Edge: Sendable, Hashable {
        var time: MediaTime
        var paused: Bool
    }
    private var sources: Set<SourceID> = []
    private var videoSource: SourceID?
    private var gone: Set<SourceID> = []

    /// Creates a machine in the idle phase.
    public init() {}

    /// Whether the recorder is recording (paused or not), including after its sources went
    /// until it has finished.
    public var isRecording: Bool { phase == .recording || phase == .sourcesGone }

    /// Whether every source went away (the recording ends, or ended, because of that).
    public var sourcesWentAway: Bool { phase == .sourcesGone }

    /// The session is starting the recorder. Throws if it is preparing, recording or has recorded.
    public mutating func prepare() throws {
        switch phase {
        case .idle:
            phase = .preparing
        case .preparing, .recording, .sourcesGone:
            throw ReelError(.alreadyRunning, "the recorder is already recording")
        case .finished:
            throw ReelError(.cannotAddOutput, "this recorder has already recorded its file",
                            hint: "make a new Recorder for the next recording")
        }
    }

    /// Preparing failed: the recorder can be started again.
    public mutating func preparationFailed() {
        if phase == .preparing { phase = .idle }
    }

    /// The pipeline is made and recording begins, with `sources` (of which `videoSource` is
    /// the recorded video, if any).
    public mutating func prepared(sources: Set<SourceID>, videoSource: SourceID?) {
        guard phase == .preparing else { return }
        phase = .recording
        self.sources = sources
        self.videoSource = videoSource
        gone = []
    }

    /// The recording ended.
    public mutating func finished() {
        phase = .finished
        edges = []
        pendingControls = []
    }

    // MARK: Pause and resume

    /// Whether the recording is paused at session time `now`: a pause asked for now counts at
    /// once, a scheduled one only once its time has come. False unless recording.
    public func isPaused(at now: MediaTime) -> Bool {
        guard isRecording else { return false }
        return edges.last { $0.time <= now }?.paused ?? false
    }

    /// Pauses (`pause` true) or resumes now, at session time `now`. Returns whether a control
    /// was queued: pausing a paused recording (or resuming a running one) does nothing.
    /// Throws `.notRunning` when not recording.
    public mutating func request(pause: Bool, at now: MediaTime) throws -> Bool {
        guard isRecording else {
            throw ReelError(.notRunning, pause ? "cannot pause: the recorder is not recording" : "cannot resume: the recorder is not recording")
        }
        guard isPaused(at: now) != pause else { return false }
        add(Edge(time: now, paused: pause), now: now)
        return true
    }

    /// Schedules a pause (`pause` true) or a resume at session time `time`; may come before
    /// the recording starts. Scheduled requests must come in time order.
    public mutating func schedule(pause: Bool, at time: MediaTime) {
        add(Edge(time: time, paused: pause), now: nil)
    }

    private mutating func add(_ edge: Edge, now: MediaTime?) {
        if let now, let lastPast = edges.lastIndex(where: { $0.time <= now }), lastPast > 0 {
            edges.removeFirst(lastPast)
        }
        edges.append(edge)
        pendingControls.append(edge.paused ? .pause(edge.time) : .resume(edge.time))
    }

    /// Takes the requests queued so far, for the recorder's thread to apply.
    public mutating func takeControls() -> [Control] {
        defer { pendingControls = [] }
        return pendingControls
    }

    // MARK: Sources

    /// A source was lost or ended for good.
    public mutating func sourceGone(_ source: SourceID) -> SourceGoneAction {
        guard phase == .recording, sources.contains(source) else { return SourceGoneAction() }
        gone.insert(source)
        var action = SourceGoneAction()
        if source == videoSource {
            action.videoSourceGone = true
            pendingControls.append(.videoSourceGone)
        }
        if gone == sources {
            phase = .sourcesGone
            action.endRecording = true
        }
        return action
    }

    /// A source that was interrupted delivers again.
    public mutating func sourceResumed(_ source: SourceID) {
        gone.remove(source)
    }
}
