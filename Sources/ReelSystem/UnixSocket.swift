#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import ReelCore

/// Unix stream sockets at a path: listening on one made safely, connecting to one, and telling
/// a live one from one left by a process that died.
package enum UnixSocket {
    /// What is at a socket path.
    package enum Occupant: Equatable, Sendable {
        /// Nothing.
        case nothing
        /// A socket somebody listens on.
        case listening
        /// A socket nobody listens on (its process died): it may be replaced.
        case stale
        /// Not a socket, or another user's: never replaced.
        case other(String)
    }

    /// Says what is at `path` (``Occupant``).
    package static func occupant(of path: String) -> Occupant {
        var info = stat()
        if case .failure(let e) = Syscall.attempt({ lstat(path, &info) }) {
            return e.rawValue == ENOENT ? .nothing : .other("it cannot be examined: \(Syscall.describe(e.rawValue))")
        }
        guard info.st_mode & S_IFMT == S_IFSOCK else { return .other("it is not a socket") }
        guard info.st_uid == getuid() else { return .other("it belongs to another user") }
        switch connectResult(path) {
        case .success(let fd):
            Syscall.close(fd)
            return .listening
        case .failure(let e) where e.rawValue == ECONNREFUSED:
            return .stale
        case .failure(let e) where e.rawValue == ENOENT:
            return .nothing
        case .failure(let e):
            return .other("connecting to it fails: \(Syscall.describe(e.rawValue))")
        }
    }

    /// Whether process `pid` exists (a zombie counts): `kill(pid, 0)` succeeds, or fails only
    /// because it is another user's.
    package static func processExists(_ pid: Int32) -> Bool {
        guard pid > 0 else { return false }
        switch Syscall.attempt({ kill(pid, 0) }) {
        case .success: return true
        case .failure(let e): return e.rawValue != ESRCH
        }
    }

    /// Connects to the socket at `path` (a blocking descriptor, close-on-exec).
    package static func connect(to path: String) throws -> Int32 {
        switch connectResult(path) {
        case .success(let fd): return fd
        case .failure(let e):
            let code: ReelError.Code = e.rawValue == ENOENT || e.rawValue == ECONNREFUSED ? .notRunning : Syscall.code(forErrno: e.rawValue, absent: .notRunning)
            throw ReelError(code, "cannot connect to \(path): \(Syscall.describe(e.rawValue))",
                            hint: e.rawValue == ECONNREFUSED ? "nothing listens on it any more: the recording has ended" : nil, errno: e.rawValue)
        }
    }

    private static func connectResult(_ path: String) -> Result<Int32, Syscall.Errno> {
        guard var address = try? address(path) else { return .failure(.init(ENAMETOOLONG)) }
        let fd: Int32
        switch Syscall.attempt({ socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }) {
        case .success(let s): fd = s
        case .failure(let e): return .failure(e)
        }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                Syscall.attempt { Glibc.connect(fd, sa, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
        }
        if case .failure(let e) = connected {
            Syscall.close(fd)
            return .failure(e)
        }
        return .success(fd)
    }

    /// The address of `path`; throws when it does not fit a socket address (107 bytes).
    package static func address(_ path: String) throws -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let room = MemoryLayout.size(ofValue: address.sun_path)
        guard !bytes.isEmpty, bytes.count < room else {
            throw ReelError(.invalidConfiguration, "the socket path \(path) is longer than \(room - 1) bytes",
                            hint: "choose a shorter path")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }

    /// Makes `folder` for sockets if it is not there (mode 0700); one that is there must be a
    /// folder of this user that no one else can write to.
    package static func prepareFolder(_ folder: String) throws {
        guard case .failure(let failure) = Syscall.attempt({ mkdir(folder, 0o700) }) else { return }
        let e = failure.rawValue
        guard e == EEXIST else {
            throw ReelError(Syscall.code(forErrno: e, absent: .ioFailure), "cannot create the folder \(folder) for the control socket: \(Syscall.describe(e))",
                            errno: e)
        }
        var info = stat()
        guard case .success = Syscall.attempt({ lstat(folder, &info) }), info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid(), info.st_mode & 0o022 == 0 else {
            throw ReelError(.permissionDenied, "\(folder) is not a private folder of this user (a folder only you can write to)",
                            hint: "remove it, or give the control socket another path")
        }
    }
}

/// A listening Unix socket at a path: made only where nothing is, or over a stale socket of
/// this user; mode 0600; non-blocking; removed by ``close()`` if it is still the one made.
package final class UnixSocketListener: @unchecked Sendable {
    /// The listening descriptor (non-blocking, close-on-exec).
    package let fd: Int32
    /// Where it listens.
    package let path: String
    private let identity: FileIdentity?
    private var closed = false

    /// Listens at `path`.
    ///
    /// - Throws: `.fileExists` when something other than a stale socket of this user is there
    ///   (never removed), `.busy` when a program listens there, the system's errors.
    package init(path: String) throws {
        var address = try UnixSocket.address(path)
        switch UnixSocket.occupant(of: path) {
        case .nothing: break
        case .stale: _ = Syscall.attempt { unlink(path) }  // a dead process's: taken over
        case .listening:
            throw ReelError(.busy, "another program is listening on \(path)", hint: "give another path for the control socket")
        case .other(let why):
            throw ReelError(.fileExists, "\(path) exists and \(why), so it was left alone", hint: "give another path for the control socket")
        }
        let fd = try Syscall.call("creating a socket") {
            socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        }
        do {
            _ = try withUnsafePointer(to: &address) { pointer in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                    try Syscall.call(orThrow: { e in
                        e == EADDRINUSE
                            ? ReelError(.fileExists, "\(path) was taken while the socket was being made", hint: "give another path for the control socket", errno: e)
                            : Syscall.fileError(e, creating: URL(fileURLWithPath: path), action: "create the socket")
                    }) { bind(fd, sa, socklen_t(MemoryLayout<sockaddr_un>.size)) }
                }
            }
            // Sockets are made with the umask's mode (no one else can connect without write
            // permission either way); only this user, from now on.
            try Syscall.call("making \(path) private") { chmod(path, 0o600) }
            try Syscall.call("listening on \(path)") { listen(fd, 16) }
        } catch {
            Syscall.close(fd)
            throw error
        }
        self.fd = fd
        self.path = path
        identity = FileIdentity(itself: URL(fileURLWithPath: path))
    }

    /// Takes a waiting connection (non-blocking, close-on-exec), or `nil` when none waits.
    package func accept() -> Int32? {
        guard case .success(let client) = Syscall.attempt({ Glibc.accept(fd, nil, nil) }) else { return nil }
        // (accept4 is not in Glibc's module map.)
        _ = Syscall.attempt { fcntl(client, F_SETFD, FD_CLOEXEC) }
        let flags = fcntl(client, F_GETFL)
        _ = Syscall.attempt { fcntl(client, F_SETFL, flags | O_NONBLOCK) }
        return client
    }

    /// Stops listening and removes the socket, if the path still holds the one made here.
    package func close() {
        guard !closed else { return }
        closed = true
        if let identity, FileIdentity(itself: URL(fileURLWithPath: path)) == identity { _ = Syscall.attempt { unlink(path) } }
        Syscall.close(fd)
    }

    deinit { close() }
}
