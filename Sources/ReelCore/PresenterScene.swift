import Foundation

/// What the presenter overlays draw on one picture, worked out from the input events up to
/// its time: a value fed events and pictures' times in order, platform-free, so that tests
/// check it exactly on a manual clock. The frame stage that draws it lives with the scalers.
package struct PresenterScene: Sendable {
    /// A ring where a button was pressed, as drawn on one picture.
    package struct Ring: Sendable, Equatable {
        package var x: Double
        package var y: Double
        package var button: MouseButton
        /// The ring's radius in pixels.
        package var radius: Double
        /// 1 opaque to 0 gone.
        package var opacity: Double
    }

    /// The part of the picture shown (scaled back to the whole picture); the whole picture
    /// when not zoomed.
    package struct View: Sendable, Equatable {
        package var centerX: Double
        package var centerY: Double
        package var zoom: Double

        /// The rectangle of a picture of `size` this view shows (on even pixels, inside the
        /// picture); `nil` when it shows the whole picture.
        package func crop(in size: PixelSize) -> PixelRect? {
            ZoomControl.cropRect(for: size, factor: zoom,
                                 centre: (centerX / Double(max(1, size.width)), centerY / Double(max(1, size.height))))
        }
    }

    /// What to draw on one picture.
    package struct Drawing: Sendable, Equatable {
        package var rings: [Ring] = []
        /// Where the pointer is, when a disc highlights it.
        package var cursor: (x: Double, y: Double)? = nil
        package var view: View? = nil
        package var caption: (text: String, opacity: Double)? = nil

        package static func == (a: Drawing, b: Drawing) -> Bool {
            a.rings == b.rings && a.cursor?.x == b.cursor?.x && a.cursor?.y == b.cursor?.y && a.view == b.view
                && a.caption?.text == b.caption?.text && a.caption?.opacity == b.caption?.opacity
        }
    }

    /// How long a click's ring shows.
    package static let ringDuration = MediaTime(seconds: 0.5)
    /// The pointer counts as resting after this long without moving or clicking.
    package static let restDelay = MediaTime(seconds: 1.5)
    /// How fast the followed view pans, in picture widths per second, at most.
    package static let panSpeed = 1.2
    /// How fast the zoom changes, in factors per second, at most.
    package static let zoomSpeed = 2.0
    /// While the view follows, it holds still as long as the pointer stays in its middle part
    /// (this fraction of its half-width and half-height around its centre), and moves once the
    /// pointer leaves it, until the pointer is near its centre again (``settleFraction``): a
    /// view that moves only when it must is steadier to watch, and cheaper to encode (a view
    /// that holds still leaves the encoder unchanged pictures; one that moves, a new picture
    /// every time).
    package static let holdFraction = 0.6
    /// How near the centre of the view (a fraction of its half-width and half-height) a moving
    /// view brings the pointer before it holds still again.
    package static let settleFraction = 0.25
    /// About how long the view takes to reach where it goes: it speeds up and slows down
    /// smoothly (a critically damped spring), never jumping from still to full speed.
    package static let panSmoothing = 0.2
    /// The longest gap between pictures the view moves over in one step (a longer gap, after
    /// dropped pictures, moves it no further than this one would).
    package static let longestStep = MediaTime(value: 1, timescale: 20)

    package let overlays: PresenterOverlays
    package var captions = KeyCaptions()
    private var presses: [(time: MediaTime, x: Double, y: Double, button: MouseButton)] = []
    private var pointer: (x: Double, y: Double)?
    private var lastActivity: MediaTime?
    private var view: View?
    /// Whether the view is moving to bring the pointer back to its centre.
    private var moving = false
    /// Where the view's centre is going (it comes to rest there), and how fast it moves now,
    /// in pixels a second.
    private var heading: (x: Double, y: Double)?
    private var velocity = (x: 0.0, y: 0.0)
    private var lastPicture: MediaTime?

    /// A scene drawing `overlays`.
    package init(overlays: PresenterOverlays) {
        self.overlays = overlays
    }

    /// Takes in `event` (events in time order, timed on the pictures' timeline).
    package mutating func take(_ event: InputEvent) {
        switch event.kind {
        case .pointerMoved(let x, let y):
            // The first position known is where the pointer rests, not a move.
            guard let before = pointer else { pointer = (x, y); return }
            if before.x == x, before.y == y { return }
            pointer = (x, y)
            lastActivity = event.time
        case .buttonPressed(let button, let x, let y):
            pointer = (x, y)
            lastActivity = event.time
            if overlays.showsMouseClicks { presses.append((event.time, x, y, button)) }
        case .keyPressed(let key):
            if overlays.showsKeys { captions.press(key, at: event.time) }
        }
    }

    /// Whether the hide chord (Ctrl+Alt+K) has hidden the captions.
    package var captionsHidden: Bool { captions.isHidden }

    /// Forgets the keys typed so far (the caption line goes).
    package mutating func forgetKeys() { captions.clear() }

    /// What to draw on a picture of `size` at `time` (pictures in time order): moves the
    /// followed view one step.
    package mutating func drawing(at time: MediaTime, size: PixelSize) -> Drawing {
        var drawing = Drawing()
        presses.removeAll { time - $0.time >= Self.ringDuration }
        let maximumRadius = max(12, Double(size.height) / 30)
        drawing.rings = presses.map { press in
            let age = max(0, (time - press.time).seconds) / Self.ringDuration.seconds
            return Ring(x: press.x, y: press.y, button: press.button,
                        radius: maximumRadius * (0.5 + 0.5 * age), opacity: 1 - age)
        }
        if overlays.highlightsCursor, let pointer { drawing.cursor = pointer }
        if overlays.showsKeys { drawing.caption = captions.caption(at: time) }
        if overlays.followsCursor { drawing.view = follow(at: time, size: size) }
        lastPicture = time
        return drawing
    }

    /// The followed view at `time`: zoomed in while the pointer is active in the picture,
    /// moving to bring it back to its centre when it leaves the view's middle (``holdFraction``),
    /// still while it stays there; out to the whole picture, about where it is, once it rests or
    /// leaves the picture; never moving faster than ``panSpeed`` and ``zoomSpeed``.
    private mutating func follow(at time: MediaTime, size: PixelSize) -> View {
        let width = Double(size.width), height = Double(size.height)
        // A pointer outside the picture (a region's or a window's) is not followed: there is
        // nothing of it to show, and the view clamped to the edge nearest it showed an empty
        // corner, zoomed. The view eases out as when the pointer rests.
        let inside = pointer.map { $0.x >= 0 && $0.y >= 0 && $0.x < width && $0.y < height } ?? false
        let active = inside && (lastActivity.map { time - $0 < Self.restDelay } ?? false)
        let targetZoom = active ? overlays.zoomFactor : 1
        var current = view ?? View(centerX: width / 2, centerY: height / 2, zoom: 1)
        // Resting, the view zooms out about where it is (the picture's edges bring it home).
        var target = (current.centerX, current.centerY)
        if active, let pointer {
            func clamp(_ value: Double, _ half: Double, _ whole: Double) -> Double { min(max(value, half), max(half, whole - half)) }
            // The view as shown (its edges inside the picture), and where it would show the
            // pointer in its middle at the zoom it is going to.
            let halfWidth = width / current.zoom / 2, halfHeight = height / current.zoom / 2
            let shown = (x: clamp(current.centerX, halfWidth, width), y: clamp(current.centerY, halfHeight, height))
            let goal = (clamp(pointer.x, width / targetZoom / 2, width), clamp(pointer.y, height / targetZoom / 2, height))
            let zoomingIn = current.zoom < targetZoom - 0.01
            let left = abs(pointer.x - shown.x) > Self.holdFraction * halfWidth || abs(pointer.y - shown.y) > Self.holdFraction * halfHeight
            if zoomingIn || left {
                moving = true
            } else if abs(goal.0 - current.centerX) <= Self.settleFraction * halfWidth && abs(goal.1 - current.centerY) <= Self.settleFraction * halfHeight {
                moving = false
            }
            if moving { heading = goal }
            target = heading ?? target
        } else {
            moving = false
            target = heading ?? target
        }
        let step = lastPicture.map { min(max(0, (time - $0).seconds), Self.longestStep.seconds) } ?? 0
        // Eased: half the way there every 50 ms, capped at the top speeds.
        let ease = 1 - exp2(-step / 0.05)
        func approach(_ value: Double, _ goal: Double, limit: Double) -> Double {
            let move = (goal - value) * ease
            return value + max(-limit, min(limit, move))
        }
        current.zoom = approach(current.zoom, targetZoom, limit: Self.zoomSpeed * step)
        let pan = Self.panSpeed * width
        current.centerX = Self.glide(current.centerX, to: target.0, velocity: &velocity.x, step: step, topSpeed: pan)
        current.centerY = Self.glide(current.centerY, to: target.1, velocity: &velocity.y, step: step, topSpeed: pan)
        view = current
        return current
    }

    /// One step of `step` seconds of a value moving to `target` as a critically damped spring
    /// (``panSmoothing``) at no more than `topSpeed` a second, never past the target.
    static func glide(_ value: Double, to target: Double, velocity: inout Double, step: Double, topSpeed: Double) -> Double {
        guard step > 0 else { return value }
        let omega = 2 / panSmoothing
        let x = omega * step
        let decay = 1 / (1 + x + 0.48 * x * x + 0.235 * x * x * x)
        let change = max(-topSpeed * panSmoothing, min(topSpeed * panSmoothing, value - target))
        let temp = (velocity + omega * change) * step
        velocity = (velocity - omega * temp) * decay
        var next = value - change + (change + temp) * decay
        // Never past the target, nor faster than the top speed in one step; and still once there
        // (within half a pixel, slow), not creeping toward it a fraction of a pixel at a time.
        if (target - value > 0) == (next > target) || (abs(next - target) < 0.5 && abs(velocity) < 10) {
            next = target
            velocity = 0
        }
        let limit = topSpeed * step
        if abs(next - value) > limit {
            next = value + (next > value ? limit : -limit)
            velocity = (next - value) / step
        }
        return next
    }
}
