import Foundation
import ReelCore

/// What a recording asks the ScreenCast portal for.
package struct ScreenCastOptions: Sendable, Hashable {
    /// What the user may pick.
    package enum Sources: UInt32, Sendable {
        /// A monitor (the whole screen).
        case monitor = 1
        /// A window.
        case window = 2
    }

    /// What may be shared: a monitor or a window.
    package var sources: Sources
    /// Whether the cursor is drawn into the frames; otherwise it is hidden.
    package var drawsCursor: Bool
    /// The token of an earlier grant, so the portal need not ask again; `nil` asks.
    package var restoreToken: String?

    /// Options for a monitor with the cursor drawn in, asking the user.
    package init(sources: Sources = .monitor, drawsCursor: Bool = true, restoreToken: String? = nil) {
        self.sources = sources
        self.drawsCursor = drawsCursor
        self.restoreToken = restoreToken
    }
}

/// What the portal granted: a PipeWire node and the connection to reach it.
package struct ScreenCastGrant: Sendable {
    /// The portal's session (kept open while the recording runs).
    package var sessionHandle: String
    /// The PipeWire node of the stream.
    package var nodeID: UInt32
    /// The stream's size as the portal announced it, if it did.
    package var size: PixelSize?
    /// A token to give next time so the user is not asked again, if the portal gave one.
    package var restoreToken: String?
    /// The PipeWire remote's file descriptor, owned by the receiver (closed by the stream).
    package var pipeWireDescriptor: Int32
}

