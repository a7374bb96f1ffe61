import Foundation
import ReelCore
@testable import ReelLinux
import ReelTestSupport
import Testing

/// The ScreenCast portal conversation on recorded answers (as xdg-desktop-portal 1.16 with the
/// wlr backend 0.7.0 gives them): the grant, the options asked for, a restore token, the user's
/// refusal, a portal that fails or is missing, and the session closed by the portal.
@Suite("ScreenCast portal on recorded answers")
struct ScreenCastPortalTests {
    /// The properties xdg-desktop-portal-wlr 0.7.0 reports: version 4, monitors only, hidden
    /// and embedded cursor.
    static let properties: [ScriptedDBusConnection.Answer] = [
        .reply([.variant(.uint32(4))]), .reply([.variant(.uint32(3))]), .reply([.variant(.uint32(1))]),
    ]
    static let session = "/org/freedesktop/portal/desktop/session/1_42/reel_s"

    /// A full grant: properties, CreateSession, SelectSources, Start (with `restoreToken` in
    /// its results), OpenPipeWireRemote handing over `fd`.
    static func grantScript(fd: Int32, restoreToken: String? = "4f1c2a9e-6b1d-4c3e-8a57-93d0e6b2f1a8") -> [ScriptedDBusConnection.Answer] {
        var started: [String: DBusValue] = [
            "streams": .variant(.array(signature: "(ua{sv})", [.structure([
                .uint32(47),
                .dictionary(["position": .variant(.structure([.int32(0), .int32(0)])),
                             "size": .variant(.structure([.int32(640), .int32(480)])),
                             "source_type": .variant(.uint32(2))]),
            ])])),
            "persist_mode": .variant(.uint32(2)),
        ]
        if let restoreToken { started["restore_token"] = .variant(.string(restoreToken)) }
        return properties + [
            .request(response: 0, results: ["session_handle": .variant(.string(session))]),
            .request(response: 0, results: [:]),
            .request(response: 0, results: started),
            .reply([.fileDescriptor(fd)]),
        ]
    }

    static func openDescriptor() -> Int32 { open("/dev/null", O_RDONLY) }

    func options(of connection: ScriptedDBusConnection, _ member: String) -> [String: DBusValue] {
        connection.calls.first { $0.member == member }?.arguments.last?.entries ?? [:]
    }

    @Test("a grant names the node, its size, the remote's descriptor and a restore token")
    func grant() throws {
        let fd = Self.openDescriptor()
        let connection = ScriptedDBusConnection(answers: Self.grantScript(fd: fd))
        let portal = ScreenCastPortal(connection: connection)
        let grant = try portal.start(ScreenCastOptions())
        defer { close(grant.pipeWireDescriptor) }
        #expect(grant.nodeID == 47)
        #expect(grant.size == PixelSize(width: 640, height: 480))
        #expect(grant.pipeWireDescriptor == fd)
        #expect(grant.restoreToken == "4f1c2a9e-6b1d-4c3e-8a57-93d0e6b2f1a8")
        #expect(grant.sessionHandle == Self.session)
        #expect(connection.calls.map(\.member) == ["Get", "Get", "Get", "CreateSession", "SelectSources", "Start", "OpenPipeWireRemote"])
        let select = options(of: connection, "SelectSources")
        #expect(select["types"] == .uint32(1))
        #expect(select["cursor_mode"] == .uint32(2))
        #expect(select["persist_mode"] == .uint32(2))
        #expect(select["restore_token"] == nil)
        #expect(select["handle_token"]?.text != options(of: connection, "Start")["handle_token"]?.text)
        // The session's path is the first argument of the calls that follow CreateSession.
        #expect(connection.calls.last?.arguments.first == .objectPath(Self.session))
        #expect(!portal.isSessionClosed())
    }

    @Test("a kept restore token is handed back; without the cursor the hidden mode is asked for")
    func restoreTokenAndHiddenCursor() throws {
        let fd = Self.openDescriptor()
        let connection = ScriptedDBusConnection(answers: Self.grantScript(fd: fd, restoreToken: "second"))
        let grant = try ScreenCastPortal(connection: connection)
            .start(ScreenCastOptions(drawsCursor: false, restoreToken: "4f1c2a9e-6b1d-4c3e-8a57-93d0e6b2f1a8"))
        close(grant.pipeWireDescriptor)
        let select = options(of: connection, "SelectSources")
        #expect(select["restore_token"] == .string("4f1c2a9e-6b1d-4c3e-8a57-93d0e6b2f1a8"))
        #expect(select["cursor_mode"] == .uint32(1))
        #expect(grant.restoreToken == "second")
    }

    @Test("a portal before version 4 is asked without persistence")
    func oldPortal() throws {
        let fd = Self.openDescriptor()
        var script = Self.grantScript(fd: fd)
        script[0] = .reply([.variant(.uint32(2))])
        let connection = ScriptedDBusConnection(answers: script)
        let grant = try ScreenCastPortal(connection: connection).start(ScreenCastOptions(restoreToken: "old"))
        close(grant.pipeWireDescriptor)
        let select = options(of: connection, "SelectSources")
        #expect(select["persist_mode"] == nil)
        #expect(select["restore_token"] == nil)
    }

