import Foundation
import Testing
import ReelCore
import ReelSystem
@testable import ReelFFmpeg
import ReelTestSupport

/// Ending an MKV in place (a recorder whose disk filled, a recovery on a full disk) cuts off
/// only a torn end. A file damaged in the middle (an element that cannot be read, or a
/// cluster whose size runs into the next one, with more of the file after it) is left as it
/// is, nothing written: cut at the damage it lost every cluster after it, where a copy skips
/// the damage and keeps them. On a full disk the recovery says it needs room for the copy.
@Suite(.serialized) struct MatroskaInPlaceEndTests {
    /// A top-level element of a Matroska Segment: where it starts, its size field, its end.
    struct Child { var id: UInt32; var offset: Int; var sizeField: Range<Int>; var end: Int }

    /// The Segment's children of the MKV `data`, parsed here (not with the code under test).
    static func segmentChildren(_ data: Data) -> [Child] {
        let bytes = [UInt8](data)
        func vint(at i: Int, keepMarker: Bool) -> (value: UInt64, length: Int)? {
            guard i < bytes.count, bytes[i] != 0 else { return nil }
            let length = bytes[i].leadingZeroBitCount + 1
            guard i + length <= bytes.count else { return nil }
            var value = UInt64(keepMarker ? bytes[i] : bytes[i] & (0xFF >> UInt8(length)))
            for b in bytes[(i + 1)..<(i + length)] { value = value << 8 | UInt64(b) }
            return (value, length)
        }
        // The EBML header, then the Segment (its size unknown: cut off).
        guard let headerID = vint(at: 0, keepMarker: true), let headerSize = vint(at: headerID.length, keepMarker: false) else { return [] }
        let segment = headerID.length + headerSize.length + Int(headerSize.value)
        guard let segmentID = vint(at: segment, keepMarker: true), let segmentSize = vint(at: segment + segmentID.length, keepMarker: false) else { return [] }
        var offset = segment + segmentID.length + segmentSize.length
        var children: [Child] = []
        while let id = vint(at: offset, keepMarker: true), let size = vint(at: offset + id.length, keepMarker: false) {
            let field = (offset + id.length)..<(offset + id.length + size.length)
            let end = field.upperBound + Int(size.value)
            children.append(Child(id: UInt32(id.value), offset: offset, sizeField: field, end: end))
            guard end <= bytes.count else { break }
            offset = end
        }
        return children
    }

    /// The pictures' counters of `url` (320x240 test pattern), in order.
    static func counters(_ url: URL) throws -> [Int64] {
        try MediaProbe.decodeLuma(url, width: 320, height: 240).compactMap(\.counter)
    }

    @Test(arguments: ["an unreadable element", "a cluster's size running into the next"])
    func damageInTheMiddleIsLeftForTheCopy(_ damage: String) throws {
        let dir = try TemporaryDirectory()
        let source = dir.url.appendingPathComponent("source.mkv")
        try RecoveryTests.cutOff(source, frames: 300, container: .mkv)
        let original = try Data(contentsOf: source)
        let clusters = Self.segmentChildren(original).filter { $0.id == RecordingStructure.clusterID }
        try #require(clusters.count >= 4, "\(clusters.count) clusters")
        let hit = clusters[clusters.count / 2]
        var damaged = original
        if damage == "an unreadable element" {
            // Its ID's first byte gone: no element can be read there.
            damaged[hit.offset] = 0
        } else {
            // Its size (an 8-byte field or shorter) made as large as its field holds: it runs
            // past the end of the file, over the clusters after it.
            let field = hit.sizeField
            damaged[field.lowerBound] = UInt8(0x80 >> (field.count - 1))
            for i in (field.lowerBound + 1)..<field.upperBound { damaged[i] = 0xFF }
            damaged[field.upperBound - 1] = 0xFE
        }
        let url = dir.url.appendingPathComponent("damaged.mkv")
        try damaged.write(to: url)
        #expect(Recovery.isCutOff(url))

        // Not ended in place: left as it was, nothing written.
        let error = try #require(throws: ReelError.self) { try MatroskaInPlaceEnd.end(url) }
        #expect(error.code == .invalidMedia && error.message.contains("damaged at byte"), "\(error)")
        #expect(try Data(contentsOf: url) == damaged, "left as it was")

        // A copy skips the damage and keeps the clusters after it.
        let copy = dir.url.appendingPathComponent("copy.mkv")
        _ = try Recovery.recover(url, to: copy)
        let all = try Self.counters(source)
        let kept = try Self.counters(copy)
        let after = try #require(clusters.last).offset
        #expect(kept.count > all.count / 2 && kept.last == all.last,
                "\(kept.count) of \(all.count) frames kept by the copy, the last \(kept.last ?? -1) (the damage at \(hit.offset), the last cluster at \(after))")

        // On a full disk: no room for the copy, and not ended in place; the error says both,
        // and the file is as it was.
        let disk = try SmallDisk(size: "\(damaged.count / 1024 + 64)k")
        let full = disk.url.appendingPathComponent("full.mkv")
        try damaged.write(to: full)
        _ = try Subprocess.run(["sh", "-c", "cat /dev/zero > '\(disk.url.appendingPathComponent("filler").path)'"])
        let refused = try #require(throws: ReelError.self) { try Recovery.recover(full) }
        #expect(refused.code == .insufficientStorage, "\(refused)")
        #expect(refused.message.contains("nor can it be ended where it is") && refused.message.contains("damaged at byte"), "\(refused)")
        #expect(try Data(contentsOf: full) == damaged, "left as it was")
        let hidden = try FileManager.default.contentsOfDirectory(atPath: disk.url.path).filter { $0.hasPrefix(".") }
        #expect(hidden.isEmpty, "\(hidden)")
    }

    /// The same file with a torn end and no damage is still ended in place: the torn cluster
    /// keeps its whole blocks, the file plays every frame before them.
    @Test func aTornEndIsStillCutOff() throws {
        let dir = try TemporaryDirectory()
        let source = dir.url.appendingPathComponent("source.mkv")
        try RecoveryTests.cutOff(source, frames: 300, container: .mkv)
        let original = try Data(contentsOf: source)
        let last = try #require(Self.segmentChildren(original).last { $0.id == RecordingStructure.clusterID })
        let url = dir.url.appendingPathComponent("torn.mkv")
        // Cut in the middle of the last cluster.
        try original.prefix((last.offset + last.end) / 2).write(to: url)
        let ended = try MatroskaInPlaceEnd.end(url)
        #expect(ended.leftOutBytes > 0)
        #expect(Recovery.isFinished(url))
        #expect(try RecoveryTests.decodeErrors(url) == "")
        let counters = try Self.counters(url)
        #expect(counters.count > 200 && counters == (0..<Int64(counters.count)).map { $0 }, "\(counters.count) frames")
    }
}
