import ReelCore

/// A value in a D-Bus message, as far as the ScreenCast portal needs them.
package indirect enum DBusValue: Sendable, Hashable {
    case string(String)
    case objectPath(String)
    case uint32(UInt32)
    case uint64(UInt64)
    case int32(Int32)
    case bool(Bool)
    /// A file descriptor (`h`), owned by whoever receives the message.
    case fileDescriptor(Int32)
    case variant(DBusValue)
    /// An `a{sv}` dictionary, the portal's options and results.
    case dictionary([String: DBusValue])
    /// An array of values of one type (`signature` of the elements, `a(ua{sv})`'s `(ua{sv})`).
    case array(signature: String, [DBusValue])
    case structure([DBusValue])

    /// The D-Bus type signature of the value.
    package var signature: String {
        switch self {
        case .string: "s"
        case .objectPath: "o"
        case .uint32: "u"
        case .uint64: "t"
        case .int32: "i"
        case .bool: "b"
        case .fileDescriptor: "h"
        case .variant: "v"
        case .dictionary: "a{sv}"
        case .array(let element, _): "a" + element
        case .structure(let members): "(" + members.map(\.signature).joined() + ")"
        }
    }

    /// The value inside a variant, or the value itself.
    package var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }

    /// The text of a string or object path.
    package var text: String? {
        switch unwrapped {
        case .string(let s), .objectPath(let s): s
        default: nil
        }
    }

    /// The number of an unsigned or signed integer.
    package var number: Int? {
        switch unwrapped {
        case .uint32(let v): Int(v)
        case .uint64(let v): Int(v)
        case .int32(let v): Int(v)
        default: nil
        }
    }

    /// The entries of an `a{sv}`.
    package var entries: [String: DBusValue]? {
        if case .dictionary(let d) = unwrapped { return d }
        return nil
    }

    /// The elements of an array.
    package var elements: [DBusValue]? {
        if case .array(_, let e) = unwrapped { return e }
        return nil
    }

    /// The members of a structure.
    package var members: [DBusValue]? {
        if case .structure(let m) = unwrapped { return m }
        return nil
    }
}

/// A method call to send.
package struct DBusMethodCall: Sendable, Hashable {
    /// The bus name of the service.
    package var destination: String
    /// The object path.
    package var path: String
    /// The interface.
    package var interface: String
    /// The method name.
    package var member: String
    /// The arguments.
    package var arguments: [DBusValue]

    /// A call of `interface.member` on `path` of `destination`.
    package init(destination: String, path: String, interface: String, member: String, arguments: [DBusValue] = []) {
        self.destination = destination
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }
}

/// A signal received.
package struct DBusSignal: Sendable, Hashable {
    /// The object path it was sent from.
    package var path: String
    /// Its interface.
    package var interface: String
    /// Its name.
    package var member: String
    /// Its arguments.
    package var arguments: [DBusValue]

    /// A signal `interface.member` from `path`.
    package init(path: String, interface: String, member: String, arguments: [DBusValue]) {
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }
}

/// What a session bus does for the portal client: method calls with replies, subscriptions
/// to signals and waiting for them. ``SystemDBusConnection`` talks to the real bus through
/// libdbus; ``ScriptedDBusConnection`` replays recorded answers, so the portal logic is tested
/// without a desktop.
package protocol DBusConnection: AnyObject, Sendable {
    /// The connection's unique name on the bus (`:1.42`).
    var uniqueName: String { get }
    /// Sends a call and waits up to `timeout` seconds for its reply's arguments.
    ///
    /// - Throws: `.sourceUnavailable` when the service is not on the bus or does not answer,
    ///   and a ``ReelError`` carrying the D-Bus error's name and message for an error reply.
    func call(_ call: DBusMethodCall, timeout: Double) throws(ReelError) -> [DBusValue]
    /// Subscribes to signals matching a match rule (`type='signal',path='…'`).
    func addMatch(_ rule: String) throws(ReelError)
    /// The next signal received, waiting up to `timeout` seconds; `nil` when none came.
    ///
    /// - Throws: `.sourceUnavailable` when the bus connection broke.
    func nextSignal(timeout: Double) throws(ReelError) -> DBusSignal?
    /// Closes the connection. Safe to call twice.
    func close()
}
