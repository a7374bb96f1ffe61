import Foundation
import Synchronization

/// Records the X11 screen with the applications' audio and the microphone, in the spirit of
/// ReplayKit's `RPScreenRecorder`: ``startCapture(handler:)`` hands application code every
/// video, app-audio and mic-audio sample with its type, and ``startRecording(to:settings:)``
/// writes them to a file, one audio track each. Both can run at once.
///
/// ```swift
/// let screen = ScreenRecorder(configuration: .init(capturesMicrophone: true, capturesAppAudio: true))
/// try await screen.startRecording(to: URL(fileURLWithPath: "demo.mp4"))
/// // …
/// let summary = try await screen.stopRecording()
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

    /// What is captured.
    public let configuration: Configuration
    private let clock: any MediaClock
    private struct State {
        var session: CaptureSession?
        var handler: SampleHandlerOutput.Handler?
        var recorder: Recorder?
        /// The X11 window chosen by the first session (focus or click), kept for the sessions
        /// a restart builds, so that adding a recorder records the same window without asking.
        var window: UInt32?
    }
    private let state = Mutex(State())

    /// What happens to capture, in capture-only mode as while recording: a source lost (the
    /// X server gone, the audio server gone), interrupted or back, frames dropped; the events
    /// of each session the recorder runs, in one stream, with one consumer.
    public let events: AsyncStream<SessionEvent>
    private let continuation: AsyncStream<SessionEvent>.Continuation

    /// Creates a screen recorder; nothing is opened until capture or recording starts.
    public init(configuration: Configuration = Configuration(), clock: any MediaClock = HostClock()) {
        self.configuration = configuration
        self.clock = clock
        (events, continuation) = AsyncStream.makeStream(of: SessionEvent.self, bufferingPolicy: .bufferingNewest(256))
    }

    /// Whether capture or recording is running.
    public var isActive: Bool { state.withLock { $0.session != nil } }

    /// Starts delivering every sample to `handler` with its kind (`.video`, `.appAudio`,
    /// `.micAudio`), like ReplayKit's `startCapture(handler:)`. Throws `.alreadyRunning` if
    /// capture is already on.
    public func startCapture(handler: @escaping SampleHandlerOutput.Handler) async throws {
        let recorder = try state.withLock { state -> Recorder? in
            guard state.handler == nil else { throw ReelError(.alreadyRunning, "screen capture is already running") }
            state.handler = handler
            return state.recorder
        }
        do {
            try await restart(handler: handler, recorder: recorder)
        } catch {
            state.withLock { $0.handler = nil }
            throw error
        }
    }

    /// Stops delivering samples (a recording in progress goes on).
    public func stopCapture() async {
        let recorder = state.withLock { state -> Recorder? in
            state.handler = nil
            return state.recorder
        }
        if recorder == nil { await stopSession() }
    }

    /// Starts recording to `url` with `settings`; samples keep flowing to a capture handler if
    /// one is set. Returns the recorder, whose `events` report progress.
    @discardableResult
    public func startRecording(to url: URL, settings: Recorder.Settings = Recorder.Settings()) async throws -> Recorder {
        let recorder = Recorder(url: url, settings: settings)
        let handler = try state.withLock { state -> SampleHandlerOutput.Handler? in
            guard state.recorder == nil else { throw ReelError(.alreadyRunning, "the screen is already being recorded") }
            state.recorder = recorder
            return state.handler
        }
        do {
            try await restart(handler: handler, recorder: recorder)
        } catch {
            state.withLock { $0.recorder = nil }
            throw error
        }
        return recorder
    }

    /// Stops recording, finalises the file and returns what it holds.
    public func stopRecording() async throws -> RecordingSummary {
        let (recorder, handler) = state.withLock { state in
            let taken = (state.recorder, state.handler)
            state.recorder = nil
            return taken
        }
        guard let recorder else { throw ReelError(.notRunning, "the screen is not being recorded") }
        await stopSession()
        // Capture goes on without the recorder.
        if let handler { try? await restart(handler: handler, recorder: nil) }
        return try await recorder.result()
    }

    private func stopSession() async {
        let session = state.withLock { state -> CaptureSession? in
            let s = state.session
            state.session = nil
            return s
        }
        await session?.stop()
    }

    /// (Re)builds the session for the outputs wanted now. A session's outputs are fixed while
    /// it runs, so adding a recorder to a running capture restarts the sources (briefly).
    private func restart(handler: SampleHandlerOutput.Handler?, recorder: Recorder?) async throws {
        await stopSession()
        let session = CaptureSession(clock: clock)
        let c = configuration
        var windowSource: X11WindowSource?
        switch c.screen ?? .x11(display: c.display) {
        case .x11(let display) where c.window != nil:
            let chosen = state.withLock { $0.window }.map { X11WindowSelector.id($0) }
            let window = X11WindowSource(display: display, window: chosen ?? c.window ?? .focused, resizeMode: c.windowResizeMode,
                                         frameRate: c.frameRate, drawsCursor: c.capturesCursor)
            try session.addInput(window)
            windowSource = window
        case .wayland where c.window != nil:
            // The portal's dialog chooses the window (a name or id cannot choose it).
            try session.addInput(WaylandScreenSource(frameRate: c.frameRate, drawsCursor: c.capturesCursor, sharesWindow: true))
        case .x11(let display):
            try session.addInput(X11ScreenSource(display: display, region: c.region, frameRate: c.frameRate, drawsCursor: c.capturesCursor))
        case .wayland:
            try session.addInput(WaylandScreenSource(region: c.region, frameRate: c.frameRate, drawsCursor: c.capturesCursor,
                                                     choosesAgain: c.choosesScreenAgain))
        }
        if c.capturesAppAudio, let applications = c.appAudioApplications {
            try session.addInput(ApplicationAudioSource(applications, server: c.audioServer))
        } else if c.capturesAppAudio {
            try session.addInput(PulseAudioSource.appAudio(sink: c.appAudioSink, server: c.audioServer))
        }
        if c.capturesMicrophone { try session.addInput(PulseAudioSource.microphone(source: c.microphoneSource, server: c.audioServer)) }
        if let handler { try session.addOutput(SampleHandlerOutput(handler: handler)) }
        if let recorder { try session.addOutput(recorder) }
        try await session.start()
        state.withLock {
            $0.session = session
            if let id = windowSource?.windowID { $0.window = id }
        }
        let continuation = self.continuation
        Task { for await event in session.events { continuation.yield(event) } }
    }
}
