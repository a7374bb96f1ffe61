import Foundation
import Reel

/// How a live stream's statistics show on the progress line and in JSON `progress` events.
/// The name is the address without its key (``LiveStream/name``), never the key.
enum StreamProgress {
    /// The fields of one stream in a JSON `progress` event.
    static func json(_ s: LiveStream.Statistics) -> [String: Any] {
        var object: [String: Any] = ["stream": s.name, "connected": s.isConnected, "bytesSent": s.bytesSent, "bitrate": s.bitrate,
                                     "queuedBytes": s.queuedBytes, "droppedFrames": s.droppedFrames, "droppedGroups": s.droppedGroups,
                                     "reconnects": s.reconnects]
        if let failure = s.failure { object["failed"] = failure.description }
        return object
    }

    /// The streams' part of the terminal's progress line: `  ↑ 2.5 Mb/s 0 dropped` for each,
    /// numbered `↑1`, `↑2` (in the order of the summary's lines) when there are several.
    static func line(_ streams: [LiveStream.Statistics]) -> String {
        streams.enumerated().map { line($1, label: streams.count > 1 ? "↑\($0 + 1)" : "↑") }.joined()
    }

    /// One stream's part of the progress line: its rate and drops, with reconnects when there
    /// were some; or `reconnecting`, `stopped` (failed for good), `ended`.
    static func line(_ s: LiveStream.Statistics, label: String) -> String {
        if s.failure != nil { return "  \(label) stopped (\(s.droppedFrames) dropped)" }
        if s.hasEnded { return "  \(label) ended (\(s.droppedFrames) dropped)" }
        guard s.isConnected else { return "  \(label) reconnecting (\(s.droppedFrames) dropped)" }
        var text = "  \(label) " + String(format: "%.1f Mb/s %lld dropped", Double(s.bitrate) / 1_000_000, s.droppedFrames)
        if s.reconnects > 0 { text += " \(s.reconnects) reconnect\(s.reconnects == 1 ? "" : "s")" }
        return text
    }
}

extension StreamProgress {
    /// One stream's line in the closing summary: where it went, what was sent and dropped.
    static func summary(_ s: LiveStream.Statistics) -> String {
        var text = "\(Format.path(s.name)): \(Format.bytes(s.bytesSent)) sent, \(s.droppedFrames) frames dropped"
        if s.droppedGroups > 0 { text += " (\(s.droppedGroups) group\(s.droppedGroups == 1 ? "" : "s") of pictures)" }
        text += ", \(s.reconnects) reconnect\(s.reconnects == 1 ? "" : "s")"
        if let failure = s.failure { text += "; stopped early: \(failure.message)" }
        return text
    }
}
