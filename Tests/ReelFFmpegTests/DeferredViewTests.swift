import Foundation
import Testing
import ReelCore
import ReelTestSupport
@testable import ReelFFmpeg

/// A picture whose zoom is left to the encoder (`VideoFrame.view`) is recorded as the same
/// zoom made beforehand would be: the encoder crops, scales and converts in one pass.
@Suite struct DeferredViewTests {
    static let size = PixelSize(width: 320, height: 180)
    static let view = PixelRect(x: 160, y: 90, width: 160, height: 90)

    /// A BGRA picture: a horizontal ramp, with a white square of 20 around (220, 120), in the
    /// view's bottom right quarter.
    static func picture() throws -> VideoFrame {
        try VideoFrame(format: .bgra, size: size) { _, bytes, stride in
            for y in 0..<size.height {
                for x in 0..<size.width {
                    let white = abs(x - 220) < 10 && abs(y - 120) < 10
                    let level = white ? 255 : UInt8(x * 200 / size.width)
                    for c in 0..<3 { bytes[y * stride + x * 4 + c] = level }
                    bytes[y * stride + x * 4 + 3] = 255
                }
            }
        }
    }

    /// The luma of the one picture a file holds after `frames` of `frame` were written into it.
    static func recorded(_ frame: VideoFrame, into url: URL) throws -> [UInt8] {
        let writer = try AssetWriter(configuration: AssetWriter.Configuration(
            url: url, video: AssetWriter.VideoTrack(settings: VideoSettings(codec: .h264, frameRate: FrameRate(30)), inputFormat: .bgra, inputSize: size),
            audio: []))
        for index in Int64(0)..<3 { try #require(try writer.appendVideo(frame, at: FrameRate(30).time(ofFrame: index))) }
        _ = try writer.finish()
        return try #require(try MediaProbe.decodeLuma(url, width: size.width, height: size.height).last).pixels
    }

    @Test func theEncoderZoomsAsTheZoomMadeBeforehandWould() throws {
        let dir = try TemporaryDirectory()
        var marked = try Self.picture()
        marked.view = Self.view
        let made = try #require(ViewResolver(realTime: false).resolve(marked))
        #expect(made.view == nil && made.buffer !== marked.buffer)
        let byEncoder = try Self.recorded(marked, into: dir.url.appendingPathComponent("marked.mp4"))
        let beforehand = try Self.recorded(made, into: dir.url.appendingPathComponent("made.mp4"))
        var whole = marked
        whole.view = nil
        let unzoomed = try Self.recorded(whole, into: dir.url.appendingPathComponent("whole.mp4"))
        func difference(_ a: [UInt8], _ b: [UInt8]) -> Double {
            Double(zip(a, b).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(a.count)
        }
        #expect(difference(byEncoder, beforehand) < 3, "\(difference(byEncoder, beforehand)) levels apart on average")
        #expect(difference(byEncoder, unzoomed) > 20, "the picture was zoomed: \(difference(byEncoder, unzoomed)) from the whole")
        // The square (20 pixels) is twice as large, around (120, 60) of the picture.
        let white = byEncoder.enumerated().filter { $0.element > 235 }.map { (x: $0.offset % Self.size.width, y: $0.offset / Self.size.width) }
        #expect(white.count > 30 * 30 && white.count < 45 * 45, "\(white.count) white pixels")
        #expect(white.allSatisfy { abs($0.x - 120) <= 22 && abs($0.y - 60) <= 22 })
    }
}
