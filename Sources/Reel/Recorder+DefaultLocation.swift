import Foundation
import ReelSystem
import Synchronization

extension Recorder {
    /// The user's videos folder, where recordings go by default: `XDG_VIDEOS_DIR` from the
    /// environment, else from `user-dirs.dirs`, else `~/Videos`.
    public static func defaultOutputDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        userDirectory("VIDEOS", fallback: "Videos", environment: environment)
    }

    /// The user's folder of a kind (`VIDEOS`, `PICTURES`): `XDG_KIND_DIR` from the environment,
    /// else from `user-dirs.dirs`, else `~/fallback`.
    package static func userDirectory(_ kind: String, fallback: String, environment: [String: String]) -> URL {
        let key = "XDG_\(kind)_DIR"
        let home = environment["HOME"].map { URL(fileURLWithPath: $0) } ?? FileManager.default.homeDirectoryForCurrentUser
        if let value = environment[key], !value.isEmpty {
            let expanded = value.replacingOccurrences(of: "$HOME", with: home.path)
            if expanded.hasPrefix("/") { return URL(fileURLWithPath: expanded, isDirectory: true) }
        }
        let configHome = environment["XDG_CONFIG_HOME"].map { URL(fileURLWithPath: $0) } ?? home.appendingPathComponent(".config")
        if let text = try? String(contentsOf: configHome.appendingPathComponent("user-dirs.dirs"), encoding: .utf8) {
            for line in text.split(separator: "\n") where line.hasPrefix("\(key)=") {
                var value = String(line.dropFirst(key.count + 1)).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                value = value.replacingOccurrences(of: "$HOME", with: home.path)
                if value.hasPrefix("/") && value != home.path { return URL(fileURLWithPath: value) }
            }
        }
        return home.appendingPathComponent(fallback)
    }

    /// A dated file name such as `Reel 2026-11-29 at 14.05.09.mp4`, in local time.
    public static func datedFileName(container: Container, date: Date = Date()) -> String {
        var t = time_t(date.timeIntervalSince1970)
        var parts = tm()
        localtime_r(&t, &parts)
        let stamp = String(format: "%04d-%02d-%02d at %02d.%02d.%02d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                           Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
        return "Reel \(stamp).\(container.fileExtension)"
    }

    /// `STEM.EXT`, then `STEM (2).EXT` up to `STEM (1000).EXT` in `folder`, leaving out those
    /// that are the name of a clip recording cut off before its merge (its clips folder is
    /// there): the names a new recording of `STEM` may take, in the order to try them.
    package static func numberedNames(in folder: URL, stem: String, pathExtension: String) -> [URL] {
        (1...1000).map { n in folder.appendingPathComponent(n == 1 ? "\(stem).\(pathExtension)" : "\(stem) (\(n)).\(pathExtension)") }
            .filter { !FileManager.default.fileExists(atPath: RecordingSession.defaultFolder(for: $0).path) }
    }

    /// The names for a new dated file in `folder` (see ``datedFileName(container:date:)`` and
    /// ``numberedNames(in:stem:pathExtension:)``).
    package static func datedNames(in folder: URL, container: Container, date: Date = Date()) -> [URL] {
        let name = datedFileName(container: container, date: date)
        return numberedNames(in: folder, stem: String(name.dropLast(container.fileExtension.count + 1)), pathExtension: container.fileExtension)
    }

    /// Makes a new dated file in `folder`, empty, so that no other recording takes the name:
    /// `Reel 2026-11-29 at 14.05.09.mp4`, or `… (2).mp4` and on when recordings start in the
    /// same second (names whose clips folder is there are left out). A recorder of this process
    /// records into it as into a free name, without the overwrite setting: it replaces the file
    /// only while it is still the empty file made here (so a clip recording's merge at the stop
    /// never replaces a file that appeared at the name meanwhile). Give it back with
    /// ``releaseReservation(_:)``, which a recording that records nothing must do.
    ///
    /// - Throws: `.permissionDenied` when the folder cannot be written, `.ioFailure` when it is
    ///   not there, `.fileExists` when all 1000 numbered names of the moment are taken.
    public static func reserveDatedFile(in folder: URL, container: Container, date: Date = Date()) throws -> URL {
        let names = datedNames(in: folder, container: container, date: date)
        for url in names {
            let fd = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            if fd >= 0 {
                var info = stat()
                if fstat(fd, &info) == 0 { reservations.withLock { $0[url.standardizedFileURL.path] = ReservedFile(info) } }
                close(fd)
                return url
            }
            let e = errno
            if e == EEXIST { continue }
            let kind = Syscall.code(forErrno: e, absent: .ioFailure)
            if kind == .permissionDenied {
                throw ReelError(.permissionDenied, "cannot write to the folder \(folder.path)", hint: LibraryHint.chooseAnotherFolder, errno: e)
            }
            if e == ENOENT || e == ENOTDIR {
                throw ReelError(.ioFailure, "the folder \(folder.path) does not exist", hint: LibraryHint.createFolderOrChooseAnother, errno: e)
            }
            throw ReelError(kind, "cannot create a file in \(folder.path): \(Syscall.describe(e))", errno: e)
        }
        let stem = names.first.map { $0.deletingPathExtension().lastPathComponent } ?? datedFileName(container: container, date: date)
        throw ReelError(.fileExists, "\(folder.path) already holds 1000 recordings named \(stem)", hint: LibraryHint.nameTheRecording)
    }

    /// Gives back a name ``reserveDatedFile(in:container:date:)`` made: removes the file if it is
    /// still the empty regular file made then (a recording into it that recorded something is
    /// kept; so is anything else at the name). Returns whether it removed it.
    @discardableResult
    public static func releaseReservation(_ url: URL) -> Bool {
        // Only the empty file made here: a name given back already, or a file someone put at
        // the name since, is not this process's to remove.
        guard let made = reservations.withLock({ $0.removeValue(forKey: url.standardizedFileURL.path) }) else { return false }
        var info = stat()
        guard lstat(url.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size == 0, ReservedFile(info) == made else { return false }
        return unlink(url.path) == 0
    }

    /// The dated names ``reserveDatedFile(in:container:date:)`` made in this process and not
    /// given back, with the identity of the empty file each is.
    private static let reservations = Mutex<[String: ReservedFile]>([:])

    /// The empty file a reservation made: its identity and when it was made (an inode number
    /// is given again to the next file made after one is removed).
    private struct ReservedFile: Equatable {
        var identity: FileIdentity
        var changed: Int64

        init(_ info: stat) {
            identity = FileIdentity(info)
            changed = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
        }
    }

    /// Whether the file at `url` is a reservation of this process, still as it was made (the
    /// same empty regular file): a recorder records into it as into a free name.
    package static func isOwnReservation(_ url: URL) -> Bool {
        guard let made = reservations.withLock({ $0[url.standardizedFileURL.path] }) else { return false }
        var info = stat()
        guard lstat(url.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size == 0 else { return false }
        return ReservedFile(info) == made
    }
}
