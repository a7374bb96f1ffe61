internal import CFFmpeg
import ReelCore

/// Converts captured frames into ``LiveFrame``s of one format, size and scaling, through one
/// ``Scaler`` (remade only when the source's shape changes).
///
/// Colours are read the way Reel's frames hold them: YUV frames as limited-range BT.709 (what
/// the sources deliver and the encoder tags; see `YUVColor`), BGRA as full-range RGB. RGB and
/// gray live frames are full range, NV12 limited-range BT.709. Used from one thread at a time.
package final class LiveFrameConverter {
    package let format: LiveFrame.Format
    package let size: PixelSize?
    package let scaling: LiveFrame.Scaling
    private let scaler = Scaler()
    private let sourceData = UnsafeMutablePointer<UnsafePointer<UInt8>?>.allocate(capacity: 4)
    private let sourceStrides = UnsafeMutablePointer<Int32>.allocate(capacity: 4)
    private let destinationData = UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>.allocate(capacity: 4)
    private let destinationStrides = UnsafeMutablePointer<Int32>.allocate(capacity: 4)

    /// A converter into `format` frames that fit or fill `size` (`nil`: the source's size).
    package init(format: LiveFrame.Format, size: PixelSize?, scaling: LiveFrame.Scaling) {
        self.format = format
        self.size = size
        self.scaling = scaling
        for i in 0..<4 { sourceData[i] = nil; destinationData[i] = nil; sourceStrides[i] = 0; destinationStrides[i] = 0 }
    }

    deinit {
        sourceData.deallocate()
        sourceStrides.deallocate()
        destinationData.deallocate()
        destinationStrides.deallocate()
    }

    private var avFormat: AVPixelFormat {
        switch format {
        case .bgra: return AV_PIX_FMT_BGRA
        case .rgba: return AV_PIX_FMT_RGBA
        case .nv12: return AV_PIX_FMT_NV12
        case .gray: return AV_PIX_FMT_GRAY8
        }
    }

    /// `frame`, from `source`, converted.
    ///
    /// - Throws: `.unsupportedFormat` when libswscale cannot make the conversion.
    package func convert(_ frame: VideoFrame, source: SourceID) throws -> LiveFrame {
        // Only NV12's half-size chroma needs an even size: RGB and gray pictures keep an odd one.
        let (crop, outSize) = scaling.layout(source: frame.size, into: size, evenSize: format == .nv12)
        let sourceIsRGB = frame.format == .bgra
        let destinationIsYUV = format == .nv12
        let colour = Scaler.Colour(source: SWS_CS_ITU709, sourceFullRange: sourceIsRGB,
                                   destination: SWS_CS_ITU709, destinationFullRange: !destinationIsYUV)
        let shape = Scaler.Shape(sourceSize: crop.size, sourceFormat: VideoEncoder.avPixelFormat(frame.format).rawValue,
                                 destinationSize: outSize, destinationFormat: avFormat.rawValue,
                                 filter: crop.size == outSize ? SWS_POINT : SWS_BILINEAR, colour: colour)
        guard scaler.prepare(shape) else {
            throw ReelError(.unsupportedFormat, "cannot convert \(frame.format.rawValue) \(crop.size) frames to \(format.rawValue) \(outSize)")
        }
        return try LiveFrame(format: format, size: outSize, presentationTime: frame.presentationTime,
                             sequenceNumber: frame.sequenceNumber, source: source) { planes, strides in
            for i in 0..<4 {
                destinationData[i] = i < planes.count ? planes[i].assumingMemoryBound(to: UInt8.self) : nil
                destinationStrides[i] = i < strides.count ? Int32(strides[i]) : 0
            }
            let rows = withExtendedLifetime(frame) { () -> Int32 in
                for plane in 0..<4 {
                    guard plane < frame.format.planeCount else { sourceData[plane] = nil; sourceStrides[plane] = 0; continue }
                    frame.withUnsafePlane(plane) { bytes, stride in
                        let offset = frame.format.byteOffset(plane: plane, x: crop.x, y: crop.y, stride: stride)
                        sourceData[plane] = bytes.baseAddress.map { UnsafePointer(($0 + offset).assumingMemoryBound(to: UInt8.self)) }
                        sourceStrides[plane] = Int32(stride)
                    }
                }
                return scaler.scale(sourceData, strides: sourceStrides, rows: Int32(crop.height), into: destinationData,
                                    strides: destinationStrides)
            }
            guard rows > 0 else {
                throw ReelError(.encodingFailed, "libswscale converted nothing of a \(frame.format.rawValue) \(frame.size) frame")
            }
        }
    }
}
