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
/// the recorder can then ``start()`` a new take. ``progress``, ``recordedDuration``,
/// ``isRecording`` and ``isPaused`` are observable (Observation), updated at each frame.
public final class CameraRecorder: Observable, @unchecked Sendable {
    /// The camera.
    public let camera: any CameraSource
    /// The microphone (or any audio source), if sound is recorded.
    public let microphone: (any CaptureSource)?

    private struct State {
        var settings: Recorder.Settings
        var mergesClipsAutomatically = true
        var outputURL: URL?
        var previewOutputs: [any CaptureOutput] = []
        var session: CaptureSession?
        var recorder: Recorder?
        var takeURL: URL?
        var progress = 0.0
        var recorded = MediaTime.zero
        var isRecording = false
        var isPaused = false
    }
    private let state: Mutex<State>
    private let clock: any MediaClock
    private let registrar = ObservationRegistrar()

    /// A recorder of `camera`, with `microphone`'s sound if given, on `clock` (the host's unless
    /// a test injects another).
    public init(camera: any CameraSource, microphone: (any CaptureSource)? = nil, settings: Recorder.Settings = Recorder.Settings(),
                clock: any MediaClock = HostClock()) {
        self.camera = camera
        self.microphone = microphone
        self.clock = clock
        state = Mutex(State(settings: settings))
    }

    // MARK: Settings

    /// The recording's settings (codec, container…); clips are always on. Set before ``start()``.
    public var settings: Recorder.Settings {
        get { state.withLock { $0.settings } }
        set { state.withLock { $0.settings = newValue } }
    }

    /// The most time to record, over all clips; recording stops by itself when it is reached.
    public var maxRecordedDuration: MediaTime? {
        get { state.withLock { $0.settings.maxRecordedDuration } }
        set { state.withLock { $0.settings.maxRecordedDuration = newValue } }
    }

    /// Whether ``stop()`` merges the clips into one file (else they stay in their folder).
    public var mergesClipsAutomatically: Bool {
        get { state.withLock { $0.mergesClipsAutomatically } }
        set { state.withLock { $0.mergesClipsAutomatically = newValue } }
    }

    /// Where the merged file goes; `nil`: a new dated file in ``Recorder/defaultOutputDirectory(environment:)``
    /// for each take.
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

    /// The camera's filter, changed at once even while recording (see
    /// ``CaptureSession/setVideoFilter(_:for:at:)``). Set before ``start()`` too.
    public var filter: VideoFilter? {
        get { state.withLock { $0.session }.flatMap { $0.videoFilter(for: camera) } ?? pendingFilter.withLock { $0 } }
        set {
            pendingFilter.withLock { $0 = newValue }
            if let session = state.withLock({ $0.session }) { try? session.setVideoFilter(newValue, for: camera) }
        }
    }
    private let pendingFilter = Mutex<VideoFilter?>(nil)

    /// The camera's pictures for the app's own view, newest only, converted as asked (see
    /// ``LiveFrames``): they flow from ``start()`` on, recording or not, filtered as recorded.
    /// Streams end when the recorder stops; ask again for the next take.
    public func previewFrames(_ settings: LiveFrames.Settings = LiveFrames.Settings()) -> AsyncStream<LiveFrame> {
        live.frames(settings)
    }

    /// An observable model of the camera's newest picture (see ``LiveFrameModel``), for a UI to bind to.
    public func previewModel(_ settings: LiveFrames.Settings = LiveFrames.Settings()) -> LiveFrameModel {
        live.model(settings)
    }
    private let live = LiveFrames()

    /// Adds an output that sees the camera's pictures (and sound) from ``start()`` on, recording
    /// or not: a ``SampleHandlerOutput``, a live frames output, a preview window. Before
    /// ``start()``.
    public func addPreviewOutput(_ output: any CaptureOutput) {
        state.withLock { $0.previewOutputs.append(output) }
    }

    // MARK: Observed state

    /// How far the recording is toward ``maxRecordedDuration``, 0…1 (0 without a limit).
    public var progress: Double {
        registrar.access(self, keyPath: \.progress)
        return state.withLock { $0.progress }
    }

    /// The time recorded over all clips of this take.
    public var recordedDuration: MediaTime {
        registrar.access(self, keyPath: \.recordedDuration)
        return state.withLock { $0.recorded }
    }

