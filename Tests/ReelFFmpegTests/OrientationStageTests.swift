import Foundation
import Testing
import ReelCore
@testable import ReelFFmpeg

/// The orientation stage moves every pixel of every plane where the turn and the mirror put
/// it, for each picture layout (1-byte planes, NV12's 2-byte CbCr pairs, BGRA's 4-byte pixels),
/// and makes YUYV 4:2:0 first.
@Suite struct OrientationStageTests {
    /// A picture whose every sample says where it is: (plane, x, y) folded into a byte.
    static func numbered(_ format: PixelFormat, _ size: PixelSize) throws -> VideoFrame {
        try VideoFrame(format: format, size: size) { plane, bytes, stride in
            let rows = format.rows(plane: plane, height: size.height)
            for y in 0..<rows {
                for x in 0..<format.rowBytes(plane: plane, width: size.width) {
                    bytes[y * stride + x] = UInt8(truncatingIfNeeded: plane * 97 + y * 31 + x * 7)
                }
            }
        }
    }

    /// The bytes of the pixel at (x, y) of `plane`, `unit` bytes wide.
    static func pixel(_ frame: VideoFrame, plane: Int, x: Int, y: Int, unit: Int) -> [UInt8] {
        frame.withUnsafePlane(plane) { bytes, stride in Array(bytes[(y * stride + x * unit)..<(y * stride + x * unit + unit)]) }
    }

    /// Where destination (x, y) of a `width` x `height` plane reads from, turned then mirrored.
    static func source(of x: Int, _ y: Int, width: Int, height: Int, _ turn: VideoOrientation, mirrored: Bool) -> (Int, Int) {
        let outWidth = turn.swapsWidthAndHeight ? height : width
        let mx = mirrored ? outWidth - 1 - x : x
        switch turn {
        case .upright: return (mx, y)
        case .clockwise90: return (y, height - 1 - mx)
        case .upsideDown: return (width - 1 - mx, height - 1 - y)
        case .counterclockwise90: return (width - 1 - y, mx)
        }
    }

    @Test(arguments: [PixelFormat.yuv420p, .nv12, .bgra])
    func everyPixelLandsWhereTheTurnPutsIt(_ format: PixelFormat) throws {
        let size = PixelSize(width: 8, height: 6)
        let frame = try Self.numbered(format, size)
        for turn in VideoOrientation.allCases {
            for mirrored in [false, true] {
                let control = OrientationControl()
                control.request(orientation: turn, mirrored: mirrored)
                let out = try #require(OrientationStage(control: control, realTime: false).apply(to: frame))
                #expect(out.format == format && out.size == turn.turned(size))
                for plane in 0..<format.planeCount {
                    let unit = format == .bgra ? 4 : (format == .nv12 && plane == 1 ? 2 : 1)
                    let width = format.rowBytes(plane: plane, width: size.width) / unit
                    let height = format.rows(plane: plane, height: size.height)
                    let outWidth = turn.swapsWidthAndHeight ? height : width, outHeight = turn.swapsWidthAndHeight ? width : height
                    for y in 0..<outHeight {
                        for x in 0..<outWidth {
                            let (sx, sy) = Self.source(of: x, y, width: width, height: height, turn, mirrored: mirrored)
                            #expect(Self.pixel(out, plane: plane, x: x, y: y, unit: unit) == Self.pixel(frame, plane: plane, x: sx, y: sy, unit: unit),
                                    "\(format) \(turn) mirrored \(mirrored) plane \(plane) at \(x),\(y)")
                        }
                    }
                }
            }
        }
    }

    @Test func anUprightUnmirroredPictureIsPassedOnAsItIs() throws {
        let frame = try Self.numbered(.yuv420p, PixelSize(width: 8, height: 6))
        let out = try #require(OrientationStage(control: OrientationControl(), realTime: false).apply(to: frame))
        #expect(out.buffer === frame.buffer, "no copy")
    }

    @Test func yuyvIsMadeFourTwoZeroAndTurned() throws {
        let size = PixelSize(width: 8, height: 6)
        let frame = try VideoFrame(format: .yuyv, size: size) { _, bytes, stride in
            for y in 0..<size.height {
                for x in 0..<(size.width / 2) {
                    // Luma 60 on the left half, 180 on the right; neutral chroma.
                    let luma: UInt8 = x < size.width / 4 ? 60 : 180
                    bytes[y * stride + x * 4] = luma
                    bytes[y * stride + x * 4 + 1] = 128
                    bytes[y * stride + x * 4 + 2] = luma
                    bytes[y * stride + x * 4 + 3] = 128
                }
            }
        }
        let control = OrientationControl()
        control.request(orientation: .clockwise90, mirrored: false)
        let out = try #require(OrientationStage(control: control, realTime: false).apply(to: frame))
        #expect(out.format == .yuv420p && out.size == PixelSize(width: 6, height: 8))
        #expect(OrientationControl.format(.video(size: size, pixelFormat: .yuyv, frameRate: FrameRate(30)), orientation: .clockwise90, mirrored: false)
                == .video(size: out.size, pixelFormat: .yuv420p, frameRate: FrameRate(30)))
        // The left half is now the top.
        #expect(abs(Int(Self.pixel(out, plane: 0, x: 3, y: 1, unit: 1)[0]) - 60) <= 2)
        #expect(abs(Int(Self.pixel(out, plane: 0, x: 3, y: 6, unit: 1)[0]) - 180) <= 2)
    }
}
