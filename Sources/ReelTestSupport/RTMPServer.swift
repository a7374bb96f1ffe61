import Foundation
import ReelCore
import Synchronization

/// A real RTMP server on the loopback for tests of live streaming: nginx with Debian's RTMP
/// module (`nginx-light` or `nginx`, and `libnginx-mod-rtmp`), started with a configuration of
/// its own (its own port, pid file, log and folders) as a subprocess in the foreground.
///
/// Its `live` application takes published streams (`rtmp://127.0.0.1:PORT/live/KEY`) and
/// records each publishing session into ``recordingsFolder`` as an FLV file: what the server
/// received, for a test to decode. A player can pull the stream back at the same address
/// (``pull(key:seconds:to:)``).
///
/// nginx runs as one process (`master_process off`), so ``kill()`` (`SIGKILL`) is the server
/// dying at once, connections and all, and ``restart()`` brings it back on the same port.
public final class RTMPServer: Sendable {
    /// The port on 127.0.0.1.
    public let port: Int
    /// Where the server records what is published, one FLV file per publishing session.
    public var recordingsFolder: URL { directory.url.appendingPathComponent("record", isDirectory: true) }
    private let directory: TemporaryDirectory
    private let running = Mutex<ProcessBox?>(nil)

    private struct ProcessBox: @unchecked Sendable {
        let process: Process
    }

    /// The nginx binary and the RTMP and stream modules, where Debian installs them.
    static let nginx = "/usr/sbin/nginx"
    static let module = "/usr/lib/nginx/modules/ngx_rtmp_module.so"
    static let streamModule = "/usr/lib/nginx/modules/ngx_stream_module.so"

    /// The port that takes RTMPS, for a server made by ``withTLS()``.
    public let tlsPort: Int?
    /// The certificate (its own authority) the RTMPS port shows.
    public var certificate: URL { directory.url.appendingPathComponent("certificate.pem") }

    /// The RTMPS address of stream `key` (a server made by ``withTLS()``).
    public func tlsURL(key: String) -> URL { URL(string: "rtmps://127.0.0.1:\(tlsPort ?? 0)/live/\(key)")! }

    /// Writes the configuration and starts nginx on a free port (or `port`).
    ///
    /// - Throws: when nginx or its RTMP module is missing (`scripts/install-deps` installs
    ///   them) or the server does not accept connections within 10 seconds.
    public convenience init(port: Int = 0) throws {
        try self.init(port: port, withTLS: false)
    }

    /// Also takes RTMPS: nginx's stream module ends TLS on ``tlsPort`` with a certificate for
    /// 127.0.0.1 made for this server (``certificate``, its own authority: a client trusts it
    /// only when told to) and passes the connection on to the RTMP port.
    public static func withTLS() throws -> RTMPServer { try RTMPServer(port: 0, withTLS: true) }