    /// Whether a clip is being recorded now.
    public var isRecording: Bool {
        registrar.access(self, keyPath: \.isRecording)
        return state.withLock { $0.isRecording }
    }

    /// Whether capture runs with recording paused (after ``start()`` or ``pause()``).
    public var isPaused: Bool {
        registrar.access(self, keyPath: \.isPaused)
        return state.withLock { $0.isPaused }
    }

    /// Whether capture runs.
    public var isRunning: Bool { state.withLock { $0.session != nil } }

    /// The clips recorded in this take so far.
    public var clips: [Clip] { state.withLock { $0.recorder }?.recordingSession?.clips ?? [] }

    /// The file this take is merged into at ``stop()``.
    public var currentOutputURL: URL? { state.withLock { $0.takeURL } }

    // MARK: Taking

    /// Starts capture and the preview outputs without recording.
    ///
    /// - Throws: `.alreadyRunning` if capture runs; the camera's or microphone's error if it
    ///   cannot start; `.fileExists` if ``outputURL`` exists (unless the settings allow
    ///   overwriting).
    public func start() async throws {
        let (settings, outputs, explicit) = try state.withLock { s -> (Recorder.Settings, [any CaptureOutput], URL?) in
            guard s.session == nil else { throw ReelError(.alreadyRunning, "the camera recorder is already running") }
            return (s.settings, s.previewOutputs, s.outputURL)
        }
        var take = settings
        take.pauseMode = .clips
        take.mergesClipsAtEnd = mergesClipsAutomatically
        let url = explicit ?? Recorder.defaultOutputDirectory().appendingPathComponent(Recorder.datedFileName(container: take.container ?? .mp4))
        if explicit == nil {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        }
        let session = CaptureSession(clock: clock)
        try session.addInput(camera)
        if let microphone { try session.addInput(microphone) }
        let recorder = Recorder(url: url, settings: take)
        // Nothing is recorded until `record()`: the first clip starts then.
        recorder.pause(at: .zero)
        try session.addOutput(recorder)
        for output in outputs { try session.addOutput(output) }
        try session.addOutput(live, connectedTo: [camera])
        try session.addOutput(ProgressTap(owner: self), connectedTo: [camera])
        if let filter = pendingFilter.withLock({ $0 }) { try session.setVideoFilter(filter, for: camera) }
        state.withLock { s in
            s.session = session
            s.recorder = recorder
            s.takeURL = url
        }
        update(recorded: .zero, recording: false, paused: true)
        do {
            try await session.start()
        } catch {
            state.withLock { s in
                s.session = nil
                s.recorder = nil
            }
            throw error
        }
    }

    /// Starts recording a clip (the first, or the next after a pause).
    ///
    /// - Throws: `.notRunning` before ``start()``.
    public func record() throws {
        guard let recorder = state.withLock({ $0.recorder }) else {
            throw ReelError(.notRunning, "the camera recorder is not running", hint: "call start() first")
        }
        try recorder.record()
        update(recorded: recordedDuration, recording: true, paused: false)
    }

    /// ReplayKit's name for ``record()`` after a pause.
    public func resumeRecording() throws { try record() }

    /// Ends the clip being recorded; capture and the preview outputs go on.
    ///
    /// - Throws: `.notRunning` before ``start()``.
    public func pause() throws {
        guard let recorder = state.withLock({ $0.recorder }) else {
            throw ReelError(.notRunning, "the camera recorder is not running", hint: "call start() first")
        }
        try recorder.pause()
        update(recorded: recordedDuration, recording: false, paused: true)
    }

    /// Removes the last clip of this take (its file too).
    public func removeLastClip() throws {
        guard let clips = state.withLock({ $0.recorder })?.recordingSession else {
            throw ReelError(.notRunning, "there are no clips: the camera recorder has not started")
        }
        try clips.removeLastClip()
        update(recorded: clips.totalDuration, recording: isRecording, paused: isPaused)
    }

    /// Removes every clip of this take (their files too).
    public func removeAllClips() {
        guard let clips = state.withLock({ $0.recorder })?.recordingSession else { return }
        clips.removeAllClips()
        update(recorded: .zero, recording: isRecording, paused: isPaused)
    }

