import Foundation
import Observation
import Synchronization

/// One object that previews a camera, records clips, pauses, shows progress and merges: the
/// recorder of NextLevel and VideoKit, on top of a ``CaptureSession`` and a ``Recorder``.
///
/// ```swift
/// let camera = CameraRecorder(camera: try Cameras.source(for: .testPattern(.blue)), microphone: ToneSource())
/// camera.maxRecordedDuration = MediaTime(seconds: 30)
/// camera.filter = .look(.comic)
/// try await camera.start()        // capture and preview outputs run; nothing is recorded
/// try camera.record()             // the first clip
/// try camera.pause()              // the clip ends
/// try camera.resumeRecording()    // the next clip
/// let summary = try await camera.stop()   // clips merged into one file
/// ```
///
/// ``start()`` runs capture (and the outputs given to ``addPreviewOutput(_:)``, such as a
/// preview window or a live frames output) without recording; ``record()`` starts a clip and
/// ``pause()`` ends it. ``stop()`` ends capture and, when ``mergesClipsAutomatically``, merges
/// the clips into ``outputURL`` (a dated file in ``Recorder/defaultOutputDirectory(environment:)`` unless set);
/// the recorder can then ``start()`` a new take. ``stopRecording()`` ends a take while the camera
/// runs on (as `AVCaptureMovieFileOutput.stopRecording()` does): the preview and live frames go
/// on, and the next ``record()`` begins a new take into a new file (or ``startRecording(to:)``,
/// given the take's file as `AVCaptureMovieFileOutput` is). ``progress``, ``recordedDuration``,
/// ``isRecording``, ``isPaused`` and ``hasReachedLimit`` are observable (Observation), updated
/// at each frame (``hasReachedLimit`` once the clip that reached it is completed); ``events`` and the ``delegate`` say when a clip starts and ends, the limit is
/// reached, the merge is done or the recording failed.
///
/// When the take reaches ``maxRecordedDuration`` its recording stops there, as NextLevel's
/// does: ``hasReachedLimit`` becomes true, ``isRecording`` and ``isPaused`` false,
/// ``Event/limitReached(recorded:)`` comes, the clip is completed, and ``record()`` throws
/// `limitReached`. The take waits at its limit: ``removeLastClip()`` gives the clip's time back
/// and opens it again (``hasReachedLimit`` false, a ``Event/progress(recorded:progress:)``
/// below 1, ``record()`` records on); ``stopRecording()`` or ``stop()`` ends it, merging the
/// clips (``Event/mergeFinished(_:)``) and returning its summary (`reachedLimit` true while
/// it was at its limit), and the next ``record()`` after ``stopRecording()`` begins a new one.
public final class CameraRecorder: Observable, @unchecked Sendable {
    /// The camera.
    public let camera: any CameraSource
    /// The microphone (or any audio source), if sound is recorded.
    public let microphone: (any CaptureSource)?

    struct State {
        var settings: Recorder.Settings
        var mergesClipsAutomatically = true
        var outputURL: URL?
        var previewOutputs: [any CaptureOutput] = []
        var sinksForEachTake: (@Sendable (_ take: URL) -> [any PacketSink & Sendable])?
        var session: CaptureSession?
        /// The session's output the takes record through.
        var takeOutput: TakeOutput?
        /// The take's recorder; `nil` between takes (after ``stopRecording()``).
        var recorder: Recorder?
        /// The take's clips once its recorder made them; after ``stop()``, the last take's.
        var clips: RecordingSession?
        var takeURL: URL?
        /// The ``CameraRecorder/outputURL`` the take was made for (`nil`: a dated file).
        var takeAskedFor: URL?
        /// Whether the take has recorded (a ``CameraRecorder/record()`` went through).
        var takeHasRecorded = false
        var take = CameraTake()
        /// The recorded time last sent in a progress event.
        var reported: MediaTime?
        /// The take's events from its recorder, passed on.
        var pump: Task<Void, Never>?
        /// What observers were last told.
        var published = Published()

