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
}
