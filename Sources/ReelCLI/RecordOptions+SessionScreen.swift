import Foundation
import Reel

/// `reel record` with no source records the session's screen, as `--screen` does.
extension RecordOptions {
    /// The line that says what a source-less `reel record` records, or `nil` when a source was
    /// given.
    ///
    /// - Throws: `UsageError` "nothing to record" when no source was given and the session has
    ///   no display (no `$DISPLAY`, no Wayland desktop): there is nothing to choose by default.
    func sessionScreenNote(environment: [String: String]) throws -> String? {
        guard recordsSessionScreen else { return nil }
        guard let screen = ScreenLocation.sessionScreen(environment: environment) else {
            throw UsageError("nothing to record: no source given, and this session has no display ($DISPLAY and $WAYLAND_DISPLAY are not set); "
                             + "give --screen=:N, --camera, --test-pattern, --mic, --app-audio or --tone")
        }
        return "recording the screen of this session, \(screen.description), as --screen does (no source given; "
            + "--camera, --mic, --app-audio and the others name what to record)"
    }
}