        /// A take begins: `recorder` records it into `url`, its events passed on by `pump` (which
        /// knows whether the take's clips are merged: a take's end may be passed on after the
        /// next take began).
        mutating func begin(_ recorder: Recorder, url: URL, askedFor: URL?, pump: Task<Void, Never>) {
            self.recorder = recorder
            clips = nil
            takeURL = url
            takeAskedFor = askedFor
            takeHasRecorded = false
            take.started()
            reported = nil
            self.pump = pump
        }
    }
    struct Published: Equatable {
        var recorded = MediaTime.zero
        var progress = 0.0
        var isRecording = false
        var isPaused = false
        var hasReachedLimit = false
        var canRecord = false
        var isRunning = false
    }
    let state: Mutex<State>
    let clock: any MediaClock
    /// The record, pause and stop-recording buttons, one press at a time.
    let buttons = NSLock()
    private let registrar = ObservationRegistrar()
    private let delegateBox = Mutex<WeakDelegate>(WeakDelegate())
    private struct WeakDelegate: @unchecked Sendable { weak var delegate: (any CameraRecorderDelegate)? }
    /// Delegate calls, one at a time, in order.
    private let delegateQueue = DispatchQueue(label: "reel.camera-recorder.delegate")
    private let continuation: AsyncStream<Event>.Continuation

    /// What happens to the takes — clips started and completed, progress, the limit, merges,
    /// failures — in order, for the recorder's whole life (every take). One consumer; events
    /// nobody has taken yet are kept (the newest 1024).
    public let events: AsyncStream<Event>

    /// Told what ``events`` carries, one call at a time on a queue of the recorder's (see
    /// ``CameraRecorderDelegate``); held weakly.
    public var delegate: (any CameraRecorderDelegate)? {
        get { delegateBox.withLock { $0.delegate } }
        set { delegateBox.withLock { $0.delegate = newValue } }
    }

    /// A recorder of `camera`, with `microphone`'s sound if given, on `clock` (the host's unless
    /// a test injects another).
    public init(camera: any CameraSource, microphone: (any CaptureSource)? = nil, settings: Recorder.Settings = Recorder.Settings(),
                clock: any MediaClock = HostClock()) {
        self.camera = camera
        self.microphone = microphone
        self.clock = clock
        state = Mutex(State(settings: settings))
        (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(1024))
    }

    deinit {
        continuation.finish()
        live.endStreams()
    }

    // MARK: Settings

    /// The recording's settings (codec, container…); clips are always on. Set before ``start()``.
    public var settings: Recorder.Settings {
        get { state.withLock { $0.settings } }
        set { state.withLock { $0.settings = newValue } }
    }

    /// The most time to record, over all clips of a take; the take ends by itself when it is
    /// reached (see ``hasReachedLimit``). Set before ``start()``.
    public var maxRecordedDuration: MediaTime? {
        get { state.withLock { $0.settings.maxRecordedDuration } }
        set { state.withLock { $0.settings.maxRecordedDuration = newValue } }
    }

    /// Whether the end of a take (``stop()`` or ``stopRecording()``) merges the clips into one file
    /// (else they stay in their folder: see ``recordingSession``).
    public var mergesClipsAutomatically: Bool {
        get { state.withLock { $0.mergesClipsAutomatically } }
        set { state.withLock { $0.mergesClipsAutomatically = newValue } }
    }

    /// What each take's one encode feeds besides its clips: live streams, a replay buffer,
    /// any ``PacketSink`` of the app's, as ``Recorder/init(url:settings:replayBuffer:sinks:)``
    /// takes them. Called as each take is made (at ``start()``, or at the first ``record()``
    /// after ``stopRecording()``) with the file the take records into; the sinks it returns
    /// are begun with the take, take its packets from the same encoders as its clips (what is
    /// recorded: nothing during a pause), and are finished with it. A sink serves one take:
    /// return new ones each time (a replay buffer or stream kept across takes would be given
    /// two recordings' streams). A take made but never recorded (its file renamed before its
    /// first ``record()``) finishes its sinks having given them nothing; one that never starts
    /// (the capture's or its file's start failed) drops them unbegun. The closure runs while
    /// the take is made, under the recorder's lock: it must not call back into the recorder.
    /// Set before the take is made. `nil` (the default): the clips alone.
    public var sinksForEachTake: (@Sendable (_ take: URL) -> [any PacketSink & Sendable])? {
        get { state.withLock { $0.sinksForEachTake } }
        set { state.withLock { $0.sinksForEachTake = newValue } }
    }

