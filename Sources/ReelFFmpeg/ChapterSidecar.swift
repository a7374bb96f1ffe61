import Foundation
import ReelCore
import ReelSystem

/// The chapter markers of a single recording, kept beside it as they are placed: a hidden
/// `.NAME.chapters` file (JSON: the recording file's identity, and each chapter's start in
/// microseconds and its title), replaced whole at each marker. A fragmented MP4 gets its
/// chapters with its index, an MKV with its end, so a recording cut off (a kill, a crash, an
/// abort) holds none of its own: recovering it (``Recovery``) puts these into the finalised
/// file. Removed once the file is finished with its chapters, or recovered in place with them.
///
/// The list belongs to one file, named by its identity (device and inode, which the rename
/// into its name keeps): a list left by an earlier recording of the name (killed, then
/// overwritten, or deleted by hand) is never taken for the markers of the file there now.
enum ChapterSidecar {
    private struct List: Codable {
        var device: UInt64
        var inode: UInt64
        var chapters: [Entry]

        var owner: FileIdentity { FileIdentity(device: device, inode: inode) }
    }

    private struct Entry: Codable {
        var microseconds: Int64
        var title: String
    }

    /// Where the chapters of the recording at `recording` are kept.
    static func url(for recording: URL) -> URL {
        recording.deletingLastPathComponent().appendingPathComponent(".\(recording.lastPathComponent).chapters")
    }

    /// Keeps `chapters` (all so far) of the recording `file`, whose name is `recording`: written
    /// under another name, on the disk, then renamed over the old list, so a crash leaves one
    /// list whole.
    static func write(_ chapters: [Chapter], of file: FileIdentity, at recording: URL) throws {
        let list = List(device: file.device, inode: file.inode,
                        chapters: chapters.map { Entry(microseconds: $0.start.convertedValue(to: 1_000_000), title: $0.title) })
        let data: Data
        do { data = try JSONEncoder().encode(list) } catch {
            throw ReelError(.ioFailure, "cannot write the chapters of \(recording.path): \(error)")
        }
        let target = url(for: recording)
        let temporary = target.deletingLastPathComponent().appendingPathComponent("\(target.lastPathComponent).\(getpid()).new")
        try FilePlacement.replaceDurably(target, with: data, through: temporary) { Syscall.fileError($0, creating: target, action: "write") }
    }

    /// The chapters kept for the recording at `recording`: none when there is no list, it is
    /// not one, or it belongs to another file than the one there now.
    static func read(for recording: URL) -> [Chapter] {
        guard let list = list(for: recording), list.owner == FileIdentity(recording) else { return [] }
        return list.chapters.map { Chapter(start: MediaTime(value: $0.microseconds, timescale: 1_000_000), title: $0.title) }
    }

    /// Removes the list beside `recording`, if there is one (nothing is unlinked when there is
    /// none: every recording's start asks, and a file system is not to be touched for nothing).
    static func remove(for recording: URL) {
        let path = url(for: recording).path
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        _ = Syscall.attempt { unlink(path) }
    }

    /// Removes the list beside `recording` unless it is the list of `file`: what is left there
    /// belongs to no recording of that name any more.
    static func remove(for recording: URL, unlessOf file: FileIdentity?) {
        if let file, owner(for: recording) == file { return }
        remove(for: recording)
    }

    /// Removes the list beside `recording` if it is the list of `file` (another file's stays).
    static func remove(for recording: URL, ifOf file: FileIdentity) {
        if owner(for: recording) == file { remove(for: recording) }
    }

    /// The file whose list is beside `recording`, if there is a list.
    private static func owner(for recording: URL) -> FileIdentity? {
        list(for: recording)?.owner
    }

    private static func list(for recording: URL) -> List? {
        guard let data = FileManager.default.contents(atPath: url(for: recording).path) else { return nil }
        return try? JSONDecoder().decode(List.self, from: data)
    }
}
