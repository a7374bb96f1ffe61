internal import CFFmpeg
import ReelCore

/// Which encoders the FFmpeg Reel is linked with has, asked at run time (a distribution's
/// libavcodec may lack libx265 or libaom): what `reel doctor` reports.
package enum EncoderAvailability {
    /// The libavcodec encoder Reel uses for `codec` in this build, or `nil` when it has none.
    package static func encoder(for codec: VideoCodec) -> String? {
        VideoEncoder.encoderNames(for: codec).first(where: hasEncoder(named:))
    }

    /// The libavcodec encoders Reel can use for `codec`, best first.
    package static func encoderNames(for codec: VideoCodec) -> [String] {
        VideoEncoder.encoderNames(for: codec)
    }

    /// The libavcodec encoder Reel uses for `codec`.
    package static func encoderName(for codec: AudioCodec) -> String {
        AudioEncoder.encoderName(for: codec)
    }

    /// Whether libavcodec has an encoder called `name` (`libx264`, `libsvtav1`).
    package static func hasEncoder(named name: String) -> Bool {
        avcodec_find_encoder_by_name(name) != nil
    }
}