    /// Where the merged file goes; `nil`: a new dated file in ``Recorder/defaultOutputDirectory(environment:)``
    /// for each take. Read when a take begins, at its first ``record()`` (the first take's too:
    /// set after ``start()``, it is the file that take records into), or the first ``record()``
    /// after ``stopRecording()``: give each take its own. A take never replaces a file: at a
    /// name that is taken (the last take's, after ``stop()``) ``start()`` starts all the same,
    /// and ``record()`` throws `.fileExists`, saying to set a new one.
    public var outputURL: URL? {
        get { state.withLock { $0.outputURL } }
        set { state.withLock { $0.outputURL = newValue } }
    }

    /// The camera's digital zoom (see ``CameraSource/videoZoomFactor``).
    public var videoZoomFactor: Double {
        get { camera.videoZoomFactor }
        set { camera.videoZoomFactor = newValue }
    }

    /// Zooms smoothly to `factor` at `rate` doublings per second.
    public func ramp(toVideoZoomFactor factor: Double, withRate rate: Double) {
        camera.ramp(toVideoZoomFactor: factor, withRate: rate)
    }

    /// How the camera's pictures are turned, mirrored and filtered, kept for each take's
    /// session (see ``CameraRecorder/videoFilters``).
    let look = CaptureLook()

    /// The camera's pictures for the app's own view, converted as asked (see ``LiveFrames``),
    /// filtered as recorded: what an `AVCaptureVideoDataOutput`'s delegate is given.
    ///
    /// Pictures flow whenever capture runs — from ``start()`` to ``stop()``, recording or not,
    /// through every take, ``stopRecording()`` and the next ``record()`` — and the stream waits
    /// while it does not: after ``stop()`` it goes on with the pictures of the next
    /// ``start()``, as a data output's delegate is called again when its session runs again.
    /// It ends only when its consumer lets it go (the loop's task ends or is cancelled) or the
    /// recorder goes away, so an app's preview loop is written once for the recorder's life.
    ///
    /// Buffering: one picture, the newest. A consumer slower than the camera is given the
    /// newest picture when it next asks; those it was too slow for are left out, never queued,
    /// so memory and latency stay flat — what an `AVCaptureVideoDataOutput` does with
    /// `alwaysDiscardsLateVideoFrames`, its default. Nothing upstream waits for a consumer: the
    /// recording loses nothing. (A ``SampleHandlerOutput`` given to ``addPreviewOutput(_:)``
    /// hands over the camera's own frames with their sound, keeping the picture that waits
    /// rather than the newest, and counting what it leaves out.)
    public func previewFrames(_ settings: LiveFrames.Settings = LiveFrames.Settings()) -> AsyncStream<LiveFrame> {
        live.frames(settings, from: nil, endsAtStop: false)
    }

    /// An observable model of the camera's newest picture (see ``LiveFrameModel``), for a UI to bind to.
    public func previewModel(_ settings: LiveFrames.Settings = LiveFrames.Settings()) -> LiveFrameModel {
        live.model(settings)
    }
    let live = LiveFrames()

    /// Adds an output that sees the camera's pictures (and sound) from ``start()`` on, recording
    /// or not: a ``SampleHandlerOutput``, a live frames output, a preview window. Before
    /// ``start()``.
    public func addPreviewOutput(_ output: any CaptureOutput) {
        state.withLock { $0.previewOutputs.append(output) }
    }

    // MARK: Observed state

    /// How far the take is toward ``maxRecordedDuration``, 0…1 (0 without a limit; 1 once
    /// reached).
    public var progress: Double {
        registrar.access(self, keyPath: \.progress)
        return current().progress
    }

    /// The time recorded over all clips of this take (the clip being recorded included); after
    /// ``stop()``, the last take's. (``Event/progress(recorded:progress:)`` carries it too,
    /// only ever growing within a take unless clips are removed.)
    public var recordedDuration: MediaTime {
        registrar.access(self, keyPath: \.recordedDuration)
        return current().recorded
    }

