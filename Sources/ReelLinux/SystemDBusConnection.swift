import Foundation
import ReelCore
internal import CDBus

/// A private connection to a D-Bus bus through libdbus: the ``DBusConnection`` the portal
/// client uses on a real desktop.
///
/// The connection is private (not libdbus's shared one, so closing it touches nobody else)
/// and never ends the process when the bus goes away (libdbus's default for bus connections).
/// One lock serialises every use; calls block the calling thread, which is the source's
/// start-up or capture thread, never a Swift concurrency thread.
package final class SystemDBusConnection: DBusConnection, @unchecked Sendable {
    package let uniqueName: String
    private let lock = NSLock()
    // Guarded by `lock`; nil once closed.
    private var connection: OpaquePointer?

    /// Connects to the session bus (`DBUS_SESSION_BUS_ADDRESS`), or to `address` when given.
    ///
    /// - Throws: `.sourceUnavailable` when there is no session bus to connect to.
    package init(address: String? = nil) throws(ReelError) {
        _ = dbus_threads_init_default()
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        var connection: OpaquePointer?
        // The session bus's address is read from the environment now, not by libdbus: it
        // reads it once per process and keeps it, so a process whose environment gained the
        // address later (a test, a program that sets it) would still try the old one.
        let address = address ?? getenv("DBUS_SESSION_BUS_ADDRESS").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        if let address {
            connection = dbus_connection_open_private(address, &error)
            if let opened = connection, dbus_bus_register(opened, &error) == 0 {
                dbus_connection_close(opened)
                dbus_connection_unref(opened)
                connection = nil
            }
        } else {
            connection = dbus_bus_get_private(DBUS_BUS_SESSION, &error)
        }
        guard let connection else {
            throw ReelError(.sourceUnavailable, "cannot connect to the D-Bus session bus: \(Self.describe(error))",
                            hint: "the screen of a Wayland desktop is shared through the desktop portal on the session bus; run inside the desktop session, where DBUS_SESSION_BUS_ADDRESS is set")
        }
        dbus_connection_set_exit_on_disconnect(connection, 0)
        self.connection = connection
        self.uniqueName = dbus_bus_get_unique_name(connection).map { String(cString: $0) } ?? ""
    }

    deinit { close() }

    package func close() {
        lock.lock()
        defer { lock.unlock() }
        guard let connection else { return }
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
        self.connection = nil
    }

    package func call(_ call: DBusMethodCall, timeout: Double) throws(ReelError) -> [DBusValue] {
        lock.lock()
        defer { lock.unlock() }
        guard let connection else { throw Self.closedError }
        guard let message = dbus_message_new_method_call(call.destination, call.path, call.interface, call.member) else {
            throw ReelError(.ioFailure, "cannot make a D-Bus message (out of memory)")
        }
        defer { dbus_message_unref(message) }
        var iterator = DBusMessageIter()
        dbus_message_iter_init_append(message, &iterator)
        for argument in call.arguments {
            try Self.append(argument, to: &iterator)
        }
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        let milliseconds = Int32(min(max(timeout, 0.001) * 1000, Double(Int32.max)))
        guard let reply = dbus_connection_send_with_reply_and_block(connection, message, milliseconds, &error) else {
            let name = error.name.map { String(cString: $0) } ?? ""
            let text = error.message.map { String(cString: $0) } ?? "no reply"
            throw Self.replyError(name: name, message: text, call: call)
        }
        defer { dbus_message_unref(reply) }
        return Self.arguments(of: reply)
    }

    package func addMatch(_ rule: String) throws(ReelError) {
        lock.lock()
        defer { lock.unlock() }
        guard let connection else { throw Self.closedError }
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        dbus_bus_add_match(connection, rule, &error)
        if dbus_error_is_set(&error) != 0 {
            throw ReelError(.ioFailure, "the session bus refused the match rule \(rule): \(Self.describe(error))")
        }
    }

    package func nextSignal(timeout: Double) throws(ReelError) -> DBusSignal? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            // The lock is held for a short slice at a time, so a close or a call from another
            // thread is not held off for the whole timeout.
            lock.lock()
            defer { lock.unlock() }
            guard let connection else { throw Self.closedError }
            if let signal = try Self.popSignal(connection) { return signal }
            let left = deadline.timeIntervalSinceNow
            if dbus_connection_read_write(connection, Int32(max(0, min(left, 0.05)) * 1000)) == 0 {
                throw ReelError(.sourceUnavailable, "the D-Bus session bus went away", hint: "the desktop session ended")
            }
            if let signal = try Self.popSignal(connection) { return signal }
            if left <= 0 { return nil }
        }
    }

    private static let closedError = ReelError(.notRunning, "the D-Bus connection is closed")

    /// Pops queued messages until a signal comes; `nil` when the queue is empty.
    private static func popSignal(_ connection: OpaquePointer) throws(ReelError) -> DBusSignal? {
        while let message = dbus_connection_pop_message(connection) {
            defer { dbus_message_unref(message) }
            guard dbus_message_get_type(message) == DBUS_MESSAGE_TYPE_SIGNAL else { continue }
            let path = dbus_message_get_path(message).map { String(cString: $0) } ?? ""
            let interface = dbus_message_get_interface(message).map { String(cString: $0) } ?? ""
            let member = dbus_message_get_member(message).map { String(cString: $0) } ?? ""
            if interface == "org.freedesktop.DBus.Local" && member == "Disconnected" {
                throw ReelError(.sourceUnavailable, "the D-Bus session bus went away", hint: "the desktop session ended")
            }
            return DBusSignal(path: path, interface: interface, member: member, arguments: arguments(of: message))
        }
        return nil
    }

    /// The error a failed call becomes.
    static func replyError(name: String, message: String, call: DBusMethodCall) -> ReelError {
        switch name {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
             "org.freedesktop.DBus.Error.Spawn.ServiceNotFound":
            return ReelError(.sourceUnavailable, "\(call.destination) is not on the session bus (\(message))",
                             hint: "install and start xdg-desktop-portal with the backend of your desktop (xdg-desktop-portal-gnome, -kde or -wlr)")
        case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout", "org.freedesktop.DBus.Error.TimedOut":
            return ReelError(.sourceUnavailable, "\(call.destination) did not answer \(call.member) (\(message))",
                             hint: "the desktop portal is stuck or still starting; try again, or restart xdg-desktop-portal")
        case "org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownInterface",
             "org.freedesktop.DBus.Error.UnknownObject":
            return ReelError(.sourceUnavailable, "the desktop portal has no \(call.interface).\(call.member) (\(message))",
                             hint: "the portal backend of this desktop does not offer screen casting; install xdg-desktop-portal-gnome, -kde or -wlr")
        default:
            return ReelError(.sourceUnavailable, "\(call.interface).\(call.member) failed: \(name.isEmpty ? "" : name + ": ")\(message)")
        }
    }

    private static func describe(_ error: DBusError) -> String {
        error.message.map { String(cString: $0) } ?? error.name.map { String(cString: $0) } ?? "unknown error"
    }

    private static func type(_ c: Character) -> Int32 { Int32(c.asciiValue!) }

    // MARK: writing

    private static func append(_ value: DBusValue, to iterator: inout DBusMessageIter) throws(ReelError) {
        var ok: dbus_bool_t = 1
        switch value {
        case .string(let s), .objectPath(let s):
            let t = type(value.signature.first!)
            s.withCString { pointer in
                var p: UnsafePointer<CChar>? = pointer
                ok = dbus_message_iter_append_basic(&iterator, t, &p)
            }
        case .uint32(var v): ok = dbus_message_iter_append_basic(&iterator, type("u"), &v)
        case .uint64(var v): ok = dbus_message_iter_append_basic(&iterator, type("t"), &v)
        case .int32(var v): ok = dbus_message_iter_append_basic(&iterator, type("i"), &v)
        case .bool(let b):
            var v: dbus_bool_t = b ? 1 : 0
            ok = dbus_message_iter_append_basic(&iterator, type("b"), &v)
        case .fileDescriptor(var fd): ok = dbus_message_iter_append_basic(&iterator, type("h"), &fd)
        case .variant(let inner):
            var sub = DBusMessageIter()
            ok = dbus_message_iter_open_container(&iterator, type("v"), inner.signature, &sub)
            try append(inner, to: &sub)
            ok = ok & dbus_message_iter_close_container(&iterator, &sub)
        case .dictionary(let entries):
            var sub = DBusMessageIter()
            ok = dbus_message_iter_open_container(&iterator, type("a"), "{sv}", &sub)
            for key in entries.keys.sorted() {
                var entry = DBusMessageIter()
                ok = ok & dbus_message_iter_open_container(&sub, type("e"), nil, &entry)
                try append(.string(key), to: &entry)
                let inner = entries[key]!
                try append(inner.signature == "v" ? inner : .variant(inner), to: &entry)
                ok = ok & dbus_message_iter_close_container(&sub, &entry)
            }
            ok = ok & dbus_message_iter_close_container(&iterator, &sub)
        case .array(let element, let values):
            var sub = DBusMessageIter()
            ok = dbus_message_iter_open_container(&iterator, type("a"), element, &sub)
            for v in values { try append(v, to: &sub) }
            ok = ok & dbus_message_iter_close_container(&iterator, &sub)
        case .structure(let members):
            var sub = DBusMessageIter()
            ok = dbus_message_iter_open_container(&iterator, type("r"), nil, &sub)
            for m in members { try append(m, to: &sub) }
            ok = ok & dbus_message_iter_close_container(&iterator, &sub)
        }
        if ok == 0 { throw ReelError(.ioFailure, "cannot write a D-Bus message (out of memory)") }
    }

    // MARK: reading

    private static func arguments(of message: OpaquePointer) -> [DBusValue] {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(message, &iterator) != 0 else { return [] }
        return values(&iterator)
    }

    private static func values(_ iterator: inout DBusMessageIter) -> [DBusValue] {
        var result: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&iterator) != 0 {
            if let v = value(&iterator) { result.append(v) }
            dbus_message_iter_next(&iterator)
        }
        return result
    }

    private static func value(_ iterator: inout DBusMessageIter) -> DBusValue? {
        let t = dbus_message_iter_get_arg_type(&iterator)
        switch UInt8(truncatingIfNeeded: t) {
        case UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"):
            var p: UnsafePointer<CChar>?
            dbus_message_iter_get_basic(&iterator, &p)
            let s = p.map { String(cString: $0) } ?? ""
            return t == type("o") ? .objectPath(s) : .string(s)
        case UInt8(ascii: "u"):
            var v: UInt32 = 0; dbus_message_iter_get_basic(&iterator, &v); return .uint32(v)
        case UInt8(ascii: "t"):
            var v: UInt64 = 0; dbus_message_iter_get_basic(&iterator, &v); return .uint64(v)
        case UInt8(ascii: "i"):
            var v: Int32 = 0; dbus_message_iter_get_basic(&iterator, &v); return .int32(v)
        case UInt8(ascii: "b"):
            var v: dbus_bool_t = 0; dbus_message_iter_get_basic(&iterator, &v); return .bool(v != 0)
        case UInt8(ascii: "h"):
            var v: Int32 = -1; dbus_message_iter_get_basic(&iterator, &v); return .fileDescriptor(v)
        case UInt8(ascii: "v"):
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            return value(&sub).map { .variant($0) }
        case UInt8(ascii: "r"):
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            return .structure(values(&sub))
        case UInt8(ascii: "a"):
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            let signature: String
            if let s = dbus_message_iter_get_signature(&iterator) {
                signature = String(String(cString: s).dropFirst())
                dbus_free(s)
            } else {
                signature = ""
            }
            if signature == "{sv}" {
                var entries: [String: DBusValue] = [:]
                while dbus_message_iter_get_arg_type(&sub) == type("e") {
                    var entry = DBusMessageIter()
                    dbus_message_iter_recurse(&sub, &entry)
                    if let key = value(&entry)?.text, dbus_message_iter_next(&entry) != 0, let v = value(&entry) {
                        entries[key] = v
                    }
                    dbus_message_iter_next(&sub)
                }
                return .dictionary(entries)
            }
            return .array(signature: signature, values(&sub))
        default:
            return nil
        }
    }
}
