import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

/// Ends a cut-off MKV or WebM recording where it is, with no room on the disk: what a recorder
/// whose disk filled does with its own file, and what a recovery in place falls back to when
/// the disk has no room for the copy it makes.
///
/// libavformat writes a recording's Segment with an unknown size (eight bytes), then its
/// clusters whole, one after another; a clean stop writes the Cues after them, the Segment's
/// size and the duration into the room the header kept for it. A cut-off file keeps its
/// complete clusters, the last perhaps torn. Ended in place:
/// 1. the torn end (an element that runs past the end of the file) is cut off: of a torn
///    cluster, what follows its last whole block, the cluster's size then made to say so;
/// 2. the Segment gets its size, over the unknown one (the file is then complete, as a
///    finished one, to ``RecordingStructure``);
/// 3. the duration, the end of the last packet, goes into the header's room for it (an 11-byte
///    Void in Info), if it has one.
///
/// No Cues are written (they would need room past the end): the file plays from its start and
/// seeks by reading (players find the clusters), as any cut-off MKV did. Each step leaves a
/// file that plays.
///
/// Only a torn end is cut off: an element that runs past the end of the file, or a header the
/// end of the file cuts (or a blank end). An element that cannot be read with more of the file
/// after it is damage in the middle: cut there, every cluster after it would be lost, where a
/// copy (``Recovery``) skips the damage and keeps them. Such a file is left as it is, nothing
/// written, and the error says so. (It was cut at the damage.)
enum MatroskaInPlaceEnd {
    private static let infoID: UInt32 = 0x1549_A966
    private static let voidID: UInt32 = 0xEC
    private static let timecodeScaleID: UInt32 = 0x2A_D7B1
    private static let simpleBlockID: UInt32 = 0xA3
    private static let blockGroupID: UInt32 = 0xA0
    /// What a Segment holds (SeekHead, Info, Tracks, Chapters, Cluster, Cues, Attachments, Tags,
    /// Void, CRC-32): a torn end is one of these, not bytes that only look like an element.
    private static let segmentChildIDs: Set<UInt32> = [0x114D_9B74, infoID, 0x1654_AE6B, 0x1043_A770, RecordingStructure.clusterID,
                                                       0x1C53_BB6B, 0x1941_A469, 0x1254_C367, voidID, 0xBF]
    /// What a Cluster holds (Timestamp, SilentTracks, Position, PrevSize, SimpleBlock,
    /// BlockGroup, EncryptedBlock, Void, CRC-32).
    private static let clusterChildIDs: Set<UInt32> = [0xE7, 0x5854, 0xA7, 0xAB, simpleBlockID, blockGroupID, 0xAF, voidID, 0xBF]
    /// The longest element header: a 4-byte ID and an 8-byte size.
    private static let longestHeader: Int64 = 12

    /// What ending a file in place did.
    struct Ended: Equatable {
        /// The bytes of the file kept (the complete elements).
        var length: Int64
        /// The bytes of a torn element cut off its end.
        var leftOutBytes: Int64
        /// The bytes written (the Segment's size, the duration).
        var bytesWritten: Int64
    }

