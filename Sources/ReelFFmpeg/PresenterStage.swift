import Foundation
import ReelCore

/// The presenter overlays of one picture source (``PresenterOverlays``): the events its
/// ``InputEventLog`` gathered up to each picture's time go into a ``PresenterScene``, and what
/// the scene says is drawn into a new picture — the pointer's disc and the clicks' rings on the
/// picture, then the zoom that follows the pointer, then the captions on top (so that they are
/// not zoomed). A picture with nothing to draw goes through as it is. The zoom is only marked
/// on the picture (``VideoFrame/view``) for the encoder to make in its own conversion, unless
/// a caption must be drawn on the zoomed picture.
package final class PresenterStage: FrameStage, @unchecked Sendable {
    private let log: InputEventLog
    private let origin: MediaTime
    private var scene: PresenterScene
    private var marked: StageBuffers
    /// Makes the zoom while a caption shows (otherwise it is left to the encoder).
    private let zoomed: ViewResolver
    /// Whether the last picture handed on was drawn on: the next unmarked one is then new
    /// against it, whatever its source says.
    private var lastWasDrawn = false
    /// The view of the last picture if it was only zoomed (nothing drawn on it).
    private var lastView: PixelRect?
    private let lock = NSLock()
    /// Whether keys pressed at a time (on the pictures' timeline) are kept out of the captions:
    /// while the recording they go into is paused.
    private let hidesKeys: (@Sendable (MediaTime) -> Bool)?
    /// Told when the hide chord hides the captions (`true`) or shows them again (`false`).
    private let captionsToggled: (@Sendable (Bool) -> Void)?

    /// A stage drawing `overlays` from the events in `log`, whose times are on the session's
    /// clock; pictures' times count from `origin` on it. Off real time it waits for a free
    /// buffer rather than drop.
    /// Keys pressed while `hidesKeys` says so (a recording paused) are dropped, and the caption
    /// line is cleared at each picture then: a secret typed during a pause never shows.
    /// `captionsToggled` is told each time the hide chord hides or shows the captions, so that
    /// the person typing can be told (they see the screen, not the recording).
    package init(overlays: PresenterOverlays, log: InputEventLog, origin: MediaTime, realTime: Bool,
                 hidesKeys: (@Sendable (MediaTime) -> Bool)? = nil, captionsToggled: (@Sendable (Bool) -> Void)? = nil) {
        self.hidesKeys = hidesKeys
        self.captionsToggled = captionsToggled
        self.log = log
        self.origin = origin
        scene = PresenterScene(overlays: overlays)
        marked = StageBuffers(realTime: realTime)
        zoomed = ViewResolver(realTime: realTime)
    }

    /// Click colours: yellow left, blue right, green middle, pink any other (each on a dark
    /// outline).
    static func color(of button: MouseButton) -> PictureMarks.Color {
        switch button {
        case .left: return PictureMarks.Color(red: 255, green: 196, blue: 0)
        case .right: return PictureMarks.Color(red: 64, green: 156, blue: 255)
        case .middle: return PictureMarks.Color(red: 80, green: 220, blue: 100)
        case .other: return PictureMarks.Color(red: 230, green: 90, blue: 230)
        }
    }

    /// A click's ring: its button's colour on a dark outline a little wider, so that it shows
    /// on a light screen as well as on a dark one.
    private static func drawRing(_ ring: PresenterScene.Ring, scale: Double, with marks: PictureMarks) {
        let thickness = max(2, 5 * scale)
        let outline = max(1.5, 2 * scale)
        marks.ring(x: ring.x, y: ring.y, radius: ring.radius, thickness: thickness + 2 * outline,
                   color: PictureMarks.Color(red: 0, green: 0, blue: 0), opacity: 0.75 * ring.opacity)
        marks.ring(x: ring.x, y: ring.y, radius: ring.radius, thickness: thickness,
                   color: color(of: ring.button), opacity: 0.95 * ring.opacity)
    }

    package func apply(to frame: VideoFrame) -> VideoFrame? {
        lock.lock(); defer { lock.unlock() }
        for event in log.take(through: origin + frame.presentationTime) {
            let time = event.time - origin
            if case .keyPressed = event.kind, let hidesKeys, hidesKeys(time) { continue }
            let hidden = scene.captionsHidden
            scene.take(InputEvent(time: time, event.kind))
            if scene.captionsHidden != hidden { captionsToggled?(scene.captionsHidden) }
        }
        if let hidesKeys, hidesKeys(frame.presentationTime) { scene.forgetKeys() }
        let drawing = scene.drawing(at: frame.presentationTime, size: frame.size)
        let crop = drawing.view?.crop(in: frame.size)
        guard !drawing.rings.isEmpty || drawing.cursor != nil || crop != nil || drawing.caption != nil else {
            lastView = nil
            guard lastWasDrawn else { return frame }
            lastWasDrawn = false
            var passed = frame
            passed.identity = nil
            return passed
        }
        var picture = frame
        if !drawing.rings.isEmpty || drawing.cursor != nil {
            guard let copy = copied(frame) else { return nil }
            let marks = PictureMarks(on: copy)
            let scale = Double(frame.height) / 1080
            if let cursor = drawing.cursor {
                marks.softDisc(x: cursor.x, y: cursor.y, radius: max(10, 30 * scale),
                               color: PictureMarks.Color(red: 255, green: 230, blue: 80), opacity: 0.4)
            }
            for ring in drawing.rings { Self.drawRing(ring, scale: scale, with: marks) }
            picture = copy
        }
        if let crop {
            // The zoom is left to the encoder, which crops, scales and converts in one pass
            // (whatever else reads the picture is handed it zoomed: `ViewResolver`).
            picture.view = crop
        }
        if let caption = drawing.caption {
            // The captions are not zoomed: the zoom is made here, while they show.
            if picture.view != nil {
                guard let made = zoomed.resolve(picture) else { return nil }
                picture = made
            }
            if picture.buffer === frame.buffer {
                guard let copy = copied(frame) else { return nil }
                picture = copy
            }
            Self.drawCaption(caption.text, opacity: caption.opacity, on: picture)
        }
        // A picture only zoomed, through the view the last one had (a view that holds still),
        // keeps its source's identity: the same picture again is the same, and the rows that
        // changed are all that changed (the encoder converts only what they feed). Otherwise
        // it is new.
        let onlyZoomed = crop != nil && drawing.rings.isEmpty && drawing.cursor == nil && drawing.caption == nil
        if !(onlyZoomed && crop == lastView) { picture.identity = nil }
        lastView = onlyZoomed ? crop : nil
        lastWasDrawn = true
        return picture
    }

    /// A copy of `frame` in a buffer of this stage's, to draw on.
    private func copied(_ frame: VideoFrame) -> VideoFrame? {
        guard let copy = marked.picture(like: frame) else { return nil }
        frame.copyPixels(to: copy)
        return copy
    }

    /// The caption's box: centred near the bottom, its text as large as a twentieth of the
    /// picture's height allows, its oldest characters left out when it is too long to fit.
    package static func captionLayout(_ text: String, in size: PixelSize) -> (text: String, box: PixelRect, scale: Int) {
        let scale = max(2, size.height / 216)
        let padding = 3 * scale
        let fits = max(1, (size.width * 9 / 10 - 2 * padding) / PictureMarks.advance(scale: scale))
        let shown = text.count > fits ? "…" + String(text.suffix(fits - 1)) : text
        let width = shown.count * PictureMarks.advance(scale: scale) - scale + 2 * padding
        let height = 7 * scale + 2 * padding
        let box = PixelRect(x: (size.width - width) / 2, y: size.height - height - size.height / 20, width: width, height: height)
        return (shown, box, scale)
    }

    private static func drawCaption(_ text: String, opacity: Double, on picture: VideoFrame) {
        let layout = captionLayout(text, in: picture.size)
        let marks = PictureMarks(on: picture)
        marks.box(layout.box, color: PictureMarks.Color(red: 0, green: 0, blue: 0), opacity: 0.7 * opacity)
        marks.text(layout.text, x: layout.box.x + 3 * layout.scale, y: layout.box.y + 3 * layout.scale, scale: layout.scale,
                   color: PictureMarks.Color(red: 255, green: 255, blue: 255), opacity: opacity)
    }
}
