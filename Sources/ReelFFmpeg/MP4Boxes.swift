import Foundation
import ReelCore
import ReelSystem

// The ISO base media file format (MP4/MOV) at the level of boxes: four-character types, reading
// and writing big-endian fields, walking the boxes of a file or of a box's payload. Used by
// ``MP4Finaliser`` to turn a fragmented recording into a regular file in place.

/// A box type, the four characters of its header (`moov`, `trak`, `free`…).
struct BoxType: Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    let rawValue: UInt32

    init(rawValue: UInt32) { self.rawValue = rawValue }

    init(stringLiteral name: String) {
        var value: UInt32 = 0
        for byte in name.utf8.prefix(4) { value = value << 8 | UInt32(byte) }
        rawValue = value
    }

    var description: String {
        String(decoding: (0..<4).map { UInt8(truncatingIfNeeded: rawValue >> (24 - 8 * $0)) }, as: UTF8.self)
    }

    static let ftyp: BoxType = "ftyp", moov: BoxType = "moov", mvhd: BoxType = "mvhd", trak: BoxType = "trak"
    static let tkhd: BoxType = "tkhd", edts: BoxType = "edts", elst: BoxType = "elst", mdia: BoxType = "mdia"
    static let mdhd: BoxType = "mdhd", hdlr: BoxType = "hdlr", minf: BoxType = "minf", stbl: BoxType = "stbl"
    static let stsd: BoxType = "stsd", stts: BoxType = "stts", ctts: BoxType = "ctts", stss: BoxType = "stss"
    static let stsz: BoxType = "stsz", stz2: BoxType = "stz2", stsc: BoxType = "stsc", stco: BoxType = "stco"
    static let co64: BoxType = "co64", sgpd: BoxType = "sgpd", sbgp: BoxType = "sbgp", mvex: BoxType = "mvex"
    static let trex: BoxType = "trex", mehd: BoxType = "mehd", udta: BoxType = "udta", moof: BoxType = "moof"
    static let mfhd: BoxType = "mfhd", traf: BoxType = "traf", tfhd: BoxType = "tfhd", tfdt: BoxType = "tfdt"
    static let trun: BoxType = "trun", mdat: BoxType = "mdat", mfra: BoxType = "mfra", free: BoxType = "free"
    static let skip: BoxType = "skip", wide: BoxType = "wide", mp4a: BoxType = "mp4a", roll: BoxType = "roll"
}

/// The MP4 being read is not laid out as expected; `reason` says how.
struct MP4LayoutError: Error, CustomStringConvertible {
    var reason: String
    init(_ reason: String) { self.reason = reason }
    var description: String { reason }
}

/// One box: where it is and how big.
struct Box {
    var type: BoxType
    /// Where the box starts (its header), in the file or the buffer it was found in.
    var offset: Int64
    /// The whole box, header included.
    var size: Int64
    /// 8, or 16 for a box with a 64-bit size.
    var headerSize: Int64

    var payloadOffset: Int64 { offset + headerSize }
    var payloadSize: Int64 { size - headerSize }
    var end: Int64 { offset + size }
}

/// Reads big-endian fields from bytes; running past the end throws.
struct ByteReader {
    let bytes: [UInt8]
    private(set) var position: Int
    let end: Int

    init(_ bytes: [UInt8], range: Range<Int>? = nil) {
        self.bytes = bytes
        position = max(0, range?.lowerBound ?? 0)
        end = min(bytes.count, range?.upperBound ?? bytes.count)
    }

    var remaining: Int { end - position }

    private mutating func take(_ count: Int) throws -> Int {
        guard count >= 0, count <= end - position else { throw MP4LayoutError("a box ends before its fields") }
        defer { position += count }
        return position
    }