    /// Whether a clip is being recorded now.
    public var isRecording: Bool {
        registrar.access(self, keyPath: \.isRecording)
        return current().isRecording
    }

    /// Whether the take's recording is paused: after ``pause()`` ended a clip, until
    /// ``record()``. Not after ``start()`` before the first ``record()`` (neither recording nor
    /// paused, as with NextLevel and `AVCaptureMovieFileOutput`), nor between takes, after
    /// ``stopRecording()``, nor at the limit (``hasReachedLimit``).
    public var isPaused: Bool {
        registrar.access(self, keyPath: \.isPaused)
        return current().isPaused
    }

    /// Whether the take has reached ``maxRecordedDuration`` and waits there: ``record()`` throws
    /// `limitReached` until ``removeLastClip()`` gives time back, ``stopRecording()`` or
    /// ``stop()`` ends the take (capture runs on until ``stop()``).
    public var hasReachedLimit: Bool {
        registrar.access(self, keyPath: \.hasReachedLimit)
        return current().hasReachedLimit
    }

    /// Whether ``record()`` would start a clip now: capture runs, no clip is being recorded, and
    /// the take has neither reached its limit nor failed (or it has ended at
    /// ``stopRecording()``: the next begins).
    public var canRecord: Bool {
        registrar.access(self, keyPath: \.canRecord)
        return state.withLock { $0.take.canRecord }
    }

    /// Whether capture runs.
    public var isRunning: Bool {
        registrar.access(self, keyPath: \.isRunning)
        return state.withLock { $0.session != nil }
    }

    /// This take's clips (NextLevel's session): from the first ``record()`` until the next
    /// take begins, so after ``stop()`` and ``stopRecording()`` too. To remove or mute clips
    /// after the take and merge them yourself with
    /// ``RecordingSession/merge(to:allowsReencoding:overwrite:progress:)``, turn
    /// ``mergesClipsAutomatically`` off: the automatic merge removes the clip files once they are
    /// in the merged file, and the clips listed then say what it holds (their files are gone).
    public var recordingSession: RecordingSession? { state.withLock { $0.recorder?.recordingSession ?? $0.clips } }

    /// The clips recorded in this take so far (after ``stop()``, the last take's). A clip is
    /// listed once its file is finished, a moment after the ``pause()`` that ends it, when
    /// ``Event/clipCompleted(_:)`` comes.
    public var clips: [Clip] { recordingSession?.clips ?? [] }

    /// The file this take is merged into.
    public var currentOutputURL: URL? { state.withLock { $0.takeURL } }

    /// The observed values now.
    func current() -> Published {
        let (clips, take, limit, recorded, running) = state.withLock { s in
            (s.recorder?.recordingSession ?? s.clips, s.take, s.settings.maxRecordedDuration, s.takeHasRecorded, s.session != nil)
        }
        var now = Published()
        now.canRecord = take.canRecord
        now.isRunning = running
        now.recorded = clips?.totalDuration ?? .zero
        now.isRecording = take.isRecording
        // Waiting for the first record() of the take is not a pause.
        now.isPaused = take.isPaused && recorded
        now.hasReachedLimit = take.hasReachedLimit
        if take.hasReachedLimit {
            now.progress = 1
        } else if let limit, limit.seconds > 0 {
            now.progress = min(1, max(0, now.recorded.seconds / limit.seconds))
        }
        return now
    }

    /// Tells observers what changed since they were last told.
    func publish() {
        let now = current()
        let before = state.withLock { s -> Published in
            defer { s.published = now }
            return s.published
        }
        guard now != before else { return }
        if now.recorded != before.recorded { registrar.withMutation(of: self, keyPath: \.recordedDuration) {} }
        if now.progress != before.progress { registrar.withMutation(of: self, keyPath: \.progress) {} }
        if now.isRecording != before.isRecording { registrar.withMutation(of: self, keyPath: \.isRecording) {} }
        if now.isPaused != before.isPaused { registrar.withMutation(of: self, keyPath: \.isPaused) {} }
        if now.hasReachedLimit != before.hasReachedLimit { registrar.withMutation(of: self, keyPath: \.hasReachedLimit) {} }
        if now.canRecord != before.canRecord { registrar.withMutation(of: self, keyPath: \.canRecord) {} }
        if now.isRunning != before.isRunning { registrar.withMutation(of: self, keyPath: \.isRunning) {} }
    }

