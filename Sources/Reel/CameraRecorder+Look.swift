import Foundation
import Synchronization

extension CameraRecorder {
    /// The camera's filters, in order (see ``CaptureConnection/videoFilters``): the recording,
    /// the preview frames and a preview window all show them. Changed at once, even while
    /// recording; set before ``start()`` too.
    public var videoFilters: [VideoFilter] {
        get { look.videoFilters }
        set { look.videoFilters = newValue }
    }

    /// The camera's filter: the first of ``videoFilters``; setting it makes it the only one
    /// (`nil`: none).
    public var filter: VideoFilter? {
        get { videoFilters.first }
        set { videoFilters = newValue.map { [$0] } ?? [] }
    }

    /// How the camera's pictures are turned (see ``CaptureConnection/videoOrientation``). Set
    /// before ``start()``: a quarter turn set while capture runs takes effect at the next take.
    public var videoOrientation: VideoOrientation {
        get { look.videoOrientation }
        set { look.videoOrientation = newValue }
    }

    /// Whether the camera's pictures are flipped left to right (a selfie view; see
    /// ``CaptureConnection/isVideoMirrored``). Applies at once, even while recording.
    public var isVideoMirrored: Bool {
        get { look.isVideoMirrored }
        set { look.isVideoMirrored = newValue }
    }
}

/// A camera recorder's turn, mirroring and filters: kept between takes, and passed on to the
/// connection of the take's session while it runs.
final class CaptureLook: Sendable {
    private struct State {
        var filters: [VideoFilter] = []
        var orientation = VideoOrientation.upright
        var mirrored = false
        var connection: CaptureConnection?
    }
    private let state = Mutex(State())

    /// Passes what is set on to `connection` (the take's), and later changes too; `nil`: the
    /// take ended.
    func attach(_ connection: CaptureConnection?) {
        let s = state.withLock { s in
            s.connection = connection
            return s
        }
        guard let connection else { return }
        connection.videoFilters = s.filters
        connection.videoOrientation = s.orientation
        connection.isVideoMirrored = s.mirrored
    }

    var videoFilters: [VideoFilter] {
        get { state.withLock { $0.filters } }
        set {
            let connection = state.withLock { s -> CaptureConnection? in
                s.filters = newValue
                return s.connection
            }
            connection?.videoFilters = newValue
        }
    }

    var videoOrientation: VideoOrientation {
        get { state.withLock { $0.orientation } }
        set {
            let connection = state.withLock { s -> CaptureConnection? in
                s.orientation = newValue
                return s.connection
            }
            connection?.videoOrientation = newValue
        }
    }

    var isVideoMirrored: Bool {
        get { state.withLock { $0.mirrored } }
        set {
            let connection = state.withLock { s -> CaptureConnection? in
                s.mirrored = newValue
                return s.connection
            }
            connection?.isVideoMirrored = newValue
        }
    }
}
