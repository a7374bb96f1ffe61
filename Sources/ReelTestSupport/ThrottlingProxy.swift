import Foundation
import ReelCore

/// A TCP relay on the loopback whose upload direction (client to server) is held to a fixed
/// rate, for tests of a live stream on a link slower than the stream: a publisher connects to
/// ``port`` and its bytes reach the server at ``bytesPerSecond`` at most, while the server's
/// answers come back at once.
///
/// The relay keeps its receive buffers small (16 KB), so the slowness reaches the sender within
/// a fraction of a second rather than after megabytes of kernel buffering, as on a real slow
/// uplink. It is a Python script (standard library only) in its own process, like the other
/// test servers.
public final class ThrottlingProxy: Sendable {
    /// The port on 127.0.0.1 to connect to instead of the server's.
    public var port: Int { server.port }
    /// The most bytes a second passed on toward the server.
    public let bytesPerSecond: Int
    private let directory: TemporaryDirectory
    private let server: ScriptServer

    /// Relays connections to 127.0.0.1:`targetPort`, uploads held to `bytesPerSecond`.
    public init(targetPort: Int, bytesPerSecond: Int) throws {
        self.bytesPerSecond = bytesPerSecond
        directory = try TemporaryDirectory(prefix: "reel-throttle")
        server = try ScriptServer(what: "throttling proxy", script: Self.script, directory: directory.url,
                                  arguments: ["{port}", String(targetPort), String(max(1, bytesPerSecond))])
    }

    /// The proxy's log, for a failing test to show.
    public var log: String { server.log }

    /// Stops the proxy. Safe to call twice.
    public func terminate() { server.kill() }

    private static let script = #"""
        import socket, sys, threading, time

        port, target, rate = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        listener.bind(("127.0.0.1", port))
        listener.listen(16)
        print(listener.getsockname()[1], flush=True)

        def pump(source, sink, limited):
            start, sent = time.monotonic(), 0
            try:
                while True:
                    chunk = source.recv(1024 if limited else 65536)
                    if not chunk:
                        break
                    sink.sendall(chunk)
                    if limited:
                        sent += len(chunk)
                        ahead = sent / rate - (time.monotonic() - start)
                        if ahead > 0:
                            time.sleep(ahead)
            except OSError:
                pass
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        while True:
            client, _ = listener.accept()
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
            upstream = socket.create_connection(("127.0.0.1", target))
            threading.Thread(target=pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=pump, args=(upstream, client, False), daemon=True).start()
        """#
}
