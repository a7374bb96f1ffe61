import Foundation
import Synchronization
import Testing
@testable import Reel
import ReelSystem
import ReelTestSupport

/// The control socket's promises on its own (a handler that answers at once): making the
/// socket safely, several clients, clients that misbehave.
@Suite struct ControlServerTests {
    static func echo(_ request: ControlServer.Request, _ respond: @escaping ControlServer.Responder) {
        switch request.command {
        case "echo": respond(.success(["arg": request.argument ?? ""]))
        case "later":
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { respond(.success(["late": true])) }
        default: respond(.failure(ReelError(.invalidConfiguration, "unknown command \(request.command)")))
        }
    }

    @Test func answersEachRequestWithItsIDAndStaysUsableAfterBadInput() throws {
        let dir = try TemporaryDirectory()
        let path = dir.url.appendingPathComponent("c.sock")
        let server = try ControlServer(path: path, handler: Self.echo)
        defer { server.close() }
        var info = stat()
        #expect(lstat(path.path, &info) == 0 && info.st_mode & 0o777 == 0o600, "mode 0600")
        let client = try ControlClient(path)
        let reply = try client.request("echo", argument: "hi", id: 7).reply
        #expect(reply["ok"] as? Bool == true && reply["arg"] as? String == "hi")
        // A string id comes back as it was; a late answer too.
        try client.send(#"{"command":"later","id":"x-1"}"# + "\n")
        let late = try #require(try client.readObject())
        #expect(late["id"] as? String == "x-1" && late["late"] as? Bool == true)
        // Garbage: not JSON, random bytes, not an object, no command, a wrong argument,
        // an unknown command. Each gets an error reply; the connection stays.
        var random = SeededRandom(seed: 30)
        let garbage: [[UInt8]] = [Array("{not json\n".utf8), (0..<4000).map { _ in UInt8.random(in: 11...255, using: &random) } + [10],
                                  Array("[1,2]\n".utf8), Array(#"{"id":3}"#.utf8) + [10], Array(#"{"command":"echo","arg":5,"id":4}"#.utf8) + [10],
                                  Array(#"{"command":"nope","id":5}"#.utf8) + [10]]
        for bytes in garbage {
            try client.send(bytes)
            let answer = try #require(try client.readObject())
            #expect(answer["ok"] as? Bool == false && answer["error"] is String, "\(answer)")
        }
        // Valid JSON that is not an object: said as such (not "not JSON").
        for text in ["[1,2]", #""x""#, "3", "null"] {
            try client.send(text + "\n")
            let answer = try #require(try client.readObject())
            #expect(answer["error"] as? String == "a request must be a JSON object", "\(text): \(answer)")
        }
        #expect(try client.request("echo", argument: "still here", id: 8).reply["arg"] as? String == "still here")
        // A 10 MB line: one error, and the next request is answered.
        try client.send([UInt8](repeating: UInt8(ascii: "a"), count: 10_000_000) + [10])
        let long = try #require(try client.readObject())
        #expect(long["ok"] as? Bool == false && (long["error"] as? String ?? "").contains("longer than"))
        #expect(try client.request("echo", argument: "after", id: 9).reply["arg"] as? String == "after")
    }

    @Test func servesSeveralClientsAndDropsOneThatDoesNotRead() throws {
        let dir = try TemporaryDirectory()
        let path = dir.url.appendingPathComponent("c.sock")
        let server = try ControlServer(path: path, handler: Self.echo)
        defer { server.close() }
        let clients = try (0..<5).map { _ in try ControlClient(path) }
        for (i, client) in clients.enumerated() { #expect(try client.request("subscribe", id: i).reply["subscribed"] as? Bool == true) }
        // Client 0 never reads again: publishing goes on without waiting for it, until it is dropped.
        let event: [String: any Sendable] = ["event": "progress", "padding": String(repeating: "x", count: 1000)]
        // The others read every event (3 MB in all, three times what may wait for a client).
        for _ in 0..<60 {
            for _ in 0..<50 { server.publish(event) }
            for client in clients.dropFirst() {
                for _ in 0..<50 { #expect(try client.readObject()?["event"] as? String == "progress") }
            }
        }
        for (i, client) in clients.enumerated().dropFirst() {
            #expect(try client.request("echo", argument: "\(i)", id: 100 + i).reply["arg"] as? String == "\(i)")
        }
        // The one that did not read is gone: its connection ends once its backlog is read.
        var ended = false
        while !ended {
            let line = try clients[0].readLine(within: 20)
            if line == nil { ended = true }
        }
        #expect(server.clientCount == 4)
        // Half a request then a closed connection, and a client that closes at once, leave
        // the server serving.
        let half = try ControlClient(path)
        try half.send(#"{"command":"ec"#)
        half.close()
        try ControlClient(path).close()
        #expect(try clients[1].request("echo", argument: "on", id: 200).reply["arg"] as? String == "on")
    }

    @Test func refusesAPathThatIsNotAStaleSocketAndTakesOverAStaleOne() throws {
        let dir = try TemporaryDirectory()
        // A regular file: refused, untouched.
        let file = dir.url.appendingPathComponent("file.sock")
        try Data("keep me".utf8).write(to: file)
        #expect { try ControlServer(path: file, handler: Self.echo) } throws: { ($0 as? ReelError)?.code == .fileExists }
        #expect(try String(contentsOf: file, encoding: .utf8) == "keep me")
        // A socket somebody listens on: refused.
        let live = dir.url.appendingPathComponent("live.sock")
        let first = try ControlServer(path: live, handler: Self.echo)
        #expect { try ControlServer(path: live, handler: Self.echo) } throws: { ($0 as? ReelError)?.code == .busy }
        first.close()
        #expect(!FileManager.default.fileExists(atPath: live.path), "removed at the end")
        // A dead recording's socket (bound, never removed): taken over.
        let stale = dir.url.appendingPathComponent("stale.sock")
        try Self.leaveStaleSocket(at: stale)
        let server = try ControlServer(path: stale, handler: Self.echo)
        #expect(try ControlClient(stale).request("echo", argument: "new", id: 1).reply["arg"] as? String == "new")
        server.close()
    }

    @Test func theDefaultFolderIsPrivateAndListsTheLiveSockets() throws {
        let dir = try TemporaryDirectory()
        let environment = ["XDG_RUNTIME_DIR": dir.url.path]
        let path = try ControlServer.defaultPath(processID: 4242, environment: environment)
        #expect(path.path == dir.url.path + "/reel/4242.sock")
        var info = stat()
        #expect(lstat(path.deletingLastPathComponent().path, &info) == 0 && info.st_mode & 0o777 == 0o700)
        #expect(ControlServer.listeningSockets(environment: environment).isEmpty)
        let server = try ControlServer(path: path, handler: Self.echo)
        #expect(ControlServer.listeningSockets(environment: environment) == [path])
        server.close()
        #expect(ControlServer.listeningSockets(environment: environment).isEmpty)
        #expect(throws: ReelError.self) { try ControlServer.defaultPath(environment: [:]) }
    }

    /// Binds a socket at `url` and never removes it, as a killed process leaves it.
    static func leaveStaleSocket(at url: URL) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = try UnixSocket.address(url.path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        Syscall.close(fd)
        #expect(UnixSocket.occupant(of: url.path) == .stale)
    }

    /// The number of a process that has ended.
    static func deadProcessID() throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/true")
        try process.run()
        process.waitUntilExit()
        return process.processIdentifier
    }

    static func runtimeFolder(in dir: TemporaryDirectory) throws -> [String: String] {
        let runtime = dir.url.appendingPathComponent("run")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return ["XDG_RUNTIME_DIR": runtime.path]
    }

    @Test func aSocketMadeElsewhereIsFoundByItsProcessNumber() throws {
        let dir = try TemporaryDirectory()
        let environment = try Self.runtimeFolder(in: dir)
        let folder = try ControlServer.defaultFolder(environment: environment)
        let path = dir.url.appendingPathComponent("elsewhere.sock")
        let server = try ControlServer(path: path, listedIn: folder, handler: Self.echo)
        let link = folder.appendingPathComponent("\(getpid()).sock")
        #expect(ControlServer.listeningSockets(environment: environment) == [link])
        #expect(try ControlClient(link).request("echo", argument: "by number").reply["arg"] as? String == "by number")
        server.close()
        var info = stat()
        #expect(lstat(link.path, &info) != 0, "the link goes with the socket")
        #expect(ControlServer.listeningSockets(environment: environment).isEmpty)
        // A socket made in the folder itself gets no link.
        let own = try ControlServer.defaultPath(processID: 1, environment: environment)
        let inFolder = try ControlServer(path: own, listedIn: folder, handler: Self.echo)
        #expect(ControlServer.listeningSockets(environment: environment) == [own])
        inFolder.close()
    }

    @Test func whatDeadRecordingsLeftIsSweptAndNothingAliveIs() throws {
        let dir = try TemporaryDirectory()
        let environment = try Self.runtimeFolder(in: dir)
        let folder = try ControlServer.defaultFolder(environment: environment)
        try UnixSocket.prepareFolder(folder.path)
        // A killed recording's socket, and a killed recording's link to a socket elsewhere.
        let deadSocket = folder.appendingPathComponent("\(try Self.deadProcessID()).sock")
        try Self.leaveStaleSocket(at: deadSocket)
        let deadLink = folder.appendingPathComponent("\(try Self.deadProcessID()).sock")
        let elsewhere = dir.url.appendingPathComponent("killed.sock")
        try Self.leaveStaleSocket(at: elsewhere)
        try FileManager.default.createSymbolicLink(atPath: deadLink.path, withDestinationPath: elsewhere.path)
        // A socket bound by a process that is alive but not listening yet (about to): kept.
        let starting = folder.appendingPathComponent("\(getpid()).sock")
        try Self.leaveStaleSocket(at: starting)
        // A recording listening: kept and listed.
        let live = try ControlServer(path: folder.appendingPathComponent("1.sock"), handler: Self.echo)
        defer { live.close() }
        #expect(ControlServer.listeningSockets(environment: environment) == [live.path])
        var info = stat()
        #expect(lstat(deadSocket.path, &info) != 0 && lstat(deadLink.path, &info) != 0, "the dead ones' entries are gone")
        #expect(UnixSocket.occupant(of: starting.path) == .stale, "a live process's socket is never removed")
        #expect(UnixSocket.occupant(of: elsewhere.path) == .stale, "a socket outside the folder is not touched")
        #expect(UnixSocket.occupant(of: live.path.path) == .listening)
    }

    @Test func splitsLinesAndSkipsOversizedOnes() {
        var splitter = LineSplitter(maximumLength: 4)
        #expect(splitter.feed(Array("ab\ncd".utf8)) == [.line(Array("ab".utf8))])
        #expect(splitter.feed(Array("e\n".utf8)) == [.line(Array("cde".utf8))])
        #expect(splitter.feed(Array("abcdef".utf8)) == [.oversized])
        #expect(splitter.feed(Array("gh\nok\n".utf8)) == [.line(Array("ok".utf8))])
    }

    /// A connection that sends nothing is closed after a while, so that connections left
    /// open cannot keep others out; past the most clients, a newcomer's request gets the
    /// server's "busy" refusal as its reply (it got a broken pipe, "the recording may have ended").
    @Test func idleConnectionsAreClosedAndATurnedAwayClientHearsWhy() throws {
        let dir = try TemporaryDirectory()
        let path = dir.url.appendingPathComponent("c.sock")
        let server = try ControlServer(path: path, listedIn: nil, patience: .init(firstRequest: 3600, stalledReader: 3600), handler: Self.echo)
        defer { server.close() }
        let idle = try (0..<ControlServer.maximumClients).map { _ in try ControlClient(path) }
        while server.clientCount < ControlServer.maximumClients { usleep(10_000) }
        let turnedAway = try ControlClient(path).request("echo", argument: "hi")
        #expect(turnedAway.reply["code"] as? String == "busy", "\(turnedAway.line)")
        idle.forEach { $0.close() }

        let impatient = try ControlServer(path: dir.url.appendingPathComponent("i.sock"), listedIn: nil,
                                          patience: .init(firstRequest: 0.2, stalledReader: 3600), handler: Self.echo)
        defer { impatient.close() }
        let silent = try ControlClient(impatient.path)
        let talking = try ControlClient(impatient.path)
        #expect(try talking.request("echo", argument: "1").reply["arg"] as? String == "1")
        #expect(try silent.readLine(within: 60) == nil, "closed")
        // One that has asked something stays.
        usleep(400_000)
        #expect(try talking.request("echo", argument: "2").reply["arg"] as? String == "2")
    }

    /// A subscriber that stops reading is dropped once its socket has stayed full for a while,
    /// with far less than ``ControlServer/maximumPendingBytes`` waiting (it stayed for ever).
    @Test func aSubscriberThatStopsReadingIsDropped() throws {
        let dir = try TemporaryDirectory()
        let path = dir.url.appendingPathComponent("c.sock")
        let server = try ControlServer(path: path, listedIn: nil, patience: .init(firstRequest: 3600, stalledReader: 0.3), handler: Self.echo)
        defer { server.close() }
        let stuck = try ControlClient(path)
        #expect(try stuck.request("subscribe").reply["subscribed"] as? Bool == true)
        let event: [String: any Sendable] = ["event": "progress", "padding": String(repeating: "x", count: 4000)]
        // Over what the socket holds (about 200 kB), under what may wait (1 MiB).
        for _ in 0..<150 { server.publish(event) }
        var waited = 0
        while server.clientCount > 0 && waited < 6000 {
            usleep(10_000)
            waited += 1
        }
        #expect(server.clientCount == 0)
    }

    /// A client that floods requests without reading the replies holds up no other: a request
    /// sent while the flood is served is answered after a few rounds of it, not after all the
    /// flood that was read (a second `reel control status` timed out after 5 s), and the
    /// flooder, served no faster than it reads, is dropped as a stalled reader.
    @Test func aClientThatFloodsRequestsHoldsUpNoOther() throws {
        let dir = try TemporaryDirectory()
        let path = dir.url.appendingPathComponent("c.sock")
        let handled = Atomic<Int>(0)
        let server = try ControlServer(path: path, listedIn: nil, patience: .init(firstRequest: 3600, stalledReader: 1)) { _, respond in
            handled.add(1, ordering: .relaxed)
            usleep(100)  // a status takes some work
            respond(.success(["state": "recording"]))
        }
        defer { server.close() }
        let chunk = Array([[UInt8]](repeating: Array(#"{"command":"status","id":1}"#.utf8) + [10], count: 2000).joined())
        let flooding = DispatchSemaphore(value: 0)
        Thread {
            // Sends until the server drops it (the send fails), never reading.
            if let flooder = try? ControlClient(path) { while (try? flooder.send(chunk)) != nil {} }
            flooding.signal()
        }.start()
        var waited = 0
        while handled.load(ordering: .relaxed) < 100 && waited < 2000 {
            usleep(10_000)
            waited += 1
        }
        let other = try ControlClient(path)
        let before = handled.load(ordering: .relaxed)
        let reply = try other.request("status", id: 2).reply
        let during = handled.load(ordering: .relaxed) - before
        #expect(reply["ok"] as? Bool == true && reply["id"] as? Int == 2, "\(reply)")
        #expect(during < 1000, "\(during) of the flooder's requests were handled before the other client's")
        #expect(flooding.wait(timeout: .now() + 60) == .success, "the flooder is dropped")
        #expect(try other.request("status", id: 3).reply["ok"] as? Bool == true)
    }

    /// A last request without its newline, then the end of the client's input (`printf … | nc -U`),
    /// is answered before the connection closes (it was closed unanswered).
    @Test func aLastRequestWithoutItsNewlineIsAnswered() throws {
        let dir = try TemporaryDirectory()
        let path = dir.url.appendingPathComponent("c.sock")
        let server = try ControlServer(path: path, handler: Self.echo)
        defer { server.close() }
        let fd = try UnixSocket.connect(to: path.path)
        defer { close(fd) }
        let request = Array(#"{"command":"later","id":4}"#.utf8)
        #expect(request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == request.count)
        shutdown(fd, Int32(SHUT_WR))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            try #require(poll(&p, 1, 60_000) == 1, "an answer or the end within a minute")
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            received += buffer[..<n]
        }
        let reply = try #require(try JSONSerialization.jsonObject(with: Data(received)) as? [String: Any])
        #expect(reply["id"] as? Int == 4 && reply["late"] as? Bool == true)
    }
}
