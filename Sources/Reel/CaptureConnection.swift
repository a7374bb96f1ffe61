import Foundation
import Synchronization
import ReelFFmpeg

/// What every output of a session sees of one of its inputs' pictures, as
/// `AVCaptureConnection` sets it: turned (``videoOrientation``), mirrored
/// (``isVideoMirrored``) and filtered (``videoFilters``), in that order, on the source's own
/// thread, so the recording, live frames and a preview all show the same picture.
///
/// ```swift
/// let connection = try #require(session.connection(for: camera))
/// connection.videoOrientation = .clockwise90     // a camera mounted on its side
/// connection.isVideoMirrored = true              // a selfie view
/// connection.videoFilters = [.look(.mono), try VideoFilter(graph: "eq=contrast=1.2")]
/// ```
///
/// Turning and mirroring move bytes (no scaling, no colour change): a few milliseconds for a
/// 1080p picture. A session's outputs are set up for one picture size when it starts, so a
/// quarter turn asked for while it runs (from upright to 90°, say) takes effect at the next
/// start — ``setVideoOrientation(_:)`` says so by throwing; a half turn and mirroring apply
/// from the next picture. YUYV pictures come out 4:2:0 when turned or mirrored.
public final class CaptureConnection: Sendable {
    /// The input whose pictures this connection carries.
    public let input: any CaptureSource
    let orientation = OrientationControl()
    let filters = VideoFilterControl()
    /// The input's sound: its offset and filters, taken at each start.
    let sound = Mutex<(offset: MediaTime, filters: [AudioFilter])>((.zero, []))
    /// The running input's sound stage (offset and filters), if it has one.
    let soundStage = Mutex<AudioStage?>(nil)
    /// The input's presenter overlays and their events, taken at each start.
    let presenter = Mutex(PresenterSetting())

    init(input: any CaptureSource) {
        self.input = input
    }

    /// Measures, before the input starts, how much its audio filters delay sound of `format`
    /// (once per graph and format, a fraction of a second), so that its thread does not stop
    /// for it at its first sound.
    func prepareSound(_ format: SourceFormat) {
        guard case .audio(let audio) = format else { return }
        AudioFilterGraph.measureDelay(of: sound.withLock { $0.filters }, format: audio)
    }

    /// Gives the outputs what the input's audio filters hold back; `ended`: the input has
    /// stopped, and its stage is let go.
    func drainSound(ended: Bool) {
        let stage = soundStage.withLock { stage in
            defer { if ended { stage = nil } }
            return stage
        }
        stage?.drain()
    }

    /// Whether the input has pictures to turn, mirror and filter (`AVCaptureConnection`'s
    /// `isVideoOrientationSupported` and `isVideoMirroringSupported`).
    public var isVideoOrientationSupported: Bool { input.kind == .video }

    /// How the input's pictures are turned (see ``VideoOrientation``). A quarter turn set while
    /// the session runs waits for its next start; ``setVideoOrientation(_:)`` refuses it instead.
    public var videoOrientation: VideoOrientation {
        get { orientation.requested.orientation }
        set { orientation.request(orientation: newValue, mirrored: isVideoMirrored) }
    }

    /// ``videoOrientation`` in degrees clockwise, as `AVCaptureConnection.videoRotationAngle`:
    /// 0, 90, 180 or 270 (another multiple of 90 is taken modulo 360; any other angle is
    /// refused by ``setVideoOrientation(_:)`` and ignored here).
    public var videoRotationAngle: Int {
        get { videoOrientation.rotationAngle }
        set { if let turned = VideoOrientation(rotationAngle: newValue) { videoOrientation = turned } }
    }

    /// Whether the input's pictures are flipped left to right (after turning): a selfie view.
    /// Applies from the next picture, also while the session runs.
    public var isVideoMirrored: Bool {
        get { orientation.requested.mirrored }
        set { orientation.request(orientation: videoOrientation, mirrored: newValue) }
    }

    /// Turns the input's pictures by `orientation`, from the next picture.
    ///
    /// - Throws: `.invalidConfiguration` when the input has no pictures, or when the session
    ///   runs and the turn would change the pictures' size (upright to a quarter turn): it then
    ///   takes effect at the next start.
    public func setVideoOrientation(_ orientation: VideoOrientation) throws {
        guard isVideoOrientationSupported else {
            throw ReelError(.invalidConfiguration, "\(input.name) has no pictures to turn")
        }
        guard self.orientation.request(orientation: orientation, mirrored: isVideoMirrored) else {
            throw ReelError(.invalidConfiguration, "\(input.name)'s pictures cannot turn a quarter turn while the session runs: its outputs are set up for one picture size",
                            hint: "it takes effect when the session starts again; set it before start()")
        }
    }

    /// The filters the input's pictures go through, in order (a chain, as Core Image filters
    /// are chained): none by default. Set at any time: the change lands on the next picture
    /// (see ``setVideoFilters(_:at:)`` for an exact time). A filter never lets a picture
    /// through unfiltered, for it may be what keeps part of a screen private: one that cannot
    /// be applied to the input's first pictures (a crop larger than they are) makes the
    /// session's start throw, nothing recorded, and one that no longer can (the pictures
    /// changed size, or it was set while running and does not fit) ends the input's pictures,
    /// said as ``SessionEvent/sourceLost(source:error:)`` (see
    /// ``SessionEvent/filterFailed(source:filter:error:)``). This setter does not check a chain
    /// against the pictures of the moment: while running, ``setVideoFilters(_:at:)`` refuses
    /// one that cannot apply to them.
    public var videoFilters: [VideoFilter] {
        get { filters.filters }
        set { filters.setFilters(newValue) }
    }

    /// Uses `chain` from the first picture at or after `time` on the session's clock (`nil`:
    /// from the next picture). While the session runs, `chain` is first tried on the input's
    /// pictures of the moment: one that cannot apply to them is refused rather than end them.
    ///
    /// - Throws: ``ReelError/Code/invalidConfiguration`` when a filter of `chain` cannot be
    ///   applied to the input's pictures (or to what the filters before it make of them);
    ///   the filters are then as they were.
    public func setVideoFilters(_ chain: [VideoFilter], at time: MediaTime? = nil) throws {
        try filters.setCheckedFilters(chain, at: time, of: input.name)
    }

    /// Whether the input has sound to move and filter (``audioOffset``, ``audioFilters``).
    public var isAudioSupported: Bool { input.kind.isAudio }

    /// How far the input's sound is moved on the session's timeline: later for a positive
    /// offset, earlier for a negative one. For a source whose sound arrives late (a Bluetooth
    /// headset, a USB microphone with a long buffer), a negative offset puts it back with the
    /// pictures. Zero by default; a change takes effect at the next start.
    public var audioOffset: MediaTime {
        get { sound.withLock { $0.offset } }
        set { sound.withLock { $0.offset = newValue } }
    }

    /// The filters the input's sound goes through, in order, after the offset (see
    /// ``AudioFilter``; ``AudioFilter/denoise`` for a microphone): none by default. A change
    /// takes effect at the next start. What a filter holds back to look ahead (`loudnorm`:
    /// seconds) reaches the outputs when the session stops, and a recorder whose maximum
    /// duration has passed on the clock has it at once. As with pictures, no sound goes on
    /// unfiltered: filters that cannot be set up for the input's sound make the session's
    /// start throw, and filters that fail while recording end the input's sound, said as
    /// ``SessionEvent/sourceLost(source:error:)``.
    public var audioFilters: [AudioFilter] {
        get { sound.withLock { $0.filters } }
        set { sound.withLock { $0.filters = newValue } }
    }
}
