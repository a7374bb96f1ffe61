import Foundation
import Synchronization

/// Records the screen (X11, or Wayland through the portal) with the applications' audio and
/// the microphone, in the spirit of ReplayKit's `RPScreenRecorder`: ``startCapture(handler:)-(SampleHandlerOutput.Handler)``
/// hands application code every video, app-audio and mic-audio sample with its type (and, in
/// its three-argument form, the errors that stop a source), and ``startRecording(settings:)``
/// writes them to a file, one audio track each. Both can run at once.
///
/// ```swift
/// let screen = ScreenRecorder(configuration: .init(capturesAppAudio: true))
/// guard screen.isAvailable else { return }
/// screen.isMicrophoneEnabled = true
/// try await screen.startRecording()          // a dated file in the videos folder
/// // …
/// let summary = try await screen.stopRecording()
/// print("saved to \(summary.url.path)")
/// ```
public final class ScreenRecorder: Sendable {
    /// What to capture.
    public struct Configuration: Sendable, Hashable {
        /// The X display (`":0"`); `nil` uses `$DISPLAY`. Used when ``screen`` is `nil`.
        public var display: String?
        /// Which desktop to capture: an X display or the Wayland desktop (through the portal,
        /// whose dialog shows the first time); `nil` is the X display ``display``.
        /// `ScreenLocation.session()` follows the session the program runs in.
        public var screen: ScreenLocation?
        /// On Wayland, whether the portal's dialog is shown even when a choice was kept.
        public var choosesScreenAgain: Bool
        /// A part of the screen; `nil` records all of it.
        public var region: PixelRect?
        /// One window instead of the screen (``region`` is then ignored); `nil` records the
        /// screen. On Wayland the portal's dialog chooses the window, whatever the selector says.
        public var window: X11WindowSelector?
        /// How a ``window`` resized while recording is put into the recording's size.
        public var windowResizeMode: WindowResizeMode = .fit
        /// The capture rate.
        public var frameRate: FrameRate
        /// Whether the mouse pointer is drawn in.
        public var capturesCursor: Bool
        /// Whether the applications' audio (the monitor of a sink) is captured.
        public var capturesAppAudio: Bool
        /// The sink whose audio is captured; `nil` is the default sink.
        public var appAudioSink: String?
        /// The applications whose sound ``capturesAppAudio`` captures — only some
        /// (`.only(["firefox"])`) or all but some (`.allExcept([...])`), through an
        /// ``ApplicationAudioSource`` — instead of everything that plays on ``appAudioSink``;
        /// `nil` (the default) captures the sink.
        public var appAudioApplications: ApplicationAudioSource.Selection? = nil
        /// Whether the microphone is captured.
        public var capturesMicrophone: Bool
        /// The PulseAudio source used as microphone; `nil` is the default source.
        public var microphoneSource: String?
        /// The PulseAudio server; `nil` is the usual one (`PULSE_SERVER` or the user's).
        public var audioServer: String?

        /// What to capture; each argument is the property of the same name. The default is the whole
        /// screen of `$DISPLAY` at 30 fps with the pointer, and no audio.
        public init(display: String? = nil, region: PixelRect? = nil, frameRate: FrameRate = FrameRate(30),
                    capturesCursor: Bool = true, capturesMicrophone: Bool = false, microphoneSource: String? = nil,
                    capturesAppAudio: Bool = false, appAudioSink: String? = nil, audioServer: String? = nil,
                    screen: ScreenLocation? = nil, choosesScreenAgain: Bool = false) {
            self.display = display
            self.screen = screen
            self.choosesScreenAgain = choosesScreenAgain
            self.region = region
            self.frameRate = frameRate
            self.capturesCursor = capturesCursor
            self.capturesMicrophone = capturesMicrophone
            self.microphoneSource = microphoneSource
            self.capturesAppAudio = capturesAppAudio
            self.appAudioSink = appAudioSink
            self.audioServer = audioServer
        }
    }

