import Foundation
internal import CFFmpeg
import ReelCore

/// Chapters: written by libavformat with the trailer (MP4/MOV: a `chpl` list in the index;
/// MKV: Matroska chapters), and read from files being copied or joined.
extension Muxer {
    /// Sets the file's chapters, replacing any set before; each ends where the next begins,
    /// the last at `end`; one that begins at or past `end` is left out (``Chapter/beginning(_:before:)``). Set before ``finish()``: the trailer writes them (an MP4/MOV written
    /// fragmented has its index already and keeps none: ``MP4Finaliser`` writes them there).
    func setChapters(_ chapters: [Chapter], end: MediaTime) throws {
        Self.freeChapters(of: context)
        let sorted = Chapter.joiningCoincident(Chapter.beginning(chapters, before: end))
        guard !sorted.isEmpty else { return }
        guard let list = av_calloc(sorted.count, MemoryLayout<UnsafeMutablePointer<AVChapter>?>.stride)?
            .assumingMemoryBound(to: UnsafeMutablePointer<AVChapter>?.self) else {
            throw ReelError(.encodingFailed, "cannot allocate the chapters of \(name)", hint: "the system is out of memory")
        }
        context.pointee.chapters = list
        let base = AVRational(num: 1, den: 1_000_000)
        for (i, chapter) in sorted.enumerated() {
            guard let item = av_mallocz(MemoryLayout<AVChapter>.size)?.assumingMemoryBound(to: AVChapter.self) else {
                throw ReelError(.encodingFailed, "cannot allocate the chapters of \(name)", hint: "the system is out of memory")
            }
            let start = max(.zero, chapter.start)
            let stop = i + 1 < sorted.count ? sorted[i + 1].start : max(end, start)
            item.pointee.id = Int64(i + 1)
            item.pointee.time_base = base
            item.pointee.start = start.ticks(in: base)
            item.pointee.end = max(start, stop).ticks(in: base)
            av_dict_set(&item.pointee.metadata, "title", chapter.title, 0)
            list[i] = item
            context.pointee.nb_chapters = UInt32(i + 1)
        }
    }

    /// Frees the chapters of `context` (as `avformat_free_context` would).
    private static func freeChapters(of context: UnsafeMutablePointer<AVFormatContext>) {
        for i in 0..<Int(context.pointee.nb_chapters) {
            guard let item = context.pointee.chapters[i] else { continue }
            av_dict_free(&item.pointee.metadata)
            av_free(item)
        }
        av_freep(&context.pointee.chapters)
        context.pointee.nb_chapters = 0
    }
}

extension InputFile {
    /// The chapters the file holds, on its timeline (relative to `zero`), in time order.
    func chapters(from zero: MediaTime = .zero) -> [Chapter] {
        var found: [Chapter] = []
        for i in 0..<Int(context.pointee.nb_chapters) {
            guard let item = context.pointee.chapters[i] else { continue }
            let title = av_dict_get(item.pointee.metadata, "title", nil, 0).map { String(cString: $0.pointee.value) } ?? ""
            found.append(Chapter(start: MediaTime(ticks: item.pointee.start, item.pointee.time_base) - zero, title: title))
        }
        return found.sorted { $0.start < $1.start }
    }

    /// The chapters of a clip whose zero is `zero` in this file (its own and `added`, which
    /// are on the clip's timeline), moved to `start`, where the clip begins in a joined file.
    func chapters(ofClipAt zero: MediaTime, adding added: [Chapter], joinedAt start: MediaTime) -> [Chapter] {
        (chapters(from: zero) + added).map { Chapter(start: start + max(.zero, $0.start), title: $0.title) }
    }
}
