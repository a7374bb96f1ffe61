import Foundation
import Reel

/// Files of test-pattern frames written straight through an `AssetWriter`, for tests of what
/// the encoder and the muxer make of given settings.
public enum PatternFile {
    /// Writes `frames` test-pattern frames of `size` with `settings` into `url`, finished
    /// unless `finish` is false; returns the writer.
    @discardableResult
    public static func write(_ url: URL, settings: VideoSettings, size: PixelSize = PixelSize(width: 64, height: 64), frames: Int = 8,
                             finish: Bool = true) throws -> AssetWriter {
        let writer = try AssetWriter(configuration: AssetWriter.Configuration(
            url: url, video: AssetWriter.VideoTrack(settings: settings, inputFormat: .yuv420p, inputSize: size)))
        let pool = FramePool(format: .yuv420p, size: size, capacity: 2)
        for i in 0..<frames {
            guard let frame = pool.makeFrame() else { break }
            try TestPattern.draw(index: Int64(i), flash: false, into: frame)
            try writer.appendVideo(frame, at: settings.frameRate.time(ofFrame: Int64(i)))
        }
        if finish { _ = try writer.finish() }
        return writer
    }
}
