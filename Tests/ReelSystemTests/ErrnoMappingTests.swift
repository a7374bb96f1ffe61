#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import ReelCore
import ReelSystem
import ReelTestSupport

/// The one errno mapping: the same error number is the same kind of failure wherever it comes
/// from, and the file placement and locks report through it.
@Suite("Errno mapping")
struct ErrnoMappingTests {
    @Test("a read-only disk, a full disk and a taken name are the same kind everywhere")
    func kinds() {
        let url = URL(fileURLWithPath: "/nowhere/file.mp4")
        for e in [EACCES, EPERM, EROFS] {
            #expect(Syscall.code(forErrno: e) == .permissionDenied)
            #expect(Syscall.fileError(e, creating: url, action: "create").code == .permissionDenied)
            #expect(Syscall.fileError(e, at: url, action: "open").code == .permissionDenied)
        }
        for e in [ENOSPC, EDQUOT] {
            #expect(Syscall.error("writing", errno: e).code == .insufficientStorage)
            #expect(Syscall.fileError(e, at: url, action: "write").code == .insufficientStorage)
        }
        #expect(Syscall.fileError(EEXIST, creating: url, action: "create").code == .fileExists)
        #expect(Syscall.code(forErrno: EIO, otherwise: .invalidMedia) == .ioFailure)
    }

    @Test("a missing thing is an unavailable source, or an I/O failure for a file Reel reads or writes")
    func absent() {
        let url = URL(fileURLWithPath: "/nowhere/file.mp4")
        #expect(Syscall.error("opening /dev/video9", errno: ENOENT).code == .sourceUnavailable)
        #expect(Syscall.fileError(ENOENT, at: url, action: "open").code == .ioFailure)
        let missingFolder = Syscall.fileError(ENOENT, creating: url, action: "create")
        #expect(missingFolder.code == .ioFailure)
        #expect(missingFolder.message == "the folder /nowhere does not exist")
        #expect(Syscall.code(forErrno: ENOENT, absent: .invalidMedia) == .invalidMedia)
    }

    @Test("placing a file never replaces one unless told to, and says so through the mapping")
    func placement() throws {
        let dir = try TemporaryDirectory()
        let destination = dir.url.appendingPathComponent("out.mp4")
        try Data("old".utf8).write(to: destination)
        let temporary = FilePlacement.temporaryURL(beside: destination, purpose: "new")
        try Data("new".utf8).write(to: temporary)
        let taken = try #require(throws: ReelError.self) {
            try FilePlacement.place(temporary, at: destination, replacing: false, what: "the new file")
        }
        #expect(taken.code == .fileExists && taken.errno == EEXIST)
        #expect(try String(contentsOf: destination, encoding: .utf8) == "old")
        try FilePlacement.place(temporary, at: destination, replacing: true, what: "the new file")
        #expect(try String(contentsOf: destination, encoding: .utf8) == "new")
        #expect(!FileManager.default.fileExists(atPath: temporary.path))

        let missing = try #require(throws: ReelError.self) {
            try RecordingLock.lockExisting(dir.url.appendingPathComponent("absent.mp4"), exclusive: false)
        }
        #expect(missing.code == .ioFailure && missing.errno == ENOENT)
    }

    @Test("a lock held by a writer refuses a second writer as busy")
    func locks() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("live.mp4")
        let writer = try RecordingLock.createFile(at: url, overwrite: false)
        defer { writer.release() }
        #expect(RecordingLock.isBeingWritten(url))
        let second = try #require(throws: ReelError.self) { try RecordingLock.createFile(at: url, overwrite: true) }
        #expect(second.code == .busy)
        let exists = try #require(throws: ReelError.self) { try RecordingLock.createFile(at: url, overwrite: false) }
        #expect(exists.code == .fileExists)
    }
}
