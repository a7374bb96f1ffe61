import Foundation
import ReelCore
import Synchronization

/// A local TCP port on which nothing answers: either nobody listens (``unusedPort()``) or a
/// socket listens and accepts connections into its backlog but never reads or replies.
public final class SilentServer: @unchecked Sendable {
    /// The port the silent socket listens on.
    public let port: Int
    private let fd = Mutex<Int32>(-1)

    /// Listens on an ephemeral port of 127.0.0.1 and never answers.
    public init() throws {
        let (socket, port) = try Self.bind(listening: true)
        fd.withLock { $0 = socket }
        self.port = port
    }

    deinit { close() }

    /// Stops listening. Safe to call twice.
    public func close() {
        fd.withLock { fd in
            if fd >= 0 { _ = Glibc.close(fd) }
            fd = -1
        }
    }

    /// A port of 127.0.0.1 that was free a moment ago and on which nobody listens.
    public static func unusedPort() throws -> Int {
        let (socket, port) = try bind(listening: false)
        _ = Glibc.close(socket)
        return port
    }

    private static func bind(listening: Bool) throws -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ReelError(.ioFailure, "cannot make a socket", errno: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, !listening || listen(fd, 16) == 0 else {
            let e = errno
            _ = Glibc.close(fd)
            throw ReelError(.ioFailure, "cannot listen on 127.0.0.1", errno: e)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else {
            let e = errno
            _ = Glibc.close(fd)
            throw ReelError(.ioFailure, "cannot name a socket", errno: e)
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}
