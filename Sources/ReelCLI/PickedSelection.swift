import Foundation
import Reel

/// What the user picked by hand (`--region pick`, `--window=pick`), said so that it can be
/// given again without picking: one line on standard error and, with `--json`, a `picked`
/// event (`{"event": "picked", "region": "320x240+10+10", …}` or `{"event": "picked",
/// "window": "0x1e00007", "title": "…"}`), for `reel record` and `reel shot` alike.
enum PickedSelection: Equatable {
    /// The rectangle dragged (made even, as recorded).
    case region(PixelRect)
    /// The window clicked: its id and title.
    case window(id: UInt32, title: String)

    /// What was picked among `sources` (once they are prepared: a window is clicked then).
    static func found(in sources: [any CaptureSource], options: RecordOptions) -> [PickedSelection] {
        sources.compactMap { source in
            if options.picksRegion, let screen = source as? X11ScreenSource, let region = screen.region { return .region(region) }
            if let window = source as? X11WindowSource, window.selector == .pick, let id = window.windowID {
                return .window(id: id, title: window.windowTitle ?? "")
            }
            return nil
        }
    }

    /// The line for standard error: "reel: region 320x240+10+10 (to use it again without
    /// dragging: --region 320x240+10+10)", "reel: window 0x1e00007 "Title" (to use it again
    /// without clicking: --window=0x1e00007)".
    var line: String {
        switch self {
        case .region(let region):
            "reel: region \(region) (to use it again without dragging: --region \(region))"
        case .window(let id, let title):
            "reel: window \(Self.hex(id)) \(title.isEmpty ? "(no title)" : "\"\(Format.printable(title))\"") (to use it again without clicking: --window=\(Self.hex(id)))"
        }
    }

    /// The `picked` event.
    var event: [String: Any] {
        switch self {
        case .region(let r):
            ["event": "picked", "region": r.description, "x": r.x, "y": r.y, "width": r.width, "height": r.height]
        case .window(let id, let title):
            ["event": "picked", "window": Self.hex(id), "title": title]
        }
    }

    /// Says what was picked among `sources`: the line on `console`'s standard error, and the
    /// event on its standard output with `json`.
    static func say(_ sources: [any CaptureSource], options: RecordOptions, console: Console, json: Bool) {
        for picked in found(in: sources, options: options) {
            console.err(picked.line)
            if json { console.out(ProgressRenderer.json(picked.event)) }
        }
    }

    private static func hex(_ id: UInt32) -> String { "0x" + String(id, radix: 16) }
}
