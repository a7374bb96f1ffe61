import ReelCore

/// A V4L2 pixel format code: four characters packed into 32 bits, such as `YUYV` or `MJPG`.
public struct V4L2FourCC: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The code as the kernel stores it (first character in the lowest byte).
    public let rawValue: UInt32

    /// Wraps a code as the kernel stores it.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The code of four ASCII characters, e.g. `"MJPG"`; shorter codes are padded with
    /// spaces. Returns `nil` for more than four characters or non-ASCII text.
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= 4, bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else { return nil }
        let padded = bytes + [UInt8](repeating: 0x20, count: 4 - bytes.count)
        rawValue = padded.enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
    }

    /// Packed YUV 4:2:2, `Y0 Cb Y1 Cr`: what almost every webcam offers uncompressed.
    public static let yuyv = V4L2FourCC("YUYV")!
    /// YUV 4:2:0 with an interleaved CbCr plane.
    public static let nv12 = V4L2FourCC("NV12")!
    /// Motion JPEG: each frame a JPEG image.
    public static let mjpeg = V4L2FourCC("MJPG")!
    /// JPEG (some drivers use it for the same thing as `MJPG`).
    public static let jpeg = V4L2FourCC("JPEG")!
    /// H.264 elementary stream (offered by some webcams; Reel does not capture it).
    public static let h264 = V4L2FourCC("H264")!

    /// The four characters, e.g. `"YUYV"` (trailing spaces kept, as `v4l2-ctl` shows them).
    public var description: String {
        let bytes = (0..<4).map { UInt8(truncatingIfNeeded: rawValue >> (8 * UInt32($0))) }
        return String(decoding: bytes.map { $0 >= 0x20 && $0 < 0x7f ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }

    /// The uncompressed ``PixelFormat`` whose frames hold exactly this layout, if Reel has one.
    public var pixelFormat: PixelFormat? {
        switch self {
        case .yuyv: return .yuyv
        case .nv12: return .nv12
        default: return nil
        }
    }

    /// The compressed format this code carries, if Reel can decode it (with a decoder).
    public var compressedFormat: CompressedVideoFormat? {
        switch self {
        case .mjpeg, .jpeg: return .mjpeg
        default: return nil
        }
    }

    public static func < (lhs: V4L2FourCC, rhs: V4L2FourCC) -> Bool { lhs.description < rhs.description }
}

/// What a V4L2 device node can do (`V4L2_CAP_*`).
public struct V4L2Capabilities: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Single-planar video capture.
    public static let videoCapture = V4L2Capabilities(rawValue: 0x0000_0001)
    /// Video output.
    public static let videoOutput = V4L2Capabilities(rawValue: 0x0000_0002)
    /// Multi-planar video capture (Reel captures single-planar only).
    public static let videoCaptureMultiplanar = V4L2Capabilities(rawValue: 0x0000_1000)
    /// Memory-to-memory processing (a codec, not a camera).
    public static let memoryToMemory = V4L2Capabilities(rawValue: 0x0000_8000)
    /// Metadata capture (the second node of a UVC camera).
    public static let metadataCapture = V4L2Capabilities(rawValue: 0x0080_0000)
    /// `read()`/`write()` I/O.
    public static let readWrite = V4L2Capabilities(rawValue: 0x0100_0000)
    /// Streaming I/O with `mmap`ed buffers.
    public static let streaming = V4L2Capabilities(rawValue: 0x0400_0000)
    /// The extended pixel format fields are valid.
    public static let extendedPixelFormat = V4L2Capabilities(rawValue: 0x0020_0000)
    /// The driver fills in the capabilities of this node separately.
    public static let deviceCapabilities = V4L2Capabilities(rawValue: 0x8000_0000)

    private static let names: [(V4L2Capabilities, String)] = [
        (.videoCapture, "video capture"), (.videoOutput, "video output"),
        (.videoCaptureMultiplanar, "multi-planar video capture"), (.memoryToMemory, "memory-to-memory"),
        (.metadataCapture, "metadata capture"), (.readWrite, "read/write"), (.streaming, "streaming"),
        (.extendedPixelFormat, "extended pixel format"), (.deviceCapabilities, "device capabilities"),
    ]

    /// The names of the capabilities, comma-separated ("video capture, streaming").
    public var description: String {
        let known = Self.names.filter { contains($0.0) }.map(\.1)
        let rest = rawValue & ~Self.names.reduce(0) { $0 | $1.0.rawValue }
        return (known + (rest != 0 ? ["0x" + String(rest, radix: 16)] : [])).joined(separator: ", ")
    }
}
