import Foundation
import ReelCore
import ReelSystem

/// Sound-only recordings in WAV, FLAC and Ogg (Opus) cut off by a crash or a kill: how to
/// tell them, and how to make them whole. (An M4A is an MP4 and goes through ``Recovery``'s
/// fragment path.)
///
/// What each container leaves behind, and what is done about it:
/// - **WAV**: the RIFF and `data` sizes are written only at a clean stop (FFmpeg puts
///   `0xFFFFFFFF` there first). The samples are all on the disk: the sizes are set to what the
///   file holds, in whole sample frames, and a torn last frame is cut off.
/// - **FLAC**: STREAMINFO says 0 samples and no frame sizes until a clean stop. The frames are
///   walked by their sync codes; each is kept only if its header CRC-8 and its whole-frame
///   CRC-16 check, and the file ends after the last whole one. STREAMINFO then gets the total
///   sample count and the smallest and largest frame sizes; its MD5 stays zero ("unknown",
///   which the format allows).
/// - **Ogg**: pages are written whole, each with a CRC-32; the last may be torn. Pages are
///   checked from the start; the file ends after the last whole one, which gets the
///   end-of-stream flag (and its CRC again).
///
/// The steps are done in place, each leaving a file that plays as well as before: first the
/// torn tail is cut (it decodes to nothing), then the header fields are written. Into another
/// file, the whole part is copied beside it, fixed there, and takes its name when it is on
/// the disk.
enum AudioFileRecovery {
    enum Kind: Equatable {
        case wav, flac, ogg

        /// The containers a recovered file of this kind may be written as.
        var containers: [Container] {
            switch self {
            case .wav: return [.wav]
            case .flac: return [.flac]
            case .ogg: return [.ogg, .opus]
            }
        }

        var name: String {
            switch self {
            case .wav: return "WAV"
            case .flac: return "FLAC"
            case .ogg: return "Ogg"
            }
        }
    }

    /// What makes a cut-off file whole: the bytes to keep and the header fields to write.
    struct Repair: Equatable {
        var kind: Kind
        /// The bytes of the file that are whole; the rest is cut off.
        var length: Int64
        /// Header fields to write: offset and bytes.
        var patches: [Patch]
        /// Whether the file was whole already (then there is nothing to write).
        var isNeeded: Bool

        struct Patch: Equatable {
            var offset: Int
            var bytes: [UInt8]
        }
    }

    /// The kind of sound file at `url`, told from its first bytes; `nil` for anything else.
    static func kind(of url: URL) -> Kind? {
        guard let handle = FileHandle(forReadingAtPath: url.path) else { return nil }
        defer { try? handle.close() }
        guard let head = try? handle.read(upToCount: 12), head.count >= 4 else { return nil }
        let bytes = [UInt8](head)
        if bytes.count >= 12, bytes[0..<4].elementsEqual("RIFF".utf8), bytes[8..<12].elementsEqual("WAVE".utf8) { return .wav }
        if bytes[0..<4].elementsEqual("fLaC".utf8) { return .flac }
        if bytes[0..<4].elementsEqual("OggS".utf8) { return .ogg }
        return nil
    }

