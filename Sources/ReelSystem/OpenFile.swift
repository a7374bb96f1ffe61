#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import Synchronization

/// A regular file this process holds open, found through `/proc/self/fd` (the one reader of
/// it): how an abort tells a recording's own file from one that took its name, and finds it
/// when it was renamed or deleted while it was recorded.
package struct OpenFile: Sendable, Equatable {
    /// The file (device and inode).
    package var identity: FileIdentity
    /// The descriptor's path (`/proc/self/fd/N`): it opens the file even once it is deleted.
    package var descriptorPath: URL
    /// Where the file is now.
    package var path: URL
    /// Whether it has been deleted (no name leads to it any more).
    package var isDeleted: Bool

    /// The file at `url`, if this process holds it open.
    package static func held(at url: URL) -> OpenFile? {
        FileIdentity(url).flatMap(find)
    }

    /// The file `identity`, if this process holds it open.
    package static func find(_ identity: FileIdentity) -> OpenFile? {
        let folder = "/proc/self/fd"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            guard let descriptor = Int32(name), let file = of(descriptor: descriptor), file.identity == identity else { continue }
            return file
        }
        return nil
    }

    /// The regular file (or folder: a clips folder a recording holds) open as `descriptor` in
    /// this process, if it is one.
    package static func of(descriptor: Int32) -> OpenFile? {
        let path = "/proc/self/fd/\(descriptor)"
        var info = stat()
        guard case .success = Syscall.attempt({ stat(path, &info) }), [S_IFREG, S_IFDIR].contains(info.st_mode & S_IFMT),
              let target = try? FileManager.default.destinationOfSymbolicLink(atPath: path) else { return nil }
        // " (deleted)": no name left, or only one made meanwhile (a hard link) that is not known.
        let marked = target.hasSuffix(" (deleted)")
        return OpenFile(identity: FileIdentity(info), descriptorPath: URL(fileURLWithPath: path),
                        path: URL(fileURLWithPath: marked ? String(target.dropLast(10)) : target),
                        isDeleted: info.st_nlink == 0 || marked)
    }

    /// The copies back (``copyBack(_:to:)``) under way: a process that ends during one loses
    /// the deleted file's content (its last descriptor closes), so an impatient abort waits.
    package static let copyingBack = Atomic<Int>(0)

    /// Copies a deleted file's content back to `url`, or, if that name was taken again, to
    /// `NAME (rescued).EXT` beside it; returns where. A file the stop copied back already is
    /// not copied again.
    package static func copyBack(_ file: OpenFile, to url: URL) throws -> URL {
        if let copy = RecordingLock.rescuedCopy(of: file.identity),
           FileManager.default.fileExists(atPath: copy.path) {
            return copy
        }
        copyingBack.add(1, ordering: .relaxed)
        defer { copyingBack.subtract(1, ordering: .relaxed) }
        let rescue = FilePlacement.rescueName(for: url)
        try Syscall.copyFile(file.descriptorPath, to: rescue)
        RecordingLock.noteRescuedCopy(of: file.identity, at: rescue)
        return rescue
    }
}