    /// Hands `event` to the stream and the delegate.
    func emit(_ event: Event) {
        continuation.yield(event)
        if let delegate {
            delegateQueue.async { delegate.receive(event, from: self) }
        }
    }

    // MARK: Progress and the take's events

    /// At each of the camera's pictures: progress.
    fileprivate func frameSeen() {
        let seen = state.withLock { s -> (recorded: MediaTime, progress: Bool)? in
            guard let clips = s.recorder?.recordingSession else { return nil }
            let recorded = clips.totalDuration
            // Only forward: while a paused clip is being finished its time can read a frame
            // long for a moment (a frame is counted, then not), and a progress ring must not
            // step back for that. Removing clips starts the count again.
            let progress = recorded > (s.reported ?? .zero)
            if progress { s.reported = recorded }
            return (recorded, progress)
        }
        guard let seen else { return }
        if seen.progress {
            let limit = maxRecordedDuration
            let fraction = limit.map { $0.seconds > 0 ? min(1, seen.recorded.seconds / $0.seconds) : 0 } ?? 0
            emit(.progress(recorded: seen.recorded, progress: fraction))
        }
        publish()
    }

    /// A clip was completed: whether the take has reached its limit with it. The recording
    /// paused itself there (the clip ends at the limit): the take waits, the record button is
    /// up, and an undo may open it again.
    private func clipCompleted() {
        let reached = state.withLock { s -> (Recorder, MediaTime)? in
            guard let recorder = s.recorder, let clips = recorder.recordingSession,
                  s.take.recorded(clips.totalDuration, limit: s.settings.maxRecordedDuration) else { return nil }
            return (recorder, clips.totalDuration)
        }
        guard let (recorder, recorded) = reached else { return }
        recorder.notePausedAtLimit()
        emit(.limitReached(recorded: recorded))
    }

    /// One of the take's recorder's events.
    func handle(_ event: RecordingEvent, merges: Bool) {
        switch event {
        case .clipStarted(let index):
            emit(.clipStarted(index: index))
        case .clipFinished(let clip):
            emit(.clipCompleted(clip))
            clipCompleted()
        case .finished(let summary):
            if summary.ending == .maxDuration, state.withLock({ $0.take.finishedAtLimit() }) {
                emit(.limitReached(recorded: summary.duration))
            }
            if merges { emit(.mergeFinished(summary)) }
        case .failed(let error):
            // A take the app ended (stopRecording(), stop()) before anything was recorded is
            // no failure: it returns nil and leaves no file, as documented.
            guard state.withLock({ $0.take.failed(error) }) || error.code != .nothingRecorded else { break }
            emit(.failed(error))
        case .clipsFolderChanged(let change):
            emit(.clipsFolderChanged(change))
        case .sourceLost(let name, let error):
            emit(.sourceLost(name: name, error: error))
        case .sourceInterrupted(let name, let error), .sourceSilent(let name, let error):
            emit(.sourceInterrupted(name: name, error: error))
        case .sourceResumed(let name):
            emit(.sourceResumed(name: name))
        case .sourceIncomplete(let name, let error):
            emit(.sourceIncomplete(name: name, error: error))
        default:
            return
        }
        publish()
    }
}

/// Tells a camera recorder of each of the camera's pictures.
final class ProgressTap: CaptureOutput, @unchecked Sendable {
    // Weak, so a tap left in a session keeps no recorder alive; set once, read on capture threads.
    private weak var owner: CameraRecorder?
    init(owner: CameraRecorder) { self.owner = owner }
    func prepare(sources: [SourceDescriptor], clock: any MediaClock, origin: MediaTime) throws {}
    func consume(_ sample: SourcedSample) {
        if case .video = sample.sample { owner?.frameSeen() }
    }
    func sourceEvent(_ event: SourceEvent, from source: SourceID) {}
    func finish() async {}
}
