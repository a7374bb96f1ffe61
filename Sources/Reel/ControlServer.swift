import Foundation
import Synchronization
import ReelSystem

/// A control socket: a Unix socket on which other programs (a hotkey daemon, a status bar, a
/// script: `reel control`) drive a recording with JSON lines, as mpv's IPC server or OBS's
/// WebSocket do.
///
/// Each line a client sends is one request, a JSON object with a `command`, an `id` (any JSON
/// value, echoed) and an optional string `arg`: `{"command": "marker", "arg": "Intro", "id": 1}`.
/// Each request gets one reply line with the same `id`: `{"id": 1, "ok": true, …}` with what
/// the command answers, or `{"id": 1, "ok": false, "error": "…", "hint": "…", "code": "…"}`.
/// `subscribe` is answered here: the connection then also gets every event ``publish(_:)``
/// sends, one JSON object a line. The other commands go to the handler, which answers through
/// its responder once (from any thread, at once or later).
///
/// Promises: the socket is made only where nothing is or over a stale socket of this user
/// (never over another file), with mode 0600, and removed by ``close()``. Any number of
/// clients up to ``maximumClients`` are served by one thread with `poll`, all descriptors
/// non-blocking: a client that sends a line that is not JSON, a request without a command, or
/// a line longer than ``maximumLineLength`` gets an error reply and its connection stays
/// usable; a last request without its newline before the client ends its input is answered.
/// One that does not read its replies and events is dropped once ``maximumPendingBytes`` wait
/// for it, or once its socket has stayed full for 10 seconds (a subscriber that stopped
/// reading); one that sends no request within 5 seconds of connecting is closed, so that
/// connections left open cannot keep others out. Nothing a client does holds up the caller of
/// ``publish(_:)``, the handler's responder, or another client: clients are served in turn, a
/// few requests each a round, and one whose replies wait unread (a client that floods requests
/// without reading) is not served until it reads them.
public final class ControlServer: Sendable {
    /// A request: its command and argument.
    public struct Request: Sendable, Hashable {
        /// The command (`status`, `pause`…).
        public var command: String
        /// The argument (`arg`), if any.
        public var argument: String?

        /// A request of `command` with `argument`.
        public init(command: String, argument: String? = nil) {
            self.command = command
            self.argument = argument
        }
    }

    /// The answer to a request.
    public enum Reply: Sendable {
        /// Done; `fields` go into the reply beside `id` and `ok` (strings, numbers, booleans,
        /// arrays and objects of them).
        case success([String: any Sendable])
        /// Not done: the error's message, hint and code go into the reply.
        case failure(ReelError)
    }

    /// Answers a request, once.
    public typealias Responder = @Sendable (Reply) -> Void
    /// Handles a request other than `subscribe`; it must answer through the responder, and
    /// should not block (slow work goes elsewhere and answers when done).
    public typealias Handler = @Sendable (Request, @escaping Responder) -> Void

    /// The longest request line taken (64 KiB); a longer one gets an error reply.
    public static let maximumLineLength = 64 * 1024
    /// The most bytes waiting for a client before it is dropped (1 MiB).
    public static let maximumPendingBytes = 1 << 20
    /// The most clients at once; one more is turned away with an error line.
    public static let maximumClients = 64

    /// The socket's path.
    public let path: URL
    /// The link `PID.sock` to the socket in the folder given to ``init(path:listedIn:handler:)``.
    private let link: URL?
    let core: ControlConnections

    /// Listens at `path` and serves requests with `handler` until ``close()``.
    ///
    /// - Parameters:
    ///   - path: where the socket is made.
    ///   - folder: where the sockets of this user's recordings are found, usually
    ///     ``defaultFolder(environment:)``: a socket made elsewhere gets a link there named after
    ///     this process (`PID.sock`), removed by ``close()``, so that ``listeningSockets(environment:)``
    ///     and a client given the process number find it. `nil`: no link.
    ///   - handler: handles each request other than `subscribe` (see ``Handler``).
    /// - Throws: `.fileExists` when something other than a stale socket of this user is at
    ///   `path` (it is left alone), `.busy` when a program listens there, `.invalidConfiguration`
    ///   for a path too long for a socket, the system's errors.
    public convenience init(path: URL, listedIn folder: URL? = nil, handler: @escaping Handler) throws {
        try self.init(path: path, listedIn: folder, patience: ControlConnections.Patience(), handler: handler)
    }

    /// ``init(path:listedIn:handler:)`` closing idle and stalled clients after `patience`.
    init(path: URL, listedIn folder: URL?, patience: ControlConnections.Patience, handler: @escaping Handler) throws {
        self.path = path
        let listener = try UnixSocketListener(path: path.path)
        var link: URL?
        do {
            if let folder, folder.standardizedFileURL.path != path.deletingLastPathComponent().standardizedFileURL.path {
                link = try ControlSocketFolder.link(to: path, in: folder)
            }
            core = try ControlConnections(listener: listener, patience: patience, handler: handler)
        } catch {
            if let link { ControlSocketFolder.removeLink(link, to: path) }
            listener.close()
            throw error
        }
        self.link = link
        let core = self.core
        let thread = Thread { core.run() }
        thread.name = "reel.control"
        thread.start()
    }

    /// Sends `event` (a JSON object: strings, numbers, booleans, arrays and objects of them)
    /// to every subscribed client, as one line.
    public func publish(_ event: [String: any Sendable]) {
        guard let line = ControlConnections.line(event) else { return }
        core.publish(line)
    }

    /// Sends `line`, the text of one JSON object (no newline), to every subscribed client.
    public func publish(jsonLine line: String) {
        core.publish(Array(line.utf8) + [10])
    }

    /// The clients connected now.
    public var clientCount: Int { core.clientCount }

    /// Stops serving: every connection is closed and the socket removed (if it is still the
    /// one made). Returns once the serving thread has ended.
    public func close() {
        core.stop()
        if let link { ControlSocketFolder.removeLink(link, to: path) }
    }

    deinit { close() }

    /// The folder of the control sockets of this user's recordings: `$XDG_RUNTIME_DIR/reel`.
    ///
    /// - Throws: `.invalidConfiguration` when `XDG_RUNTIME_DIR` is not set.
    public static func defaultFolder(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> URL {
        guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else {
            throw ReelError(.invalidConfiguration, "XDG_RUNTIME_DIR is not set, so there is no private folder for the control socket",
                            hint: "give the control socket a path")
        }
        return URL(fileURLWithPath: runtime).appendingPathComponent("reel", isDirectory: true)
    }

    /// The default socket of process `processID`: `PID.sock` in ``defaultFolder(environment:)``,
    /// which is made (mode 0700) if it is not there.
    public static func defaultPath(processID: Int32 = getpid(), environment: [String: String] = ProcessInfo.processInfo.environment) throws -> URL {
        let folder = try defaultFolder(environment: environment)
        try UnixSocket.prepareFolder(folder.path)
        return folder.appendingPathComponent("\(processID).sock")
    }

    /// The control sockets in ``defaultFolder(environment:)`` that a program listens on (the
    /// running recordings of this user that have one), as `PID.sock` in that folder (a link for
    /// a socket made elsewhere). What recordings that died left there (a socket nobody listens
    /// on, a link) is removed; nothing of a process that is alive is.
    public static func listeningSockets(environment: [String: String] = ProcessInfo.processInfo.environment) -> [URL] {
        guard let folder = try? defaultFolder(environment: environment) else { return [] }
        return ControlSocketFolder.listening(in: folder)
    }
}
