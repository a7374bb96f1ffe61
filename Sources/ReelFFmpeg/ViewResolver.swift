import Foundation
import ReelCore

/// Makes the picture of a frame whose zoom was left for later (``VideoFrame/view``): the view's
/// rectangle scaled to the frame's size by libswscale's fast bilinear (as the encoder scales
/// it), into a buffer of its own. For whatever reads a picture's pixels and is not the encoder:
/// the stages after the zoom, the live frames, a preview, a compositor.
package final class ViewResolver: @unchecked Sendable {
    private var buffers: StageBuffers
    private let scaler = FrameScaler(quality: .fastBilinear)
    private let lock = NSLock()

    /// A resolver; off real time it waits for a free buffer rather than drop.
    package init(realTime: Bool) {
        buffers = StageBuffers(realTime: realTime)
    }

    /// `frame` itself when it has no view; otherwise its view scaled into a new picture of its
    /// size, format and times (its pixels whole if the view cannot be cut); `nil` when no
    /// buffer is free.
    package func resolve(_ frame: VideoFrame) -> VideoFrame? {
        guard let view = frame.view else { return frame }
        var whole = frame
        whole.view = nil
        whole.identity = nil
        lock.lock(); defer { lock.unlock() }
        guard let out = buffers.picture(like: whole) else { return nil }
        do {
            try scaler.draw(whole, crop: view, into: out, at: PixelRect(x: 0, y: 0, width: frame.width, height: frame.height))
        } catch {
            return whole  // a view the scaler cannot cut: shown whole rather than lost
        }
        return out
    }
}