    @Test("the user cancelling the dialog is a refusal that says so, and the session is closed")
    func denied() throws {
        let connection = ScriptedDBusConnection(answers: Self.properties + [
            .request(response: 0, results: ["session_handle": .variant(.string(Self.session))]),
            .request(response: 0, results: [:]),
            .request(response: 1, results: [:]),
            .reply([]),
        ])
        let error = #expect(throws: ReelError.self) { try ScreenCastPortal(connection: connection).start(ScreenCastOptions()) }
        #expect(error?.code == .permissionDenied)
        #expect(error?.message.contains("cancelled") == true)
        #expect(connection.calls.last?.member == "Close")
        #expect(connection.calls.last?.path == Self.session)
        #expect(connection.closed)
    }

    @Test("a portal that fails to start (response 2) is a refusal naming the step")
    func portalFails() throws {
        let connection = ScriptedDBusConnection(answers: Self.properties + [
            .request(response: 0, results: ["session_handle": .variant(.string(Self.session))]),
            .request(response: 0, results: [:]),
            .request(response: 2, results: [:]),
        ])
        let error = #expect(throws: ReelError.self) { try ScreenCastPortal(connection: connection).start(ScreenCastOptions()) }
        #expect(error?.code == .permissionDenied)
        #expect(error?.message.contains("Start") == true)
    }

    @Test("no portal on the bus is a clear error telling what to install")
    func noPortal() throws {
        let connection = ScriptedDBusConnection(answers: [
            .error(name: "org.freedesktop.DBus.Error.ServiceUnknown",
                   message: "The name org.freedesktop.portal.Desktop was not provided by any .service files"),
        ])
        let error = #expect(throws: ReelError.self) { try ScreenCastPortal(connection: connection).start(ScreenCastOptions()) }
        #expect(error?.code == .sourceUnavailable)
        #expect(error?.hint?.contains("xdg-desktop-portal") == true)
    }

    @Test("a portal that cannot share windows says so before asking")
    func windowsNotOffered() throws {
        let connection = ScriptedDBusConnection(answers: Self.properties)
        let error = #expect(throws: ReelError.self) {
            try ScreenCastPortal(connection: connection).start(ScreenCastOptions(sources: .window))
        }
        #expect(error?.code == .unsupportedFormat)
        #expect(!connection.calls.contains { $0.member == "CreateSession" })
    }

    @Test("a dialog nobody answers ends with a timeout that says so")
    func unanswered() throws {
        let connection = ScriptedDBusConnection(answers: Self.properties + [
            .request(response: 0, results: ["session_handle": .variant(.string(Self.session))]),
            .request(response: 0, results: [:]),
            .requestUnanswered,
        ])
        let portal = ScreenCastPortal(connection: connection, callTimeout: 1, interactionTimeout: 0.2)
        let error = #expect(throws: ReelError.self) { try portal.start(ScreenCastOptions()) }
        #expect(error?.hint?.contains("dialog") == true)
    }

    @Test("the session closed by the portal is seen, during the dialog and while recording")
    func sessionClosed() throws {
        let closedSignal = DBusSignal(path: Self.session, interface: "org.freedesktop.portal.Session", member: "Closed", arguments: [])
        // While recording.
        let fd = Self.openDescriptor()
        let connection = ScriptedDBusConnection(answers: Self.grantScript(fd: fd))
        let portal = ScreenCastPortal(connection: connection)
        let grant = try portal.start(ScreenCastOptions())
        close(grant.pipeWireDescriptor)
        #expect(!portal.isSessionClosed())
        connection.emit(DBusSignal(path: "/elsewhere", interface: "org.freedesktop.portal.Session", member: "Closed", arguments: []))
        #expect(!portal.isSessionClosed())
        connection.emit(closedSignal)
        #expect(portal.isSessionClosed())
        #expect(portal.isSessionClosed())
        portal.close()
        #expect(!connection.calls.contains { $0.member == "Close" }, "a closed session is not closed again")

        // During the dialog: the session closes instead of a Response.
        let second = ScriptedDBusConnection(answers: Self.properties + [
            .request(response: 0, results: ["session_handle": .variant(.string(Self.session))]),
            .request(response: 0, results: [:]),
            .requestUnanswered,
        ])
        let waiting = ScreenCastPortal(connection: second, interactionTimeout: 30)
        let emitter = Thread {
            while !second.calls.contains(where: { $0.member == "Start" }) { usleep(1000) }
            second.emit(closedSignal)
        }
        emitter.start()
        let error = #expect(throws: ReelError.self) { try waiting.start(ScreenCastOptions()) }
        #expect(error?.code == .permissionDenied)
        #expect(error?.message.contains("closed") == true)
    }

    @Test("the request path is made from the unique name and the token")
    func requestPath() {
        #expect(ScreenCastPortal.requestPath(uniqueName: ":1.42", token: "reel_3")
                == "/org/freedesktop/portal/desktop/request/1_42/reel_3")
    }

    @Test("the restore token lives in XDG_STATE_HOME, else ~/.local/state; a save replaces it and forget removes it")
    func tokenStore() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reel-token-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = ScreenCastTokenStore(environment: ["XDG_STATE_HOME": folder.path, "HOME": "/nonexistent"])
        #expect(store.url.path == folder.path + "/reel/screencast-restore-token")
        #expect(ScreenCastTokenStore(environment: ["XDG_STATE_HOME": "relative", "HOME": "/home/u"]).url.path
                == "/home/u/.local/state/reel/screencast-restore-token")
        #expect(store.load() == nil)
        let first = UUID().uuidString.lowercased(), second = UUID().uuidString.lowercased()
        try store.save(first)
        try store.save(second)
        #expect(store.load() == second)
        let mode = (try FileManager.default.attributesOfItem(atPath: store.url.path)[.posixPermissions] as? NSNumber)?.intValue
        #expect(mode == 0o600, "the token is the user's own")
        // Not a UUID (edited by hand, damaged): passed over, so the portal asks again rather
        // than refusing the session.
        try Data("kept\n".utf8).write(to: store.url)
        #expect(store.load() == nil)
        store.forget()
        #expect(store.load() == nil)
    }
}

