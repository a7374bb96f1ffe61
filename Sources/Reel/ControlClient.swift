import Foundation
import ReelSystem

/// A client of a ``ControlServer``'s socket (what `reel control` is): sends requests as JSON
/// lines and reads the replies and, after `subscribe`, the events.
public final class ControlClient {
    private let fd: Int32
    private var pending: [UInt8] = []
    private var closed = false
    private var nextID = 1

    /// Connects to the control socket at `path`.
    ///
    /// - Throws: `.notRunning` when nothing listens there (the recording has ended), the
    ///   system's errors (`.permissionDenied`: another user's).
    public init(_ path: URL) throws { fd = try UnixSocket.connect(to: path.path) }

    deinit { close() }

    /// Closes the connection.
    public func close() {
        guard !closed else { return }
        closed = true
        Syscall.close(fd)
    }

    /// Sends `text` as it is (a request line ends with a newline).
    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Sends `bytes` as they are.
    public func send(_ bytes: [UInt8]) throws {
        var done = 0
        while done < bytes.count {
            // MSG_NOSIGNAL: a recording that has gone is an error here, not a SIGPIPE.
            let sent = bytes.withUnsafeBytes { raw in
                Syscall.attempt { Glibc.send(fd, raw.baseAddress! + done, raw.count - done, Int32(MSG_NOSIGNAL)) }
            }
            switch sent {
            case .success(let n): done += n
            case .failure(let e):
                throw ReelError(e.rawValue == EPIPE || e.rawValue == ECONNRESET ? .notRunning : Syscall.code(forErrno: e.rawValue, absent: .notRunning),
                                "cannot send to the control socket: \(Syscall.describe(e.rawValue))", hint: "the recording may have ended", errno: e.rawValue)
            }
        }
    }

    /// The next line the server sends, without its newline; `nil` when the connection ends.
    ///
    /// - Throws: `.busy` when nothing comes within `seconds`.
    public func readLine(within seconds: Double = 20) throws -> [UInt8]? {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if let newline = pending.firstIndex(of: 10) {
                defer { pending.removeFirst(newline + 1) }
                return Array(pending[..<newline])
            }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let left = Int32(max(0, deadline.timeIntervalSinceNow) * 1000)
            guard left > 0, case .success(let ready) = Syscall.attempt({ poll(&p, 1, left) }), ready > 0 else {
                throw ReelError(.busy, "the recording did not answer within \(Int(seconds)) s", hint: "try again")
            }
            var buffer = [UInt8](repeating: 0, count: 65536)
            guard case .success(let n) = Syscall.attempt({ read(fd, &buffer, buffer.count) }), n > 0 else { return nil }
            pending += buffer[..<n]
        }
    }

    /// The next line as a JSON object; `nil` when the connection ends.
    public func readObject(within seconds: Double = 20) throws -> [String: Any]? {
        guard let line = try readLine(within: seconds) else { return nil }
        guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] else {
            throw ReelError(.invalidMedia, "the control socket sent a line that is not a JSON object: \(String(decoding: line.prefix(200), as: UTF8.self))")
        }
        return object
    }

    /// Sends `command` with `argument` and returns the reply to it (events that come before it
    /// are skipped) and its line as sent. A server that turns the connection away (too many
    /// clients) answers before it reads any request: that refusal (`"id": null`) is the reply,
    /// also when it closed the connection before the request could be sent.
    public func request(_ command: String, argument: String? = nil, id: Int? = nil,
                        within seconds: Double = 20) throws -> (reply: [String: Any], line: String) {
        let id = id ?? nextID
        nextID = id + 1
        var object: [String: Any] = ["command": command, "id": id]
        if let argument { object["arg"] = argument }
        guard let text = JSONLine.encode(object) else {
            throw ReelError(.invalidConfiguration, "the control request \(command) cannot be written as JSON")
        }
        do {
            try send(Array(text.utf8) + [10])
        } catch let error as ReelError where error.code == .notRunning {
            // What it said before closing, if anything, says why better than a broken pipe.
            if let refusal = try? refusal(within: 1) { return refusal }
            throw error
        }
        while let line = try readLine(within: seconds) {
            guard let reply = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any], reply["event"] == nil else { continue }
            if (reply["id"] as? Int) == id || (reply["id"] is NSNull && reply["ok"] as? Bool == false) {
                return (reply, String(decoding: line, as: UTF8.self))
            }
        }
        throw ReelError(.notRunning, "the recording closed the connection before answering", hint: "it has ended")
    }

    /// A refusal the server sent before reading any request (`"id": null`), if one waits.
    private func refusal(within seconds: Double) throws -> (reply: [String: Any], line: String)? {
        while let line = try readLine(within: seconds) {
            if let reply = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
               reply["id"] is NSNull, reply["ok"] as? Bool == false {
                return (reply, String(decoding: line, as: UTF8.self))
            }
        }
        return nil
    }
}