    private init(port: Int, withTLS: Bool) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.nginx), FileManager.default.fileExists(atPath: Self.module) else {
            throw ReelError(.sourceUnavailable, "nginx with the RTMP module is missing", hint: "apt-get install nginx-light libnginx-mod-rtmp")
        }
        directory = try TemporaryDirectory(prefix: "reel-rtmp")
        // nginx's worker may run as another user: let it write its recordings.
        try FileManager.default.createDirectory(at: directory.url.appendingPathComponent("record"), withIntermediateDirectories: true)
        chmod(directory.url.path, 0o755)
        chmod(directory.url.appendingPathComponent("record").path, 0o777)
        self.port = port == 0 ? try Self.freePort() : port
        let user = getuid() == 0 ? "user root root;\n" : ""
        var tls = ""
        if withTLS {
            guard FileManager.default.fileExists(atPath: Self.streamModule) else {
                throw ReelError(.sourceUnavailable, "nginx's stream module is missing", hint: "apt-get install libnginx-mod-stream")
            }
            let made = try Subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                                           "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", directory.url.appendingPathComponent("key.pem").path,
                                           "-out", directory.url.appendingPathComponent("certificate.pem").path])
            guard made.status == 0 else { throw ReelError(.ioFailure, "openssl could not make a certificate: \(made.stderr)") }
            tlsPort = try Self.freePort()
            tls = """
                stream {
                    server {
                        listen 127.0.0.1:\(tlsPort!) ssl;
                        ssl_certificate \(directory.url.appendingPathComponent("certificate.pem").path);
                        ssl_certificate_key \(directory.url.appendingPathComponent("key.pem").path);
                        proxy_pass 127.0.0.1:\(self.port);
                    }
                }

                """
        } else {
            tlsPort = nil
        }
        let config = """
            load_module \(Self.module);
            \(withTLS ? "load_module \(Self.streamModule);\n" : "")\(user)daemon off;
            master_process off;
            worker_processes 1;
            pid \(directory.url.path)/nginx.pid;
            error_log \(directory.url.path)/error.log info;
            events { worker_connections 64; }
            rtmp {
                server {
                    listen 127.0.0.1:\(self.port);
                    chunk_size 4096;
                    application live {
                        live on;
                        record all;
                        record_path \(recordingsFolder.path);
                        record_unique on;
                    }
                }
            }
            \(tls)
            """
        try config.write(to: directory.url.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
        try launch()
    }

    deinit { kill() }

    /// The address to publish (and play) stream `key` at.
    public func url(key: String) -> URL { URL(string: "rtmp://127.0.0.1:\(port)/live/\(key)")! }

    /// Whether nginx is running.
    public var isRunning: Bool { running.withLock { $0?.process.isRunning ?? false } }

    /// nginx's log, for a failing test to show.
    public var log: String { (try? String(contentsOf: directory.url.appendingPathComponent("error.log"), encoding: .utf8)) ?? "" }

    /// The FLV files recorded so far, oldest first.
    public var recordings: [URL] {
        let files = (try? FileManager.default.contentsOfDirectory(at: recordingsFolder, includingPropertiesForKeys: [.creationDateKey])) ?? []
        return files.filter { $0.pathExtension == "flv" }.sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    /// Waits until the recordings number `count` and the newest is `complete` (nginx writes
    /// the last of a stream after its publisher has gone), then returns them; gives up after
    /// 20 s and returns what there is, for the test's checks to show.
    public func recordings(count: Int, newestIs complete: (URL) -> Bool) -> [URL] {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let files = recordings
            if files.count >= count, let last = files.last, complete(last) { return files }
            usleep(200_000)
        }
        return recordings
    }

    /// Kills nginx at once (`SIGKILL`): publishers see their connection drop.
    public func kill() {
        guard let box = running.withLock({ r -> ProcessBox? in defer { r = nil }; return r }) else { return }
        if box.process.isRunning { Foundation.kill(box.process.processIdentifier, SIGKILL) }
        box.process.waitUntilExit()
    }

    /// Starts nginx again on the same port (after ``kill()``); does nothing if it runs.
    public func restart() throws {
        if isRunning { return }
        try launch()
    }

    /// Plays stream `key` from the server for `seconds` (or until it ends) into `file`, with
    /// the `ffmpeg` command (`-c copy`); returns the command, started. Its exit status and
    /// `file` are there once it ends.
    public func pull(key: String, seconds: Double, to file: URL) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Subprocess.which("ffmpeg") ?? "/usr/bin/ffmpeg")
        process.arguments = ["-v", "error", "-y", "-rw_timeout", "5000000", "-i", url(key: key).absoluteString, "-t", String(seconds),
                             "-c", "copy", file.path]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    private func launch() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.nginx)
        process.arguments = ["-p", directory.url.path, "-e", directory.url.appendingPathComponent("error.log").path,
                             "-c", directory.url.appendingPathComponent("nginx.conf").path]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw ReelError(.sourceUnavailable, "cannot start nginx: \(error)")
        }
        running.withLock { $0 = ProcessBox(process: process) }
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if Self.accepts(port: port) && (tlsPort.map(Self.accepts) ?? true) { return }
            if !process.isRunning { break }
            usleep(20_000)
        }
        kill()
        throw ReelError(.sourceUnavailable, "nginx did not accept connections on port \(port)", hint: "its log says:\n\(log.suffix(800))")
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// A TCP port free on 127.0.0.1 now (the system's pick for a socket, closed again).
    public static func freePort() throws -> Int {
        try LoopbackSocket.silentServer().port
    }
}