/// The libdbus connection on a real (private) session bus with no portal on it.
@Suite("System D-Bus connection", .tags(.realTime))
struct SystemDBusConnectionTests {
    @Test("calls the bus itself and reads its answer; a missing portal is a clear error")
    func realBus() throws {
        let bus = try SessionBus()
        defer { bus.terminate() }
        let connection = try SystemDBusConnection(address: bus.address)
        defer { connection.close() }
        #expect(connection.uniqueName.hasPrefix(":1."))
        let names = try connection.call(DBusMethodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                       interface: "org.freedesktop.DBus", member: "ListNames"), timeout: 5)
        #expect(names.first?.elements?.contains(.string(connection.uniqueName)) == true)
        // A signal to ourselves round-trips through the bus: NameOwnerChanged when a name is taken.
        try connection.addMatch("type='signal',interface='org.freedesktop.DBus',member='NameOwnerChanged'")
        let owned = try connection.call(DBusMethodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                       interface: "org.freedesktop.DBus", member: "RequestName",
                                                       arguments: [.string("org.reel.Test"), .uint32(4)]), timeout: 5)
        #expect(owned == [.uint32(1)])
        // The bus also sends NameAcquired for our unique name, unasked; the one we want follows.
        var signals: [DBusSignal] = []
        while let signal = try connection.nextSignal(timeout: 5) {
            signals.append(signal)
            if signal.member == "NameOwnerChanged" { break }
        }
        #expect(signals.last?.member == "NameOwnerChanged")
        #expect(signals.last?.arguments == [.string("org.reel.Test"), .string(""), .string(connection.uniqueName)])

        let error = #expect(throws: ReelError.self) {
            try ScreenCastPortal(connection: connection).start(ScreenCastOptions())
        }
        #expect(error?.code == .sourceUnavailable)
        #expect(error?.message.contains("org.freedesktop.portal.Desktop") == true)
    }

    @Test("no bus at the address is a clear error")
    func noBus() {
        let error = #expect(throws: ReelError.self) { try SystemDBusConnection(address: "unix:path=/nonexistent/bus") }
        #expect(error?.code == .sourceUnavailable)
    }
}

/// Whether the desktop can share its screen, asked without a dialog (ScreenRecorder.isAvailable
/// on Wayland).
@Suite("Screen sharing availability on recorded answers")
struct ScreenCastAvailabilityTests {
    @Test("a portal that offers ScreenCast makes the screen available")
    func offered() {
        let connection = ScriptedDBusConnection(answers: [.reply([.variant(.uint32(4))])])
        #expect(WaylandScreenSource.unavailability(connect: { () throws(ReelError) in connection }) == nil)
        #expect(connection.calls.map(\.member) == ["Get"], "nothing but the version is asked: no session, no dialog")
    }

    @Test("no portal, or no bus, makes it unavailable, saying why")
    func missing() {
        let connection = ScriptedDBusConnection(answers: [
            .error(name: "org.freedesktop.DBus.Error.ServiceUnknown",
                   message: "The name org.freedesktop.portal.Desktop was not provided by any .service files"),
        ])
        let error = WaylandScreenSource.unavailability(connect: { () throws(ReelError) in connection })
        #expect(error?.code == .sourceUnavailable)
        let noBus = WaylandScreenSource.unavailability(connect: { () throws(ReelError) in
            throw ReelError(.sourceUnavailable, "no session bus")
        })
        #expect(noBus?.message == "no session bus")
    }
}
