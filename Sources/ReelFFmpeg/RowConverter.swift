internal import CFFmpeg
internal import CReelConvert
import ReelCore

/// Converts a BGRA picture, or some of its rows at even boundaries, into the same rows of a
/// 4:2:0 YUV picture of the same size, in BT.709 limited range: the encoder's conversion of
/// every screen and test picture it takes (and, when a screen capture says which rows changed
/// since the picture it converted last, of just those rows).
///
/// The conversion is Reel's own (`CReelConvert`, built for AVX2, SSE4.1 and the x86-64
/// baseline): within 1 of libswscale's point-sampling conversion in every sample, and three
/// times as fast (`bench/RESULTS.md`). Each row converts alone (chroma comes from the lower
/// row of its pair), so changed rows converted into the last picture give the bytes a whole
/// conversion gives (a test holds it to that).
final class RowConverter {
    private let width: Int

    /// The colour conversion this converter makes: full-range BT.709 RGB into limited range.
    static let colour = Scaler.Colour(source: SWS_CS_ITU709, sourceFullRange: true, destination: SWS_CS_ITU709,
                                      destinationFullRange: false)

    /// A converter of rows `width` pixels wide, or `nil` for what it does not convert (only
    /// packed BGRA into 8-bit `yuv420p`, full-range BT.709 into limited range, an even width).
    init?(width: Int, sourceFormat: AVPixelFormat, destinationFormat: AVPixelFormat, colour: Scaler.Colour) {
        guard sourceFormat == AV_PIX_FMT_BGRA, destinationFormat == AV_PIX_FMT_YUV420P, width > 0, width % 2 == 0,
              colour == Self.colour else { return nil }
        self.width = width
    }

    /// The code the conversion runs on this processor ("avx2", "sse4.1" or "default").
    static var variant: String { String(cString: reel_bgra_to_i420_variant()) }

    /// Converts `rows` (even boundaries, inside the picture) of the BGRA picture at `bgra`
    /// (`bgraStride` bytes a row) into the planes `planes`/`strides` of the YUV picture.
    /// Returns `false`, having converted nothing, for a run that starts or ends at an odd row.
    func convert(rows: [Range<Int>], bgra: UnsafePointer<UInt8>, bgraStride: Int,
                 into planes: UnsafePointer<UnsafeMutablePointer<UInt8>?>, strides: UnsafePointer<Int32>) -> Bool {
        guard rows.allSatisfy({ $0.lowerBound % 2 == 0 && $0.upperBound % 2 == 0 && $0.lowerBound >= 0 }),
              let y = planes[0], let u = planes[1], let v = planes[2] else { return false }
        for run in rows where !run.isEmpty {
            reel_bgra_to_i420_rows(bgra, bgraStride, Int32(width), Int32(run.lowerBound), Int32(run.upperBound),
                                   y, Int(strides[0]), u, Int(strides[1]), v, Int(strides[2]))
        }
        return true
    }
}
