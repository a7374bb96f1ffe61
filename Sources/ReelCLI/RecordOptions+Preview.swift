import Foundation

/// `reel preview`: `reel record`'s options less those it decides itself, and what it sets.
extension RecordOptions {
    /// The options of `reel preview`: `reel record`'s, less those it decides itself (the
    /// window, clips) and those that do not go with a recording that starts paused.
    public static var previewSpecs: [OptionSpec] {
        specs.filter { !recordOnly.contains($0.name) }
    }

    /// `reel record`'s options that `reel preview` leaves out.
    static let recordOnly: Set<String> = ["preview", "pause-mode", "replay", "replay-dir", "replay-max-size", "replay-save-on-exit",
                                          "replay-spill", "stream", "stream-key-file", "hls", "hls-window", "hls-segments",
                                          "faster-than-real-time"]

    /// Refuses, saying why, a `reel record` option given to `reel preview` (which would
    /// otherwise be an unknown option, as if reel had no such thing).
    static func checkPreviewArguments(_ arguments: [String]) throws {
        for argument in arguments.prefix(while: { $0 != "--" }) where argument.hasPrefix("--") {
            let name = String(argument.dropFirst(2).prefix { $0 != "=" })
            guard recordOnly.contains(name) else { continue }
            let why = switch name {
            case "preview": "reel preview always shows its window"
            case "pause-mode": "reel preview always records clips (r starts and pauses one)"
            default: "reel preview records clips and nothing else; reel record --preview --\(name) … shows the window while it records"
            }
            throw UsageError("--\(name) is an option of reel record, not reel preview: \(why)")
        }
    }

    /// Makes these options `reel preview`'s: a window that must open, clips, and nothing
    /// recorded until asked.
    public mutating func makePreview() throws {
        guard videoSourceCount > 0 && !recordsSessionScreen else {
            throw UsageError("reel preview needs a picture to show: give --screen, --camera or --test-pattern")
        }
        preview = .on
        pauseMode = .clips
        startsPaused = true
    }
}
