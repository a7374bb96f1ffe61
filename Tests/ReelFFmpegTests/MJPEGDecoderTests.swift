import Foundation
import ReelCore
import ReelFFmpeg
import ReelTestSupport
import Testing

@Suite("MJPEG decoder")
struct MJPEGDecoderTests {
    /// A JPEG of one colour made by the ffmpeg CLI, laid out as webcams send them.
    private func jpeg(colour: String, size: String, pixelFormat: String = "yuvj422p") throws -> [UInt8] {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("solid.jpg")
        let r = try Subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "color=c=\(colour):s=\(size)", "-frames:v", "1",
                                    "-pix_fmt", pixelFormat, "-q:v", "2", "-y", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        return try [UInt8](Data(contentsOf: url))
    }

    private func sample(_ frame: VideoFrame, plane: Int) -> Int {
        frame.withUnsafePlane(plane) { bytes, stride in
            let rows = frame.format.rows(plane: plane, height: frame.height)
            let width = frame.format.rowBytes(plane: plane, width: frame.width)
            return Int(bytes[rows / 2 * stride + width / 2])
        }
    }

    @Test(arguments: [("0x3366CC", 0x33, 0x66, 0xCC, "yuvj422p"), ("white", 255, 255, 255, "yuvj420p"), ("black", 0, 0, 0, "yuvj444p")])
    func decodesASolidColourIntoLimitedRange(colour: String, red: Int, green: Int, blue: Int, pixelFormat: String) throws {
        let data = try jpeg(colour: colour, size: "320x240", pixelFormat: pixelFormat)
        let decoder = try #require(try MJPEGDecoder.factory(.mjpeg, PixelSize(width: 320, height: 240)) as? MJPEGDecoder)
        let frame = try #require(try data.withUnsafeBytes {
            try decoder.decode($0, presentationTime: MediaTime(value: 1, timescale: 30), sequenceNumber: 7)
        })
        #expect(frame.format == .yuv420p)
        #expect(frame.size == PixelSize(width: 320, height: 240))
        #expect(frame.presentationTime == MediaTime(value: 1, timescale: 30))
        #expect(frame.sequenceNumber == 7)
        let expected = YUVColor(red: UInt8(red), green: UInt8(green), blue: UInt8(blue))
        #expect(abs(sample(frame, plane: 0) - Int(expected.y)) <= 2, "Y \(sample(frame, plane: 0)) vs \(expected.y)")
        #expect(abs(sample(frame, plane: 1) - Int(expected.cb)) <= 2, "Cb \(sample(frame, plane: 1)) vs \(expected.cb)")
        #expect(abs(sample(frame, plane: 2) - Int(expected.cr)) <= 2, "Cr \(sample(frame, plane: 2)) vs \(expected.cr)")
    }

    @Test func scalesPicturesOfAnotherSize() throws {
        let data = try jpeg(colour: "white", size: "640x480")
        let decoder = try MJPEGDecoder(size: PixelSize(width: 320, height: 240))
        let frame = try #require(try data.withUnsafeBytes { try decoder.decode($0, presentationTime: .zero, sequenceNumber: 0) })
        #expect(frame.size == PixelSize(width: 320, height: 240))
        #expect(abs(sample(frame, plane: 0) - 235) <= 2)
    }

    @Test func damagedDataIsInvalidMediaNotACrash() throws {
        let data = try jpeg(colour: "0x3366CC", size: "320x240")
        let decoder = try MJPEGDecoder(size: PixelSize(width: 320, height: 240))
        var random = SystemRandomNumberGenerator()
        let garbage: [[UInt8]] = [
            [],
            [0x00, 0x01, 0x02, 0x03, 0x04],
            [0xFF, 0xD8] + (0..<4000).map { _ in UInt8.random(in: 0...255, using: &random) },
            Array(data.prefix(40)),
        ]
        for bytes in garbage {
            #expect(throws: ReelError.self) {
                do {
                    _ = try bytes.withUnsafeBytes { try decoder.decode($0, presentationTime: .zero, sequenceNumber: 0) }
                } catch let error as ReelError {
                    #expect(error.code == .invalidMedia, "\(error)")
                    throw error
                }
            }
        }
        // The decoder still works after damaged frames.
        let frame = try data.withUnsafeBytes { try decoder.decode($0, presentationTime: .zero, sequenceNumber: 1) }
        #expect(frame != nil)
    }

    @Test func aFullPoolGivesNilNotAWait() throws {
        let data = try jpeg(colour: "black", size: "64x48")
        let decoder = try MJPEGDecoder(size: PixelSize(width: 64, height: 48), poolCapacity: 2)
        var held: [VideoFrame] = []
        for i in 0..<2 {
            held.append(try #require(try data.withUnsafeBytes { try decoder.decode($0, presentationTime: .zero, sequenceNumber: Int64(i)) }))
        }
        #expect(try data.withUnsafeBytes { try decoder.decode($0, presentationTime: .zero, sequenceNumber: 2) } == nil)
        held.removeAll()
        #expect(try data.withUnsafeBytes { try decoder.decode($0, presentationTime: .zero, sequenceNumber: 3) } != nil)
    }

    @Test func rejectsOddSizes() {
        #expect(throws: ReelError.self) { _ = try MJPEGDecoder(size: PixelSize(width: 321, height: 240)) }
    }
}
