#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import ReelSystem

/// A regular file this process holds open, found through `/proc/self/fd`: how an abort tells
/// the recording's own file from one that took its name, and finds it when it was renamed or
/// deleted while it was recorded.
struct OpenFile {
    /// The file (device and inode).
    var identity: FileIdentity
    /// The descriptor's path (`/proc/self/fd/N`): it opens the file even once it is deleted.
    var descriptorPath: URL
    /// Where the file is now.
    var path: URL
    /// Whether it has been deleted (no name leads to it any more).
    var isDeleted: Bool

    /// The file at `url`, if this process holds it open.
    static func held(at url: URL) -> OpenFile? {
        FileIdentity(url).flatMap(find)
    }

    /// The file `identity`, if this process holds it open.
    static func find(_ identity: FileIdentity) -> OpenFile? {
        let folder = "/proc/self/fd"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            let descriptor = "\(folder)/\(name)"
            var info = stat()
            guard stat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG,
                  UInt64(info.st_dev) == identity.device, UInt64(info.st_ino) == identity.inode,
                  let target = try? FileManager.default.destinationOfSymbolicLink(atPath: descriptor) else { continue }
            // " (deleted)": no name left, or only one made meanwhile (a hard link) that is not known.
            let deleted = info.st_nlink == 0 || target.hasSuffix(" (deleted)")
            let path = target.hasSuffix(" (deleted)") ? String(target.dropLast(10)) : target
            return OpenFile(identity: identity, descriptorPath: URL(fileURLWithPath: descriptor), path: URL(fileURLWithPath: path),
                            isDeleted: deleted)
        }
        return nil
    }

    /// Copies a deleted file's content back to `url`, or, if that name was taken again, to
    /// `NAME (rescued).EXT` beside it; returns where.
    static func copyBack(_ file: OpenFile, to url: URL) throws -> URL {
        // The stop may have copied it back already.
        if let copy = RecordingLock.rescuedCopy(device: file.identity.device, inode: file.identity.inode),
           FileManager.default.fileExists(atPath: copy.path) {
            return copy
        }
        let rescue = FilePlacement.rescueName(for: url)
        try Syscall.copyFile(file.descriptorPath, to: rescue)
        RecordingLock.noteRescuedCopy(device: file.identity.device, inode: file.identity.inode, at: rescue)
        return rescue
    }
}
