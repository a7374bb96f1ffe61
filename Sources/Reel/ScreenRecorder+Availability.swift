import Foundation

extension ScreenRecorder {
    /// Whether the screen of ``configuration`` can be captured now, as ReplayKit's
    /// `isAvailable`: on X11, an X server answers at the display; on Wayland, the desktop's
    /// portal offers screen sharing (its dialog is shown only when capture starts). Asks each
    /// time (a few seconds at most when a portal is slow to answer); ``unavailability`` says
    /// why not.
    public var isAvailable: Bool { unavailability == nil }

    /// Why the screen of ``configuration`` cannot be captured now, with what to do; `nil` when
    /// it can (see ``isAvailable``).
    public var unavailability: ReelError? {
        let c = configuration
        switch c.screen ?? .x11(display: c.display) {
        case .x11(let display):
            do {
                _ = try X11ScreenSource.describeDisplay(display)
                return nil
            } catch let error as ReelError {
                return error
            } catch {
                return ReelError(.sourceUnavailable, "cannot reach the X display: \(error)")
            }
        case .wayland:
            return WaylandScreenSource.unavailability()
        }
    }
}
