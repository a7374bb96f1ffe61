import Foundation
import ReelCore

/// Finds, before libavformat opens a file, the damaged fragmented MP4/MOV on which the MP4
/// reader of FFmpeg 5.1 (Debian 12's) spins.
///
/// The flaw: when a movie fragment (`moof`) is read while a track declared so far has no usable
/// ID (a `trak` without a `tkhd`, or an ID above 2³¹−1), `mov_read_moof` keeps the error code
/// `AVERROR_INVALIDDATA` (−1 094 995 529) as "the current fragment", and every `trun` after it
/// counts from there up to zero: about 1.5 s of CPU per fragment run, hours for a file of many.
/// No recording is like that (every track of a file Reel or FFmpeg writes has an ID), so such a
/// file is refused as damaged, in milliseconds, instead of being handed over.
///
/// This follows libavformat's reading order on the boxes that matter: each `trak` adds a track
/// without an ID, each `tkhd` gives the newest track its ID, each `moof` looks at the tracks so
/// far. libavformat reads those boxes wherever they are nested, so inside every top-level box but
/// the media data (`mdat`, never parsed as boxes) any `trak` / `tkhd` / `moof` with a size that
/// fits counts.
enum FragmentedTrackCheck {
    /// Files up to this size are looked at whatever their first box; larger ones only when they
    /// start like an MP4/MOV (a damaged small file may still be read as one by libavformat).
    static let anyFileBelow: Int64 = 64 << 20
    /// At most this much box data (all but `mdat`) is read; past it the check gives up (the
    /// index of a long unfragmented recording, say) and lets libavformat judge.
    static let scanLimit = 256 << 20

    private static let mp4Starts: Set<BoxType> = ["ftyp", "moov", "moof", "styp", "free", "skip", "wide", "mdat", "pnot", "uuid", "sidx"]

    /// Throws `invalidMedia` when the file (or its first `byteLimit` bytes) has the shape above.
    static func check(_ url: URL, byteLimit: Int64? = nil) throws {
        guard let file = try? MP4File(url: url, writable: false) else { return }  // libavformat says why
        defer { file.close() }
        let end = min(try file.size(), byteLimit ?? .max)
        var tracks = TrackIDs()
        var offset: Int64 = 0
        var scanned = 0
        while offset + 8 <= end {
            let header = try file.read(at: offset, count: 16)
            guard header.count >= 8 else { return }
            var reader = ByteReader(header)
            var size = Int64(try reader.u32())
            let type = BoxType(rawValue: try reader.u32())
            if offset == 0 && end > anyFileBelow && !mp4Starts.contains(type) { return }
            if size == 1 {
                guard header.count >= 16 else { return }
                size = Int64(clamping: try reader.u64())
            } else if size == 0 {
                size = end - offset
            }
            guard size >= 8 else { return }  // libavformat stops reading there too
            let boxEnd = offset + min(size, end - offset)
            try tracks.take(type, body: { try file.read(at: offset + 8, count: Int(min(24, boxEnd - offset - 8))) }, in: url)
            if type != "mdat" {
                let count = Int(boxEnd - offset)
                scanned += count
                guard scanned <= scanLimit else { return }
                let bytes = try file.read(at: offset, count: count)
                try tracks.scan(bytes, from: 8, in: url)
            }
            offset = boxEnd
        }
    }

    /// The tracks libavformat would know of so far, as "has a usable ID".
    struct TrackIDs {
        private(set) var usable: [Bool] = []

        /// Takes one box of type `type` whose first payload bytes `body` gives (read only for a
        /// `tkhd`); throws at a `moof` that comes after a track without a usable ID.
        mutating func take(_ type: BoxType, body: () throws -> [UInt8], in url: URL) throws {
            switch type {
            case "trak":
                usable.append(false)
            case "tkhd":
                guard !usable.isEmpty else { break }
                var reader = ByteReader(try body())
                guard let version = try? reader.u8(), (try? reader.skip(version == 1 ? 19 : 11)) != nil,
                      let id = try? reader.u32() else {
                    usable[usable.count - 1] = false
                    break
                }
                usable[usable.count - 1] = Int32(bitPattern: id) >= 0
            case "moof":
                if let bad = usable.firstIndex(of: false) {
                    throw ReelError(.invalidMedia, "\(url.path) is damaged: its track \(bad + 1) has no usable track ID, and the file is fragmented",
                                    hint: "a file Reel records never looks like this; it cannot be read safely")
                }
            default:
                break
            }
        }

        /// Looks for `trak`, `tkhd` and `moof` boxes anywhere in `bytes[start...]` (a box's
        /// payload), in order: a type with a size before it that fits in what is left.
        mutating func scan(_ bytes: [UInt8], from start: Int, in url: URL) throws {
            guard bytes.count >= 8 else { return }
            let trak = BoxType("trak").rawValue, tkhd = BoxType("tkhd").rawValue, moof = BoxType("moof").rawValue
            var found: [(at: Int, type: UInt32)] = []
            bytes.withUnsafeBufferPointer { b in
                func u32(_ i: Int) -> UInt32 { UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3]) }
                var p = max(start + 4, 4)
                while p + 4 <= b.count {
                    let type = u32(p)
                    if type == trak || type == tkhd || type == moof {
                        let size = Int(u32(p - 4))
                        if size <= 1 || (size >= 8 && p - 4 + size <= b.count) { found.append((p, type)) }
                    }
                    p += 1
                }
            }
            for (p, type) in found {
                let payload = Array(bytes[(p + 4)..<min(bytes.count, p + 28)])
                try take(BoxType(rawValue: type), body: { payload }, in: url)
            }
        }
    }
}
