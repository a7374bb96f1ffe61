import Foundation
import ReelCore

/// Chapters in MP4/MOV files as a chapter list: a `chpl` box in the index's `udta`, which
/// libavformat (and so ffprobe, mpv) and VLC read. Written into the index a finalise makes
/// (``MP4Finaliser``), and added to a finished file whose index is followed by room for it.
///
/// (libavformat's own way, given chapters, also adds a QuickTime chapter text track: an extra
/// stream in every copy, whose first chapter readers put at zero wherever it was.)
enum MP4ChapterList {
    /// A `udta` box holding `chapters` as a chapter list (`chpl`, as libavformat writes and
    /// reads it, and players list): at most 255, each a start in 100 ns units and a title of
    /// at most 255 bytes (cut at a character's boundary).
    static func box(_ chapters: [Chapter]) -> [UInt8] {
        precondition(largestBox == 8 + 12 + 1 + 255 * (8 + 1 + 255) && Container.mp4.maximumChapters == 255 && Chapter.maximumTitleBytes == 255)
        var w = ByteWriter()
        w.box(.udta) { w in
            w.fullBox("chpl", version: 1) { w in
                let kept = Chapter.joiningCoincident(chapters).prefix(255)
                w.u32(0)
                w.u8(UInt8(kept.count))
                for chapter in kept {
                    w.u64(UInt64(max(0, chapter.start.convertedValue(to: 10_000_000))))
                    var title: [UInt8] = []
                    for character in chapter.title {
                        let bytes = Array(String(character).utf8)
                        if title.count + bytes.count > 255 { break }
                        title += bytes
                    }
                    w.u8(UInt8(title.count))
                    w.append(title)
                }
            }
        }
        return w.bytes
    }

    /// The size of the largest box ``box(_:)`` makes: 255 chapters with 255-byte titles.
    static let largestBox = 8 + 12 + 1 + 255 * (8 + 1 + 255)

    /// Adds `chapters` to the finished MP4/MOV at `url` as a `udta` box at the end of its index,
    /// taking the room from the `free` box right after the index (a reservation). Returns
    /// `false`, changing nothing, when there is no such room.
    ///
    /// Crash safety: the new box and the header of the rest of the free space are written
    /// inside the free box first (the file still reads as before), then one 4-byte write of the
    /// index's size takes the box in.
    static func add(_ chapters: [Chapter], to url: URL) throws -> Bool {
        guard !chapters.isEmpty else { return true }
        let file = try MP4File(url: url, writable: true)
        defer { file.close() }
        let boxes = try file.topLevelBoxes().boxes
        guard let i = boxes.firstIndex(where: { $0.type == .moov }), i + 1 < boxes.count,
              boxes[i].headerSize == 8, boxes[i + 1].type == .free else { return false }
        let moov = boxes[i], free = boxes[i + 1]
        let added = box(chapters)
        let rest = free.size - Int64(added.count)
        guard rest == 0 || rest >= 8, moov.size + Int64(added.count) <= Int64(UInt32.max) else { return false }
        var bytes = added
        if rest > 0 {
            var header = ByteWriter()
            header.u32(UInt32(rest))
            header.type(.free)
            bytes += header.bytes
        }
        // Not over the free box's own header until the index takes the space.
        try file.write(Array(bytes[8...]), at: free.offset + 8)
        try file.write(Array(bytes[..<8]), at: free.offset)
        try file.sync()
        var size = ByteWriter()
        size.u32(UInt32(moov.size + Int64(added.count)))
        try file.write(size.bytes, at: moov.offset)
        try file.sync()
        return true
    }
}