    /// What is captured. Changes (``isMicrophoneEnabled``) take effect at the next start of
    /// capture or recording.
    public var configuration: Configuration { state.withLock { $0.configuration } }
    let clock: any MediaClock
    /// A capture handler that is also told of errors: a sample and its kind, or `nil`, the kind
    /// of the source that failed, and the error.
    public typealias CaptureHandler = @Sendable (_ sample: Sample?, _ kind: SampleKind, _ error: ReelError?) -> Void
    private struct State {
        var configuration: Configuration
        var session: CaptureSession?
        var handler: CaptureHandler?
        var recorder: Recorder?
        var outputDirectory: URL?
        /// The dated name ``startRecording(settings:)`` reserved (an empty file of its own) for the
        /// recording under way: given back if the recording ends with nothing in it.
        var reservation: URL?
        /// The X11 window chosen by the first session (focus or click), kept for the sessions
        /// a restart builds, so that adding a recorder records the same window without asking.
        var window: UInt32?
        /// The last change of session asked for (stopped, built or rebuilt): each waits for the
        /// one before it.
        var changes: Task<Void, Never>?
        /// The recorder the running session records into, if any.
        var sessionRecorder: Recorder?
    }
    private let state: Mutex<State>

    /// What happens to capture, in capture-only mode as while recording: a source lost (the
    /// X server gone, the audio server gone), interrupted or back, frames dropped; the events
    /// of each session the recorder runs, in one stream, with one consumer.
    public let events: AsyncStream<SessionEvent>
    private let continuation: AsyncStream<SessionEvent>.Continuation

    /// Creates a screen recorder; nothing is opened until capture or recording starts.
    public init(configuration: Configuration = Configuration(), clock: any MediaClock = HostClock()) {
        self.state = Mutex(State(configuration: configuration))
        self.clock = clock
        (events, continuation) = AsyncStream.makeStream(of: SessionEvent.self, bufferingPolicy: .bufferingNewest(256))
    }

    /// Whether capture or recording is running.
    public var isActive: Bool { state.withLock { $0.session != nil } }

    /// Whether the screen is being recorded (ReplayKit's `isRecording`).
    public var isRecording: Bool { state.withLock { $0.recorder != nil } }

    /// Whether the microphone is recorded beside the screen (ReplayKit's
    /// `isMicrophoneEnabled`; ``Configuration/capturesMicrophone``). Set it before starting:
    /// it takes effect at the next start of capture or recording.
    public var isMicrophoneEnabled: Bool {
        get { state.withLock { $0.configuration.capturesMicrophone } }
        set { state.withLock { $0.configuration.capturesMicrophone = newValue } }
    }

    /// Starts delivering every sample to `handler` with its kind (`.video`, `.appAudio`,
    /// `.micAudio`), like ReplayKit's `startCapture(handler:)`. Throws `.alreadyRunning` if
    /// capture is already on, or why the screen or audio cannot be captured.
    public func startCapture(handler: @escaping SampleHandlerOutput.Handler) async throws {
        try await startCapture { (sample: Sample?, kind: SampleKind, _: ReelError?) in
            if let sample { handler(sample, kind) }
        }
    }

    /// Starts delivering every sample to `handler` with its kind, and the errors that take a
    /// source away or interrupt it (the X server or the audio server gone; the sample is then
    /// `nil`, the kind that of the source), as ReplayKit's `startCapture(handler:)` passes its
    /// `Error?`. Capture goes on with the other sources. Throws `.alreadyRunning` if capture is
    /// already on, or why the screen or audio cannot be captured.
    public func startCapture(handler: @escaping CaptureHandler) async throws {
        try state.withLock { state in
            guard state.handler == nil else { throw ReelError(.alreadyRunning, "screen capture is already running") }
            state.handler = handler
        }
        do {
            // A session that runs (a recording's) hands its samples to the handler from now on.
            try await settle()
        } catch {
            state.withLock { $0.handler = nil }
            throw error
        }
    }

    /// Stops delivering samples (a recording in progress goes on).
    public func stopCapture() async {
        state.withLock { $0.handler = nil }
        try? await settle()
    }

    /// The folder ``startRecording(settings:)`` records into; `nil` (the default): the user's
    /// videos folder, ``Recorder/defaultOutputDirectory(environment:)``.
    public var outputDirectory: URL? {
        get { state.withLock { $0.outputDirectory } }
        set { state.withLock { $0.outputDirectory = newValue } }
    }

