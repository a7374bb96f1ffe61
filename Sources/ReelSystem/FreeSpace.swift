#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// The free space of the file system a folder is on: the one reader of `statvfs` (a recording's
/// free-space guard, HLS's, `reel doctor`'s, the start's check). One system call, no
/// allocation; a recording asks it on a queue of its own (its free-space watch), never on the
/// recorder's thread.
package enum FreeSpace {
    /// The bytes an unprivileged user may still write on the file system of `folder` (what the
    /// guards compare with), and its size; `nil` when it cannot be told.
    package static func of(_ folder: URL) -> (available: Int64, total: Int64)? {
        var info = statvfs()
        guard case .success = Syscall.attempt({ statvfs(folder.path, &info) }) else { return nil }
        let block = Int64(info.f_frsize > 0 ? info.f_frsize : info.f_bsize)
        return (Int64(info.f_bavail) * block, Int64(info.f_blocks) * block)
    }

    /// The free space of `folder`, or of the nearest folder above it that exists (a clips folder
    /// not made yet, or deleted while recorded); `nil` when it cannot be told.
    package static func ofNearest(_ folder: URL) -> (available: Int64, total: Int64)? {
        var place = folder
        while !FileManager.default.fileExists(atPath: place.path), place.path != "/" { place = place.deletingLastPathComponent() }
        return of(place)
    }
}
