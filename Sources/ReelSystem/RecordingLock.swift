#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import Synchronization
import ReelCore

/// An advisory lock (`flock`) on a file that is being written: the sign, for other programs, that
/// the file is a recording in progress and not one that a crash cut off.
///
/// The writer of every recording (`AssetWriter`, and so every clip) holds one from the moment
/// it creates the file until the file is finalised and closed, `Recovery` holds one on a file
/// while it finalises it, and files being written under a temporary name are locked too. The
/// kernel drops the lock when its process ends, however it ends, so a file whose writer was
/// killed is free again at once.
///
/// A lock belongs to the file (its inode), not to its name: a file that is finalised by writing
/// a new file and renaming it over the old one is covered by the new file's lock, which is
/// taken before the rename. A lock owns one file descriptor; ``release()`` closes it.
///
/// Sendable so that an owner may keep it behind its own lock (a clips folder's recording
/// session does); it is used from one thread at a time.
package final class RecordingLock: @unchecked Sendable {
    /// The file locked.
    package let url: URL
    private var fd: Int32

    /// The gate of the finalise of the file created (``createFile(at:overwrite:)``): the
    /// finalise runs its steps through it, and an abort of the recording gives it up. Set
    /// before the lock is handed out, never changed.
    package private(set) var finaliseGate: FinaliseGate?

    private init(url: URL, fd: Int32) {
        self.url = url
        self.fd = fd
    }

    deinit {
        assert(fd < 0, "RecordingLock of \(url.path) released")
        if fd >= 0 { Syscall.close(fd) }
    }

    /// Creates the file at `url` and locks it. The file must not exist unless `overwrite` is
    /// set; the check and the creation are one atomic step. An existing file is replaced (made
    /// empty) only once it is locked, so a file that another program is writing is never
    /// truncated under it.
    package static func createFile(at url: URL, overwrite: Bool) throws -> RecordingLock {
        // Not blocking: opening a FIFO for writing would wait for a reader.
        let fd = try Syscall.call(orThrow: { Syscall.fileError($0, creating: url, action: "create") }) {
            open(url.path, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC | (overwrite ? 0 : O_EXCL), 0o644)
        }
        let lock = RecordingLock(url: url, fd: fd)
        do {
            try lock.acquire(exclusive: true)
            var info = stat()
            if overwrite, case .success = Syscall.attempt({ fstat(fd, &info) }), (info.st_mode & S_IFMT) == S_IFREG {
                try Syscall.call(orThrow: { Syscall.fileError($0, creating: url, action: "replace") }) { ftruncate(fd, 0) }
            }
        } catch {
            lock.release()
            throw error
        }
        // A new recording's file: its finalise is still to come, ordered with an abort by a
        // gate of its own.
        lock.finaliseGate = lock.identity.map(FinaliseGate.init(file:))
        return lock
    }

    /// Locks the existing file at `url`: `exclusive` to change it, shared to only read it (a
    /// recording's writer holds its file exclusively, so both are refused while it runs).
    /// Throws `.busy` if another program holds a lock that conflicts.
    package static func lockExisting(_ url: URL, exclusive: Bool) throws -> RecordingLock {
        let fd = try Syscall.call(orThrow: { Syscall.fileError($0, at: url, action: "read") }) {
            open(url.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        }
        let lock = RecordingLock(url: url, fd: fd)
        do {
            try lock.acquire(exclusive: exclusive)
        } catch {
            lock.release()
            throw error
        }
        return lock
    }

    /// Takes the lock without waiting for it. Another reader's probe holds a shared lock for a
    /// moment only, so a refusal is tried again for a tenth of a second before it counts.
    ///
    /// Only a lock held by someone else refuses: on a file system that cannot lock (some
    /// network and FUSE file systems answer `ENOLCK` or `EOPNOTSUPP`) the file is used without
    /// one, as it was before there were locks; only the sign of a recording in progress is
    /// missing there.
    private func acquire(exclusive: Bool) throws {
        var attempts = 0
        while case .failure(let e) = Syscall.attempt({ flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) }) {
            guard e.rawValue == EWOULDBLOCK else { return }
            guard attempts < 20 else { throw Self.busyError(url, holder: Self.holder(of: url)) }
            attempts += 1
            usleep(5_000)
        }
    }

    /// Releases the lock and closes the file descriptor. Releasing twice does nothing.
    package func release() {
        guard fd >= 0 else { return }
        Syscall.close(fd)
        fd = -1
    }

    /// The identity of the locked file (`nil` once released).
    package var identity: FileIdentity? {
        fd >= 0 ? FileIdentity(descriptor: fd) : nil
    }

    // MARK: Where the locked file is now

    /// Where the locked file is now, as its holder sees it.
    package enum Whereabouts: Equatable, Sendable {
        /// At the name it was locked under (or the lock is released: nothing more is known).
        case inPlace
        /// Renamed or moved, on the same file system, to this path.
        case moved(URL)
        /// Deleted while held: its content is reachable only through the lock's descriptor,
        /// which ``copyContent(to:)`` reads.
        case deleted
    }

    /// Where the file is now, expected at `expected` (its writer may have renamed it itself
    /// since it was locked): someone may have renamed or deleted it while it was written. Told
    /// by its inode (the name leads to another file, or to none) and, for a moved file, the
    /// kernel's name for the descriptor (`/proc/self/fd`).
    package func whereabouts(expected: URL) -> Whereabouts {
        guard fd >= 0 else { return .inPlace }
        var held = stat()
        guard case .success = Syscall.attempt({ fstat(fd, &held) }) else { return .inPlace }
        let identity = FileIdentity(held)
        if FileIdentity(expected) == identity { return .inPlace }
        if held.st_nlink == 0 { return .deleted }
        // Its name removed while another (a hard link made meanwhile) still leads to it: that
        // one is not known, so it counts as deleted from here.
        guard let open = OpenFile.of(descriptor: fd) else { return .inPlace }
        if open.isDeleted { return .deleted }
        guard open.path.path.hasPrefix("/"), FileIdentity(open.path) == identity else { return .inPlace }
        return .moved(open.path)
    }

    /// A path that opens the locked file itself, wherever it is now (`/proc/self/fd/N`, while
    /// the lock is held): renamed or moved by someone, deleted, or in a folder that was made
    /// read-only since (a read-only bind mount over it: the descriptor keeps the mount it was
    /// opened through). Opening it for writing needs only the file's own permissions. What
    /// finishes a recording reads and writes the file through it, never by its name, which
    /// can lead elsewhere by then.
    package var descriptorPath: URL? {
        fd >= 0 ? URL(fileURLWithPath: "/proc/self/fd/\(fd)") : nil
    }

    /// Gives the complete file `temporary` (a finalised copy of the locked file) the name the
    /// locked file has now, replacing it, and returns that name; the locked file was expected
    /// at `expected`. Someone may rename the locked file at any moment (a user tidying up as
    /// the recording stops): the name is looked for by the file's identity, and the two are
    /// swapped in one step, then checked, so the copy never takes a name that another file
    /// had meanwhile (that file is swapped back) and the locked file never stays beside it
    /// unfinalised. A locked file deleted meanwhile leaves the copy at `expected` if that is
    /// free, else beside it (``FilePlacement/rescueName(for:)``).
    package func replace(with temporary: URL, expected: URL, what: String) throws -> URL {
        guard let held = identity else { throw ReelError(.ioFailure, "the lock of \(url.path) was released before \(what) was placed") }
        var info = stat()
        try Syscall.call(orThrow: { Syscall.fileError($0, at: expected, action: "read") }) { fstat(fd, &info) }
        // The copy takes the file's permissions and, where allowed, its owner.
        _ = Syscall.attempt { chown(temporary.path, info.st_uid, info.st_gid) }
        try Syscall.call(orThrow: { Syscall.fileError($0, creating: expected, action: "name \(what)") }) {
            chmod(temporary.path, info.st_mode & 0o7777)
        }
        for _ in 0..<5 {
            let now: URL
            switch whereabouts(expected: expected) {
            case .inPlace: now = expected
            case .moved(let path): now = path
            case .deleted:
                let name = FilePlacement.rescueName(for: expected)
                try FilePlacement.place(temporary, at: name, replacing: false, what: what)
                return name
            }
            if try FilePlacement.place(temporary, over: held, at: now, what: what) { return now }
        }
        throw ReelError(.busy, "\(expected.path) kept being renamed while \(what) was placed",
                        hint: "it holds everything recorded as it is; \(LibraryHint.finalise(expected.path))")
    }

    /// Copies the locked file's content (a file deleted while it was held) into a new file at
    /// `destination`, which must not exist; the copy is synced. Returns the bytes copied.
    package func copyContent(to destination: URL) throws -> Int64 {
        let bytes = try Syscall.copyFile(URL(fileURLWithPath: "/proc/self/fd/\(fd)"), to: destination)
        if let held = FileIdentity(descriptor: fd) { Self.noteRescuedCopy(of: held, at: destination) }
        return bytes
    }

    /// The copies made of files deleted while they were written, by the file's identity: the
    /// stop and an abort that comes during it copy a file back once between them.
    private static let rescuedCopies = Mutex<[FileIdentity: URL]>([:])

    /// Notes that the deleted file `file` was copied back to `url`.
    package static func noteRescuedCopy(of file: FileIdentity, at url: URL) {
        rescuedCopies.withLock { $0[file] = url }
    }

    /// Where the deleted file `file` was copied back to, if it was.
    package static func rescuedCopy(of file: FileIdentity) -> URL? {
        rescuedCopies.withLock { $0[file] }
    }

    // MARK: Asking whether a file is being written

    /// The program holding a lock on a file, as far as `/proc/locks` tells.
    package struct Holder: Sendable, Hashable, CustomStringConvertible {
        /// Its process ID, if known.
        package var pid: Int32?
        /// Its command name (`reel`), if known.
        package var command: String?
        /// Whether it holds the file exclusively, as a writer does (else it only reads it).
        package var isWriting: Bool
        /// What it does, when it is a `reel` command that changes a recording without recording
        /// it (`recover`, `merge`): read from its command line.
        package var repair: String? = nil

        package var description: String {
            switch (command, pid) {
            case let (command?, pid?): return "\(command), pid \(pid)"
            case let (nil, pid?): return "pid \(pid)"
            default: return "unknown"
            }
        }
    }

    /// Whether another open file holds an exclusive lock on the regular file at `url`, as the
    /// writer of a recording does: probed with a shared lock that is released at once. A file
    /// that cannot be opened is not being written as far as this can tell.
    package static func isBeingWritten(_ url: URL) -> Bool {
        guard case .success(let fd) = Syscall.attempt({ open(url.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) }) else { return false }
        defer { Syscall.close(fd) }
        var info = stat()
        guard case .success = Syscall.attempt({ fstat(fd, &info) }), (info.st_mode & S_IFMT) == S_IFREG else { return false }
        if case .failure(let e) = Syscall.attempt({ flock(fd, LOCK_SH | LOCK_NB) }) { return e.rawValue == EWOULDBLOCK }
        _ = Syscall.attempt { flock(fd, LOCK_UN) }
        return false
    }

    /// Throws `.busy`, naming the program if it can, if the file at `url` is being written
    /// right now (see ``isBeingWritten(_:)``). For whoever is about to read a recording
    /// (merging it, recovering it into another file).
    package static func checkNotBeingWritten(_ url: URL) throws {
        guard isBeingWritten(url) else { return }
        throw busyError(url, holder: holder(of: url))
    }

    package static func busyError(_ url: URL, holder: Holder?) -> ReelError {
        var who = " by another program"
        if let holder, holder.pid == getpid() {
            who = " by this program"
        } else if let holder, holder.pid != nil {
            who = " by another program (\(holder))"
        }
        if let holder, let repair = holder.repair {
            // An in-place recovery holds the file as a writer does: it is not recorded, though.
            return ReelError(.busy, "\(url.path) is being \(repair == "merge" ? "merged" : "recovered") right now\(who)",
                             hint: "wait until it is done, then try again")
        }
        if let holder, !holder.isWriting {
            return ReelError(.busy, "\(url.path) is being read right now\(who), which is recovering or merging it",
                             hint: "wait until it is done, then try again")
        }
        return ReelError(.busy, "\(url.path) is being recorded right now\(who)",
                         hint: "wait until that recording stops and its file is finalised, then try again")
    }

    /// Who holds a lock on the file at `url`, from `/proc/locks` (which names files by device
    /// and inode). `nil` if nobody does or it cannot be told.
    package static func holder(of url: URL) -> Holder? {
        guard let identity = FileIdentity(url) else { return nil }
        // The kernel makes the table a page at a time as it is read: a lock taken or let go
        // by another process meanwhile shifts the lines, and one line can be missed (1 of
        // 200 with three test processes side by side). A holder not found is looked for again.
        for _ in 0..<2 {
            guard let table = Syscall.kernelText(atPath: "/proc/locks") else { return nil }
            if let holder = holder(of: identity, in: table) { return holder }
        }
        return nil
    }

    /// The holder of the file `identity` in the lock table `table`, if it lists one.
    private static func holder(of identity: FileIdentity, in table: String) -> Holder? {
        let device = identity.device
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~UInt64(0xfff))
        let minor = (device & 0xff) | ((device >> 12) & ~UInt64(0xff))
        // "1: FLOCK  ADVISORY  WRITE 1234 00:2a:5678 0 EOF"; waiters have "->" after the number.
        var found: Holder?
        for line in table.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] == "FLOCK" else { continue }
            let file = fields[5].split(separator: ":")
            guard file.count == 3, UInt64(file[0], radix: 16) == major, UInt64(file[1], radix: 16) == minor,
                  UInt64(file[2]) == identity.inode else { continue }
            let pid = Int32(fields[4]).flatMap { $0 > 0 ? $0 : nil }
            let command = pid.flatMap { Syscall.kernelText(atPath: "/proc/\($0)/comm") }?
                .trimmingCharacters(in: .whitespacesAndNewlines)
            var holder = Holder(pid: pid, command: command?.isEmpty == false ? command : nil, isWriting: fields[3] == "WRITE")
            if let pid, let arguments = Syscall.kernelText(atPath: "/proc/\(pid)/cmdline")?.split(separator: "\0").map(String.init),
               arguments.count > 1, arguments[0].hasSuffix("reel") || arguments[0].hasSuffix("reel-core"), ["recover", "merge"].contains(arguments[1]) {
                holder.repair = arguments[1]
            }
            // The writer, if there is one, rather than a reader's passing probe.
            if holder.isWriting { return holder }
            found = found ?? holder
        }
        return found
    }
}