    mutating func u8() throws -> UInt8 { bytes[try take(1)] }
    mutating func u16() throws -> UInt16 { let p = try take(2); return UInt16(bytes[p]) << 8 | UInt16(bytes[p + 1]) }
    mutating func u24() throws -> UInt32 {
        let p = try take(3)
        return UInt32(bytes[p]) << 16 | UInt32(bytes[p + 1]) << 8 | UInt32(bytes[p + 2])
    }
    mutating func u32() throws -> UInt32 {
        let p = try take(4)
        return UInt32(bytes[p]) << 24 | UInt32(bytes[p + 1]) << 16 | UInt32(bytes[p + 2]) << 8 | UInt32(bytes[p + 3])
    }
    mutating func u64() throws -> UInt64 { UInt64(try u32()) << 32 | UInt64(try u32()) }
    mutating func skip(_ count: Int) throws { _ = try take(count) }
    mutating func read(_ count: Int) throws -> ArraySlice<UInt8> { let p = try take(count); return bytes[p..<(p + count)] }
}

/// Builds boxes into bytes.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { bytes += [UInt8(v >> 8), UInt8(truncatingIfNeeded: v)] }
    mutating func u24(_ v: UInt32) { bytes += [UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)] }
    mutating func u32(_ v: UInt32) {
        bytes += [UInt8(v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)]
    }
    mutating func u64(_ v: UInt64) { u32(UInt32(v >> 32)); u32(UInt32(truncatingIfNeeded: v)) }
    mutating func type(_ t: BoxType) { u32(t.rawValue) }
    mutating func append<C: Collection>(_ raw: C) where C.Element == UInt8 { bytes += raw }

    /// A box whose payload `body` writes; its 32-bit size is filled in afterwards.
    mutating func box(_ type: BoxType, _ body: (inout ByteWriter) throws -> Void) rethrows {
        let start = bytes.count
        u32(0)
        self.type(type)
        try body(&self)
        let size = UInt32(bytes.count - start)
        bytes.replaceSubrange(start..<(start + 4), with: [UInt8(size >> 24), UInt8(truncatingIfNeeded: size >> 16),
                                                          UInt8(truncatingIfNeeded: size >> 8), UInt8(truncatingIfNeeded: size)])
    }

    /// A full box: a box whose payload starts with a version and 24 bits of flags.
    mutating func fullBox(_ type: BoxType, version: UInt8, flags: UInt32 = 0, _ body: (inout ByteWriter) throws -> Void) rethrows {
        try box(type) { w in
            w.u8(version)
            w.u24(flags)
            try body(&w)
        }
    }
}

extension Box {
    /// The boxes laid end to end in `bytes[range]` (a box's payload). Offsets are indices into `bytes`.
    static func children(of bytes: [UInt8], in range: Range<Int>) throws -> [Box] {
        var boxes: [Box] = []
        var offset = range.lowerBound
        while offset < range.upperBound {
            var reader = ByteReader(bytes, range: offset..<range.upperBound)
            var size = Int64(try reader.u32())
            let type = BoxType(rawValue: try reader.u32())
            var header: Int64 = 8
            if size == 1 {
                size = Int64(bitPattern: try reader.u64())
                header = 16
            } else if size == 0 {
                size = Int64(range.upperBound - offset)
            }
            guard size >= header, size <= Int64(range.upperBound - offset) else {
                throw MP4LayoutError("a \(type) box runs past the box that holds it")
            }
            boxes.append(Box(type: type, offset: Int64(offset), size: size, headerSize: header))
            offset += Int(size)
        }
        return boxes
    }

    /// The range of this box's payload, as indices into the buffer it was found in.
    var payloadRange: Range<Int> { Int(payloadOffset)..<Int(end) }
}

extension Array where Element == Box {
    /// The first box of type `type`.
    func first(_ type: BoxType) -> Box? { first { $0.type == type } }
}

/// A file opened for reading and writing in place: one file descriptor, closed by ``close()``.
final class MP4File {
    let url: URL
    private var fd: Int32

    /// Opens the file `url`, through `path` if given (a path that leads to the file whatever
    /// its name is now: ``RecordingLock/descriptorPath``); errors name `url`.
    init(url: URL, opening path: URL? = nil, writable: Bool) throws {
        self.url = url
        fd = try Syscall.call(orThrow: { Syscall.fileError($0, at: url, action: "open") }) {
            open((path ?? url).path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC)
        }
    }

