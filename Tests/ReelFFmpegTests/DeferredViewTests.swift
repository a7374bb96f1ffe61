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

    /// A view that holds still over a picture whose rows change: the encoder converts only the
    /// output rows the changed rows feed (and nothing for a repeat, or a change outside the
    /// view), and the file is what converting each picture whole makes, exactly (losslessly
    /// encoded, compared decoded). Views at 2x and at an odd ratio (1.6x); changes in the
    /// middle, at the view's top and bottom edges, and outside it.
    @Test(arguments: [PixelRect(x: 160, y: 90, width: 160, height: 90), PixelRect(x: 100, y: 40, width: 200, height: 112)])
    func aViewThatHoldsStillConvertsOnlyWhatChanged(view: PixelRect) throws {
        // Each picture: the ramp, with bands of a checkerboard drawn in over the rows of `bands`.
        func picture(_ bands: [Range<Int>], id: UInt64, base: UInt64?, changed: [Range<Int>], time: Int) throws -> VideoFrame {
            var frame = try VideoFrame(format: .bgra, size: Self.size, presentationTime: FrameRate(30).time(ofFrame: Int64(time))) { _, bytes, stride in
                for y in 0..<Self.size.height {
                    for x in 0..<Self.size.width {
                        let band = bands.first { $0.contains(y) }
                        let level = band.map { UInt8((((x / 3) + y) % 2 == 0) ? 250 : 20 + 40 * ($0.lowerBound % 4)) } ?? UInt8(x * 200 / Self.size.width)
                        bytes[y * stride + x * 4] = level
                        bytes[y * stride + x * 4 + 1] = band == nil ? level : 255 - level
                        bytes[y * stride + x * 4 + 2] = level / 2
                        bytes[y * stride + x * 4 + 3] = 255
                    }
                }
            }
            frame.view = view
            frame.identity = PictureIdentity(id: id, base: base, changedRows: changed)
            return frame
        }
        let middle = (view.y + view.height / 2)..<(view.y + view.height / 2 + 3)
        let top = (view.y - 2)..<(view.y + 1)
        let bottom = (view.y + view.height - 1)..<(view.y + view.height + 4)
        let outside = 0..<(view.y - 10)
        // (bands drawn, rows changed since the last picture)
        let steps: [([Range<Int>], [Range<Int>])] = [([], []), ([], []), ([middle], [middle]), ([middle, top], [top]),
                                                     ([middle, top, outside], [outside]), ([middle, top, outside, bottom], [bottom]),
                                                     ([top, outside, bottom], [middle])]
        func record(keepingIdentity: Bool, into url: URL) throws -> (pictures: [[UInt8]], rows: [Int]) {
            var video = VideoSettings(codec: .h264, frameRate: FrameRate(30))
            video.rateControl = .crf(0)
            let writer = try AssetWriter(configuration: AssetWriter.Configuration(
                url: url, video: AssetWriter.VideoTrack(settings: video, inputFormat: .bgra, inputSize: Self.size), audio: []))
            var rows: [Int] = []
            for (n, step) in steps.enumerated() {
                var frame = try picture(step.0, id: UInt64(n == 1 ? 100 : 100 + n), base: n == 0 ? nil : UInt64(n == 2 ? 100 : 99 + n),
                                        changed: step.1, time: n)
                if !keepingIdentity { frame.identity = nil }
                let before = writer.encoder?.video?.viewRowsMade ?? 0
                try #require(try writer.appendVideo(frame, at: FrameRate(30).time(ofFrame: Int64(n))))
                rows.append((writer.encoder?.video?.viewRowsMade ?? 0) - before)
            }
            _ = try writer.finish()
            return (try MediaProbe.decodeRGB(url, width: Self.size.width, height: Self.size.height), rows)
        }
        let dir = try TemporaryDirectory()
        let partly = try record(keepingIdentity: true, into: dir.url.appendingPathComponent("partly.mp4"))
        let whole = try record(keepingIdentity: false, into: dir.url.appendingPathComponent("whole.mp4"))
        let height = Self.size.height
        #expect(whole.rows == Array(repeating: height, count: steps.count))
        // The first whole, the repeat and the change outside the view nothing, the others a band.
        #expect(partly.rows[0] == height && partly.rows[1] == 0 && partly.rows[4] == 0, "\(partly.rows)")
        for n in [2, 3, 5, 6] { #expect(partly.rows[n] > 0 && partly.rows[n] < height / 2, "picture \(n): \(partly.rows)") }
        try #require(partly.pictures.count == steps.count && whole.pictures.count == steps.count)
        for n in steps.indices {
            let worst = zip(partly.pictures[n], whole.pictures[n]).map { abs(Int($0) - Int($1)) }.max() ?? 0
            let w = Self.size.width * 3
            let badRows = (0..<Self.size.height).filter { y in (0..<w).contains { partly.pictures[n][y * w + $0] != whole.pictures[n][y * w + $0] } }
            #expect(worst == 0, "picture \(n): \(worst) levels from the whole conversion at worst, rows \(badRows.first ?? -1)...\(badRows.last ?? -1) (\(badRows.count)); rows made \(partly.rows)")
        }
        #expect(partly.pictures[2] != partly.pictures[1] && partly.pictures[6] != partly.pictures[5], "the changes show")
    }
}
