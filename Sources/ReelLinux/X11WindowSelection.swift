import ReelCore

/// Which window of an X display an ``X11WindowSource`` records.
public enum X11WindowSelector: Sendable, Hashable, CustomStringConvertible {
    /// The window that has the focus when the recording starts (`_NET_ACTIVE_WINDOW`, else the
    /// input focus).
    case focused
    /// The window with this id (as `xwininfo` or `wmctrl -l` show it).
    case id(UInt32)
    /// The one window whose title or `WM_CLASS` contains this text, ignoring case.
    case name(String)
    /// The window the user clicks when the recording starts (the pointer is grabbed until then).
    case pick

    /// The selector a `--window` value names: none (or empty) is the focused window, `pick`
    /// a click, a decimal number or one starting with `0x` an id, anything else a name.
    public init(argument: String?) {
        guard let argument, !argument.isEmpty else { self = .focused; return }
        if argument == "pick" { self = .pick; return }
        let lower = argument.lowercased()
        if lower.hasPrefix("0x"), let id = UInt32(lower.dropFirst(2), radix: 16) {
            self = .id(id)
        } else if argument.allSatisfy(\.isASCII), let id = UInt32(argument) {
            self = .id(id)
        } else {
            self = .name(argument)
        }
    }

    /// "the focused window", "window 0x400007", "the window named \"firefox\"", "the window clicked".
    public var description: String {
        switch self {
        case .focused: "the focused window"
        case .id(let id): "window 0x" + String(id, radix: 16)
        case .name(let name): "the window named \"\(name)\""
        case .pick: "the window clicked"
        }
    }
}

/// What a window capture does when the window's size changes while it records (the recording's
/// size stays what it was at the start).
public enum WindowResizeMode: String, Sendable, Hashable, CaseIterable {
    /// Scaled to fit with its aspect ratio kept and black bars around it (letterbox).
    case fit
    /// Scaled to fill the frame with its aspect ratio kept, the parts that overflow cut off.
    case fill
}

extension X11WindowSelector {
    /// The window of `windows` the selector names (`focused`: the focused window's id).
    ///
    /// - Throws: `.sourceUnavailable` when no window matches or none has the focus,
    ///   `.invalidConfiguration` for a name that several windows match (listing them).
    package func resolve(in windows: [X11WindowInfo], focused: UInt32?, display: String) throws -> X11WindowInfo {
        switch self {
        case .focused, .pick:
            if let focused, let window = windows.first(where: { $0.id == focused }) { return window }
            throw ReelError(.sourceUnavailable, "no window has the focus on display \(display)",
                            hint: Self.listing(windows, prefix: LibraryHint.nameTheWindow))
        case .id(let id):
            if let window = windows.first(where: { $0.id == id }) { return window }
            throw ReelError(.sourceUnavailable, "display \(display) has no top-level window 0x\(String(id, radix: 16))",
                            hint: Self.listing(windows, prefix: LibraryHint.windowsFollow))
        case .name(let name):
            let needle = name.lowercased()
            let matches = matching(windows)
            if matches.count == 1 { return matches[0] }
            if matches.isEmpty {
                throw ReelError(.sourceUnavailable, "no window on display \(display) has \"\(name)\" in its title or class",
                                hint: Self.listing(windows, prefix: LibraryHint.windowsFollow))
            }
            // Several: one whose title or class is exactly the name wins.
            let exact = matches.filter { $0.title.lowercased() == needle || $0.className.lowercased() == needle }
            if exact.count == 1 { return exact[0] }
            throw ReelError(.invalidConfiguration, "\(matches.count) windows on display \(display) match \"\(name)\"",
                            hint: Self.listing(matches, prefix: LibraryHint.nameOneByItsID + matches[0].hexID))
        }
    }

    /// The windows of `windows` a name selector matches: its text in their title or class,
    /// ignoring case (all of them for another selector).
    package func matching(_ windows: [X11WindowInfo]) -> [X11WindowInfo] {
        guard case .name(let name) = self else { return windows }
        let needle = name.lowercased()
        return windows.filter {
            $0.title.lowercased().contains(needle) || $0.className.lowercased().contains(needle)
                || $0.instanceName.lowercased().contains(needle)
        }
    }

    /// "prefix; windows: 0x400007 "Title" (Class) 640x480+0+0, …" (at most 12).
    static func listing(_ windows: [X11WindowInfo], prefix: String) -> String {
        guard !windows.isEmpty else { return prefix + "; there are no windows" }
        let shown = windows.prefix(12).map(\.summary).joined(separator: ", ")
        return prefix + "; windows: " + shown + (windows.count > 12 ? ", and \(windows.count - 12) more" : "")
    }
}

extension X11WindowInfo {
    /// `0x400007 "Title" (Class) 640x480+10+20, firefox (pid 1234)`, or `0x400007 (no title)
    /// (Xmessage) 120x40+0+0`: where it is and which program shows it (when it says), so that
    /// two windows of one title can be told apart.
    package var summary: String {
        var text = "\(hexID) \(quotedTitle)"
        if !className.isEmpty { text += " (\(className))" }
        text += " \(frame.width)x\(frame.height)+\(frame.x)+\(frame.y)"
        if !isMapped { text += " hidden" }
        if let processID { text += ", " + (program.map { "\($0) (pid \(processID))" } ?? "pid \(processID)") }
        return text
    }

    /// The name of the program that shows it (`/proc/PID/comm` of ``processID``), if known.
    package var program: String? { processID.flatMap(ProcessAncestry.commandName) }
}

/// Where a window's picture goes in a frame of the recording's size.
package enum WindowPictureLayout {
    /// The even size at most `size` (at least 2x2): what a recording of a window of `size` is.
    package static func recordingSize(for size: PixelSize) -> PixelSize {
        PixelSize(width: max(2, size.width & ~1), height: max(2, size.height & ~1))
    }

    /// The part of a picture of `picture` that is read (`crop`) and where it goes in a frame of
    /// `frame` (`fit`): the same size when the picture's recording size is the frame's (an odd
    /// edge cut off); otherwise scaled with the aspect ratio kept, letterboxed (`fit`) or cut to
    /// fill (`fill`).
    package static func layout(picture: PixelSize, frame: PixelSize, mode: WindowResizeMode) -> (crop: PixelRect, fit: PixelRect) {
        let whole = PixelRect(x: 0, y: 0, width: frame.width, height: frame.height)
        if recordingSize(for: picture) == frame || picture == frame {
            return (PixelRect(x: 0, y: 0, width: min(picture.width, frame.width), height: min(picture.height, frame.height)),
                    PixelRect(x: 0, y: 0, width: min(picture.width, frame.width), height: min(picture.height, frame.height)))
        }
        let pw = Double(max(1, picture.width)), ph = Double(max(1, picture.height))
        let fw = Double(frame.width), fh = Double(frame.height)
        switch mode {
        case .fit:
            let scale = min(fw / pw, fh / ph)
            let width = max(1, min(frame.width, Int((pw * scale).rounded())))
            let height = max(1, min(frame.height, Int((ph * scale).rounded())))
            return (PixelRect(x: 0, y: 0, width: max(1, picture.width), height: max(1, picture.height)),
                    PixelRect(x: (frame.width - width) / 2, y: (frame.height - height) / 2, width: width, height: height))
        case .fill:
            let scale = max(fw / pw, fh / ph)
            let width = max(1, min(picture.width, Int((fw / scale).rounded())))
            let height = max(1, min(picture.height, Int((fh / scale).rounded())))
            return (PixelRect(x: (picture.width - width) / 2, y: (picture.height - height) / 2, width: width, height: height), whole)
        }
    }
}