    deinit { assert(fd < 0, "MP4File closed") }

    func close() {
        guard fd >= 0 else { return }
        Syscall.close(fd)
        fd = -1
    }

    /// The file's size now.
    func size() throws -> Int64 {
        var s = stat()
        try Syscall.call(orThrow: { failure("read", $0) }) { fstat(fd, &s) }
        return Int64(s.st_size)
    }

    /// Reads `count` bytes at `offset`; fewer only at the end of the file.
    func read(at offset: Int64, count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let done = try bytes.withUnsafeMutableBytes { try Syscall.readAll(fd, into: $0, at: offset, orThrow: { failure("read", $0) }) }
        return Array(bytes.prefix(done))
    }

    /// Writes all of `bytes` at `offset`.
    func write(_ bytes: [UInt8], at offset: Int64) throws {
        try bytes.withUnsafeBytes { try Syscall.writeAll(fd, $0, at: offset, orThrow: { failure("write", $0) }) }
    }

    /// Waits until everything written so far is on the disk.
    func sync() throws {
        try Syscall.call(orThrow: { failure("write", $0) }) { fsync(fd) }
    }

    private func failure(_ action: String, _ e: Int32) -> ReelError { Syscall.fileError(e, at: url, action: action) }

    /// The header of the box at `offset`, or `nil` if the file ends inside the header.
    func box(at offset: Int64, fileSize: Int64) throws -> Box? {
        guard offset + 8 <= fileSize else { return nil }
        let header = try read(at: offset, count: 16)
        var reader = ByteReader(header)
        var size = Int64(try reader.u32())
        let type = BoxType(rawValue: try reader.u32())
        var headerSize: Int64 = 8
        if size == 1 {
            guard header.count >= 16 else { return nil }
            size = Int64(bitPattern: try reader.u64())
            headerSize = 16
        } else if size == 0 {
            size = fileSize - offset
        }
        guard size >= headerSize, size <= Int64.max / 2 else { throw MP4LayoutError("a \(type) box at \(offset) has an impossible size") }
        return Box(type: type, offset: offset, size: size, headerSize: headerSize)
    }

    /// The top-level boxes of the file, and whether the last one is cut short by the end of the file.
    func topLevelBoxes() throws -> (boxes: [Box], truncated: Bool) {
        let size = try self.size()
        var boxes: [Box] = []
        var offset: Int64 = 0
        while offset < size {
            guard let box = try box(at: offset, fileSize: size) else { return (boxes, true) }
            if box.end > size { boxes.append(box); return (boxes, true) }
            boxes.append(box)
            offset = box.end
        }
        return (boxes, false)
    }

    /// Overwrites the type of the box at `offset`.
    func setType(_ type: BoxType, ofBoxAt offset: Int64) throws {
        var w = ByteWriter()
        w.type(type)
        try write(w.bytes, at: offset + 4)
    }
}

extension MP4File {
    /// The boxes that follow one another in `range` of the file (the whole file for its
    /// top-level boxes, a box's payload for its children), read from their headers alone, as far
    /// as they can be read: a header cut short or with a size no box has ends the walk, as does
    /// a box that runs past the range (it is the last one listed). `truncated` says whether the
    /// walk ended so before the end of the range. Unlike ``topLevelBoxes()``, damage is an
    /// answer, not an error: for telling how much of a cut-off file is whole.
    func readableBoxes(in range: Range<Int64>) -> (boxes: [Box], truncated: Bool) {
        var boxes: [Box] = []
        var offset = range.lowerBound
        while offset < range.upperBound {
            guard let box = try? box(at: offset, fileSize: range.upperBound) else { return (boxes, true) }
            boxes.append(box)
            if box.end > range.upperBound { return (boxes, true) }
            offset = box.end
        }
        return (boxes, false)
    }
}
