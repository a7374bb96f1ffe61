import Foundation
import ReelCore
import ReelSystem

/// The chapter markers of a single recording, kept beside it as they are placed: a hidden
/// `.NAME.chapters` file (JSON: each chapter's start in microseconds and its title), replaced
/// whole at each marker. A fragmented MP4 gets its chapters with its index, an MKV with its
/// end, so a recording cut off (a kill, a crash, an abort) holds none of its own: recovering it
/// (``Recovery``) puts these into the finalised file. Removed once the file is finished with its
/// chapters, or recovered in place with them.
enum ChapterSidecar {
    private struct Entry: Codable {
        var microseconds: Int64
        var title: String
    }

    /// Where the chapters of the recording at `recording` are kept.
    static func url(for recording: URL) -> URL {
        recording.deletingLastPathComponent().appendingPathComponent(".\(recording.lastPathComponent).chapters")
    }

    /// Keeps `chapters` (all so far) for the recording at `recording`: written under another
    /// name, on the disk, then renamed over the old list, so a crash leaves one list whole.
    static func write(_ chapters: [Chapter], for recording: URL) throws {
        let entries = chapters.map { Entry(microseconds: $0.start.convertedValue(to: 1_000_000), title: $0.title) }
        let data: Data
        do { data = try JSONEncoder().encode(entries) } catch {
            throw ReelError(.ioFailure, "cannot write the chapters of \(recording.path): \(error)")
        }
        let target = url(for: recording)
        let temporary = target.deletingLastPathComponent().appendingPathComponent("\(target.lastPathComponent).\(getpid()).new")
        let failure = FilePlacement.writeSynced(data, to: temporary)
        guard failure == 0 else { throw Syscall.fileError(failure, creating: target, action: "write") }
        try Syscall.call(orThrow: { e in
            unlink(temporary.path)
            return Syscall.fileError(e, at: target, action: "update")
        }) { rename(temporary.path, target.path) }
    }

    /// The chapters kept for the recording at `recording`; none when there is no list (or it
    /// is not one).
    static func read(for recording: URL) -> [Chapter] {
        guard let data = FileManager.default.contents(atPath: url(for: recording).path),
              let entries = try? JSONDecoder().decode([Entry].self, from: data) else { return [] }
        return entries.map { Chapter(start: MediaTime(value: $0.microseconds, timescale: 1_000_000), title: $0.title) }
    }

    /// Removes the list of the recording at `recording`, if there is one.
    static func remove(for recording: URL) {
        _ = Syscall.attempt { unlink(url(for: recording).path) }
    }
}
