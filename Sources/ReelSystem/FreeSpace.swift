#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// The free space of the file system a folder is on: the one reader of `statvfs` (a recording's
/// free-space guard, HLS's, `reel doctor`'s, the start's check). One system call, no
/// allocation: cheap enough to ask on a recorder's thread once a second.
package enum FreeSpace {
    /// The bytes an unprivileged user may still write on the file system of `folder` (what the
    /// guards compare with), and its size; `nil` when it cannot be told.
    package static func of(_ folder: URL) -> (available: Int64, total: Int64)? {
        var info = statvfs()
        guard case .success = Syscall.attempt({ statvfs(folder.path, &info) }) else { return nil }
        let block = Int64(info.f_frsize > 0 ? info.f_frsize : info.f_bsize)
        return (Int64(info.f_bavail) * block, Int64(info.f_blocks) * block)
    }
}
