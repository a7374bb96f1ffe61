internal import CFFmpeg
import ReelCore

/// Converts some rows of a picture, at even boundaries, into the same rows of a picture of the
/// same size (BGRA into 4:2:0 YUV): what an encoder does when a screen capture says which
/// rows changed since the picture it converted last.
///
/// libswscale converts a picture from its top, so each run of rows goes through a context
/// made for its height: runs are cut into pieces of at most ``piece`` rows, so a handful of
/// contexts serves every run. Same-size conversion with point sampling reads no row outside
/// its piece, so the rows come out as a whole-picture conversion makes them (a test holds it
/// to that, byte for byte).
final class RowConverter {
    /// The tallest piece converted in one call.
    static let piece = 32
    private let width: Int
    private let sourceFormat: AVPixelFormat
    private let destinationFormat: AVPixelFormat
    private let colour: Scaler.Colour
    private var scalers: [Int: Scaler] = [:]
    private let source = UnsafeMutablePointer<UnsafePointer<UInt8>?>.allocate(capacity: 4)
    private let sourceStrides = UnsafeMutablePointer<Int32>.allocate(capacity: 4)
    private let destination = UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>.allocate(capacity: 4)
    private let destinationStrides = UnsafeMutablePointer<Int32>.allocate(capacity: 4)

    /// A converter of rows `width` pixels wide, or `nil` for formats it does not cut into rows
    /// (only packed BGRA into 8-bit `yuv420p`).
    init?(width: Int, sourceFormat: AVPixelFormat, destinationFormat: AVPixelFormat, colour: Scaler.Colour) {
        guard sourceFormat == AV_PIX_FMT_BGRA, destinationFormat == AV_PIX_FMT_YUV420P, width > 0 else { return nil }
        self.width = width
        self.sourceFormat = sourceFormat
        self.destinationFormat = destinationFormat
        self.colour = colour
        for i in 0..<4 { source[i] = nil; sourceStrides[i] = 0; destination[i] = nil; destinationStrides[i] = 0 }
    }

    deinit {
        source.deallocate()
        sourceStrides.deallocate()
        destination.deallocate()
        destinationStrides.deallocate()
    }

    /// Converts `rows` (even boundaries, inside the picture) of the BGRA picture at `bgra`
    /// (`bgraStride` bytes a row) into the planes `planes`/`strides` of the YUV picture.
    /// Returns `false` when libswscale refused (nothing can be trusted then: convert it all).
    func convert(rows: [Range<Int>], bgra: UnsafePointer<UInt8>, bgraStride: Int,
                 into planes: UnsafePointer<UnsafeMutablePointer<UInt8>?>, strides: UnsafePointer<Int32>) -> Bool {
        for run in rows {
            guard run.lowerBound % 2 == 0 else { return false }
            var top = run.lowerBound
            while top < run.upperBound {
                let height = min(Self.piece, run.upperBound - top)
                guard let scaler = scaler(height: height) else { return false }
                source[0] = bgra + top * bgraStride
                sourceStrides[0] = Int32(bgraStride)
                for plane in 0..<3 {
                    let rowOfPlane = plane == 0 ? top : top / 2
                    destination[plane] = planes[plane].map { $0 + rowOfPlane * Int(strides[plane]) }
                    destinationStrides[plane] = strides[plane]
                }
                guard scaler.scale(source, strides: sourceStrides, rows: Int32(height), into: destination,
                                   strides: destinationStrides) > 0 else { return false }
                top += height
            }
        }
        return true
    }

    private func scaler(height: Int) -> Scaler? {
        if let made = scalers[height] { return made }
        let scaler = Scaler()
        let size = PixelSize(width: width, height: height)
        guard scaler.prepare(Scaler.Shape(sourceSize: size, sourceFormat: sourceFormat.rawValue, destinationSize: size,
                                          destinationFormat: destinationFormat.rawValue, filter: SWS_POINT, colour: colour)) else {
            return nil
        }
        scalers[height] = scaler
        return scaler
    }
}
