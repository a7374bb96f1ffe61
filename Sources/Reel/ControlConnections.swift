import Foundation
import Synchronization
import ReelSystem

/// The connections of a ``ControlServer``, served by one thread with `poll`: requests read and
/// split into lines, replies and events queued for each client and written as it reads them.
/// Every descriptor is non-blocking; only the serving thread reads, writes and closes them.
///
/// A connection that has sent no request within ``Patience/firstRequest`` (and so is not
/// subscribed) is closed, so that connections left open by a careless client cannot fill the
/// server; one that has not taken what waits for it for ``Patience/stalledReader`` (its socket
/// full: a subscriber that stopped reading) is dropped.
///
/// Fairness: no client can hold up the others. Each round takes at most ``requestsPerRound``
/// requests of each client (the rest of what it sent waits, unread, in its socket), and none of
/// a client that has more than ``heldReplyBytes`` of replies and events waiting or
/// ``requestsPerRound`` requests unanswered: one that floods requests without reading the
/// replies is served no faster than it reads, until it is dropped as a stalled reader, while
/// every other client is answered in the next round.
final class ControlConnections: @unchecked Sendable {
    /// The most requests of one client handled in one round.
    static let requestsPerRound = 16
    /// The most bytes waiting for a client while its next requests are handled.
    static let heldReplyBytes = 64 * 1024

    /// How long a connection may do nothing.
    struct Patience: Sendable {
        /// Seconds from connecting to a first request (or `subscribe`).
        var firstRequest: Double = 5
        /// Seconds a client may leave what waits for it unread (its socket full).
        var stalledReader: Double = 10
    }

    private struct Connection {
        var fd: Int32
        var output: [UInt8] = []
        var subscribed = false
        /// When it connected, until its first request.
        var waitingSince: Double?
        /// Since when what waits for it has not all gone out (its socket is full).
        var stalledSince: Double?
        /// It closed its sending side: closed once its requests are answered (unless subscribed).
        var inputEnded = false
        /// Requests handed to the handler and not answered yet.
        var unanswered = 0
        /// Closed once its output is written (a client turned away).
        var closesWhenWritten = false
        /// Closed at the next round: it did not read what waited for it, or failed.
        var dropped = false
    }

    private struct State {
        var connections: [Int: Connection] = [:]
        var nextID = 0
        var stopRequested = false
    }

    private let listener: UnixSocketListener
    private let handler: ControlServer.Handler
    private let wakeRead: Int32, wakeWrite: Int32
    private let state = Mutex(State())
    private let patience: Patience
    private let finished = DispatchSemaphore(value: 0)
    /// The serving thread's own: each connection's partial line.
    private var splitters: [Int: LineSplitter] = [:]
    /// The serving thread's own: each connection's requests read and not handled yet.
    private var backlogs: [Int: [LineSplitter.Piece]] = [:]