    /// Starts recording into a new dated file in ``outputDirectory`` (the user's videos folder
    /// unless set; made if missing): `Reel 2026-11-29 at 14.05.09.mp4`, numbered when that name
    /// is taken; the name is reserved as the recording starts, so that two recordings started
    /// in the same second get a name each). ``stopRecording()`` says where it went. Returns
    /// the recorder, whose `events` report progress.
    @discardableResult
    public func startRecording(settings: Recorder.Settings = Recorder.Settings()) async throws -> Recorder {
        let folder = outputDirectory ?? Recorder.defaultOutputDirectory()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // The empty file is the recording's own: the recorder records into it (in clip mode it
        // gives it back once the clips folder holds the name).
        let url = try Recorder.reserveDatedFile(in: folder, container: settings.container ?? .mp4)
        let recorder: Recorder
        do {
            recorder = try await startRecording(to: url, settings: settings)
        } catch {
            Recorder.releaseReservation(url)
            throw error
        }
        state.withLock { $0.reservation = url }
        return recorder
    }

    /// Starts recording to `url` with `settings`; samples keep flowing to a capture handler if
    /// one is set. Returns the recorder, whose `events` report progress.
    @discardableResult
    public func startRecording(to url: URL, settings: Recorder.Settings = Recorder.Settings()) async throws -> Recorder {
        let recorder = Recorder(url: url, settings: settings)
        try state.withLock { state in
            guard state.recorder == nil else { throw ReelError(.alreadyRunning, "the screen is already being recorded") }
            state.recorder = recorder
        }
        do {
            try await settle()
        } catch {
            state.withLock { $0.recorder = nil }
            throw error
        }
        return recorder
    }

    /// Stops recording, finalises the file and returns what it holds, with where it is
    /// (``RecordingSummary/url``). Capture goes on if it runs.
    public func stopRecording() async throws -> RecordingSummary {
        let (recorder, reservation) = state.withLock { state in
            let taken = (state.recorder, state.reservation)
            state.recorder = nil
            state.reservation = nil
            return taken
        }
        guard let recorder else { throw ReelError(.notRunning, "the screen is not being recorded") }
        // A dated name that ends up with nothing recorded in it is given back.
        defer { if let reservation { Recorder.releaseReservation(reservation) } }
        // The session ends (and with it the recording); capture goes on without the recorder.
        try? await settle()
        return try await recorder.result()
    }

    /// Gives the recording up at once, as a process does that ends without stopping it: see
    /// ``Recorder/abort()``. `nil` when the screen is not being recorded.
    public func abortRecording() -> RecordingFile.AbortReport? {
        let (recorder, reservation) = state.withLock { ($0.recorder, $0.reservation) }
        guard let report = recorder?.abort() else { return nil }
        if let reservation { Recorder.releaseReservation(reservation) }
        return report
    }

    /// Stops recording and removes what it wrote (ReplayKit's `discardRecording`): the
    /// file, and in clip mode the clips. Capture goes on if it runs. Does nothing when the
    /// screen is not being recorded; after ``stopRecording()`` the file is the app's to keep
    /// or remove.
    ///
    /// - Throws: why the recording failed, if it did (what it wrote is then left where the
    ///   error says: it may be all there is of something).
    public func discardRecording() async throws {
        guard state.withLock({ $0.recorder != nil }) else { return }
        let recorder = state.withLock { $0.recorder }
        let summary: RecordingSummary
        do {
            summary = try await stopRecording()
        } catch let error as ReelError where error.code == .nothingRecorded {
            return
        }
        try? FileManager.default.removeItem(at: summary.url)
        // In clip mode, the clips the merge kept, and their folder if nothing else is in it.
        if let folder = recorder?.clipsFolder {
            recorder?.recordingSession?.removeAllClips()
            rmdir(folder.path)
        }
    }

    /// The capture handler now, if capture is on.
    private var captureHandler: CaptureHandler? { state.withLock { $0.handler } }

    private func stopSessionNow() async {
        let session = state.withLock { state -> CaptureSession? in
            let s = state.session
            state.session = nil
            state.sessionRecorder = nil
            return s
        }
        await session?.stop()
    }

