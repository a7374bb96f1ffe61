import Foundation
import ReelCore

/// A socket on 127.0.0.1 that a test holds to arrange what a streaming client meets: a TCP
/// server that takes connections and never answers (a stalled ingest: the kernel completes
/// the handshake into the backlog, nothing is ever read), or a UDP port another program
/// holds. Closed when the value goes.
public final class LoopbackSocket: @unchecked Sendable {
    /// The socket's descriptor.
    public let descriptor: Int32
    /// The port the system gave it.
    public let port: Int

    /// A TCP socket listening on a free port that never accepts.
    public static func silentServer() throws -> LoopbackSocket { try LoopbackSocket(type: SOCK_STREAM, listens: true) }

    /// A UDP socket bound to a free port (taken, for another program binding it).
    public static func heldUDPPort() throws -> LoopbackSocket { try LoopbackSocket(type: SOCK_DGRAM, listens: false) }

    private init(type: __socket_type, listens: Bool) throws {
        let fd = socket(AF_INET, Int32(type.rawValue), 0)
        guard fd >= 0 else { throw ReelError(.ioFailure, "cannot open a socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ready = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && (!listens || listen(fd, 4) == 0) && getsockname(fd, $0, &length) == 0
            }
        }
        guard ready else {
            close(fd)
            throw ReelError(.ioFailure, "cannot bind a socket on 127.0.0.1")
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }

    /// Waits up to `seconds` for a client's connection to arrive in the backlog (a silent
    /// server); returns whether one did.
    public func waitForConnection(seconds: Double) -> Bool {
        var pending = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&pending, 1, Int32(seconds * 1000)) == 1
    }
}
