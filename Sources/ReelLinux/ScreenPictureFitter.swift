import ReelCore
internal import CPipeWire

/// Puts a screen picture into a recording frame of a fixed size, whatever the picture's size
/// now: the region of the screen the recording was set up with is cut out (scaled along when
/// the screen's size has changed), scaled to fit the frame with its aspect ratio kept, and
/// centred with black bars (letterbox). Converts BGRx, BGRA, RGBx and RGBA to BGRA.
package struct ScreenPictureFitter: Sendable, Hashable {
    /// The screen's size when the recording was set up.
    package let screenSize: PixelSize
    /// The part of that screen recorded, or `nil` for all of it.
    package let region: PixelRect?
    /// The recording's frame size.
    package var frameSize: PixelSize { region?.size ?? screenSize }

    /// A fitter for a recording of `region` (or all) of a screen of `screenSize`.
    package init(screenSize: PixelSize, region: PixelRect?) {
        self.screenSize = screenSize
        self.region = region
    }

    /// Where a picture of `pictureSize` is read (`crop`, inside the picture) and where it goes
    /// in the frame (`fit`, inside the frame).
    package func layout(pictureSize: PixelSize) -> (crop: PixelRect, fit: PixelRect) {
        let full = PixelRect(x: 0, y: 0, width: pictureSize.width, height: pictureSize.height)
        var crop = full
        if let region {
            if pictureSize == screenSize {
                crop = region
            } else {
                // The screen changed size: the same part of it, in proportion.
                let sx = Double(pictureSize.width) / Double(screenSize.width)
                let sy = Double(pictureSize.height) / Double(screenSize.height)
                let x = min(Int((Double(region.x) * sx).rounded()), max(pictureSize.width - 1, 0))
                let y = min(Int((Double(region.y) * sy).rounded()), max(pictureSize.height - 1, 0))
                crop = PixelRect(x: x, y: y,
                                 width: max(1, min(Int((Double(region.width) * sx).rounded()), pictureSize.width - x)),
                                 height: max(1, min(Int((Double(region.height) * sy).rounded()), pictureSize.height - y)))
            }
        }
        let frame = frameSize
        if crop.size == frame { return (crop, PixelRect(x: 0, y: 0, width: frame.width, height: frame.height)) }
        // Scale to fit, keeping the aspect ratio; centre.
        let scale = min(Double(frame.width) / Double(crop.width), Double(frame.height) / Double(crop.height))
        let width = max(1, min(frame.width, Int((Double(crop.width) * scale).rounded())))
        let height = max(1, min(frame.height, Int((Double(crop.height) * scale).rounded())))
        return (crop, PixelRect(x: (frame.width - width) / 2, y: (frame.height - height) / 2, width: width, height: height))
    }

    /// Draws `picture` into `frame` (BGRA of ``frameSize``). A picture of no pixels leaves the
    /// frame black.
    package func draw(_ picture: ScreenPicture, into frame: VideoFrame) {
        guard frame.format == .bgra, frame.size == frameSize else { return }
        let (crop, fit) = layout(pictureSize: picture.size)
        frame.withUnsafeMutablePlane(0) { plane, stride in
            guard let base = plane.baseAddress else { return }
            guard picture.size.width > 0, picture.size.height > 0 else {
                for row in 0..<frame.height {
                    let line = (base + row * stride).assumingMemoryBound(to: UInt32.self)
                    line.update(repeating: 0xFF00_0000, count: frame.width)
                }
                return
            }
            reel_fit_picture(picture.pixels.assumingMemoryBound(to: UInt8.self), picture.layout.rawValue, Int32(picture.stride),
                             Int32(crop.x), Int32(crop.y), Int32(crop.width), Int32(crop.height),
                             base.assumingMemoryBound(to: UInt8.self), Int32(stride), Int32(frame.width), Int32(frame.height),
                             Int32(fit.x), Int32(fit.y), Int32(fit.width), Int32(fit.height))
        }
    }
}
