import Foundation
import Reel

/// `--show-clicks`, `--show-keys`, `--highlight-cursor`, `--follow-cursor` (with `--zoom`): the
/// presenter overlays of a screen recording.
extension RecordOptions {
    /// The options' names, as `--help` and the refusals name them.
    static let presenterOptions = ["show-clicks", "show-keys", "highlight-cursor", "follow-cursor"]

    /// Reads the presenter options; they need a screen (its clicks and keys are X11's).
    mutating func parsePresenter(_ args: ParsedArguments) throws {
        presenter.showsMouseClicks = args.has("show-clicks")
        presenter.showsKeys = args.has("show-keys")
        presenter.highlightsCursor = args.has("highlight-cursor")
        presenter.followsCursor = args.has("follow-cursor")
        guard !presenter.isEmpty else { return }
        if screen == nil, let given = Self.presenterOptions.first(where: args.has) {
            throw UsageError("--\(given) draws into a recording of the screen: give --screen (or --region, --window); cameras and the test pattern have no pointer or keys of their own")
        }
        if presenter.followsCursor, let zoom {
            guard zoom.rate == nil else {
                throw UsageError("--zoom with --follow-cursor is how far the view zooms in, e.g. 2; its pace is the pointer's, so FACTOR:RATE does not apply")
            }
            guard PresenterOverlays.zoomFactors.contains(zoom.factor) else {
                throw UsageError("--zoom with --follow-cursor must be between \(PresenterOverlays.zoomFactors.lowerBound) and \(Int(PresenterOverlays.zoomFactors.upperBound)), not \(zoom.factor)")
            }
            presenter.zoomFactor = zoom.factor
        }
    }

    /// Refuses the presenter options on Wayland, saying why: no client may see other programs'
    /// clicks and keys there.
    func refusePresenterOnWayland() throws {
        guard !presenter.isEmpty else { return }
        let given = [presenter.showsMouseClicks ? "--show-clicks" : nil, presenter.showsKeys ? "--show-keys" : nil,
                     presenter.highlightsCursor ? "--highlight-cursor" : nil, presenter.followsCursor ? "--follow-cursor" : nil]
            .compactMap { $0 }.joined(separator: ", ")
        throw ReelError(.invalidConfiguration,
                        "\(given) cannot work on Wayland: a Wayland compositor gives no program the clicks, pointer moves or keys meant for other programs (that is its security model), so there is nothing to draw them from",
                        hint: "record an X11 session, or an X display such as XWayland's with --screen=:N (only X programs' input is seen there); or record without these options")
    }

    /// Draws the presenter overlays on the screen or window source, from the X Input
    /// extension's events of its display; returns what to tell the user first (with
    /// `--show-keys`: that everything typed is shown, and how to hide it).
    func applyPresenter(to sources: [any CaptureSource], in session: CaptureSession) throws -> String? {
        guard !presenter.isEmpty else { return nil }
        guard let screen = sources.first(where: { $0 is X11ScreenSource || $0 is X11WindowSource }),
              let connection = session.connection(for: screen) else { return nil }
        try connection.setPresenterOverlays(presenter, events: XInputEventSource(for: screen))
        return presenter.showsKeys ? Self.showKeysNote : nil
    }

    /// What `--show-keys` says before recording: everything typed is drawn, and how to hide it.
    static let showKeysNote = "--show-keys draws everything typed into the recording, passwords too: Ctrl+Alt+K hides the captions (again shows them), and pausing (space, or reel control pause) records nothing"
}
