/// What a recording shows of the presenter's hands, drawn into the recorded picture only
/// (never onto the screen): clicks as rings, typed keys as captions, a disc under the pointer,
/// and a zoom that follows the pointer (what macOS users know from ScreenCaptureKit's
/// `showMouseClicks`, KeyCastr and Screen Studio).
///
/// Set it on an input's ``CaptureConnection`` with an ``InputEventSource`` that says what the
/// pointer and keyboard do. **Everything typed is shown, passwords too**: hide the captions
/// with Ctrl+Alt+K (again to show them), or pause the recording while typing a secret: keys
/// pressed while a ``Recorder`` fed by the input is paused (or before its first frame, when it
/// starts paused) are never drawn.
public struct PresenterOverlays: Sendable, Hashable {
    /// Draws a ring where each mouse button is pressed, fading over half a second: yellow for
    /// the left button, blue for the right, green for the middle, each on a dark outline so
    /// that it shows on light and dark screens (`showMouseClicks`).
    public var showsMouseClicks: Bool
    /// Writes what is typed as captions at the bottom of the picture: words, chords
    /// (`Ctrl+Shift+T`), repeats collapsed (`⌫ ×5`), gone a couple of seconds after the last key.
    public var showsKeys: Bool
    /// Draws a soft disc around the pointer.
    public var highlightsCursor: Bool
    /// Zooms in by ``zoomFactor`` toward the pointer and clicks while the pointer moves, and
    /// back out when it rests.
    public var followsCursor: Bool
    /// How far ``followsCursor`` zooms in: 1.25 to 8.
    public var zoomFactor: Double

    /// The overlays to draw; none by default, a zoom of 2 when following the pointer.
    public init(showsMouseClicks: Bool = false, showsKeys: Bool = false, highlightsCursor: Bool = false,
                followsCursor: Bool = false, zoomFactor: Double = 2) {
        self.showsMouseClicks = showsMouseClicks
        self.showsKeys = showsKeys
        self.highlightsCursor = highlightsCursor
        self.followsCursor = followsCursor
        self.zoomFactor = zoomFactor
    }

    /// The zoom factors ``followsCursor`` takes.
    public static let zoomFactors: ClosedRange<Double> = 1.25...8

    /// Whether any overlay is on.
    public var isEmpty: Bool { !(showsMouseClicks || showsKeys || highlightsCursor || followsCursor) }

    /// Throws `invalidConfiguration` for a zoom factor outside ``zoomFactors``.
    public func validate() throws {
        guard !followsCursor || Self.zoomFactors.contains(zoomFactor) else {
            throw ReelError(.invalidConfiguration, "a zoom that follows the pointer must be between \(Self.zoomFactors.lowerBound) and \(Int(Self.zoomFactors.upperBound)), not \(zoomFactor)")
        }
    }
}
