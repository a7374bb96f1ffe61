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
/// It is found by that identity too: a cut-off recording renamed in its folder (`mv r.mp4
/// kept.mp4`) is recovered with its markers, and a new recording at the old name moves the
/// list out of its way (`.kept.mp4.chapters`) rather than deleting the markers of a file that
/// is still there. (A file moved to another folder is beyond what a list can follow.)
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

    /// The chapters kept for the recording at `recording`: none when there is no list of the
    /// file there now (beside its name, or under another name in its folder: see ``kept(for:)``).
    static func read(for recording: URL) -> [Chapter] {
        kept(for: recording)?.chapters ?? []
    }

    /// The list of the file at `recording` and where it is: beside its name, or, for a file
    /// renamed since, the list in the same folder that names it (any `.*.chapters`). `nil`
    /// when there is none or the file is not there.
    static func kept(for recording: URL) -> (url: URL, chapters: [Chapter])? {
        guard let file = FileIdentity(recording) else { return nil }
        let beside = url(for: recording)
        let found: (URL, List)?
        if let list = list(at: beside), list.owner == file {
            found = (beside, list)
        } else {
            found = lists(in: recording.deletingLastPathComponent()).first { $0.1.owner == file }
        }
        return found.map { ($0.0, $0.1.chapters.map { Chapter(start: MediaTime(value: $0.microseconds, timescale: 1_000_000), title: $0.title) }) }
    }

    /// Removes the list at `list` (as ``kept(for:)`` found it), if it is still there.
    static func remove(list: URL) {
        var info = stat()
        guard lstat(list.path, &info) == 0 else { return }
        _ = Syscall.attempt { unlink(list.path) }
    }

    /// Removes the list beside `recording`, if there is one (nothing is unlinked when there is
    /// none: every recording's start asks, and a file system is not to be touched for nothing).
    static func remove(for recording: URL) {
        remove(list: url(for: recording))
    }

    /// Clears the list beside `recording` out of the way of `file` (the recording made at the
    /// name now) unless it is that file's: the list of a file still in the folder under another
    /// name (renamed after it was cut off) moves beside that name, where a recovery of it looks
    /// first; a list of no file there any more goes.
    static func remove(for recording: URL, unlessOf file: FileIdentity?) {
        let beside = url(for: recording)
        guard let owner = list(at: beside)?.owner else {
            remove(for: recording)
            return
        }
        if let file, owner == file { return }
        let folder = recording.deletingLastPathComponent()
        guard let renamed = namedFile(owner, in: folder, besides: recording.lastPathComponent) else {
            remove(for: recording)
            return
        }
        // Beside its new name; if a list (of no file, or another's) is there, under a name of
        // its own, which a recovery finds by the identity it holds.
        var target = url(for: renamed)
        var info = stat()
        if lstat(target.path, &info) == 0 || errno != ENOENT {
            target = folder.appendingPathComponent(".\(renamed.lastPathComponent).\(owner.inode).chapters")
        }
        // Should the move fail, the list stays where it is: the new recording's own list
        // replaces it only if that recording places a marker.
        _ = Syscall.attempt { rename(beside.path, target.path) }
    }

    /// Removes the list beside `recording` if it is the list of `file` (another file's stays).
    static func remove(for recording: URL, ifOf file: FileIdentity) {
        if owner(for: recording) == file { remove(for: recording) }
    }

    /// The file whose list is beside `recording`, if there is a list.
    private static func owner(for recording: URL) -> FileIdentity? {
        list(at: url(for: recording))?.owner
    }

    /// The regular file `identity` in `folder`, other than the one named `name`, if there is one.
    private static func namedFile(_ identity: FileIdentity, in folder: URL, besides name: String) -> URL? {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return nil }
        return names.lazy.filter { $0 != name && !$0.hasSuffix(".chapters") }
            .map { folder.appendingPathComponent($0) }
            .first { FileIdentity(itself: $0) == identity }
    }

    /// Every list of chapters in `folder`, with where it is.
    private static func lists(in folder: URL) -> [(URL, List)] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return [] }
        return names.filter { $0.hasPrefix(".") && $0.hasSuffix(".chapters") }.compactMap { name in
            let url = folder.appendingPathComponent(name)
            return list(at: url).map { (url, $0) }
        }
    }

    private static func list(at list: URL) -> List? {
        guard let data = FileManager.default.contents(atPath: list.path) else { return nil }
        return try? JSONDecoder().decode(List.self, from: data)
    }
}