    init(listener: UnixSocketListener, patience: Patience = Patience(), handler: @escaping ControlServer.Handler) throws {
        self.patience = patience
        var fds: [Int32] = [-1, -1]
        do {
            try Syscall.call("making the control socket's wake-up pipe") { pipe(&fds) }
        } catch {
            listener.close()
            throw error
        }
        for fd in fds {
            _ = Syscall.attempt { fcntl(fd, F_SETFD, FD_CLOEXEC) }
            let flags = fcntl(fd, F_GETFL)
            _ = Syscall.attempt { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        self.listener = listener
        self.handler = handler
    }

    var clientCount: Int { state.withLock { $0.connections.count } }

    // MARK: From any thread

    /// Queues `line` for every subscribed client.
    func publish(_ line: [UInt8]) {
        state.withLock { s in
            for (id, c) in s.connections where c.subscribed { Self.queue(line, for: id, in: &s) }
        }
        wake()
    }

    /// Queues the reply to a request of connection `id` whose `id` field was `requestID` (a
    /// JSON text).
    func respond(to id: Int, requestID: String, with reply: ControlServer.Reply) {
        let line = Self.replyLine(requestID: requestID, reply)
        state.withLock { Self.queue(line, for: id, in: &$0) }
        wake()
    }

    /// ``respond(to:requestID:with:)`` for a request the handler was given.
    private func answer(_ id: Int, requestID: String, with reply: ControlServer.Reply) {
        state.withLock { s in
            if let c = s.connections[id], c.unanswered > 0 { s.connections[id]?.unanswered = c.unanswered - 1 }
        }
        respond(to: id, requestID: requestID, with: reply)
    }

    /// Seconds on a monotonic clock.
    private static func now() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    /// Ends serving and waits for the serving thread (a second call does not wait).
    func stop() {
        let first = state.withLock { s in
            defer { s.stopRequested = true }
            return !s.stopRequested
        }
        wake()
        if first { finished.wait() }
    }

    private static func queue(_ line: [UInt8], for id: Int, in s: inout State) {
        guard var c = s.connections[id], !c.dropped else { return }
        if c.output.count + line.count > ControlServer.maximumPendingBytes {
            // It does not read: it goes, and nothing waits for it.
            c.dropped = true
            c.output = []
        } else {
            c.output += line
        }
        s.connections[id] = c
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = Syscall.attempt { write(wakeWrite, &byte, 1) }  // a full pipe wakes the thread as well
    }

    // MARK: The serving thread

    func run() {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0), pollfd(fd: listener.fd, events: Int16(POLLIN), revents: 0)]
            var ids: [Int] = []
            var servable = false
            let stopping = state.withLock { s -> Bool in
                for (id, c) in s.connections {
                    ids.append(id)
                    let backlog = backlogs[id]?.isEmpty == false
                    servable = servable || (backlog && Self.takesRequests(c))
                    // Once its input has ended, only what waits for it matters; while requests
                    // it sent wait to be handled, the rest waits in its socket.
                    let reading = c.inputEnded || backlog ? 0 : Int16(POLLIN)
                    fds.append(pollfd(fd: c.fd, events: reading | (c.output.isEmpty ? 0 : Int16(POLLOUT)), revents: 0))
                }
                return s.stopRequested
            }
            if stopping { break }
            // With connections to watch for idleness, a look every quarter of a second; at once
            // with requests to handle.
            _ = Syscall.attempt { poll(&fds, nfds_t(fds.count), servable ? 0 : ids.isEmpty ? -1 : 250) }
            if fds[0].revents != 0 {
                while read(wakeRead, &buffer, buffer.count) > 0 {}
            }
            if fds[1].revents & Int16(POLLIN) != 0 { acceptClients() }
            for (k, id) in ids.enumerated() where fds[k + 2].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                readRequests(of: id, fd: fds[k + 2].fd, buffer: &buffer)
            }
            for id in ids { handleBacklog(of: id) }
            writeAndClose()
        }
        // What waits goes out as far as the clients take it now (an abort's reply).
        writeAndClose()
        let fds = state.withLock { s -> [Int32] in
            defer { s.connections = [:] }
            return s.connections.values.map(\.fd)
        }
        for fd in fds { Syscall.close(fd) }
        splitters = [:]
        backlogs = [:]
        listener.close()
        Syscall.close(wakeRead)
        Syscall.close(wakeWrite)
        finished.signal()
    }

    private func acceptClients() {
        while let fd = listener.accept() {
            state.withLock { s in
                let id = s.nextID
                s.nextID += 1
                var c = Connection(fd: fd, waitingSince: Self.now())
                if s.connections.count >= ControlServer.maximumClients {
                    c.output = Self.replyLine(requestID: "null", .failure(ReelError(.busy, "too many clients (\(ControlServer.maximumClients)) are connected",
                                                                                     hint: "close another connection")))
                    c.closesWhenWritten = true
                }
                s.connections[id] = c
            }
        }
    }

    /// Reads what `fd` has, until it gives a complete line or a buffer's worth (so that one
    /// client cannot starve the others), into the connection's backlog; a closed or failed
    /// connection is dropped.
    private func readRequests(of id: Int, fd: Int32, buffer: inout [UInt8]) {
        var splitter = splitters[id] ?? LineSplitter(maximumLength: ControlServer.maximumLineLength)
        defer { splitters[id] = splitter }
        var backlog = backlogs[id] ?? []
        defer { backlogs[id] = backlog }
        let n = buffer.withUnsafeMutableBytes { raw in Syscall.attempt { read(fd, raw.baseAddress, raw.count) } }
        switch n {
        case .success(0):
            // The end of its input: a last request without its newline is answered, and
            // the connection closed once its replies have gone out.
            backlog += splitter.finish()
            state.withLock { s in s.connections[id]?.inputEnded = true }
        case .success(let count):
            backlog += splitter.feed(buffer[..<count])
        case .failure(let e) where e.rawValue == EAGAIN || e.rawValue == EWOULDBLOCK:
            break
        case .failure:
            drop(id)
        }
    }

    /// Whether a client's next requests are handled now: it takes its replies, and few of its
    /// requests wait for an answer.
    private static func takesRequests(_ c: Connection) -> Bool {
        !c.dropped && c.output.count <= heldReplyBytes && c.unanswered < requestsPerRound
    }

    /// Handles up to ``requestsPerRound`` of the requests connection `id` sent, while it takes
    /// its replies.
    private func handleBacklog(of id: Int) {
        guard var backlog = backlogs[id], !backlog.isEmpty else { return }
        var handled = 0
        while handled < Self.requestsPerRound, !backlog.isEmpty,
              state.withLock({ s in s.connections[id].map(Self.takesRequests) ?? false }) {
            handle(backlog.removeFirst(), from: id)
            handled += 1
        }
        backlogs[id] = backlog
    }

    private func drop(_ id: Int) {
        state.withLock { s in s.connections[id]?.dropped = true }
    }

    private func handle(_ piece: LineSplitter.Piece, from id: Int) {
        state.withLock { s in s.connections[id]?.waitingSince = nil }
        switch ControlRequestParser.parse(piece) {
        case .ignore:
            break
        case .invalid(let requestID, let error):
            respond(to: id, requestID: requestID, with: .failure(error))
        case .request(let requestID, let request):
            if request.command == "subscribe" {
                state.withLock { $0.connections[id]?.subscribed = true }
                respond(to: id, requestID: requestID, with: .success(["subscribed": true]))
                return
            }
            state.withLock { s in s.connections[id]?.unanswered += 1 }
            handler(request) { [weak self] reply in self?.answer(id, requestID: requestID, with: reply) }
        }
    }

    /// Writes what waits for each client as far as it reads, and closes the connections that
    /// are done or dropped.
    private func writeAndClose() {
        var closing: [(Int, Int32)] = []
        let now = Self.now()
        state.withLock { s in
            for (id, var c) in s.connections {
                if !c.dropped && !c.output.isEmpty {
                    let sent = c.output.withUnsafeBytes { raw in
                        Syscall.attempt { send(c.fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
                    }
                    switch sent {
                    case .success(let n): c.output.removeFirst(n)
                    case .failure(let e) where e.rawValue == EAGAIN || e.rawValue == EWOULDBLOCK: break
                    case .failure: c.dropped = true
                    }
                }
                // A client that leaves its socket full for long has stopped reading: it goes.
                if c.output.isEmpty {
                    c.stalledSince = nil
                } else if let since = c.stalledSince {
                    if now - since > patience.stalledReader { c.dropped = true }
                } else {
                    c.stalledSince = now
                }
                // One that sends nothing for long is closed (not a subscriber: it has sent its request).
                if let since = c.waitingSince, now - since > patience.firstRequest { c.dropped = true }
                let answered = c.inputEnded && !c.subscribed && c.unanswered == 0 && c.output.isEmpty && backlogs[id]?.isEmpty != false
                if c.dropped || (c.closesWhenWritten && c.output.isEmpty) || answered {
                    closing.append((id, c.fd))
                    s.connections[id] = nil
                } else {
                    s.connections[id] = c
                }
            }
        }
        for (id, fd) in closing {
            splitters[id] = nil
            backlogs[id] = nil
            Syscall.close(fd)
        }
    }

    // MARK: Lines

    /// The JSON line of `object` (sorted keys), or `nil` if it is not a JSON object.
    static func line(_ object: [String: any Sendable]) -> [UInt8]? {
        guard let text = JSONLine.encode(object) else { return nil }
        return Array(text.utf8) + [10]
    }

    /// The reply line to a request whose `id` was `requestID` (a JSON text).
    static func replyLine(requestID: String, _ reply: ControlServer.Reply) -> [UInt8] {
        var fields: [String: any Sendable]
        switch reply {
        case .success(let answer):
            fields = answer
            fields["ok"] = true
        case .failure(let error):
            fields = ["ok": false, "error": error.message, "code": error.code.rawValue]
            if let hint = error.hint { fields["hint"] = hint }
        }
        fields["id"] = nil
        let body = line(fields) ?? line(["ok": false, "error": "the reply could not be written as JSON"])!
        // `{"id":ID,` then the rest of the object.
        return Array("{\"id\":\(requestID)\(body.count > 3 ? "," : "")".utf8) + body.dropFirst()
    }
}
