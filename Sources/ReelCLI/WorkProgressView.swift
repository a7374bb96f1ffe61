import Foundation
import Reel
import Synchronization

/// Draws how far long work has come — `reel merge`, `reel recover`, the merge of clips at the
/// stop of a recording — from the library's ``WorkProgress`` reports: a bar with the percent
/// and the time left on a terminal (standard error), `progress` events with `--json`, nothing
/// when standard error is not a terminal.
final class WorkProgressView: @unchecked Sendable {
    private let console: Console
    private let json: Bool
    /// What the work is on (the file recovered), named in the line and the events.
    private let subject: String?
    private let lock = NSLock()
    private var lineShown = false

    init(console: Console, json: Bool, subject: String? = nil) {
        self.console = console
        self.json = json
        self.subject = subject
        Self.inHand.withLock { $0 = (json, subject) }
    }

    /// The work under way (from a view's making to its ``finish()``), for the words of a stop
    /// signal that interrupts it: whether it reports in JSON, and what it is on.
    private static let inHand = Mutex<(json: Bool, subject: String?)?>(nil)
    static var workInHand: (json: Bool, subject: String?)? { inHand.withLock { $0 } }

    /// Shows one report.
    func render(_ progress: WorkProgress) {
        lock.lock(); defer { lock.unlock() }
        if json {
            console.out(ProgressRenderer.json(Self.json(progress, file: subject)))
        } else if console.isTerminal {
            console.errRaw("\r\u{1B}[2K" + Self.line(progress, subject: subject))
            lineShown = true
        }
    }

    /// Ends the bar's line, so that what is printed next starts on a line of its own.
    func finish() {
        Self.inHand.withLock { $0 = nil }
        lock.lock(); defer { lock.unlock() }
        if lineShown { console.errRaw("\n"); lineShown = false }
    }

    /// A listener for the library's progress reports.
    var handler: @Sendable (WorkProgress) -> Void { { [self] in render($0) } }

    /// "merging   [#########-----------]  45%  about 12 s left".
    static func line(_ progress: WorkProgress, subject: String? = nil, width: Int = 24) -> String {
        let filled = Int((progress.fractionCompleted * Double(width)).rounded(.down))
        var line = label(progress.stage) + (subject.map { " \($0)" } ?? "")
        line += "  [" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
        line += String(format: "%3d%%", Int((progress.fractionCompleted * 100).rounded(.down)))
        if !progress.isFinished, let left = progress.estimatedTimeRemaining {
            line += "  " + timeLeft(left.seconds)
        }
        return line
    }

    /// "about 12 s left", "about 3 min left".
    static func timeLeft(_ seconds: Double) -> String {
        if seconds < 60 { return "about \(max(1, Int(seconds.rounded(.up)))) s left" }
        if seconds < 3600 { return "about \(Int((seconds / 60).rounded(.up))) min left" }
        return String(format: "about %.1f h left", seconds / 3600)
    }

    /// The stage as the line says it.
    static func label(_ stage: WorkProgress.Stage) -> String {
        switch stage {
        case .merging: "merging"
        case .reencoding: "encoding again"
        case .recovering: "recovering"
        case .converting: "making"
        }
    }

    /// `{"event": "progress", "stage": "merging", "fraction": 0.45, "done": BYTES, "total":
    /// BYTES, "elapsed": S, "remaining": S}` (`remaining` once it can be told; `file` with a
    /// subject).
    static func json(_ progress: WorkProgress, file: String? = nil) -> [String: Any] {
        var object: [String: Any] = ["event": "progress", "stage": progress.stage.rawValue,
                                     "fraction": (progress.fractionCompleted * 1000).rounded() / 1000,
                                     "done": progress.completedUnitCount, "total": progress.totalUnitCount,
                                     "elapsed": (progress.elapsed.seconds * 1000).rounded() / 1000]
        if let left = progress.estimatedTimeRemaining { object["remaining"] = (left.seconds * 1000).rounded() / 1000 }
        if let file { object["file"] = file }
        return object
    }
}
