import Foundation
import ReelCore

/// A ``DBusConnection`` that answers from a script: recorded answers of a desktop portal, for
/// testing the portal logic without a bus. Each call takes the next answer in turn; signals
/// are delivered only to match rules added before them (as a real bus does), so a client that
/// subscribes too late waits in vain here too.
package final class ScriptedDBusConnection: DBusConnection, @unchecked Sendable {
    /// What a call meets.
    package enum Answer: Sendable {
        /// A reply with these arguments.
        case reply([DBusValue])
        /// A portal request: the reply names the request object (made from the call's
        /// `handle_token`), and a `Response` signal with `response` and `results` follows.
        case request(response: UInt32, results: [String: DBusValue])
        /// A portal request whose `Response` never comes (a dialog left open).
        case requestUnanswered
        /// An error reply.
        case error(name: String, message: String)
    }

    package let uniqueName: String
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var answers: [Answer]
    private var rules: [String] = []
    private var pending: [DBusSignal] = []
    private var made: [DBusMethodCall] = []
    private var isClosed = false

    /// A connection named `uniqueName` answering calls with `answers` in turn.
    package init(uniqueName: String = ":1.42", answers: [Answer]) {
        self.uniqueName = uniqueName
        self.answers = answers
    }

    /// The calls made so far.
    package var calls: [DBusMethodCall] { condition.withLock { made } }
    /// Whether ``close()`` was called.
    package var closed: Bool { condition.withLock { isClosed } }

    /// Sends a signal, as a service on the bus would; it is queued if a match rule takes it.
    package func emit(_ signal: DBusSignal) {
        condition.withLock {
            guard rules.contains(where: { Self.rule($0, matches: signal) }) else { return }
            pending.append(signal)
            condition.broadcast()
        }
    }

    package func call(_ call: DBusMethodCall, timeout: Double) throws(ReelError) -> [DBusValue] {
        let answer: Answer? = condition.withLock {
            made.append(call)
            return isClosed || answers.isEmpty ? nil : answers.removeFirst()
        }
        guard let answer else {
            throw SystemDBusConnection.replyError(name: "org.freedesktop.DBus.Error.NoReply",
                                                  message: "the script has no answer for \(call.member)", call: call)
        }
        switch answer {
        case .reply(let values):
            return values
        case .error(let name, let message):
            throw SystemDBusConnection.replyError(name: name, message: message, call: call)
        case .request(let response, let results):
            let path = requestPath(of: call)
            emit(DBusSignal(path: path, interface: "org.freedesktop.portal.Request", member: "Response",
                            arguments: [.uint32(response), .dictionary(results)]))
            return [.objectPath(path)]
        case .requestUnanswered:
            return [.objectPath(requestPath(of: call))]
        }
    }

    package func addMatch(_ rule: String) throws(ReelError) {
        condition.withLock { rules.append(rule) }
    }

    package func nextSignal(timeout: Double) throws(ReelError) -> DBusSignal? {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while pending.isEmpty && !isClosed {
            if !condition.wait(until: deadline) { break }
        }
        return pending.isEmpty ? nil : pending.removeFirst()
    }

    package func close() {
        condition.withLock {
            isClosed = true
            condition.broadcast()
        }
    }

    private func requestPath(of call: DBusMethodCall) -> String {
        let token = call.arguments.last?.entries?["handle_token"]?.text ?? "t"
        return ScreenCastPortal.requestPath(uniqueName: uniqueName, token: token)
    }

    /// Whether a match rule of the form `type='signal',interface='…',member='…',path='…'` takes `signal`.
    private static func rule(_ rule: String, matches signal: DBusSignal) -> Bool {
        for part in rule.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            let value = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "'"))
            switch pair[0] {
            case "path": if value != signal.path { return false }
            case "interface": if value != signal.interface { return false }
            case "member": if value != signal.member { return false }
            default: break
            }
        }
        return true
    }
}
