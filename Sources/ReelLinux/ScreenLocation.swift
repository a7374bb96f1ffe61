import Foundation

/// Which kind of desktop a screen recording captures: an X11 display, or a Wayland desktop
/// through its ScreenCast portal.
public enum ScreenLocation: Sendable, Hashable, CustomStringConvertible {
    /// An X display (`":0"`); `nil` uses `$DISPLAY`.
    case x11(display: String?)
    /// The Wayland desktop of the session, through the desktop portal and PipeWire.
    case wayland

    /// The kind the session runs: Wayland when `WAYLAND_DISPLAY` is set or `XDG_SESSION_TYPE`
    /// is `wayland` (an X11 app on such a desktop sees only XWayland's windows), X11 otherwise.
    public static func session(environment: [String: String] = ProcessInfo.processInfo.environment) -> ScreenLocation {
        let waylandDisplay = environment["WAYLAND_DISPLAY"] ?? ""
        if !waylandDisplay.isEmpty || environment["XDG_SESSION_TYPE"] == "wayland" { return .wayland }
        return .x11(display: nil)
    }

    /// The screen of the session when it has one — the Wayland desktop, or the X display
    /// `$DISPLAY` — or `nil` when neither `WAYLAND_DISPLAY`, `XDG_SESSION_TYPE=wayland` nor
    /// `DISPLAY` says there is a desktop to record.
    package static func sessionScreen(environment: [String: String] = ProcessInfo.processInfo.environment) -> ScreenLocation? {
        switch session(environment: environment) {
        case .wayland: return .wayland
        case .x11: return (environment["DISPLAY"] ?? "").isEmpty ? nil : .x11(display: environment["DISPLAY"])
        }
    }

    /// The location a `--screen` value names: `nil` follows the session, `wayland` is the
    /// Wayland desktop, anything else an X display.
    public init(argument: String?, environment: [String: String] = ProcessInfo.processInfo.environment) {
        switch argument {
        case nil, "": self = Self.session(environment: environment)
        case "wayland": self = .wayland
        case let display?: self = .x11(display: display)
        }
    }

    /// "Wayland (through the desktop portal)", or "X11 display :0" (or "X11 ($DISPLAY)").
    public var description: String {
        switch self {
        case .wayland: "Wayland (through the desktop portal and PipeWire)"
        case .x11(let display?): "X11 display \(display)"
        case .x11(nil): "X11 ($DISPLAY)"
        }
    }
}
