#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// A file as the file system knows it (device and inode), whatever name or link leads to it:
/// the one way Reel tells whether two names are one file, whether the file at a name is still
/// the one it was, and which of the files this process holds open is a recording's.
package struct FileIdentity: Hashable, Sendable {
    /// The device the file is on.
    package var device: UInt64
    /// The file's inode on that device.
    package var inode: UInt64

    /// The identity of the file `url` leads to (through links), if there is one.
    package init?(_ url: URL) {
        var info = stat()
        guard case .success = Syscall.attempt({ stat(url.path, &info) }) else { return nil }
        self.init(info)
    }

    /// The identity of the file at `url` itself (a link, not its target), if there is one.
    package init?(itself url: URL) {
        var info = stat()
        guard case .success = Syscall.attempt({ lstat(url.path, &info) }) else { return nil }
        self.init(info)
    }

    /// The identity of the file open as `descriptor`, if it can be told.
    package init?(descriptor: Int32) {
        var info = stat()
        guard case .success = Syscall.attempt({ fstat(descriptor, &info) }) else { return nil }
        self.init(info)
    }

    /// The file `inode` on `device` (an identity kept, to compare with one found).
    package init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    /// The identity `info` describes.
    package init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }

    /// Whether `url` is a regular file itself (not a link to one).
    package static func isRegularFile(_ url: URL) -> Bool {
        var info = stat()
        guard case .success = Syscall.attempt({ lstat(url.path, &info) }) else { return false }
        return (info.st_mode & S_IFMT) == S_IFREG
    }

    /// Where the name `url` leads: the file its symbolic link (and the links that leads
    /// through) points at, or `url` itself when it is no link. A file replaced through a link
    /// (a recording, merge or recovery with overwriting allowed) is the file the link leads to:
    /// the link stays, and leads to the new file.
    package static func followingLinks(_ url: URL) -> URL {
        var info = stat()
        guard case .success = Syscall.attempt({ lstat(url.path, &info) }), (info.st_mode & S_IFMT) == S_IFLNK else { return url }
        return url.resolvingSymlinksInPath()
    }

    /// The size of the file `url` leads to, if it can be told.
    package static func size(of url: URL) -> Int64? {
        var info = stat()
        guard case .success = Syscall.attempt({ stat(url.path, &info) }) else { return nil }
        return Int64(info.st_size)
    }
}