/// The client side of `org.freedesktop.portal.ScreenCast`: CreateSession → SelectSources →
/// Start → OpenPipeWireRemote, each request answered by a `Response` signal on a request object
/// whose path the client computes from its unique name and a token it chooses (so it can
/// subscribe before asking: a fast portal answers before the call returns).
///
/// A refusal (response 1, the user cancelled; 2, the portal failed) becomes a clear error; the
/// session's `Closed` signal (the user pressed "stop sharing") is seen by ``isSessionClosed()``.
package final class ScreenCastPortal: @unchecked Sendable {
    private static let service = "org.freedesktop.portal.Desktop"
    private static let objectPath = "/org/freedesktop/portal/desktop"
    private static let interface = "org.freedesktop.portal.ScreenCast"

    private let connection: any DBusConnection
    private let callTimeout: Double
    private let interactionTimeout: Double
    private let lock = NSLock()
    // Guarded by `lock`.
    private var session: String?
    private var closed = false
    private var tokenCounter = 0
    private let tokenPrefix = "reel\(UInt32.random(in: 0...UInt32.max))"

    /// A client on `connection`.
    ///
    /// - Parameters:
    ///   - callTimeout: how long a method call may take to be answered.
    ///   - interactionTimeout: how long to wait for an answer that may need the user (the
    ///     dialog of `Start`).
    package init(connection: any DBusConnection, callTimeout: Double = 10, interactionTimeout: Double = 300) {
        self.connection = connection
        self.callTimeout = callTimeout
        self.interactionTimeout = interactionTimeout
    }

    /// The object path of the request that `token` names, for this connection.
    package static func requestPath(uniqueName: String, token: String) -> String {
        let sender = uniqueName.drop(while: { $0 == ":" }).replacingOccurrences(of: ".", with: "_")
        return "\(objectPath)/request/\(sender)/\(token)"
    }

    /// Asks for a screen: the whole conversation up to the PipeWire remote.
    ///
    /// - Throws: `.sourceUnavailable` when no portal offers ScreenCast, `.permissionDenied`
    ///   when the user cancels the dialog or the portal refuses.
    ///
    /// `isCancelled` is asked while waiting for an answer (the dialog may stay open for long):
    /// when it turns true, the session is closed and `.notRunning` thrown.
    package func start(_ options: ScreenCastOptions, isCancelled: @escaping () -> Bool = { false }) throws(ReelError) -> ScreenCastGrant {
        let version = try property("version").number ?? 0
        let cursorModes = (try? property("AvailableCursorModes").number) ?? 0
        let sourceTypes = (try? property("AvailableSourceTypes").number) ?? Int(ScreenCastOptions.Sources.monitor.rawValue)
        guard sourceTypes & Int(options.sources.rawValue) != 0 else {
            throw ReelError(.unsupportedFormat, "the desktop portal cannot share a \(options.sources == .window ? "window" : "monitor")",
                            hint: options.sources == .window ? "record the whole screen instead" : "this desktop's portal backend offers no screen sharing")
        }

        let created = try request("CreateSession", [], ["session_handle_token": .string(nextToken())], timeout: callTimeout,
                                  isCancelled: isCancelled)
        guard let sessionHandle = created["session_handle"]?.text else {
            throw ReelError(.sourceUnavailable, "the desktop portal made a session but gave no handle for it")
        }
        lock.withLock { session = sessionHandle }
        try connection.addMatch("type='signal',interface='org.freedesktop.portal.Session',member='Closed',path='\(sessionHandle)'")

        do throws(ReelError) {
            // Cursor modes: 1 hidden, 2 embedded, 4 metadata. Embedded when asked and offered;
            // hidden otherwise (no portal draws it when not offered).
            var select: [String: DBusValue] = [
                "types": .uint32(options.sources.rawValue),
                "multiple": .bool(false),
            ]
            if options.drawsCursor && cursorModes & 2 != 0 {
                select["cursor_mode"] = .uint32(2)
            } else if cursorModes & 1 != 0 {
                select["cursor_mode"] = .uint32(1)
            }
            if version >= 4 {
                select["persist_mode"] = .uint32(2)
                if let token = options.restoreToken { select["restore_token"] = .string(token) }
            }
            _ = try request("SelectSources", [.objectPath(sessionHandle)], select, timeout: callTimeout, isCancelled: isCancelled)
            let started = try request("Start", [.objectPath(sessionHandle), .string("")], [:], timeout: interactionTimeout,
                                      isCancelled: isCancelled)
            guard let stream = started["streams"]?.elements?.first?.members, let node = stream.first?.number else {
                throw ReelError(.sourceUnavailable, "the desktop portal started the screen cast but named no stream")
            }
            let properties = stream.count > 1 ? stream[1].entries ?? [:] : [:]
            var size: PixelSize?
            if let dimensions = properties["size"]?.members, dimensions.count == 2,
               let w = dimensions[0].number, let h = dimensions[1].number, w > 0, h > 0 {
                size = PixelSize(width: w, height: h)
            }
            let remote = try connection.call(
                DBusMethodCall(destination: Self.service, path: Self.objectPath, interface: Self.interface,
                               member: "OpenPipeWireRemote", arguments: [.objectPath(sessionHandle), .dictionary([:])]),
                timeout: callTimeout)
            guard case .fileDescriptor(let fd)? = remote.first?.unwrapped, fd >= 0 else {
                throw ReelError(.sourceUnavailable, "the desktop portal gave no PipeWire connection")
            }
            return ScreenCastGrant(sessionHandle: sessionHandle, nodeID: UInt32(node), size: size,
                                   restoreToken: started["restore_token"]?.text, pipeWireDescriptor: fd)
        } catch {
            close()
            throw error
        }
    }

    /// Whether the portal has closed the session (the user stopped sharing, or the portal went
    /// away) since the last look. Does not wait.
    package func isSessionClosed() -> Bool {
        let (session, closed) = lock.withLock { (self.session, self.closed) }
        guard let session, !closed else { return closed }
        do throws(ReelError) {
            while let signal = try connection.nextSignal(timeout: 0) {
                if isClosed(signal, session: session) {
                    lock.withLock { self.closed = true }
                    return true
                }
            }
        } catch {
            lock.withLock { self.closed = true }
            return true
        }
        return false
    }

    /// Closes the session (the portal stops the stream) and the bus connection. Safe to call twice.
    package func close() {
        let session = lock.withLock { () -> String? in
            defer { self.session = nil }
            return self.closed ? nil : self.session
        }
        if let session {
            _ = try? connection.call(DBusMethodCall(destination: Self.service, path: session,
                                                    interface: "org.freedesktop.portal.Session", member: "Close"),
                                     timeout: 2)
        }
        connection.close()
    }

    private func isClosed(_ signal: DBusSignal, session: String) -> Bool {
        signal.path == session && signal.interface == "org.freedesktop.portal.Session" && signal.member == "Closed"
    }

    private func nextToken() -> String {
        lock.withLock {
            tokenCounter += 1
            return "\(tokenPrefix)_\(tokenCounter)"
        }
    }

    /// The version of the ScreenCast interface the portal offers; throws `.sourceUnavailable`
    /// when there is no portal, or it offers no ScreenCast.
    package func screenCastVersion() throws(ReelError) -> Int {
        guard let version = try property("version").number, version > 0 else {
            throw ReelError(.sourceUnavailable, "the desktop portal offers no screen sharing (ScreenCast)",
                            hint: "install the portal backend of your desktop (xdg-desktop-portal-gnome, -kde or -wlr)")
        }
        return version
    }

    private func property(_ name: String) throws(ReelError) -> DBusValue {
        let reply = try connection.call(
            DBusMethodCall(destination: Self.service, path: Self.objectPath, interface: "org.freedesktop.DBus.Properties",
                           member: "Get", arguments: [.string(Self.interface), .string(name)]),
            timeout: callTimeout)
        guard let value = reply.first else {
            throw ReelError(.sourceUnavailable, "the desktop portal gave no \(name) for ScreenCast")
        }
        return value.unwrapped
    }

    /// One request: subscribe to its Response, call, wait for the Response, return its results.
    private func request(_ method: String, _ arguments: [DBusValue], _ options: [String: DBusValue],
                         timeout: Double, isCancelled: () -> Bool) throws(ReelError) -> [String: DBusValue] {
        let token = nextToken()
        let expected = Self.requestPath(uniqueName: connection.uniqueName, token: token)
        let rule = { (path: String) in "type='signal',interface='org.freedesktop.portal.Request',member='Response',path='\(path)'" }
        try connection.addMatch(rule(expected))
        var options = options
        options["handle_token"] = .string(token)
        let reply = try connection.call(
            DBusMethodCall(destination: Self.service, path: Self.objectPath, interface: Self.interface, member: method,
                           arguments: arguments + [.dictionary(options)]),
            timeout: callTimeout)
        var paths: Set<String> = [expected]
        // A portal older than version 0.9 returns a path of its own making.
        if let returned = reply.first?.text, returned != expected {
            paths.insert(returned)
            try connection.addMatch(rule(returned))
        }
        let session = lock.withLock { self.session }
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if isCancelled() {
                throw ReelError(.notRunning, "stopped while waiting for the desktop portal's answer to \(method)")
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else {
                throw ReelError(.sourceUnavailable, "the desktop portal did not answer \(method) within \(Int(timeout)) s",
                                hint: method == "Start" ? "nobody chose a screen to share in the portal's dialog" : "the desktop portal is stuck; restart xdg-desktop-portal")
            }
            // In slices, so a stop is seen while the dialog is open.
            guard let signal = try connection.nextSignal(timeout: min(left, 0.1)) else { continue }
            if let session, isClosed(signal, session: session) {
                lock.withLock { closed = true }
                throw ReelError(.permissionDenied, "the desktop portal closed the screen-sharing session during \(method)",
                                hint: "screen sharing was stopped before the recording began")
            }
            guard paths.contains(signal.path), signal.interface == "org.freedesktop.portal.Request",
                  signal.member == "Response" else { continue }
            let response = signal.arguments.first?.number ?? 2
            let results = signal.arguments.count > 1 ? signal.arguments[1].entries ?? [:] : [:]
            switch response {
            case 0:
                return results
            case 1:
                throw ReelError(.permissionDenied, "screen sharing was not allowed: the portal's dialog was cancelled",
                                hint: "allow sharing a screen in the dialog to record it")
            default:
                throw ReelError(.permissionDenied, "the desktop portal refused \(method) (response \(response))",
                                hint: "the portal backend could not share the screen; its log (journalctl --user -u xdg-desktop-portal*) says why")
            }
        }
    }
}
