import Foundation
import Reel

extension PreviewWindow {
    /// How the window looks.
    public struct Settings: Sendable {
        /// The window's title.
        public var title: String
        /// The window's first size; `nil`: the picture's size, at most 960 pixels wide. Either
        /// way a window larger than the screen's usable area is scaled down, its shape kept,
        /// until it fits.
        public var size: PixelSize?
        /// Where the window first opens on the screen; `nil`: where the window manager puts it.
        /// Either way the window is moved until all of it (and so the message in its middle and
        /// the record button at its foot) is on the screen.
        public var position: (x: Int, y: Int)?
        /// The most pictures drawn in a second.
        public var maximumRate: Int
        /// Whether the record button is drawn (for a window that starts and pauses recording).
        public var showsRecordButton: Bool
        /// Whether the status bar is drawn from the start (idle, 00:00:00) rather than from the
        /// first ``PreviewWindow/show(_:)``. The bar shows what the app gives it: a status of
        /// its own (``PreviewWindow/show(_:)``), or a recorder's recording, followed as it goes
        /// (`showStatus(of:)`); the window does not find a recorder by itself.
        public var showsStatus: Bool
        /// The X display to open on (`":1"`); `nil`: `$DISPLAY`. SDL2 reads the display from
        /// the environment, so a display given here is put into `DISPLAY` for the process.
        public var display: String?

        /// Window settings; every argument has the default a preview usually wants.
        public init(title: String = "Reel", size: PixelSize? = nil, position: (x: Int, y: Int)? = nil,
                    maximumRate: Int = 60, showsRecordButton: Bool = false, showsStatus: Bool = false, display: String? = nil) {
            self.title = title
            self.size = size
            self.position = position
            self.maximumRate = maximumRate
            self.showsRecordButton = showsRecordButton
            self.showsStatus = showsStatus
            self.display = display
        }
    }

    /// How the window was taken away by something other than the user closing it (see
    /// ``PreviewWindow/loss``); the window says stop in each case.
    public enum Loss: Sendable, Hashable {
        /// The X server went away (it ended, or the connection to it broke).
        case displayGone
        /// Another program closed the window's connection while the server goes on (`xkill`,
        /// `xdotool windowkill`).
        case connectionClosed
        /// Another program destroyed the window (`xdotool windowclose`).
        case windowDestroyed
    }

    /// What the indicator shows.
    public enum RecordingState: Sendable, Hashable {
        /// Not recording: a hollow circle.
        case idle
        /// Recording: a red dot.
        case recording
        /// Paused: two bars.
        case paused
    }

    /// What the window shows over the picture.
    public struct Status: Sendable, Hashable {
        /// The indicator's state.
        public var state: RecordingState
        /// The recorded time.
        public var elapsed: MediaTime
        /// The bytes written.
        public var bytes: Int64
        /// The frames dropped.
        public var droppedFrames: Int64
        /// The recording's limit, for the progress bar; `nil`: no bar.
        public var maxDuration: MediaTime?

        /// A status; every argument is the property of the same name.
        public init(state: RecordingState, elapsed: MediaTime, bytes: Int64 = 0, droppedFrames: Int64 = 0, maxDuration: MediaTime? = nil) {
            self.state = state
            self.elapsed = elapsed
            self.bytes = bytes
            self.droppedFrames = droppedFrames
            self.maxDuration = maxDuration
        }

        /// What `recorder` is doing now: recording, paused, or idle (not begun, paused before
        /// anything was recorded, or ended), with what its newest progress said
        /// (``Reel/Recorder/progress``).
        public init(of recorder: Recorder) {
            let progress = recorder.progress
            let recorded = (progress?.duration ?? .zero) > .zero
            // In clip mode, what the clips kept lost (a clip removed while paused leaves the
            // count at once; the progress says so only as the recording goes on).
            let kept = recorder.settings.pauseMode == .clips ? recorder.recordingSession?.frameDrops.total : nil
            let state: RecordingState = !recorder.isRecording ? .idle : !recorder.isPaused ? .recording : recorded ? .paused : .idle
            self.init(state: state,
                      elapsed: progress?.duration ?? .zero, bytes: progress?.bytes ?? 0,
                      droppedFrames: kept ?? progress?.droppedFrames ?? recorder.droppedFrames,
                      maxDuration: progress?.maxDuration ?? recorder.maxRecordedDuration)
        }

        /// What the takes of `recorder` are at now: recording, paused (with something recorded
        /// in the take), or idle (not begun, between takes, or stopped), with the time recorded
        /// over the take's clips, the take's size and dropped frames, and its limit.
        public init(of recorder: CameraRecorder) {
            let recorded = recorder.recordedDuration
            let state: RecordingState = recorder.isRecording ? .recording : recorder.isPaused && recorded > .zero ? .paused : .idle
            let take = recorder.takeProgress
            self.init(state: state, elapsed: recorded, bytes: take.bytes, droppedFrames: take.droppedFrames,
                      maxDuration: recorder.maxRecordedDuration)
        }

        /// How far the recording is toward its limit, 0…1; `nil` without a limit.
        public var progress: Double? {
            guard let maxDuration, maxDuration.seconds > 0 else { return nil }
            return min(1, max(0, elapsed.seconds / maxDuration.seconds))
        }
    }

    /// A key pressed in the window, or the record button clicked.
    public enum Key: Sendable, Hashable {
        /// `r`, or a click on the record button: start or pause recording.
        case record
        /// Space: pause or resume.
        case pause
        /// Enter, `q` or Escape, or the window closed: stop.
        case stop
        /// `s`: swap the composed pictures.
        case swap
        /// `f`: the next filter.
        case filter
        /// `m`: a chapter marker.
        case marker
        /// `z`: zoom in.
        case zoomIn
        /// `Z` (shift-z): zoom out.
        case zoomOut
    }

    /// How long pictures took from capture to the screen: from their capture time (or, for a
    /// source that gives none, the clock reading its presentation time stands for) to the
    /// return of the window's present call, on the session clock.
    public struct DisplayDelay: Sendable, Hashable {
        /// Pictures measured.
        public var pictures: Int
        /// The mean delay, in seconds.
        public var mean: Double
        /// The longest delay, in seconds.
        public var maximum: Double
    }
}
