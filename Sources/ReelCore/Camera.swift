import Foundation
import Synchronization

/// A video source that behaves like a camera: a V4L2 device, a network camera, a video file
/// played as a camera, the synthetic test camera.
///
/// Every camera has a digital zoom, ``zoom``; the session crops and scales its frames before
/// any output sees them. Like `AVCaptureDevice`, set ``videoZoomFactor`` or ramp to a factor.
public protocol CameraSource: CaptureSource {
    /// The camera's digital zoom.
    var zoom: ZoomControl { get }
}

extension CameraSource {
    /// The digital zoom factor: 1 shows the whole picture, 2 the middle half of each side.
    /// Setting it cancels a ramp. Values are clamped to `1...ZoomControl.maximumFactor`.
    public var videoZoomFactor: Double {
        get { zoom.factor }
        set { zoom.setFactor(newValue) }
    }

    /// Zooms smoothly to `factor` at `rate` powers of two per second (as `AVCaptureDevice`).
    public func ramp(toVideoZoomFactor factor: Double, withRate rate: Double) {
        zoom.ramp(to: factor, rate: rate)
    }

    /// Stops a ramp at the factor it has reached.
    public func cancelVideoZoomRamp() { zoom.cancelRamp() }
}

/// A camera's digital zoom: a factor, the point zoomed about, and a ramp in progress.
///
/// Thread-safe: the application sets it from anywhere, the session reads it for each frame
/// with the frame's time (so ramps advance on the session clock, also a manual one).
public final class ZoomControl: Sendable {
    /// The largest factor.
    public static let maximumFactor = 16.0

    private struct Ramp {
        var from: Double
        var to: Double
        /// Powers of two per second.
        var rate: Double
        /// When the ramp began (the time of the first frame that saw it).
        var start: MediaTime?
    }
    private struct State {
        var factor = 1.0
        var centre = (x: 0.5, y: 0.5)
        var ramp: Ramp?
    }
    private let state = Mutex(State())

    /// Creates a zoom at 1× (no zoom), centred.
    public init() {}

    /// The factor now (while ramping: the factor reached by the last frame).
    public var factor: Double { state.withLock { $0.factor } }

    /// Whether a ramp is in progress.
    public var isRamping: Bool { state.withLock { $0.ramp != nil } }

    /// The point zoomed about, as fractions of the width and height (0.5, 0.5 is the centre).
    public var centre: (x: Double, y: Double) { state.withLock { $0.centre } }

    /// Sets the factor at once, cancelling a ramp.
    public func setFactor(_ factor: Double) {
        let clamped = Self.clamp(factor)
        state.withLock { $0.factor = clamped; $0.ramp = nil }
    }

    /// Zooms about `point` (fractions of width and height, each clamped to 0...1).
    public func setCentre(x: Double, y: Double) {
        let p = (x: min(1, max(0, x.isFinite ? x : 0.5)), y: min(1, max(0, y.isFinite ? y : 0.5)))
        state.withLock { $0.centre = p }
    }

    /// Starts a ramp from the current factor to `factor` at `rate` powers of two per second.
    /// A rate that is not positive sets the factor at once.
    public func ramp(to factor: Double, rate: Double) {
        let target = Self.clamp(factor)
        state.withLock { s in
            guard rate.isFinite, rate > 0 else { s.factor = target; s.ramp = nil; return }
            s.ramp = Ramp(from: s.factor, to: target, rate: rate, start: nil)
        }
    }

    /// Stops a ramp where it is.
    public func cancelRamp() { state.withLock { $0.ramp = nil } }

    /// The factor at `time`, advancing a ramp (the first call after a ramp starts is its start).
    public func factor(at time: MediaTime) -> Double {
        state.withLock { s in
            guard var ramp = s.ramp else { return s.factor }
            let start = ramp.start ?? time
            ramp.start = start
            let elapsed = max(0, (time - start).seconds)
            let from = log2(ramp.from), to = log2(ramp.to)
            let step = ramp.rate * elapsed
            let value: Double
            if to >= from { value = min(to, from + step) } else { value = max(to, from - step) }
            s.factor = Self.clamp(exp2(value))
            s.ramp = value == to ? nil : ramp
            if value == to { s.factor = ramp.to }
            return s.factor
        }
    }

    /// The part of a frame of `size` to show at `time`, or `nil` for the whole frame.
    ///
    /// The rectangle keeps the frame's aspect ratio, lies wholly inside the frame, is centred
    /// on ``centre`` as far as the edges allow, and has even offsets and sizes (so it can cut
    /// 4:2:0 frames).
    public func cropRect(for size: PixelSize, at time: MediaTime) -> PixelRect? {
        let f = factor(at: time)
        let centre = self.centre
        return Self.cropRect(for: size, factor: f, centre: centre)
    }

    /// The crop rectangle of a frame of `size` at zoom `factor` about `centre`; `nil` at 1×.
    public static func cropRect(for size: PixelSize, factor: Double, centre: (x: Double, y: Double)) -> PixelRect? {
        guard factor > 1.0001 else { return nil }
        let w = max(2, Int(Double(size.width) / factor) & ~1)
        let h = max(2, Int(Double(size.height) / factor) & ~1)
        var x = Int((Double(size.width) * centre.x - Double(w) / 2).rounded())
        var y = Int((Double(size.height) * centre.y - Double(h) / 2).rounded())
        x = min(max(0, x), size.width - w) & ~1
        y = min(max(0, y), size.height - h) & ~1
        return PixelRect(x: x, y: y, width: w, height: h)
    }

    private static func clamp(_ factor: Double) -> Double {
        guard factor.isFinite else { return 1 }
        return min(maximumFactor, max(1, factor))
    }
}

/// Whether this process may use a camera or a microphone, in the spirit of
/// `AVCaptureDevice.authorizationStatus(for:)`. Linux asks the user nothing: the answer is
/// whether the device can be opened now, and if not, why.
public enum AuthorizationStatus: Sendable, Hashable {
    /// The device can be opened.
    case authorized
    /// The user lacks permission; `hint` says how to get it (e.g. join the `video` group).
    case denied(hint: String)
    /// Another program holds the device.
    case busy
    /// There is no such device (or, for sound, no audio server answers).
    case absent
}

/// The former name of ``AuthorizationStatus``, from when only cameras had one.
@available(*, deprecated, renamed: "AuthorizationStatus")
public typealias CameraAuthorizationStatus = AuthorizationStatus

/// Turns compressed camera frames (MJPEG) into pixels.
///
/// Cameras in `ReelLinux` take one by injection, so that they need no FFmpeg; `ReelFFmpeg`
/// provides the implementation. Used from one thread at a time.
public protocol CompressedFrameDecoder: AnyObject {
    /// Decodes one complete compressed frame into a frame from the decoder's own pool.
    ///
    /// - Returns: the frame, or `nil` when every pooled frame is still in use (the caller
    ///   drops the frame and counts it).
    /// - Throws: `.invalidMedia` for data that does not decode.
    func decode(_ data: UnsafeRawBufferPointer, presentationTime: MediaTime, sequenceNumber: Int64) throws -> VideoFrame?
}

/// The compressed formats a camera may deliver.
public enum CompressedVideoFormat: String, Sendable, Hashable {
    /// Motion JPEG: each frame a JPEG image.
    case mjpeg
}

/// Makes a decoder for a compressed camera format, for frames of `size`.
public typealias CompressedFrameDecoderFactory = @Sendable (_ format: CompressedVideoFormat, _ size: PixelSize) throws -> any CompressedFrameDecoder
