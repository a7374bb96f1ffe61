#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import ReelSystem
import ReelTestSupport

/// Files the kernel makes as they are read (`/proc/locks`): read to their end, however long.
@Suite struct KernelTextTests {
    /// With more locks held than a page of `/proc/locks` lists, the holder of each locked
    /// file is still found (only those in the first ~4 KB were: the rest were "unknown").
    @Test func theHolderOfALockIsFoundWhenTheLockTableIsLong() throws {
        let dir = try TemporaryDirectory()
        var descriptors: [Int32] = []
        defer { for fd in descriptors { close(fd) } }
        var files: [URL] = []
        for n in 0..<200 {
            let url = dir.url.appendingPathComponent("locked-\(n)")
            let fd = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            try #require(fd >= 0)
            try #require(flock(fd, LOCK_EX | LOCK_NB) == 0)
            descriptors.append(fd)
            files.append(url)
        }
        let table = try #require(Syscall.kernelText(atPath: "/proc/locks"))
        #expect(table.utf8.count > 8192, "the lock table is \(table.utf8.count) bytes")
        let unknown = files.filter { RecordingLock.holder(of: $0)?.pid != getpid() }
        #expect(unknown.isEmpty, "\(unknown.count) of \(files.count) locked files had no holder found, the first \(unknown.first?.lastPathComponent ?? "")")
        #expect(files.allSatisfy { RecordingLock.holder(of: $0)?.isWriting == true })
    }
}
