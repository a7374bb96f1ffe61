import Foundation

/// One finding of `reel doctor`: what was checked, how it went, and what to do about it.
///
/// A `.problem` is something that makes recording the default sources fail — the screen at
/// `$DISPLAY`, the default microphone and the default sink's monitor, in H.264/AAC into the
/// videos folder — or a device the user named with `reel doctor --camera/--mic/--app-audio/
/// --display`. Anything Reel can record without (MIT-SHM, a camera nobody named, HEVC, a
/// Wayland portal) is at most a `.warning`.
struct DoctorCheck: Sendable, Equatable {
    /// How a check went.
    enum Status: String, Sendable {
        /// Nothing to do.
        case ok
        /// Recording works, but something is missing or slower than it could be.
        case warning
        /// Recording the default sources (or what was named) would fail.
        case problem
    }

    /// A short stable name (`display`, `mit-shm`, `camera /dev/video0`).
    var name: String
    /// How it went.
    var status: Status
    /// What was found, in one sentence.
    var detail: String
    /// What to do (install, join a group, set a variable), when there is something to do.
    var fix: String?

    /// Creates a finding.
    init(_ name: String, _ status: Status, _ detail: String, fix: String? = nil) {
        self.name = name
        self.status = status
        self.detail = detail
        self.fix = fix
    }

    /// The exit status of `reel doctor` for `checks`: 1 when any is a problem, else 0
    /// (warnings do not fail).
    static func exitStatus(_ checks: [DoctorCheck]) -> Int32 {
        checks.contains { $0.status == .problem } ? 1 : 0
    }

    /// The check as one line of text: status, name, detail and fix.
    func line(nameWidth: Int) -> String {
        let label: String
        switch status {
        case .ok: label = "ok     "
        case .warning: label = "warning"
        case .problem: label = "PROBLEM"
        }
        var text = "\(label)  \(name.padding(toLength: max(nameWidth, name.count), withPad: " ", startingAt: 0))  \(detail)"
        if let fix { text += " — fix: \(fix)" }
        return text
    }

    /// The check as a JSON object: `name`, `status`, `detail` and, when there is one, `fix`.
    var jsonObject: [String: Any] {
        var object: [String: Any] = ["name": name, "status": status.rawValue, "detail": detail]
        if let fix { object["fix"] = fix }
        return object
    }
}
