import Foundation
import ReelCore

/// Writing a file under a temporary name beside the place it is for, and giving it that name
/// only once it is complete and on the disk: whoever looks at the name (or pulls the plug)
/// finds the old file or the new one, never half of one.
package enum FilePlacement {
    /// A hidden name beside `destination` that no file has yet, `.NAME.PURPOSE-PID-RANDOM.EXT`:
    /// unique, so that a file left behind by a crash never stands in the way, and never mistaken
    /// for anyone's file (nothing is removed to make room for it).
    package static func temporaryURL(beside destination: URL, purpose: String, pathExtension: String? = nil) -> URL {
        let folder = destination.deletingLastPathComponent()
        let ext = pathExtension ?? destination.pathExtension
        while true {
            let name = ".\(destination.deletingPathExtension().lastPathComponent).\(purpose)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            let url = folder.appendingPathComponent(ext.isEmpty ? name : "\(name).\(ext)")
            var info = stat()
            if lstat(url.path, &info) != 0 { return url }
        }
    }

    /// The temporary files ``temporaryURL(beside:purpose:pathExtension:)`` made beside
    /// `destination` for one of `purposes` (of process `pid`, or of any), in name order: what
    /// an interrupted write left behind.
    package static func temporaryFiles(beside destination: URL, purposes: [String], pid: Int32? = nil) -> [URL] {
        let folder = destination.deletingLastPathComponent()
        let stem = ".\(destination.deletingPathExtension().lastPathComponent)."
        let prefixes = purposes.map { stem + $0 + "-" + (pid.map { "\($0)-" } ?? "") }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().filter { name in prefixes.contains { name.hasPrefix($0) } }.map { folder.appendingPathComponent($0) }
    }

    /// Makes the complete file at `temporary` durable and gives it the name `destination`,
    /// replacing a file of that name if `replacing`, else never one (not even one that appears
    /// meanwhile). A file replaced hands its permissions and, where allowed, its owner on to
    /// the new one (a private recording stays private). The name change is made durable too.
    /// `what` names the file for errors ("the recovered file").
    static func place(_ temporary: URL, at destination: URL, replacing: Bool, what: String) throws {
        func failure(_ e: Int32) -> ReelError { Muxer.fileError(e, creating: destination, action: "name \(what)") }
        var old = stat()
        if replacing, stat(destination.path, &old) == 0, (old.st_mode & S_IFMT) == S_IFREG {
            // Only someone allowed to (root, or the owner giving it to a group of theirs) can
            // change the owner; the permissions are ours to set.
            _ = chown(temporary.path, old.st_uid, old.st_gid)
            guard chmod(temporary.path, old.st_mode & 0o7777) == 0 else { throw failure(errno) }
        }
        try sync(temporary)
        if replacing {
            guard rename(temporary.path, destination.path) == 0 else { throw failure(errno) }
        } else if link(temporary.path, destination.path) == 0 {
            // A hard link fails if the name is taken: no moment in which a new file could be replaced.
            unlink(temporary.path)
        } else {
            let e = errno
            guard e == EPERM || e == EOPNOTSUPP || e == EMLINK || e == ENOSYS else { throw failure(e) }
            // A file system without hard links.
            guard access(destination.path, F_OK) != 0 else { throw failure(EEXIST) }
            guard rename(temporary.path, destination.path) == 0 else { throw failure(errno) }
        }
        syncFolder(of: destination)
    }

    /// Waits until the contents of the file at `url` are on the disk.
    static func sync(_ url: URL) throws {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Muxer.fileError(errno, creating: url, action: "write") }
        defer { _ = close(fd) }
        while fsync(fd) != 0 {
            let e = errno
            if e == EINTR { continue }
            throw Muxer.fileError(e, creating: url, action: "write")
        }
    }

    /// Makes the entries of the folder holding `url` durable (a rename into it). Best effort:
    /// some file systems cannot sync a folder, and the file itself is complete either way.
    static func syncFolder(of url: URL) {
        let fd = open(url.deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        _ = close(fd)
    }
}