    /// Stops capture and finishes the take: the clips merged into ``currentOutputURL`` (with
    /// ``mergesClipsAutomatically``). Returns `nil` when nothing was recorded (no file). The
    /// recorder can ``start()`` again for a new take.
    public func stop() async throws -> RecordingSummary? {
        guard let (session, recorder) = state.withLock({ s in s.session.flatMap { session in s.recorder.map { (session, $0) } } }) else {
            return nil
        }
        await session.stop()
        defer {
            state.withLock { s in
                s.session = nil
                s.recorder = nil
            }
            update(recorded: recordedDuration, recording: false, paused: false)
        }
        do {
            return try await recorder.result()
        } catch let error as ReelError where error.code == .nothingRecorded {
            return nil
        }
    }

    // MARK: Progress

    fileprivate func frameRecorded() {
        guard let recorder = state.withLock({ $0.recorder }) else { return }
        let recorded = recorder.recordingSession.map { $0.totalDuration + $0.currentClipDuration } ?? .zero
        update(recorded: recorded, recording: recorder.isRecording && !recorder.isPaused, paused: recorder.isPaused)
    }

    private func update(recorded: MediaTime, recording: Bool, paused: Bool) {
        let limit = maxRecordedDuration
        let progress = limit.map { $0.seconds > 0 ? min(1, max(0, recorded.seconds / $0.seconds)) : 0 } ?? 0
        let (oldRecorded, oldProgress, oldRecording, oldPaused) = state.withLock { ($0.recorded, $0.progress, $0.isRecording, $0.isPaused) }
        if oldRecorded != recorded { registrar.withMutation(of: self, keyPath: \.recordedDuration) { state.withLock { $0.recorded = recorded } } }
        if oldProgress != progress { registrar.withMutation(of: self, keyPath: \.progress) { state.withLock { $0.progress = progress } } }
        if oldRecording != recording { registrar.withMutation(of: self, keyPath: \.isRecording) { state.withLock { $0.isRecording = recording } } }
        if oldPaused != paused { registrar.withMutation(of: self, keyPath: \.isPaused) { state.withLock { $0.isPaused = paused } } }
    }
}

/// Updates a camera recorder's observed state at each of the camera's pictures.
private final class ProgressTap: CaptureOutput, @unchecked Sendable {
    // Weak, so a tap left in a session keeps no recorder alive; set once, read on capture threads.
    private weak var owner: CameraRecorder?
    init(owner: CameraRecorder) { self.owner = owner }
    func prepare(sources: [SourceDescriptor], clock: any MediaClock, origin: MediaTime) throws {}
    func consume(_ sample: SourcedSample) {
        if case .video = sample.sample { owner?.frameRecorded() }
    }
    func sourceEvent(_ event: SourceEvent, from source: SourceID) {}
    func finish() async {}
}

extension Recorder {
    /// The user's videos folder, where recordings go by default: `XDG_VIDEOS_DIR` from the
    /// environment, else from `user-dirs.dirs`, else `~/Videos`.
    public static func defaultOutputDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        let home = environment["HOME"].map { URL(fileURLWithPath: $0) } ?? FileManager.default.homeDirectoryForCurrentUser
        if let value = environment["XDG_VIDEOS_DIR"], !value.isEmpty {
            let expanded = value.replacingOccurrences(of: "$HOME", with: home.path)
            if expanded.hasPrefix("/") { return URL(fileURLWithPath: expanded, isDirectory: true) }
        }
        let configHome = environment["XDG_CONFIG_HOME"].map { URL(fileURLWithPath: $0) } ?? home.appendingPathComponent(".config")
        if let text = try? String(contentsOf: configHome.appendingPathComponent("user-dirs.dirs"), encoding: .utf8) {
            for line in text.split(separator: "\n") where line.hasPrefix("XDG_VIDEOS_DIR=") {
                var value = String(line.dropFirst("XDG_VIDEOS_DIR=".count)).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                value = value.replacingOccurrences(of: "$HOME", with: home.path)
                if value.hasPrefix("/") && value != home.path { return URL(fileURLWithPath: value) }
            }
        }
        return home.appendingPathComponent("Videos")
    }

    /// A dated file name such as `Reel 2026-11-29 at 14.05.09.mp4`, in local time.
    public static func datedFileName(container: Container, date: Date = Date()) -> String {
        var t = time_t(date.timeIntervalSince1970)
        var parts = tm()
        localtime_r(&t, &parts)
        let stamp = String(format: "%04d-%02d-%02d at %02d.%02d.%02d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                           Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
        return "Reel \(stamp).\(container.fileExtension)"
    }
}
