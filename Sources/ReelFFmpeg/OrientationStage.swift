internal import CReelConvert
import Foundation
import Synchronization
import ReelCore

/// The turn and mirroring of one picture source's pictures (a capture connection's
/// `videoOrientation` and `isVideoMirrored`): what was asked, and what the source's pictures
/// get now.
///
/// The outputs of a running session are set up for one picture size, so a change that turns
/// the picture a quarter turn from what it gets now waits for the next start (``requested``
/// holds it); a change that keeps the size (a half turn, mirroring) applies from the next
/// picture.
package final class OrientationControl: Sendable {
    private struct State {
        var requested: (orientation: VideoOrientation, mirrored: Bool) = (.upright, false)
        var applied: (orientation: VideoOrientation, mirrored: Bool) = (.upright, false)
        var running = false
    }
    private let state = Mutex(State())

    /// A control that leaves pictures as they are.
    package init() {}

    /// What was asked last.
    package var requested: (orientation: VideoOrientation, mirrored: Bool) { state.withLock { $0.requested } }

    /// What the pictures get now.
    package var applied: (orientation: VideoOrientation, mirrored: Bool) { state.withLock { $0.applied } }

    /// Asks for `orientation` and `mirrored`; returns whether the pictures get them from the
    /// next one (false: a quarter turn while running, kept for the next start).
    @discardableResult
    package func request(orientation: VideoOrientation, mirrored: Bool) -> Bool {
        state.withLock { s in
            s.requested = (orientation, mirrored)
            guard !s.running || orientation.swapsWidthAndHeight == s.applied.orientation.swapsWidthAndHeight else { return false }
            s.applied = s.requested
            return true
        }
    }

    /// Whether asking for `orientation` now would apply at once.
    package func appliesAtOnce(_ orientation: VideoOrientation) -> Bool {
        state.withLock { s in !s.running || orientation.swapsWidthAndHeight == s.applied.orientation.swapsWidthAndHeight }
    }

    /// The session starts: what was asked applies; returns it.
    @discardableResult
    package func started() -> (orientation: VideoOrientation, mirrored: Bool) {
        state.withLock { s in
            s.applied = s.requested
            s.running = true
            return s.applied
        }
    }

    /// The session stopped.
    package func stopped() { state.withLock { $0.running = false } }

    /// The format a source of `format` delivers after this stage (as started: see
    /// ``started()``): turned, and YUYV made 4:2:0 when turned or mirrored (4:2:2 packed
    /// pictures are not turned as they are).
    package static func format(_ format: SourceFormat, orientation: VideoOrientation, mirrored: Bool) -> SourceFormat {
        guard case let .video(size, pixelFormat, rate) = format, orientation != .upright || mirrored else { return format }
        return .video(size: orientation.turned(size), pixelFormat: pixelFormat == .yuyv ? .yuv420p : pixelFormat, frameRate: rate)
    }
}

/// Turns and mirrors a source's pictures as its ``OrientationControl`` says, plane by plane
/// (`reel_turn_plane`): a copy with the bytes in another order, no scaling. YUYV pictures are
/// made 4:2:0 first.
package final class OrientationStage: FrameStage, @unchecked Sendable {
    private let control: OrientationControl
    private var buffers: StageBuffers
    private var planar: StageBuffers
    private let scaler = FrameScaler()
    private let zoomed: ViewResolver
    private let lock = NSLock()

    /// A stage following `control`; off real time it waits for a free buffer rather than drop.
    package init(control: OrientationControl, realTime: Bool) {
        self.control = control
        zoomed = ViewResolver(realTime: realTime)
        buffers = StageBuffers(realTime: realTime)
        planar = StageBuffers(realTime: realTime)
    }

    package func apply(to frame: VideoFrame) -> VideoFrame? {
        let (orientation, mirrored) = control.applied
        guard orientation != .upright || mirrored else { return frame }
        lock.lock(); defer { lock.unlock() }
        // A zoom left for the encoder is made first: it is in the unturned picture's pixels.
        guard var source = zoomed.resolve(frame) else { return nil }
        let frame = source
        if frame.format == .yuyv {
            guard let converted = planar.picture(like: frame, format: .yuv420p, size: frame.size) else { return nil }
            do {
                try scaler.draw(frame, into: converted, at: PixelRect(x: 0, y: 0, width: frame.width, height: frame.height))
            } catch {
                return frame
            }
            source = converted
        }
        guard let out = buffers.picture(like: source, format: source.format, size: orientation.turned(source.size)) else { return nil }
        var turned = true
        for plane in 0..<source.format.planeCount {
            let bytesPerPixel = source.format == .bgra ? 4 : (source.format == .nv12 && plane == 1 ? 2 : 1)
            let width = source.format.rowBytes(plane: plane, width: source.width) / bytesPerPixel
            let height = source.format.rows(plane: plane, height: source.height)
            source.withUnsafePlane(plane) { from, fromStride in
                out.withUnsafeMutablePlane(plane) { to, toStride in
                    guard let f = from.baseAddress, let t = to.baseAddress else { turned = false; return }
                    if reel_turn_plane(f.assumingMemoryBound(to: UInt8.self), fromStride, Int32(width), Int32(height), Int32(bytesPerPixel),
                                       t.assumingMemoryBound(to: UInt8.self), toStride, Int32(orientation.rotationAngle), mirrored ? 1 : 0) != 0 {
                        turned = false
                    }
                }
            }
        }
        return turned ? out : frame
    }
}
