import Foundation
import Testing
import ReelCore
import ReelFFmpeg

/// A filter applied by application code to a picture it holds (Core Image's `outputImage`):
/// every live-frame layout and a recorder's frame, chains, the original left alone, and a
/// filter that gives no picture.
@Suite struct FilterApplyTests {
    static let size = PixelSize(width: 64, height: 48)

    /// A live frame of one colour: `rgb` for the RGB layouts, its BT.709 limited-range Y′CbCr for
    /// NV12, its luma for grey.
    static func live(_ format: LiveFrame.Format, red: UInt8, green: UInt8, blue: UInt8) -> LiveFrame {
        LiveFrame(format: format, size: size, presentationTime: MediaTime(value: 1, timescale: 30), sequenceNumber: 1,
                  source: SourceID(3)) { planes, bytesPerRow in
            let yuv = YUVColor(red: red, green: green, blue: blue)
            for y in 0..<size.height {
                let row = planes[0] + y * bytesPerRow[0]
                for x in 0..<size.width {
                    switch format {
                    case .rgba: row.storeBytes(of: (red, green, blue, UInt8(255)), toByteOffset: x * 4, as: (UInt8, UInt8, UInt8, UInt8).self)
                    case .bgra: row.storeBytes(of: (blue, green, red, UInt8(255)), toByteOffset: x * 4, as: (UInt8, UInt8, UInt8, UInt8).self)
                    case .gray: row.storeBytes(of: red, toByteOffset: x, as: UInt8.self)
                    case .nv12: row.storeBytes(of: yuv.y, toByteOffset: x, as: UInt8.self)
                    }
                }
                if format == .nv12, y < size.height / 2 {
                    let chroma = planes[1] + y * bytesPerRow[1]
                    for x in 0..<(size.width / 2) {
                        chroma.storeBytes(of: yuv.cb, toByteOffset: 2 * x, as: UInt8.self)
                        chroma.storeBytes(of: yuv.cr, toByteOffset: 2 * x + 1, as: UInt8.self)
                    }
                }
            }
        }
    }

    @Test(arguments: [LiveFrame.Format.rgba, .bgra, .nv12])
    func monoTakesTheColourOutOfALiveFrame(_ format: LiveFrame.Format) throws {
        let red = Self.live(format, red: 220, green: 30, blue: 30)
        let mono = try VideoFilter.look(.mono).apply(to: red)
        #expect(mono.format == format && mono.size == red.size)
        #expect(mono.presentationTime == red.presentationTime && mono.sequenceNumber == 1 && mono.source == SourceID(3))
        let p = mono.pixel(x: 10, y: 10)
        switch format {
        case .rgba, .bgra: #expect(abs(Int(p[0]) - Int(p[2])) <= 3 && abs(Int(p[0]) - Int(p[1])) <= 3, "\(p)")
        case .nv12: #expect(abs(Int(p[1]) - 128) <= 2 && abs(Int(p[2]) - 128) <= 2, "\(p)")
        case .gray: break
        }
        let before = red.pixel(x: 10, y: 10)
        #expect(before != p, "the original frame is left as it was")
        // Again, with the graph kept from the first time.
        #expect(try VideoFilter.look(.mono).apply(to: red).pixel(x: 10, y: 10) == p)
    }

    @Test func aGreyFrameIsNegatedWholly() throws {
        let grey = Self.live(.gray, red: 40, green: 40, blue: 40)
        let negated = try VideoFilter(graph: "negate").apply(to: grey)
        #expect(negated.pixel(x: 0, y: 0) == [215])
        #expect(negated.pixel(x: 63, y: 47) == [215])
    }

    @Test func aChainAppliesInOrderToARecordersFrame() throws {
        let frame = try VideoFrame(format: .yuv420p, size: Self.size, presentationTime: MediaTime(value: 2, timescale: 30),
                                   sequenceNumber: 2) { plane, bytes, stride in
            let value: UInt8 = plane == 0 ? 60 : (plane == 1 ? 200 : 90)
            for y in 0..<PixelFormat.yuv420p.rows(plane: plane, height: Self.size.height) {
                for x in 0..<PixelFormat.yuv420p.rowBytes(plane: plane, width: Self.size.width) { bytes[y * stride + x] = value }
            }
        }
        let filtered = try [VideoFilter.look(.mono), try VideoFilter(graph: "negate")].apply(to: frame)
        #expect(filtered.format == .yuv420p && filtered.size == Self.size && filtered.sequenceNumber == 2)
        filtered.withUnsafePlane(0) { bytes, _ in #expect(abs(Int(bytes[0]) - (255 - 60)) <= 2, "negated luma \(bytes[0])") }
        filtered.withUnsafePlane(1) { bytes, _ in #expect(abs(Int(bytes[0]) - 128) <= 2, "no colour: \(bytes[0])") }
        frame.withUnsafePlane(0) { bytes, _ in #expect(bytes[0] == 60, "the original is untouched") }
        #expect(try [VideoFilter]().apply(to: frame).sequenceNumber == 2)
    }

    @Test func aFilterThatGivesNoPictureIsAClearError() throws {
        let grey = Self.live(.gray, red: 40, green: 40, blue: 40)
        let error = #expect(throws: ReelError.self) { try VideoFilter(graph: "select='gte(n,5)'").apply(to: grey) }
        #expect(error?.code == .invalidConfiguration)
        // Said when the filter is made (it is tried on pictures first: it drops some) or when it
        // is applied.
        let message = error?.message ?? ""
        #expect(message.contains("gave no picture") || message.contains("does not give one picture for each"), "\(message)")
    }
}
