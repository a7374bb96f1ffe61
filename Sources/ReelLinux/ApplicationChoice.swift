import Foundation
import ReelCore

/// Which applications a recording of application audio takes: the rule that
/// `ApplicationAudioRouter` and ``ApplicationAudioLinker`` both follow.
package struct ApplicationChoice: Sendable {
    /// One application asked for.
    package enum Part: Sendable, Hashable, Comparable {
        /// By `application.name` or `application.process.binary` (ignoring case), or by
        /// process id (see ``PlayingStream/isPlayed(by:)``).
        case name(String)
        /// The process and every process it started (a window's application: a browser's
        /// sound often comes from a child process of the one that shows the window).
        case processTree(Int32)

        /// What is said of it when it has not played since the recording started (the source's
        /// event adds ``ApplicationChoice/recordedOnceItPlays``).
        var notPlaying: String {
            switch self {
            case .name(let name):
                "no application '\(name)' has played (none of that name, program or process id)"
            case .processTree(let pid):
                "the window's application (process \(pid), or a process it started) has not played"
            }
        }

        /// What is said when it starts playing.
        var startedPlaying: String {
            switch self {
            case .name(let name): "'\(name)' started playing: recording its sound"
            case .processTree(let pid): "the window's application (process \(pid)) started playing: recording its sound"
            }
        }

        /// Whether the application `applicationName`, `binary`, `processID` is this one.
        func matches(applicationName: String, binary: String, processID: Int32?) -> Bool {
            switch self {
            case .name(let name):
                return PlayingStream.names(name, applicationName: applicationName, binary: binary, processID: processID)
            case .processTree(let root):
                guard let processID else { return false }
                return processID == root || ProcessAncestry.isDescendant(processID, of: root)
            }
        }
    }

    /// What follows for an application that has not played.
    package static let recordedOnceItPlays = "its sound is recorded once it starts"

    /// The applications asked for.
    package var parts: [Part]
    /// Whether every application but them is taken.
    package var excluding: Bool

    package init(parts: [Part], excluding: Bool) {
        self.parts = parts
        self.excluding = excluding
    }

    /// The applications `names` (or every application but them).
    package init(names: [String], excluding: Bool) {
        self.init(parts: names.map(Part.name), excluding: excluding)
    }

    /// Whether the application `applicationName`, `binary`, `processID` is taken.
    package func takes(applicationName: String, binary: String, processID: Int32?) -> Bool {
        let named = parts.contains { $0.matches(applicationName: applicationName, binary: binary, processID: processID) }
        return excluding ? !named : named
    }

    /// The parts none of `playing` is (when only these are taken; none otherwise), in order.
    func waiting(among playing: [(applicationName: String, binary: String, processID: Int32?)]) -> [Part] {
        guard !excluding else { return [] }
        return parts.filter { part in !playing.contains { part.matches(applicationName: $0.applicationName, binary: $0.binary, processID: $0.processID) } }
    }
}

/// Which process started which, read from `/proc/<pid>/stat` (this machine's processes only).
package enum ProcessAncestry {
    /// The state letter and the parent of `pid`, or `nil` when there is no such process.
    package static func stat(_ pid: Int32) -> (state: Character, parent: Int32)? {
        guard pid > 0, let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        // After the command in parentheses: " S 1234 …": the state, then the parent.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count >= 2, let state = fields[0].first, let parent = Int32(fields[1]) else { return nil }
        return (state, parent)
    }

    /// The program name of `pid` (`/proc/<pid>/comm`), or `nil`.
    package static func commandName(_ pid: Int32) -> String? {
        guard pid > 0, let text = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8) else { return nil }
        let name = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return name.isEmpty ? nil : name
    }

    /// Whether `pid` was started by `ancestor`, or by a process it started, and so on.
    package static func isDescendant(_ pid: Int32, of ancestor: Int32) -> Bool {
        guard ancestor > 1 else { return false }
        var current = pid
        for _ in 0..<64 {
            guard let parent = stat(current)?.parent, parent > 0 else { return false }
            if parent == ancestor { return true }
            if parent == 1 { return false }
            current = parent
        }
        return false
    }
}
