import Reel

/// Lost frames said the command line's way: why, and what to pass to lose fewer (the library's
/// hints rephrased, see ``CommandLineHints``).
enum FrameDropWords {
    /// The line said while recording: `reel: warning: 12 frames dropped: the encoder could not keep up; try …`.
    static func line(_ notice: FrameDropNotice) -> String {
        "reel: warning: \(frames(notice.count)) dropped at \(Format.clock(seconds: notice.at.seconds)): \(advice(notice.reason))"
    }

    /// The `framesDropped` event.
    static func json(_ notice: FrameDropNotice) -> [String: Any] {
        var object: [String: Any] = ["event": "framesDropped", "reason": notice.reason.rawValue, "count": notice.count,
                                     "dropped": notice.total.total, "time": (notice.at.seconds * 1000).rounded() / 1000,
                                     "message": notice.reason.explanation]
        if let hint = notice.reason.hint { object["hint"] = CommandLineHints.rephrased(hint: hint) }
        return object
    }

    /// The drops by reason, as `finished` says them (`"droppedBy": {"encoderBehind": 58, …}`).
    static func counts(_ drops: FrameDrops) -> [String: Any] {
        Dictionary(uniqueKeysWithValues: drops.largestFirst.map { ($0.reason.rawValue, $0.count as Any) })
    }

    /// The summary's lines: `dropped   58 frames: the encoder could not keep up; try …`, one a reason.
    static func summaryLines(_ drops: FrameDrops) -> [String] {
        drops.largestFirst.map { "  dropped   \(frames($0.count)): \(advice($0.reason))" }
    }

    /// A composed source's losses: `7 of its frames dropped (5: the capture missed …; 2: …), the picture before shown instead`.
    static func sourceLine(_ drops: FrameDrops) -> String {
        "\(drops.total == 1 ? "1 of its frames" : "\(drops.total) of its frames") dropped\(why(drops)), its picture before shown instead"
    }

    /// ` (5: the capture missed …; 2: the encoder …)` after a count of drops; nothing without any.
    static func why(_ drops: FrameDrops) -> String {
        drops.total == 0 ? "" : " (" + drops.largestFirst.map { "\($0.count): \($0.reason.explanation)" }.joined(separator: "; ") + ")"
    }

    /// Why, and what helps.
    static func advice(_ reason: FrameDropReason) -> String {
        reason.explanation + (reason.hint.map { "; " + CommandLineHints.rephrased(hint: $0) } ?? "")
    }

    private static func frames(_ n: Int64) -> String { n == 1 ? "1 frame" : "\(n) frames" }
}
