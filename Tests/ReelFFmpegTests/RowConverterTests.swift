internal import CFFmpeg
import Foundation
import ReelCore
@testable import ReelFFmpeg
import Testing

/// Converting only the rows a screen capture says changed gives the very bytes a whole
/// conversion gives, so an encoder that keeps its last picture and converts the changed rows
/// into it encodes what it would have encoded anyway.
@Suite struct RowConverterTests {
    static let colour = Scaler.Colour(source: SWS_CS_ITU709, sourceFullRange: true, destination: SWS_CS_ITU709, destinationFullRange: false)

    /// A 4:2:0 picture's three planes, tightly packed.
    struct Planes {
        var y: [UInt8], u: [UInt8], v: [UInt8]
        init(width: Int, height: Int) {
            y = Array(repeating: 0, count: width * height)
            u = Array(repeating: 0, count: width / 2 * height / 2)
            v = u
        }
    }

    /// BGRA noise whose rows in `changed` are drawn from `seed` and the others from 1.
    static func picture(width: Int, height: Int, seed: UInt64, changed: [Range<Int>] = []) -> [UInt8] {
        var bytes = [UInt8](repeating: 255, count: width * height * 4)
        for row in 0..<height {
            var state = (changed.contains { $0.contains(row) } ? seed : 1) &* 6_364_136_223_846_793_005 &+ UInt64(row)
            for column in 0..<width {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                bytes[(row * width + column) * 4] = UInt8(truncatingIfNeeded: state >> 33)
                bytes[(row * width + column) * 4 + 1] = UInt8(truncatingIfNeeded: state >> 41)
                bytes[(row * width + column) * 4 + 2] = UInt8(truncatingIfNeeded: state >> 49)
            }
        }
        return bytes
    }

    /// Runs `body` with the planes' pointers and strides as libswscale takes them.
    static func withPlanes<R>(_ planes: inout Planes, width: Int,
                              _ body: (UnsafePointer<UnsafeMutablePointer<UInt8>?>, UnsafePointer<Int32>) -> R) -> R {
        planes.y.withUnsafeMutableBufferPointer { y in
            planes.u.withUnsafeMutableBufferPointer { u in
                planes.v.withUnsafeMutableBufferPointer { v in
                    let pointers: [UnsafeMutablePointer<UInt8>?] = [y.baseAddress, u.baseAddress, v.baseAddress, nil]
                    let strides: [Int32] = [Int32(width), Int32(width / 2), Int32(width / 2), 0]
                    return body(pointers, strides)
                }
            }
        }
    }

    /// The whole picture converted as the encoder converts it.
    static func whole(_ bgra: [UInt8], width: Int, height: Int) -> Planes {
        var out = Planes(width: width, height: height)
        let converter = RowConverter(width: width, sourceFormat: AV_PIX_FMT_BGRA, destinationFormat: AV_PIX_FMT_YUV420P, colour: colour)
        let converted = bgra.withUnsafeBufferPointer { source in
            withPlanes(&out, width: width) {
                converter?.convert(rows: [0..<height], bgra: source.baseAddress!, bgraStride: width * 4, into: $0, strides: $1)
            }
        }
        #expect(converted == true)
        return out
    }

