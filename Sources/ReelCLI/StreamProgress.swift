import Foundation
import Reel

/// How a live stream's statistics show on the progress line and in JSON `progress` events.
/// The name is the address without its key (``LiveStream/name``), never the key.
enum StreamProgress {
    /// The fields of one stream in a JSON `progress` event.
    static func json(_ s: LiveStream.Statistics) -> [String: Any] {
        ["stream": s.name, "connected": s.isConnected, "bytesSent": s.bytesSent, "bitrate": s.bitrate,
         "queuedBytes": s.queuedBytes, "droppedFrames": s.droppedFrames, "droppedGroups": s.droppedGroups,
         "reconnects": s.reconnects]
    }

    /// One stream's part of the terminal's progress line: `  ↑ 2.5 Mb/s 0 dropped`, with
    /// reconnects when there were some, or `  ↑ reconnecting`.
    static func line(_ s: LiveStream.Statistics) -> String {
        guard s.isConnected else { return "  ↑ reconnecting (\(s.droppedFrames) dropped)" }
        var text = String(format: "  ↑ %.1f Mb/s %lld dropped", Double(s.bitrate) / 1_000_000, s.droppedFrames)
        if s.reconnects > 0 { text += " \(s.reconnects) reconnect\(s.reconnects == 1 ? "" : "s")" }
        return text
    }
}

extension StreamProgress {
    /// One stream's line in the closing summary: where it went, what was sent and dropped.
    static func summary(_ s: LiveStream.Statistics) -> String {
        var text = "\(s.name): \(Format.bytes(s.bytesSent)) sent, \(s.droppedFrames) frames dropped"
        if s.droppedGroups > 0 { text += " (\(s.droppedGroups) group\(s.droppedGroups == 1 ? "" : "s") of pictures)" }
        text += ", \(s.reconnects) reconnect\(s.reconnects == 1 ? "" : "s")"
        return text
    }
}
