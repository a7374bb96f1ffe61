internal import CFFmpeg
import ReelCore

extension Muxer {
    /// The codec tag (MP4/MOV sample entry) to give a stream of `codec` in `container`, or 0
    /// for libavformat's choice.
    ///
    /// HEVC is tagged `hvc1`: its parameter sets live in the `hvcC` box only, which is what
    /// Reel's encoder writes, and the only HEVC QuickTime and Safari play. libavformat would
    /// tag it `hev1` (parameter sets may also come in the stream). Every stream Reel writes
    /// into MP4/MOV (recording, finalising, remuxing, merging, recovering) takes its tag here.
    static func codecTag(for codec: AVCodecID, in container: Container) -> UInt32 {
        guard container.isISOBaseMedia, codec == AV_CODEC_ID_HEVC else { return 0 }
        return fourCC("hvc1")
    }

    private static func fourCC(_ text: StaticString) -> UInt32 {
        let bytes = UnsafeBufferPointer(start: text.utf8Start, count: 4)
        return UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
    }
}