    /// The whole picture converted by libswscale with point sampling (what the encoder used
    /// before it had a converter of its own).
    static func swscale(_ bgra: [UInt8], width: Int, height: Int) -> Planes {
        var out = Planes(width: width, height: height)
        let scaler = Scaler()
        let size = PixelSize(width: width, height: height)
        #expect(scaler.prepare(Scaler.Shape(sourceSize: size, sourceFormat: AV_PIX_FMT_BGRA.rawValue, destinationSize: size,
                                            destinationFormat: AV_PIX_FMT_YUV420P.rawValue, filter: SWS_POINT, colour: colour)))
        bgra.withUnsafeBufferPointer { source in
            let pointers: [UnsafePointer<UInt8>?] = [source.baseAddress, nil, nil, nil]
            let strides: [Int32] = [Int32(width * 4), 0, 0, 0]
            _ = withPlanes(&out, width: width) { scaler.scale(pointers, strides: strides, rows: Int32(height), into: $0, strides: $1) }
        }
        return out
    }

    @Test(arguments: [(PixelSize(width: 320, height: 240), [0..<2, 10..<48, 64..<66, 200..<240]),
                      (PixelSize(width: 1920, height: 1080), [100..<460, 1078..<1080]),
                      (PixelSize(width: 640, height: 362), [0..<362])])
    func changedRowsConvertedIntoTheLastPictureMatchAWholeConversion(size: PixelSize, rows: [Range<Int>]) throws {
        let (width, height) = (size.width, size.height)
        let before = Self.picture(width: width, height: height, seed: 1)
        let after = Self.picture(width: width, height: height, seed: 7, changed: rows)
        var kept = Self.whole(before, width: width, height: height)
        let converter = try #require(RowConverter(width: width, sourceFormat: AV_PIX_FMT_BGRA, destinationFormat: AV_PIX_FMT_YUV420P,
                                                  colour: Self.colour))
        let converted = after.withUnsafeBufferPointer { source in
            Self.withPlanes(&kept, width: width) {
                converter.convert(rows: rows, bgra: source.baseAddress!, bgraStride: width * 4, into: $0, strides: $1)
            }
        }
        #expect(converted)
        let expected = Self.whole(after, width: width, height: height)
        #expect(kept.y == expected.y, "luma of the changed rows as a whole conversion makes it")
        #expect(kept.u == expected.u && kept.v == expected.v, "chroma too")
        #expect(kept.y != Self.whole(before, width: width, height: height).y, "the rows did change")
    }

    /// Noise, every grey, and gradients through every value of each channel.
    static func testCard(width: Int, height: Int) -> [UInt8] {
        var bytes = picture(width: width, height: height, seed: 5)
        for row in 0..<height / 2 {
            for column in 0..<width {
                let i = (row * width + column) * 4
                switch row % 4 {
                case 0: (bytes[i], bytes[i + 1], bytes[i + 2]) = (UInt8(column & 255), UInt8(column & 255), UInt8(column & 255))
                case 1: (bytes[i], bytes[i + 1], bytes[i + 2]) = (UInt8(column & 255), UInt8(row & 255), UInt8((column + row) & 255))
                case 2: (bytes[i], bytes[i + 1], bytes[i + 2]) = (UInt8(255 - column & 255), UInt8(column / 3 & 255), UInt8(row & 255))
                default: (bytes[i], bytes[i + 1], bytes[i + 2]) = (UInt8(row & 255), UInt8(255 - column & 255), UInt8(column & 255))
                }
            }
        }
        return bytes
    }

    /// Reel's conversion is libswscale's to within 1 in every sample (the bar for
    /// replacing it), at sizes whose rows are and are not a multiple of the vector width.
    @Test(arguments: [PixelSize(width: 1920, height: 1080), PixelSize(width: 642, height: 362), PixelSize(width: 2, height: 2)])
    func withinOneOfLibswscale(size: PixelSize) throws {
        let bgra = Self.testCard(width: size.width, height: size.height)
        let ours = Self.whole(bgra, width: size.width, height: size.height)
        let theirs = Self.swscale(bgra, width: size.width, height: size.height)
        for (name, a, b) in [("Y", ours.y, theirs.y), ("U", ours.u, theirs.u), ("V", ours.v, theirs.v)] {
            let worst = zip(a, b).map { abs(Int($0) - Int($1)) }.max() ?? 0
            #expect(worst <= 1, "\(name) differs by up to \(worst) at \(size)")
        }
    }

    /// BT.709 limited range's reference values: black and white at 16 and 235, grey's chroma
    /// at 128, and the primaries where the standard puts them.
    @Test func primariesAndGreysLandOnTheStandardsValues() throws {
        let colours: [(b: UInt8, g: UInt8, r: UInt8, y: UInt8, u: UInt8, v: UInt8)] = [
            (0, 0, 0, 16, 128, 128), (255, 255, 255, 235, 128, 128), (128, 128, 128, 126, 128, 128),
            (0, 0, 255, 63, 102, 240), (0, 255, 0, 173, 42, 26), (255, 0, 0, 32, 240, 118),
        ]
        for c in colours {
            var bgra = [UInt8](repeating: 255, count: 4 * 4 * 4)
            for p in 0..<16 { (bgra[p * 4], bgra[p * 4 + 1], bgra[p * 4 + 2]) = (c.b, c.g, c.r) }
            let out = Self.whole(bgra, width: 4, height: 4)
            #expect(out.y.allSatisfy { $0 == c.y } && out.u.allSatisfy { $0 == c.u } && out.v.allSatisfy { $0 == c.v },
                    "BGR \(c.b),\(c.g),\(c.r): Y \(out.y[0]) U \(out.u[0]) V \(out.v[0]), the standard says \(c.y) \(c.u) \(c.v)")
        }
        #expect(["avx2", "sse4.1", "default"].contains(RowConverter.variant))
    }

    @Test func rowsAtOddBoundariesAreRefused() throws {
        let converter = try #require(RowConverter(width: 64, sourceFormat: AV_PIX_FMT_BGRA, destinationFormat: AV_PIX_FMT_YUV420P,
                                                  colour: Self.colour))
        var planes = Planes(width: 64, height: 64)
        let bgra = Self.picture(width: 64, height: 64, seed: 3)
        let converted = bgra.withUnsafeBufferPointer { source in
            Self.withPlanes(&planes, width: 64) { converter.convert(rows: [3..<9], bgra: source.baseAddress!, bgraStride: 256, into: $0, strides: $1) }
        }
        #expect(!converted, "a run starting on an odd row would split a chroma row")
        #expect(RowConverter(width: 64, sourceFormat: AV_PIX_FMT_NV12, destinationFormat: AV_PIX_FMT_YUV420P, colour: Self.colour) == nil)
    }
}