    /// Ends the cut-off MKV/WebM at `url` in place (see the type's description).
    ///
    /// - Throws: `.nothingRecorded` for a file without a complete cluster; `.invalidMedia` for
    ///   one that is not a cut-off recording of libavformat's making, or is damaged before its
    ///   end (then nothing is written); the disk's errors.
    ///
    /// `path`, if given, leads to the file whatever its name is now (its writer's descriptor,
    /// ``RecordingLock/descriptorPath``). With `gate` (the file's, see ``FinaliseGate``) the
    /// writes that end it, made durable, are one step of it, the one that finishes the file:
    /// an abort waits for it, or, given up before, nothing is written (``FinaliseGate/GivenUp``
    /// is thrown). The duration comes after, the file finished without it already.
    static func end(_ url: URL, opening path: URL? = nil, gate: FinaliseGate? = nil) throws -> Ended {
        let file = try MP4File(url: url, opening: path, writable: true)
        defer { file.close() }
        let size = try file.size()
        guard let header = try RecordingStructure.element(at: 0, in: file), let headerSize = header.size,
              let segment = try RecordingStructure.element(at: header.dataOffset + headerSize, in: file),
              segment.id == RecordingStructure.segmentID else {
            throw ReelError(.invalidMedia, "\(url.path) is not an MKV or WebM recording")
        }
        let segmentStart = header.dataOffset + headerSize
        // The unknown size libavformat writes is eight bytes long, room for any size.
        let sizeField = segmentStart + 4
        guard segment.dataOffset - sizeField == 8 else {
            throw ReelError(.invalidMedia, "the Segment of \(url.path) has no room for its size")
        }
        var offset = segment.dataOffset
        var clusters = 0
        var info: RecordingStructure.Element?
        // The torn cluster's size, made to cover its whole blocks: where its size field is, and what it becomes.
        var tornCluster: (field: Int64, bytes: [UInt8])?
        while offset < size {
            guard let child = try RecordingStructure.element(at: offset, in: file), let length = child.size else {
                // Unreadable: the end of the file cutting its header is a torn end, else damage.
                guard try isTornEnd(at: offset, fileSize: size, in: file) else { throw damaged(url, at: offset) }
                break
            }
            guard child.dataOffset + length <= size else {
                // Running past the end: torn, if it is an element a Segment holds.
                guard segmentChildIDs.contains(child.id) else { throw damaged(url, at: offset) }
                if child.id == RecordingStructure.clusterID, let kept = try wholeBlocks(of: child, at: offset, fileSize: size, in: file) {
                    tornCluster = (kept.field, kept.bytes)
                    clusters += 1
                    offset = kept.end
                }
                break
            }
            if child.id == RecordingStructure.clusterID { clusters += 1 }
            if child.id == infoID { info = child }
            offset = child.dataOffset + length
        }
        guard clusters > 0 else {
            throw ReelError(.nothingRecorded, "\(url.path) holds nothing recorded (no complete cluster)", hint: "record again")
        }
        let length = offset - segment.dataOffset
        var sizeBytes: [UInt8] = [0x01]
        for shift in stride(from: 48, through: 0, by: -8) { sizeBytes.append(UInt8(truncatingIfNeeded: length >> Int64(shift))) }
        let room = try info.flatMap { try durationRoom(in: $0, file: file) }
        // The torn end cut off and the sizes written, on the disk: the file is finished.
        let finish = { () throws -> Int64 in
            if offset < size {
                try Syscall.call(orThrow: { Syscall.fileError($0, at: url, action: "shorten") }) { truncate((path ?? url).path, off_t(offset)) }
            }
            var written: Int64 = 0
            if let tornCluster {
                try file.write(tornCluster.bytes, at: tornCluster.field)
                written += Int64(tornCluster.bytes.count)
            }
            try file.write(sizeBytes, at: sizeField)
            try file.sync()
            return written + Int64(sizeBytes.count)
        }
        var written = try gate.map { try $0.step(finishing: url, finish) } ?? finish()
        if let place = room, let seconds = try? lastPacketEnd(path ?? url), seconds > 0 {
            // The duration in the segment's timestamp units: a float, 8 bytes, where the Void was.
            let value = (seconds * 1_000_000_000 / Double(place.timecodeScale)).bitPattern
            var element: [UInt8] = [0x44, 0x89, 0x88]
            for shift in stride(from: 56, through: 0, by: -8) { element.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
            try file.write(element, at: place.offset)
            try file.sync()
            written += Int64(element.count)
        }
        return Ended(length: offset, leftOutBytes: size - offset, bytesWritten: written)
    }

    /// A cluster cut short by the end of the file (at `offset`, its header whole): where its
    /// whole elements end (its timestamp and the blocks written whole), and its size field
    /// made to say so, as long as the field it replaces; `nil` when no block is whole. Throws
    /// `.invalidMedia` when what it holds is damaged before the end of the file.
    private static func wholeBlocks(of cluster: RecordingStructure.Element, at offset: Int64, fileSize: Int64,
                                    in file: MP4File) throws -> (end: Int64, field: Int64, bytes: [UInt8])? {
        var inner = cluster.dataOffset
        var blocks = 0
        while inner < fileSize {
            guard let child = try RecordingStructure.element(at: inner, in: file), let length = child.size else {
                guard try isTornEnd(at: inner, fileSize: fileSize, in: file) else { throw damaged(file.url, at: inner) }
                break
            }
            // Not a cluster's (the next cluster, read as this one's because its size is
            // damaged): the cluster is not torn, the file is damaged.
            guard clusterChildIDs.contains(child.id) else { throw damaged(file.url, at: offset) }
            guard child.dataOffset + length <= fileSize else { break }
            if child.id == simpleBlockID || child.id == blockGroupID { blocks += 1 }
            inner = child.dataOffset + length
        }
        // The size field follows the cluster's 4-byte ID.
        let field = offset + 4, fieldLength = Int(cluster.dataOffset - field)
        let size = inner - cluster.dataOffset
        guard blocks > 0, (1...8).contains(fieldLength), size < (Int64(1) << Int64(7 * fieldLength)) - 1 else { return nil }
        let value = UInt64(size) | (UInt64(1) << UInt64(7 * fieldLength))
        let bytes = (0..<fieldLength).map { UInt8(truncatingIfNeeded: value >> UInt64(8 * (fieldLength - 1 - $0))) }
        return (inner, field, bytes)
    }

    /// Whether the element at `offset`, which cannot be read, is a torn end: the end of the
    /// file cuts its header (fewer bytes are left than the longest header), or nothing but
    /// zeros is left (a crash can leave a file's end blank). Either way nothing whole follows.
    private static func isTornEnd(at offset: Int64, fileSize: Int64, in file: MP4File) throws -> Bool {
        if fileSize - offset < longestHeader { return true }
        var at = offset
        while at < fileSize {
            let chunk = try file.read(at: at, count: Int(min(1 << 16, fileSize - at)))
            guard !chunk.isEmpty else { break }
            guard chunk.allSatisfy({ $0 == 0 }) else { return false }
            at += Int64(chunk.count)
        }
        return true
    }

    /// A file damaged at `offset`, before its end: ending it there would lose what follows.
    private static func damaged(_ url: URL, at offset: Int64) -> ReelError {
        ReelError(.invalidMedia, "\(url.path) is damaged at byte \(offset), before its end: ended where it is, it would lose everything after that",
                  hint: "recover it into a copy, which skips the damage (on a disk with room for one)")
    }

    /// Where in `info` the header kept room for the duration (an 11-byte Void), and the
    /// segment's timestamp unit in nanoseconds; `nil` without such room, or with a duration.
    private static func durationRoom(in info: RecordingStructure.Element, file: MP4File) throws -> (offset: Int64, timecodeScale: Int64)? {
        guard let infoSize = info.size else { return nil }
        var offset = info.dataOffset
        var room: Int64?
        var scale: Int64 = 1_000_000
        while offset < info.dataOffset + infoSize {
            guard let child = try RecordingStructure.element(at: offset, in: file), let length = child.size else { return nil }
            let end = child.dataOffset + length
            if child.id == 0x4489 { return nil }  // a duration already
            if child.id == voidID, end - offset == 11 { room = room ?? offset }
            if child.id == timecodeScaleID, (1...8).contains(length) {
                scale = try file.read(at: child.dataOffset, count: Int(length)).reduce(Int64(0)) { $0 << 8 | Int64($1) }
            }
            offset = end
        }
        guard let room, scale > 0 else { return nil }
        return (room, scale)
    }

    /// Where the file's last packet ends, in seconds: its time and its duration (or, without
    /// one, the step from its stream's packet before).
    static func lastPacketEnd(_ url: URL) throws -> Double {
        let ends = try PacketCount.count(url)
        return max(ends.videoEnd, ends.audioEnd)
    }
}
