import Foundation
import ReelSystem

/// The folder of this user's control sockets (``ControlServer/defaultFolder(environment:)``):
/// `PID.sock` is the socket of the recording of process PID, or a symbolic link to it when the
/// socket was made elsewhere, so that a PID always finds its recording. What dead recordings
/// left there (a socket nobody listens on, a link) is swept when the folder is read; an entry
/// of a process that is alive is never removed (a socket is bound before it listens).
enum ControlSocketFolder {
    /// The process an entry's name (`PID.sock`) belongs to, or `nil` for another name.
    static func processID(of name: String) -> Int32? {
        guard name.hasSuffix(".sock"), let pid = Int32(name.dropLast(5)), pid > 0 else { return nil }
        return pid
    }

    /// Makes `PID.sock` in `folder` (made if need be, mode 0700) a link to the socket at `path`.
    /// Whatever is at that name is left by a dead process of the same number (only this process
    /// makes it): a link or a stale socket is replaced, anything else refused.
    static func link(to path: URL, in folder: URL, processID: Int32 = getpid()) throws -> URL {
        try UnixSocket.prepareFolder(folder.path)
        let link = folder.appendingPathComponent("\(processID).sock")
        var info = stat()
        if case .success = Syscall.attempt({ lstat(link.path, &info) }) {
            let kind = info.st_mode & S_IFMT
            guard info.st_uid == getuid(), kind == S_IFLNK || (kind == S_IFSOCK && UnixSocket.occupant(of: link.path) == .stale) else {
                throw ReelError(.fileExists, "\(link.path) exists and is not left by a recording that has ended, so it was left alone",
                                hint: "remove it to make this recording findable by its process number")
            }
            _ = Syscall.attempt { unlink(link.path) }
        }
        _ = try Syscall.call(orThrow: { e in Syscall.fileError(e, creating: link, action: "link the control socket") }) {
            symlink(path.path, link.path)
        }
        return link
    }

    /// Removes `link` if it still points to `path`.
    static func removeLink(_ link: URL, to path: URL) {
        guard (try? FileManager.default.destinationOfSymbolicLink(atPath: link.path)) == path.path else { return }
        _ = Syscall.attempt { unlink(link.path) }
    }

    /// The entries of `folder` a program listens on, by name; entries of dead processes are
    /// removed on the way (a stale socket, a link of a process that has gone).
    static func listening(in folder: URL) -> [URL] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return [] }
        var live: [URL] = []
        for name in names.sorted() {
            guard let pid = processID(of: name) else { continue }
            let entry = folder.appendingPathComponent(name)
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: entry.path)
            let occupant = UnixSocket.occupant(of: target ?? entry.path)
            if occupant == .listening && (target == nil || UnixSocket.processExists(pid)) {
                live.append(entry)
            } else if (target != nil || occupant == .stale) && !UnixSocket.processExists(pid) {
                // Left by a recording killed before it could remove it.
                _ = Syscall.attempt { unlink(entry.path) }
            }
        }
        return live
    }
}
