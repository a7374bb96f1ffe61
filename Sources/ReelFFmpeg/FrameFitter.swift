import ReelCore

/// Makes frames of any pixel format and size into frames of one format and size, laid out by
/// an ``AssetWriterInput/ScalingMode``: what an ``AssetWriterInput`` does on append. The
/// scaling is ``FrameScaler``'s; frames that already fit pass through untouched.
final class FrameFitter {
    let format: PixelFormat
    let size: PixelSize
    let mode: AssetWriterInput.ScalingMode
    private let scaler = FrameScaler(quality: .bicubic)
    private let pool: FramePool

    /// A fitter into frames of `format` and `size` (even for the 4:2:0 formats).
    init(format: PixelFormat, size: PixelSize, mode: AssetWriterInput.ScalingMode) {
        self.format = format
        self.size = size
        self.mode = mode
        // A converted frame is handed on and let go before the next: two are plenty.
        pool = FramePool(format: format, size: size, capacity: 2)
    }

    /// `frame` in the fitter's format and size, with its times.
    ///
    /// - Throws: `.invalidConfiguration` for a frame smaller than 2x2; `.unsupportedFormat` when
    ///   libswscale cannot convert it.
    func fit(_ frame: VideoFrame) throws -> VideoFrame {
        if frame.format == format && frame.size == size { return frame }
        guard frame.width >= 2, frame.height >= 2 else {
            throw ReelError(.invalidConfiguration, "a \(frame.size) frame is too small to scale", hint: "append frames of at least 2x2")
        }
        guard var out = pool.makeFrame(presentationTime: frame.presentationTime, sequenceNumber: frame.sequenceNumber) else {
            throw ReelError(.encodingFailed, "no frame buffer became free for converting a frame")
        }
        out.captureTime = frame.captureTime
        let whole = PixelRect(x: 0, y: 0, width: size.width, height: size.height)
        switch mode {
        case .resize:
            try scaler.draw(frame, into: out, at: whole)
        case .resizeAspect:
            let rect = Self.centred(Self.scaled(frame.size, within: size), in: size)
            if rect != whole { out.fill(with: .black) }
            try scaler.draw(frame, into: out, at: rect)
        case .resizeAspectFill:
            // The part of the frame with the track's shape, centred.
            let crop = Self.centred(Self.scaled(size, within: frame.size), in: frame.size)
            try scaler.draw(frame, crop: crop, into: out, at: whole)
        }
        return out
    }

    /// `source` scaled to fit inside `bounds`, keeping its aspect ratio, in even sizes of at
    /// least 2x2 and at most `bounds`.
    static func scaled(_ source: PixelSize, within bounds: PixelSize) -> PixelSize {
        let wide = source.width * bounds.height > bounds.width * source.height
        var width = bounds.width, height = bounds.height
        if wide {
            height = bounds.width * source.height / source.width
        } else {
            width = bounds.height * source.width / source.height
        }
        return PixelSize(width: min(bounds.width, max(2, width & ~1)), height: min(bounds.height, max(2, height & ~1)))
    }

    /// A rectangle of `size` centred in a frame of `bounds`, at even coordinates.
    static func centred(_ size: PixelSize, in bounds: PixelSize) -> PixelRect {
        PixelRect(x: ((bounds.width - size.width) / 2) & ~1, y: ((bounds.height - size.height) / 2) & ~1,
                  width: size.width, height: size.height)
    }
}