    /// Runs `change` (a session stopped, built or rebuilt) once every change asked for before
    /// it is done: two starts at once each built a session, and the later one's took the place
    /// of the earlier, which ran on unseen (its sources capturing, its handler called).
    private func serially(_ change: @escaping @Sendable () async throws -> Void) async throws {
        let task = state.withLock { s -> Task<Void, any Error> in
            let previous = s.changes
            let task = Task {
                await previous?.value
                try await change()
            }
            s.changes = Task { _ = try? await task.value }
            return task
        }
        try await task.value
    }

    /// Brings the session to what is wanted when its turn comes: none when neither capture nor
    /// a recording is on; else one that records into the recorder (if any), built anew when the
    /// recorder changed. A session's outputs are fixed while it runs, so adding a recorder to a
    /// running capture restarts the sources (briefly); capture starting or stopping during a
    /// recording changes nothing but where samples go.
    private func settle() async throws {
        try await serially { [self] in
            let (wanted, running, recorder, recording) = state.withLock { s in
                (s.handler != nil || s.recorder != nil, s.session != nil, s.recorder, s.sessionRecorder)
            }
            if !wanted { return await stopSessionNow() }
            if running && recording === recorder { return }
            try await rebuild()
        }
    }

    private func rebuild() async throws {
        await stopSessionNow()
        let (capturing, recorder) = state.withLock { ($0.handler != nil, $0.recorder) }
        guard capturing || recorder != nil else { return }
        let session = CaptureSession(clock: clock)
        let c = configuration
        var kinds: [String: SampleKind] = [:]
        let screen = screenSource()
        try session.addInput(screen)
        let windowSource = screen as? X11WindowSource
        if let screen = session.inputs.first { kinds[screen.name] = .video }
        if c.capturesAppAudio, let applications = c.appAudioApplications {
            let source = ApplicationAudioSource(applications, server: c.audioServer)
            try session.addInput(source)
            kinds[source.name] = .appAudio
        } else if c.capturesAppAudio {
            let source = PulseAudioSource.appAudio(sink: c.appAudioSink, server: c.audioServer)
            try session.addInput(source)
            kinds[source.name] = .appAudio
        }
        if c.capturesMicrophone {
            let source = PulseAudioSource.microphone(source: c.microphoneSource, server: c.audioServer)
            try session.addInput(source)
            kinds[source.name] = .micAudio
        }
        // The capture handler as it is when each sample comes: capture starts and stops while a
        // recording's session runs on (a session's outputs are fixed while it runs).
        try session.addOutput(SampleHandlerOutput(wanted: { [weak self] in self?.captureHandler != nil }) { [weak self] sample, kind in
            self?.captureHandler?(sample, kind, nil)
        })
        if let recorder { try session.addOutput(recorder) }
        try await session.start()
        state.withLock {
            $0.session = session
            $0.sessionRecorder = recorder
            if let id = windowSource?.windowID { $0.window = id }
        }
        let continuation = self.continuation
        Task { [weak self] in
            for await event in session.events {
                continuation.yield(event)
                switch event {
                case .sourceLost(let source, let error), .sourceInterrupted(let source, let error):
                    self?.captureHandler?(nil, kinds[source] ?? .video, error)
                default:
                    break
                }
            }
        }
    }

    /// The source of what the configuration selects: the screen, a region of it, or a window
    /// (on X11 the one chosen before, if a session chose one).
    func screenSource() -> any CaptureSource {
        let c = configuration
        switch c.screen ?? .x11(display: c.display) {
        case .x11(let display) where c.window != nil:
            let chosen = state.withLock { $0.window }.map { X11WindowSelector.id($0) }
            return X11WindowSource(display: display, window: chosen ?? c.window ?? .focused, resizeMode: c.windowResizeMode,
                                   frameRate: c.frameRate, drawsCursor: c.capturesCursor)
        case .wayland where c.window != nil:
            // The portal's dialog chooses the window (a name or id cannot choose it).
            return WaylandScreenSource(frameRate: c.frameRate, drawsCursor: c.capturesCursor, sharesWindow: true)
        case .x11(let display):
            return X11ScreenSource(display: display, region: c.region, frameRate: c.frameRate, drawsCursor: c.capturesCursor)
        case .wayland:
            return WaylandScreenSource(region: c.region, frameRate: c.frameRate, drawsCursor: c.capturesCursor,
                                       choosesAgain: c.choosesScreenAgain)
        }
    }
}