    /// What makes the file at `url` whole.
    ///
    /// - Throws: `.invalidMedia` for a file too damaged to tell, `.nothingRecorded` for one
    ///   that holds no whole audio frame.
    static func plan(_ url: URL) throws -> Repair {
        guard let kind = kind(of: url) else {
            throw ReelError(.invalidMedia, "\(url.path) is not a WAV, FLAC or Ogg file")
        }
        let data: Data
        do {
            data = try Data(contentsOf: url, options: .alwaysMapped)
        } catch {
            throw ReelError(.ioFailure, "cannot read \(url.path): \(error.localizedDescription)")
        }
        return try data.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            switch kind {
            case .wav: return try wav(bytes, url: url)
            case .flac: return try flac(bytes, url: url)
            case .ogg: return try ogg(bytes, url: url)
            }
        }
    }

    /// Whether `url` is a WAV, FLAC or Ogg file cut off before its clean end. A finished file
    /// is told from its header (FLAC: a sample count) or its last page (Ogg: whole, and the end
    /// of the stream) without reading it all; only a file that looks cut off is walked.
    static func isCutOff(_ url: URL) -> Bool {
        guard let kind = kind(of: url), let handle = FileHandle(forReadingAtPath: url.path) else { return false }
        defer { try? handle.close() }
        switch kind {
        case .wav:
            break  // its plan reads the chunk headers only
        case .flac:
            guard let data = try? handle.read(upToCount: 26), data.count == 26 else { return false }
            // STREAMINFO's total samples: the low 36 bits of bytes 18 to 25.
            let head = [UInt8](data)
            let total = UInt64(head[21] & 0x0F) << 32 | UInt64(head[22]) << 24 | UInt64(head[23]) << 16 | UInt64(head[24]) << 8 | UInt64(head[25])
            if total != 0 { return false }
        case .ogg:
            guard let size = try? handle.seekToEnd() else { return false }
            let start = size > 65_536 ? size - 65_536 : 0
            guard (try? handle.seek(toOffset: start)) != nil, let tail = try? handle.readToEnd() else { return false }
            if lastPageEndsStream([UInt8](tail)) { return false }
        }
        return (try? plan(url))?.isNeeded ?? false
    }

    /// Whether `tail` (the end of an Ogg file) ends with a whole page that carries the
    /// end-of-stream flag.
    private static func lastPageEndsStream(_ tail: [UInt8]) -> Bool {
        var i = tail.count - 27
        while i >= 0 {
            if tail[i] == 0x4F, tail[i + 1] == 0x67, tail[i + 2] == 0x67, tail[i + 3] == 0x53, tail[i + 4] == 0 {
                let segments = Int(tail[i + 26])
                if i + 27 + segments <= tail.count {
                    let body = (0..<segments).reduce(0) { $0 + Int(tail[i + 27 + $1]) }
                    if i + 27 + segments + body == tail.count { return tail[i + 5] & 0x04 != 0 }
                }
            }
            i -= 1
        }
        return false
    }

    /// Makes the file at `url` whole where it is, or into `destination` (a file that does not
    /// exist unless `overwrite`); returns the bytes written.
    static func recover(_ url: URL, repair: Repair, into destination: URL?, overwrite: Bool) throws -> Int64 {
        guard let destination else {
            guard repair.isNeeded else { return 0 }
            try apply(repair, to: url, shown: url, truncating: true)
            return Int64(repair.patches.reduce(0) { $0 + $1.bytes.count })
        }
        // The whole part is copied beside the destination, fixed, then named.
        let temporary = FilePlacement.temporaryURL(beside: destination, purpose: "recovering", pathExtension: destination.pathExtension)
        let tracked = UnfinishedCopies.track(temporary)  // a copy: an interrupted command removes it
        defer { tracked.done() }
        do {
            try Syscall.copyFile(url, bytes: repair.length, to: temporary, shown: destination)
            try apply(repair, to: temporary, shown: destination, truncating: false)
            try FilePlacement.place(temporary, at: destination, replacing: overwrite, what: "the recovered file")
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
        return repair.length
    }

    // MARK: Writing

    /// Cuts `url` to the repair's length (when `truncating`) and writes its fields; errors name
    /// `shown`, the file the user asked for (not a hidden temporary copy).
    private static func apply(_ repair: Repair, to url: URL, shown: URL, truncating: Bool) throws {
        let fd = try Syscall.call(orThrow: { Syscall.fileError($0, at: shown, action: "open") }) { open(url.path, O_RDWR | O_CLOEXEC) }
        defer { Syscall.close(fd) }
        if truncating {
            try Syscall.call(orThrow: { Syscall.fileError($0, at: shown, action: "cut the torn end off") }) { ftruncate(fd, off_t(repair.length)) }
        }
        for patch in repair.patches {
            try patch.bytes.withUnsafeBytes { bytes in
                try Syscall.writeAll(fd, bytes, at: Int64(patch.offset), orThrow: { Syscall.fileError($0, at: shown, action: "write") })
            }
        }
        try Syscall.call(orThrow: { Syscall.fileError($0, at: shown, action: "write") }) { fsync(fd) }
    }

    // MARK: WAV

    private static func wav(_ b: UnsafeBufferPointer<UInt8>, url: URL) throws -> Repair {
        let size = b.count
        var offset = 12
        var blockAlign = 0
        while offset + 8 <= size {
            let id = String(decoding: b[offset..<offset + 4], as: UTF8.self)
            let stated = Int(le32(b, offset + 4))
            if id == "fmt " && offset + 8 + 14 <= size {
                blockAlign = Int(le16(b, offset + 8 + 12))
            }
            if id == "data" {
                guard blockAlign > 0 else { throw damaged(url, "its format chunk is missing or says 0 bytes per sample frame") }
                let start = offset + 8
                let available = size - start
                let whole = available - available % blockAlign
                let riff = Int(le32(b, 4))
                if stated != 0xFFFF_FFFF && start + stated <= size && riff + 8 == size {
                    return Repair(kind: .wav, length: Int64(size), patches: [], isNeeded: false)
                }
                guard whole > 0 else { throw nothingRecorded(url) }
                guard start + whole - 8 <= 0xFFFF_FFFF else {
                    throw ReelError(.unsupportedFormat, "\(url.path) holds more than a WAV file's 4 GB of samples",
                                    hint: "convert what it holds with another tool that reads it whole (e.g. ffmpeg -ignore_length 1)")
                }
                return Repair(kind: .wav, length: Int64(start + whole),
                              patches: [.init(offset: 4, bytes: le32Bytes(UInt32(start + whole - 8))),
                                        .init(offset: offset + 4, bytes: le32Bytes(UInt32(whole)))],
                              isNeeded: true)
            }
            guard stated != 0xFFFF_FFFF else { throw damaged(url, "its \(id) chunk has no size") }
            offset += 8 + stated + (stated & 1)
        }
        throw nothingRecorded(url)
    }

    // MARK: FLAC

    private static func flac(_ b: UnsafeBufferPointer<UInt8>, url: URL) throws -> Repair {
        let size = b.count
        guard size >= 8 + 34, b[4] & 0x7F == 0, Int(be24(b, 5)) == 34 else {
            throw damaged(url, "it has no STREAMINFO block")
        }
        // The metadata blocks, up to the last.
        var offset = 4
        while true {
            guard offset + 4 <= size else { throw nothingRecorded(url) }
            let last = b[offset] & 0x80 != 0
            offset += 4 + Int(be24(b, offset + 1))
            if last { break }
        }
        guard offset < size, frameHeader(b, at: offset) != nil else { throw nothingRecorded(url) }
        var start = offset
        var total: Int64 = 0
        var smallest = Int.max, largest = 0
        var end = start
        // Each frame runs to the next valid header (or the end of the file) and must pass its CRC-16.
        while start < size, let header = frameHeader(b, at: start) {
            var crc: UInt16 = 0
            var i = start
            var next: Int?
            var candidate = start + header.length + 2
            while candidate <= size {
                while i < candidate - 2 { crc = crc16(crc, b[i]); i += 1 }
                let stored = UInt16(b[candidate - 2]) << 8 | UInt16(b[candidate - 1])
                if stored == crc && (candidate == size || frameHeader(b, at: candidate) != nil) {
                    next = candidate
                    break
                }
                candidate += 1
            }
            guard let frameEnd = next else { break }
            total += Int64(header.blockSize)
            smallest = min(smallest, frameEnd - start)
            largest = max(largest, frameEnd - start)
            end = frameEnd
            start = frameEnd
        }
        guard total > 0 else { throw nothingRecorded(url) }
        // STREAMINFO's data starts at byte 8: min/max block size (2 + 2), min/max frame size
        // (3 + 3), then 64 bits of sample rate (20), channels (3), bits (5) and total samples (36).
        let packed = (0..<8).reduce(UInt64(0)) { $0 << 8 | UInt64(b[18 + $1]) }
        let stated = Int64(packed & 0xF_FFFF_FFFF)
        if stated == total && end == size {
            // A clean stop wrote the count (frame sizes are only a hint for players).
            return Repair(kind: .flac, length: Int64(size), patches: [], isNeeded: false)
        }
        guard total <= 0xF_FFFF_FFFF else { throw damaged(url, "it holds more samples than STREAMINFO can count") }
        let updated = packed & ~UInt64(0xF_FFFF_FFFF) | UInt64(total)
        let sizes = be24Bytes(UInt32(smallest)) + be24Bytes(UInt32(largest))
        return Repair(kind: .flac, length: Int64(end),
                      patches: [.init(offset: 12, bytes: sizes), .init(offset: 18, bytes: (0..<8).map { UInt8(truncatingIfNeeded: updated >> (56 - 8 * UInt64($0))) })],
                      isNeeded: true)
    }

    /// A FLAC frame header at `offset` whose fields are legal and whose CRC-8 checks: its
    /// length (its CRC byte included) and the samples of its block.
    static func frameHeader(_ b: UnsafeBufferPointer<UInt8>, at offset: Int) -> (length: Int, blockSize: Int)? {
        let size = b.count
        guard offset + 6 <= size, b[offset] == 0xFF, b[offset + 1] & 0xFE == 0xF8 else { return nil }
        let blockCode = Int(b[offset + 2] >> 4), rateCode = Int(b[offset + 2] & 0x0F)
        let channels = Int(b[offset + 3] >> 4), bits = Int((b[offset + 3] >> 1) & 7)
        guard blockCode != 0, rateCode != 15, channels <= 10, bits != 3, b[offset + 3] & 1 == 0 else { return nil }
        var i = offset + 4
        // The frame or sample number, UTF-8 coded in 1 to 7 bytes.
        let lead = b[i]
        var extra = 0
        if lead & 0x80 == 0 { extra = 0 } else if lead & 0xE0 == 0xC0 { extra = 1 } else if lead & 0xF0 == 0xE0 { extra = 2 }
        else if lead & 0xF8 == 0xF0 { extra = 3 } else if lead & 0xFC == 0xF8 { extra = 4 } else if lead & 0xFE == 0xFC { extra = 5 }
        else if lead == 0xFE { extra = 6 } else { return nil }
        guard i + 1 + extra <= size else { return nil }
        for k in 1...max(1, extra) where extra > 0 { guard b[i + k] & 0xC0 == 0x80 else { return nil } }
        i += 1 + extra
        var blockSize: Int
        switch blockCode {
        case 1: blockSize = 192
        case 2...5: blockSize = 576 << (blockCode - 2)
        case 6: guard i < size else { return nil }; blockSize = Int(b[i]) + 1; i += 1
        case 7: guard i + 1 < size else { return nil }; blockSize = (Int(b[i]) << 8 | Int(b[i + 1])) + 1; i += 2
        default: blockSize = 256 << (blockCode - 8)
        }
        switch rateCode {
        case 12: i += 1
        case 13, 14: i += 2
        default: break
        }
        guard i < size else { return nil }
        var crc: UInt8 = 0
        for k in offset..<i { crc = crc8(crc, b[k]) }
        guard crc == b[i] else { return nil }
        return (i + 1 - offset, blockSize)
    }

    // MARK: Ogg

    private static func ogg(_ b: UnsafeBufferPointer<UInt8>, url: URL) throws -> Repair {
        let size = b.count
        var offset = 0
        var lastPage: (start: Int, length: Int)?
        var sawAudio = false
        while offset + 27 <= size, b[offset..<offset + 4].elementsEqual("OggS".utf8), b[offset + 4] == 0 {
            let segments = Int(b[offset + 26])
            guard offset + 27 + segments <= size else { break }
            let body = (0..<segments).reduce(0) { $0 + Int(b[offset + 27 + $1]) }
            let length = 27 + segments + body
            guard offset + length <= size else { break }
            var crc: UInt32 = 0
            for k in offset..<offset + length { crc = crc32(crc, k - offset >= 22 && k - offset < 26 ? 0 : b[k]) }
            guard crc == le32(b, offset + 22) else { break }
            let granule = (0..<8).reduce(UInt64(0)) { $0 | UInt64(b[offset + 6 + $1]) << (8 * UInt64($1)) }
            if granule != 0 && granule != UInt64.max { sawAudio = true }
            lastPage = (offset, length)
            offset += length
        }
        guard let lastPage else { throw damaged(url, "its first page is damaged") }
        guard sawAudio else { throw nothingRecorded(url) }
        let ended = b[lastPage.start + 5] & 0x04 != 0
        if ended && offset == size {
            return Repair(kind: .ogg, length: Int64(size), patches: [], isNeeded: false)
        }
        // The last whole page gets the end-of-stream flag, and its CRC again.
        var page = Array(b[lastPage.start..<lastPage.start + lastPage.length])
        page[5] |= 0x04
        page.replaceSubrange(22..<26, with: [0, 0, 0, 0])
        let crc = page.reduce(UInt32(0)) { crc32($0, $1) }
        return Repair(kind: .ogg, length: Int64(offset),
                      patches: [.init(offset: lastPage.start + 5, bytes: [page[5]]), .init(offset: lastPage.start + 22, bytes: le32Bytes(crc))],
                      isNeeded: true)
    }

    // MARK: Helpers

    private static func damaged(_ url: URL, _ why: String) -> ReelError {
        ReelError(.invalidMedia, "\(url.path) is damaged: \(why)", hint: "it is not a recording that reel can recover")
    }

    private static func nothingRecorded(_ url: URL) -> ReelError {
        ReelError(.nothingRecorded, "\(url.path) was cut off before its first sound was completely written: there is nothing to recover",
                  hint: "it holds no more than its header")
    }

    private static func le16(_ b: UnsafeBufferPointer<UInt8>, _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
    private static func le32(_ b: UnsafeBufferPointer<UInt8>, _ i: Int) -> UInt32 {
        UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
    }
    private static func be24(_ b: UnsafeBufferPointer<UInt8>, _ i: Int) -> UInt32 { UInt32(b[i]) << 16 | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) }
    private static func le32Bytes(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * UInt32($0))) } }
    private static func be24Bytes(_ v: UInt32) -> [UInt8] { [UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)] }

    /// FLAC's header CRC-8 (polynomial 0x07).
    static func crc8(_ crc: UInt8, _ byte: UInt8) -> UInt8 {
        var c = crc ^ byte
        for _ in 0..<8 { c = c & 0x80 != 0 ? (c << 1) ^ 0x07 : c << 1 }
        return c
    }

    /// FLAC's frame CRC-16 (polynomial 0x8005).
    static func crc16(_ crc: UInt16, _ byte: UInt8) -> UInt16 { crc16Table[Int((crc >> 8) ^ UInt16(byte))] ^ (crc << 8) }
    private static let crc16Table: [UInt16] = (0..<256).map { n in
        var c = UInt16(n) << 8
        for _ in 0..<8 { c = c & 0x8000 != 0 ? (c << 1) ^ 0x8005 : c << 1 }
        return c
    }

    /// Ogg's page CRC-32 (polynomial 0x04C11DB7, not reflected).
    static func crc32(_ crc: UInt32, _ byte: UInt8) -> UInt32 { crc32Table[Int((crc >> 24) ^ UInt32(byte))] ^ (crc << 8) }
    private static let crc32Table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n) << 24
        for _ in 0..<8 { c = c & 0x8000_0000 != 0 ? (c << 1) ^ 0x04C1_1DB7 : c << 1 }
        return c
    }
}
