#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
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
            if case .failure = Syscall.attempt({ lstat(url.path, &info) }) { return url }
        }
    }

    /// Where a recording deleted while it was written is copied back: its own name `url` if
    /// that is free again, else the first free `NAME (rescued).EXT`, `NAME (rescued 2).EXT`, …
    package static func rescueName(for url: URL) -> URL {
        var rescue = url
        var attempt = 0
        while FileManager.default.fileExists(atPath: rescue.path) || (try? FileManager.default.destinationOfSymbolicLink(atPath: rescue.path)) != nil {
            attempt += 1
            let name = "\(url.deletingPathExtension().lastPathComponent) (rescued\(attempt > 1 ? " \(attempt)" : ""))"
            rescue = url.deletingLastPathComponent().appendingPathComponent(name).appendingPathExtension(url.pathExtension)
        }
        return rescue
    }

    /// The temporary files ``temporaryURL(beside:purpose:pathExtension:)`` made beside
    /// `destination` for one of `purposes` (of process `pid`, or of any), in name order: what
    /// an interrupted write left behind. With `nested`, also those made beside such a file
    /// (`..NAME.PURPOSE-PID-N.measuring-PID-M.EXT`: a recovery's copy measured on the way),
    /// which outlive it when the write is interrupted.
    package static func temporaryFiles(beside destination: URL, purposes: [String], pid: Int32? = nil, nested: Bool = false) -> [URL] {
        let folder = destination.deletingLastPathComponent()
        let stem = ".\(destination.deletingPathExtension().lastPathComponent)."
        let own = purposes.map { stem + $0 + "-" + (pid.map { "\($0)-" } ?? "") }
        let prefixes = nested ? own + own.map { "." + $0 } : own
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().filter { name in prefixes.contains { name.hasPrefix($0) } }.map { folder.appendingPathComponent($0) }
    }

    /// The process that made `file`, a temporary file ``temporaryURL(beside:purpose:pathExtension:)``
    /// made beside `destination` for `purpose` (`.NAME.PURPOSE-PID-RANDOM.EXT`); `nil` if its
    /// name is not of that form.
    package static func maker(of file: URL, beside destination: URL, purpose: String) -> Int32? {
        let prefix = ".\(destination.deletingPathExtension().lastPathComponent).\(purpose)-"
        guard file.deletingLastPathComponent().standardizedFileURL.path == destination.deletingLastPathComponent().standardizedFileURL.path else { return nil }
        // A file made beside such a file (see `temporaryFiles(beside:purposes:pid:nested:)`) is that one's maker's.
        let name = file.lastPathComponent.hasPrefix("." + prefix) ? String(file.lastPathComponent.dropFirst()) : file.lastPathComponent
        guard name.hasPrefix(prefix) else { return nil }
        let fields = name.dropFirst(prefix.count).split(separator: "-")
        guard fields.count >= 2, let pid = Int32(fields[0]), pid > 0 else { return nil }
        return pid
    }

    /// Whether the process that made `file` (see ``maker(of:beside:purpose:)``, for one of
    /// `purposes`) runs no more: then nothing writes it again. `false` when its name tells no
    /// maker, or the maker (or a process that took its number since) runs, or is this one.
    package static func makerIsGone(of file: URL, beside destination: URL, purposes: [String]) -> Bool {
        guard let pid = purposes.lazy.compactMap({ maker(of: file, beside: destination, purpose: $0) }).first, pid != getpid() else { return false }
        return kill(pid, 0) != 0 && errno == ESRCH
    }

    /// Makes the complete file at `temporary` durable and gives it the name `destination`,
    /// replacing a file of that name if `replacing`, else never one (not even one that appears
    /// meanwhile). A file replaced hands its permissions and, where allowed, its owner on to
    /// the new one (a private recording stays private). The name change is made durable too.
    /// `what` names the file for errors ("the recovered file").
    package static func place(_ temporary: URL, at destination: URL, replacing: Bool, what: String) throws {
        func failure(_ e: Int32) -> ReelError { Syscall.fileError(e, creating: destination, action: "name \(what)") }
        var old = stat()
        if replacing, case .success = Syscall.attempt({ stat(destination.path, &old) }), (old.st_mode & S_IFMT) == S_IFREG {
            // Only someone allowed to (root, or the owner giving it to a group of theirs) can
            // change the owner; the permissions are ours to set.
            _ = Syscall.attempt { chown(temporary.path, old.st_uid, old.st_gid) }
            try Syscall.call(orThrow: failure) { chmod(temporary.path, old.st_mode & 0o7777) }
        }
        try sync(temporary)
        if replacing {
            try Syscall.call(orThrow: failure) { rename(temporary.path, destination.path) }
        } else {
            switch Syscall.attempt({ link(temporary.path, destination.path) }) {
            case .success:
                // A hard link fails if the name is taken: no moment in which a new file could be replaced.
                _ = Syscall.attempt { unlink(temporary.path) }
            case .failure(let e):
                guard [EPERM, EOPNOTSUPP, EMLINK, ENOSYS].contains(e.rawValue) else { throw failure(e.rawValue) }
                // A file system without hard links.
                guard case .failure = Syscall.attempt({ access(destination.path, F_OK) }) else { throw failure(EEXIST) }
                try Syscall.call(orThrow: failure) { rename(temporary.path, destination.path) }
            }
        }
        syncFolder(of: destination)
    }

    /// Makes the complete file at `temporary` durable and puts it at `destination` in place of
    /// the file `file`, if that is the file there: the two are swapped in one step
    /// (`renameat2` with `RENAME_EXCHANGE`), the file that comes out is checked to be `file` and
    /// removed. Returns `false`, with `temporary` as it was, if `destination` led to another
    /// file by then (it is swapped back: nobody's file is replaced) or to none. Where the file
    /// system cannot swap, the file at `destination` is checked, then replaced by a rename.
    package static func place(_ temporary: URL, over file: FileIdentity, at destination: URL, what: String) throws -> Bool {
        func failure(_ e: Int32) -> ReelError { Syscall.fileError(e, creating: destination, action: "name \(what)") }
        try sync(temporary)
        switch exchange(temporary, destination) {
        case .success:
            guard FileIdentity(itself: temporary) == file else {
                // Another file took the name meanwhile: it goes back.
                if case .failure(let e) = exchange(temporary, destination) { throw failure(e.rawValue) }
                return false
            }
            _ = Syscall.attempt { unlink(temporary.path) }
        case .failure(let e) where e.rawValue == ENOENT:
            return false
        case .failure(let e) where ![EINVAL, ENOSYS, EOPNOTSUPP].contains(e.rawValue):
            throw failure(e.rawValue)
        case .failure:
            guard FileIdentity(itself: destination) == file else { return false }
            try Syscall.call(orThrow: failure) { rename(temporary.path, destination.path) }
        }
        syncFolder(of: destination)
        return true
    }

    /// `renameat2(…, RENAME_EXCHANGE)`: swaps the files at `a` and `b` (looked up at run time,
    /// as Glibc's module does not declare it).
    private static func exchange(_ a: URL, _ b: URL) -> Result<Int32, Syscall.Errno> {
        typealias RenameAt2 = @convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32
        guard let symbol = renameAt2 else { return .failure(Syscall.Errno(ENOSYS)) }
        let call = unsafeBitCast(symbol, to: RenameAt2.self)
        let exchange: UInt32 = 1 << 1
        return Syscall.attempt { call(AT_FDCWD, a.path, AT_FDCWD, b.path, exchange) }
    }

    private nonisolated(unsafe) static let renameAt2 = dlsym(nil, "renameat2")

    /// Makes the complete file at `temporary` durable and gives it the first of `candidates`
    /// that no file (nor anything else) has, never replacing one; returns that name. The name
    /// is chosen only now, when the file is whole: a crash before leaves no empty name behind,
    /// only the hidden temporary file. Throws `.fileExists` when every candidate is taken.
    package static func placeAtFirstFree(_ temporary: URL, candidates: [URL], what: String) throws -> URL {
        guard let first = candidates.first else { throw ReelError(.invalidConfiguration, "no name to give \(what)") }
        try sync(temporary)
        for candidate in candidates {
            func failure(_ e: Int32) -> ReelError { Syscall.fileError(e, creating: candidate, action: "name \(what)") }
            switch Syscall.attempt({ link(temporary.path, candidate.path) }) {
            case .success:
                _ = Syscall.attempt { unlink(temporary.path) }
            case .failure(let e) where e.rawValue == EEXIST:
                continue
            case .failure(let e):
                guard [EPERM, EOPNOTSUPP, EMLINK, ENOSYS].contains(e.rawValue) else { throw failure(e.rawValue) }
                // A file system without hard links: a name nothing has, taken by a rename.
                guard case .failure = Syscall.attempt({ access(candidate.path, F_OK) }) else { continue }
                try Syscall.call(orThrow: failure) { rename(temporary.path, candidate.path) }
            }
            syncFolder(of: candidate)
            return candidate
        }
        throw ReelError(.fileExists, "\(first.deletingLastPathComponent().path) already holds files of every name for \(what) (\(first.lastPathComponent) and \(candidates.count - 1) numbered ones)")
    }

    /// Writes `data` as the whole of the file at `url` (made, or emptied first) and waits until
    /// it is on the disk; returns 0, or the errno of what failed (the file then goes). For small
    /// files that take their real name by a rename afterwards (FileManager's writes go through
    /// a `.dat.nosync…` file of their own, which a kill leaves behind).
    package static func writeSynced(_ data: Data, to url: URL) -> Int32 {
        let fd: Int32
        switch Syscall.attempt({ open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }) {
        case .success(let opened): fd = opened
        case .failure(let e): return e.rawValue
        }
        let written = data.withUnsafeBytes { raw in Syscall.attempt { Foundation.write(fd, raw.baseAddress, raw.count) } }
        var failure: Int32 = 0
        switch written {
        case .success(let n) where n == data.count:
            if case .failure(let e) = Syscall.attempt({ fsync(fd) }) { failure = e.rawValue }
        case .success: failure = ENOSPC
        case .failure(let e): failure = e.rawValue
        }
        Syscall.close(fd)
        if failure != 0 { unlink(url.path) }
        return failure
    }

    /// Replaces the small file at `url` with `data`, so that a crash leaves the old file or the
    /// new one whole: written to `temporary` (beside it) and onto the disk, renamed over it, and
    /// the rename made durable. What a manifest or a list kept beside a recording is written by.
    ///
    /// - Throws: `writeFailure(errno)` when the data cannot be written; an `update` error of
    ///   `url` when the rename fails. The temporary file never stays.
    package static func replaceDurably(_ url: URL, with data: Data, through temporary: URL,
                                       writeFailure: (Int32) -> ReelError) throws {
        let failure = writeSynced(data, to: temporary)
        guard failure == 0 else { throw writeFailure(failure) }
        try replaceDurably(url, withSynced: temporary, action: "update")
    }

    /// Puts `temporary`, written whole and on the disk already (`fsync`), in place of `url`,
    /// and the rename on the disk too, so that a crash leaves the old file or the new one, never
    /// an empty one. On failure the temporary file goes; `action` says what was being done.
    package static func replaceDurably(_ url: URL, withSynced temporary: URL, action: String) throws {
        try Syscall.call(orThrow: { e in
            unlink(temporary.path)
            return Syscall.fileError(e, at: url, action: action)
        }) { rename(temporary.path, url.path) }
        syncFolder(of: url)
    }

    /// Waits until the contents of the file at `url` are on the disk.
    package static func sync(_ url: URL) throws {
        func failure(_ e: Int32) -> ReelError { Syscall.fileError(e, creating: url, action: "write") }
        let fd = try Syscall.call(orThrow: failure) { open(url.path, O_RDONLY | O_CLOEXEC) }
        defer { Syscall.close(fd) }
        try Syscall.call(orThrow: failure) { fsync(fd) }
    }

    /// Makes the entries of the folder holding `url` durable (a rename into it). Best effort:
    /// some file systems cannot sync a folder, and the file itself is complete either way.
    package static func syncFolder(of url: URL) {
        guard case .success(let fd) = Syscall.attempt({ open(url.deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) })
        else { return }
        _ = Syscall.attempt { fsync(fd) }
        Syscall.close(fd)
    }
}
