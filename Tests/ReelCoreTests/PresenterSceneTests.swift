import Testing
import ReelCore

/// The zoom that follows the pointer, on a manual timeline: it converges on the pointer, moves
/// no more than its top speeds allow between two pictures, and goes back out once the pointer rests.
@Suite struct PresenterSceneTests {
    static let size = PixelSize(width: 320, height: 180)

    @Test func theViewConvergesOnThePointerInBoundedStepsAndEasesOutWhenItRests() throws {
        var scene = PresenterScene(overlays: PresenterOverlays(followsCursor: true, zoomFactor: 2))
        let fps = 30.0
        var events: [InputEvent] = []
        // The pointer goes to (200, 100) and wobbles there by a pixel for two seconds.
        for i in 0..<20 {
            events.append(InputEvent(time: MediaTime(seconds: 0.5 + Double(i) * 0.1), .pointerMoved(x: 200 + Double(i % 2), y: 100)))
        }
        var views: [(time: Double, view: PresenterScene.View)] = []
        for frame in 0..<Int(6 * fps) {
            let time = Double(frame) / fps
            while let next = events.first, next.time.seconds <= time { scene.take(events.removeFirst()) }
            views.append((time, try #require(scene.drawing(at: MediaTime(seconds: time), size: Self.size).view)))
        }
        let step = PresenterScene.panSpeed * Double(Self.size.width) / fps
        for (a, b) in zip(views, views.dropFirst()) {
            #expect(abs(b.view.centerX - a.view.centerX) <= step * 1.0001 && abs(b.view.centerY - a.view.centerY) <= step * 1.0001,
                    "jump at \(b.time): \(a.view) to \(b.view)")
            // (times are whole microseconds: a step may be a microsecond longer than 1/30 s)
            #expect(abs(b.view.zoom - a.view.zoom) <= PresenterScene.zoomSpeed * (b.time - a.time + 1e-6) + 1e-9)
        }
        // Before the pointer moves: the whole picture.
        #expect(views[0].view.zoom == 1)
        // At 2 s: zoomed in, centred within two pixels of the pointer.
        let settled = views[60].view
        #expect(abs(settled.zoom - 2) < 0.01 && abs(settled.centerX - 200.5) <= 2 && abs(settled.centerY - 100) <= 2, "\(settled)")
        let crop = try #require(settled.crop(in: Self.size))
        #expect(crop.width == 160 && crop.height == 90 && abs(crop.x + 80 - 200) <= 3 && abs(crop.y + 45 - 100) <= 3, "\(crop)")
        // The pointer's last move is at 2.4 s; rested from 3.9 s; back out to the whole picture by 5.5 s.
        #expect(views[Int(3.8 * fps)].view.zoom > 1.9)
        #expect(views[Int(5.5 * fps)].view.zoom < 1.001 && views[Int(5.5 * fps)].view.crop(in: Self.size) == nil)
    }

    @Test func aClickWakesTheFollowAndARingGrowsAndFades() throws {
        var follow = PresenterScene(overlays: PresenterOverlays(followsCursor: true))
        follow.take(InputEvent(time: MediaTime(seconds: 1), .buttonPressed(.right, x: 40, y: 30)))
        _ = follow.drawing(at: MediaTime(seconds: 1), size: Self.size)
        #expect(try #require(follow.drawing(at: MediaTime(seconds: 1.04), size: Self.size).view).zoom > 1)
        var fresh = PresenterScene(overlays: PresenterOverlays(showsMouseClicks: true))
        fresh.take(InputEvent(time: MediaTime(seconds: 1), .buttonPressed(.right, x: 40, y: 30)))
        let atPress = try #require(fresh.drawing(at: MediaTime(seconds: 1), size: Self.size).rings.first)
        #expect(atPress.button == .right && atPress.x == 40 && atPress.y == 30 && atPress.opacity == 1 && atPress.radius == 6)
        let later = try #require(fresh.drawing(at: MediaTime(seconds: 1.25), size: Self.size).rings.first)
        #expect(later.opacity == 0.5 && later.radius == 9)
        #expect(fresh.drawing(at: MediaTime(seconds: 1.5), size: Self.size).rings.isEmpty)
    }

    /// Zoomed in, the view holds still while the pointer moves about its middle (an unchanged
    /// picture for the encoder), moves once the pointer leaves the middle, brings it back near
    /// its centre, and holds still again.
    @Test func theViewHoldsStillWhileThePointerStaysInItsMiddleAndMovesWhenItLeaves() throws {
        var scene = PresenterScene(overlays: PresenterOverlays(followsCursor: true, zoomFactor: 2))
        // 320x180 at 2x: a view of 160x90, its middle ±48 x ±27 pixels around its centre.
        var events = [InputEvent(time: MediaTime(seconds: 0), .pointerMoved(x: 160, y: 90))]
        // Active from 0.1 s, wandering ±30 pixels about (160, 90) every 0.1 s until 2 s...
        for i in 1...20 { events.append(InputEvent(time: MediaTime(seconds: Double(i) * 0.1), .pointerMoved(x: 160 + Double(i % 3 - 1) * 30, y: 90 + Double(i % 2) * 10))) }
        // ...then to (230, 90), 70 pixels right, and wandering ±20 pixels about it until 4 s.
        for i in 21...40 { events.append(InputEvent(time: MediaTime(seconds: Double(i) * 0.1), .pointerMoved(x: 230 + Double(i % 3 - 1) * 20, y: 90))) }
        var views: [PresenterScene.View] = []
        for frame in 0..<120 {
            let time = MediaTime(seconds: Double(frame) / 30)
            while let next = events.first, next.time <= time { scene.take(events.removeFirst()) }
            views.append(try #require(scene.drawing(at: time, size: Self.size).view))
        }
        // Zoomed in by 1 s, settled by 1.33 s, then still until the pointer leaves the middle at 2.1 s.
        #expect(abs(views[30].zoom - 2) < 0.01)
        #expect(views[40...62].allSatisfy { $0.crop(in: Self.size) == views[40].crop(in: Self.size) }, "\(views[30...62].map(\.centerY))")
        // It moves, and by 3 s it shows the pointer's new place near its middle...
        #expect(views[70].centerX > views[62].centerX + 20)
        let settled = views[90]
        #expect(abs(settled.centerX - 230) <= 0.25 * 80 + 20, "\(settled)")
        // It speeds up and slows down smoothly: the step from one picture to the next changes
        // by a few pixels at most (from still to full speed at once, it jumped).
        let steps = zip(views, views.dropFirst()).map { $1.centerX - $0.centerX }
        #expect(zip(steps, steps.dropFirst()).allSatisfy { abs($1 - $0) <= 6 }, "\(steps)")
        // ...and holds still from there while the pointer wanders about it.
        #expect(views[100...119].allSatisfy { $0.crop(in: Self.size) == views[100].crop(in: Self.size) }, "\(views[95...119].map(\.centerX))")
    }

    /// A region's (or a window's) pointer that leaves the picture is not chased: the view eases
    /// back out to the whole picture while the pointer moves about outside, and follows it again
    /// once it comes back (it zoomed on the corner nearest the pointer, where nothing was).
    @Test func aPointerOutsideThePictureIsNotFollowed() throws {
        var scene = PresenterScene(overlays: PresenterOverlays(followsCursor: true, zoomFactor: 2))
        let fps = 30.0
        var events: [InputEvent] = []
        // In the picture until 1.5 s, then outside it past its bottom right, moving all the while
        // (never resting), and back in at 4.5 s.
        for i in 0..<60 {
            let t = 0.5 + Double(i) * 0.1
            let outside = t >= 1.5 && t < 4.5
            events.append(InputEvent(time: MediaTime(seconds: t), .pointerMoved(x: outside ? 400 + Double(i) : 150 + Double(i % 3),
                                                                                 y: outside ? 250 : 90)))
        }
        var zooms: [Double] = []
        for frame in 0..<Int(6 * fps) {
            let time = Double(frame) / fps
            while let next = events.first, next.time.seconds <= time { scene.take(events.removeFirst()) }
            zooms.append(try #require(scene.drawing(at: MediaTime(seconds: time), size: Self.size).view).zoom)
        }
        #expect(zooms[Int(1.4 * fps)] > 1.5, "zoomed in on the pointer in the picture: \(zooms[Int(1.4 * fps)])")
        // Out again within a second of leaving, and out while it stays outside.
        for index in Int(2.6 * fps)..<Int(4.5 * fps) {
            #expect(zooms[index] < 1.001, "at \(Double(index) / fps) s the pointer is outside and the view zoomed \(zooms[index])")
        }
        #expect(zooms[Int(5.8 * fps)] > 1.5, "followed again once back: \(zooms[Int(5.8 * fps)])")
    }
}
