import Foundation
import Testing
import ReelCore
import ReelFFmpeg

/// Colours survive the trip between Reel's YUV (limited-range BT.709, what the encoder tags
/// and what `YUVColor(red:green:blue:)` makes) and BGRA through ``FrameScaler``, both ways: a
/// YUV red drawn into BGRA is red, not BT.601's reading of it (R = 232, a green cast).
@Suite struct FrameScalerColourTests {
    static let size = PixelSize(width: 16, height: 16)

    /// The B, G, R of the middle pixel of a BGRA frame.
    func bgr(_ frame: VideoFrame) -> (b: Int, g: Int, r: Int) {
        frame.withUnsafePlane(0) { bytes, stride in
            let at = 8 * stride + 8 * 4
            return (Int(bytes[at]), Int(bytes[at + 1]), Int(bytes[at + 2]))
        }
    }

    @Test(arguments: [("red", YUVColor.red, (0, 0, 255)), ("green", YUVColor.green, (0, 255, 0)), ("blue", YUVColor.blue, (255, 0, 0)),
                      ("white", YUVColor(y: 235, cb: 128, cr: 128), (255, 255, 255)), ("black", YUVColor.black, (0, 0, 0))])
    func yuvBecomesTheSameColourInBGRA(name: String, colour: YUVColor, expected: (Int, Int, Int)) throws {
        for format in [PixelFormat.yuv420p, .nv12] {
            let source = try VideoFrame(format: format, size: Self.size) { _, _, _ in }
            source.fill(with: colour)
            let destination = try VideoFrame(format: .bgra, size: Self.size) { _, _, _ in }
            try FrameScaler().draw(source, into: destination, at: PixelRect(x: 0, y: 0, width: 16, height: 16))
            let got = bgr(destination)
            #expect(abs(got.b - expected.0) <= 3 && abs(got.g - expected.1) <= 3 && abs(got.r - expected.2) <= 3,
                    "\(name) from \(format): BGR \(got), expected \(expected)")
        }
    }

    @Test func bgraRedBecomesBT709RedAndBack() throws {
        let source = try VideoFrame(format: .bgra, size: Self.size) { _, bytes, _ in
            for i in stride(from: 0, to: bytes.count, by: 4) { bytes[i] = 0; bytes[i + 1] = 0; bytes[i + 2] = 255; bytes[i + 3] = 255 }
        }
        let yuv = try VideoFrame(format: .yuv420p, size: Self.size) { _, _, _ in }
        try FrameScaler().draw(source, into: yuv, at: PixelRect(x: 0, y: 0, width: 16, height: 16))
        let red = YUVColor.red
        let (y, cb, cr) = (yuv.withUnsafePlane(0) { b, s in Int(b[8 * s + 8]) }, yuv.withUnsafePlane(1) { b, s in Int(b[4 * s + 4]) },
                           yuv.withUnsafePlane(2) { b, s in Int(b[4 * s + 4]) })
        #expect(abs(y - Int(red.y)) <= 2 && abs(cb - Int(red.cb)) <= 2 && abs(cr - Int(red.cr)) <= 2, "YUV \(y) \(cb) \(cr), expected \(red)")
        let back = try VideoFrame(format: .bgra, size: Self.size) { _, _, _ in }
        try FrameScaler().draw(yuv, into: back, at: PixelRect(x: 0, y: 0, width: 16, height: 16))
        let got = bgr(back)
        #expect(got.r >= 250 && got.g <= 5 && got.b <= 5, "red came back as BGR \(got)")
    }

    /// The preview window's framebuffer: a picture drawn into packed RGB memory the caller owns,
    /// scaled (two steps for 4:2:0: the planes, then the colours) or not, in either byte order,
    /// is the picture ``FrameScaler/draw(_:crop:into:at:)`` makes into a BGRA frame, and has
    /// its colours where they were (red left, blue right).
    @Test(arguments: [PixelSize(width: 48, height: 36), PixelSize(width: 64, height: 48), PixelSize(width: 32, height: 24),
                      PixelSize(width: 38, height: 28), PixelSize(width: 64 + 22, height: 64)])
    func aPictureDrawnIntoPackedMemoryIsTheOneDrawnIntoAFrame(size: PixelSize) throws {
        let source = try VideoFrame(format: .yuv420p, size: PixelSize(width: 64, height: 48)) { _, _, _ in }
        source.fill(with: .blue)
        source.fill(PixelRect(x: 0, y: 0, width: 32, height: 48), with: .red)
        let reference = try VideoFrame(format: .bgra, size: size) { _, _, _ in }
        try FrameScaler(quality: .fastBilinear).draw(source, into: reference, at: PixelRect(x: 0, y: 0, width: size.width, height: size.height))
        let stride = size.width * 4 + 64   // rows further apart than the picture is wide, as a window's are
        for order in [FrameScaler.PackedOrder.bgra, .rgba] {
            // A row of guard bytes after the last: nothing is written past the picture's end.
            let memory = UnsafeMutableRawPointer.allocate(byteCount: stride * (size.height + 1), alignment: 64)
            defer { memory.deallocate() }
            memory.initializeMemory(as: UInt8.self, repeating: 7, count: stride * (size.height + 1))
            let scaler = FrameScaler(quality: .fastBilinear)
            for _ in 0..<2 {   // drawn again with the same shape: the same picture
                try scaler.draw(source, intoPacked: memory, order: order, stride: stride, size: size)
            }
            let bytes = memory.assumingMemoryBound(to: UInt8.self)
            var largest = 0
            reference.withUnsafePlane(0) { ref, refStride in
                for y in 0..<size.height {
                    for x in 0..<size.width {
                        let (b, g, r) = (Int(ref[y * refStride + x * 4]), Int(ref[y * refStride + x * 4 + 1]), Int(ref[y * refStride + x * 4 + 2]))
                        let at = y * stride + x * 4
                        let got = order == .bgra ? (Int(bytes[at]), Int(bytes[at + 1]), Int(bytes[at + 2]))
                                                 : (Int(bytes[at + 2]), Int(bytes[at + 1]), Int(bytes[at]))
                        largest = max(largest, abs(got.0 - b), abs(got.1 - g), abs(got.2 - r))
                    }
                    // Nothing past the picture's width is touched.
                    #expect((size.width * 4..<stride).allSatisfy { bytes[y * stride + $0] == 7 }, "row \(y) written past its width")
                }
            }
            #expect((0..<stride).allSatisfy { bytes[size.height * stride + $0] == 7 }, "written past the picture's last row")
            #expect(largest <= 24, "\(order) at \(size): differs from the frame's picture by up to \(largest)")
            let left = order == .bgra ? (Int(bytes[4 * stride + 8]), Int(bytes[4 * stride + 10])) : (Int(bytes[4 * stride + 10]), Int(bytes[4 * stride + 8]))
            let rightAt = 4 * stride + (size.width - 3) * 4
            let right = order == .bgra ? (Int(bytes[rightAt]), Int(bytes[rightAt + 2])) : (Int(bytes[rightAt + 2]), Int(bytes[rightAt]))
            #expect(left.1 > 230 && left.0 < 25, "\(order): red on the left, (B, R) \(left)")
            #expect(right.0 > 230 && right.1 < 25, "\(order): blue on the right, (B, R) \(right)")
        }
    }
}
