import Testing
import ReelCore

/// The layout math of composing and the digital zoom's crop and ramp.
@Suite struct CompositionLayoutTests {
    let hd = PixelSize(width: 1280, height: 720)

    @Test(arguments: CompositionLayout.Corner.allCases)
    func pictureInPicturePutsTheInsetInItsCorner(_ corner: CompositionLayout.Corner) throws {
        let layout = CompositionLayout.pictureInPicture(corner: corner, size: 0.25, margin: 16)
        let rects = layout.rects(for: [hd, hd], canvas: hd)
        #expect(rects[0] == PixelRect(x: 0, y: 0, width: 1280, height: 720))
        let inset = rects[1]
        #expect(inset.width == 320 && inset.height == 180)
        switch corner {
        case .topLeft: #expect(inset.x == 16 && inset.y == 16)
        case .topRight: #expect(inset.x == 1280 - 16 - 320 && inset.y == 16)
        case .bottomLeft: #expect(inset.x == 16 && inset.y == 720 - 16 - 180)
        case .bottomRight: #expect(inset.x == 1280 - 16 - 320 && inset.y == 720 - 16 - 180)
        }
    }

    @Test func moreInsetsStackAwayFromTheCornerAndStayInside() {
        let layout = CompositionLayout.pictureInPicture(corner: .bottomRight, size: 0.3, margin: 10)
        let rects = layout.rects(for: [hd, hd, hd, PixelSize(width: 480, height: 640)], canvas: hd)
        #expect(rects[2].y + rects[2].height + 10 == rects[1].y)
        let canvas = PixelRect(x: 0, y: 0, width: 1280, height: 720)
        for r in rects {
            #expect(canvas.contains(r), "\(r)")
            #expect(r.x % 2 == 0 && r.y % 2 == 0 && r.width % 2 == 0 && r.height % 2 == 0)
        }
        // A portrait source keeps its shape.
        let portrait = rects[3]
        #expect(abs(Double(portrait.width) / Double(portrait.height) - 0.75) < 0.02)
    }

    @Test func sideBySideLetterboxesEachSourceInItsColumn() {
        let rects = CompositionLayout.sideBySide.rects(for: [hd, hd], canvas: hd)
        #expect(rects == [PixelRect(x: 0, y: 180, width: 640, height: 360), PixelRect(x: 640, y: 180, width: 640, height: 360)])
    }

    @Test func gridIsAsSquareAsTheCountAllows() {
        let four = CompositionLayout.grid.rects(for: Array(repeating: hd, count: 4), canvas: hd)
        #expect(four == [PixelRect(x: 0, y: 0, width: 640, height: 360), PixelRect(x: 640, y: 0, width: 640, height: 360),
                         PixelRect(x: 0, y: 360, width: 640, height: 360), PixelRect(x: 640, y: 360, width: 640, height: 360)])
        let five = CompositionLayout.grid.rects(for: Array(repeating: hd, count: 5), canvas: hd)
        #expect(five.count == 5)
        #expect(five.map(\.width).max()! - five.map(\.width).min()! <= 2)
        #expect(five[3].y > five[0].y)
    }

    @Test func nonsenseNumbersAreRefused() {
        #expect(throws: ReelError.self) { try CompositionLayout.pictureInPicture(size: 0).validate() }
        #expect(throws: ReelError.self) { try CompositionLayout.pictureInPicture(size: .nan).validate() }
        #expect(throws: ReelError.self) { try CompositionLayout.pictureInPicture(size: 0.3, margin: -1).validate() }
        #expect(throws: Never.self) { try CompositionLayout.pictureInPicture(size: 0.25).validate() }
    }

    @Test func zoomCropsKeepTheAspectAndStayInside() throws {
        #expect(ZoomControl.cropRect(for: hd, factor: 1, centre: (0.5, 0.5)) == nil)
        let centre = try #require(ZoomControl.cropRect(for: hd, factor: 2, centre: (0.5, 0.5)))
        #expect(centre == PixelRect(x: 320, y: 180, width: 640, height: 360))
        let corner = try #require(ZoomControl.cropRect(for: hd, factor: 4, centre: (0, 1)))
        #expect(corner == PixelRect(x: 0, y: 540, width: 320, height: 180))
    }

    @Test func zoomRampsAtPowersOfTwoPerSecondOnTheFrameClock() {
        let zoom = ZoomControl()
        zoom.ramp(to: 4, rate: 1)  // two doublings: two seconds
        #expect(zoom.factor(at: MediaTime(seconds: 10)) == 1)  // the ramp starts with the first frame that sees it
        #expect(abs(zoom.factor(at: MediaTime(seconds: 11)) - 2) < 1e-9)
        #expect(zoom.isRamping)
        #expect(zoom.factor(at: MediaTime(seconds: 13)) == 4)
        #expect(!zoom.isRamping)
        zoom.ramp(to: 1, rate: 2)
        _ = zoom.factor(at: .zero)
        #expect(abs(zoom.factor(at: MediaTime(seconds: 0.5)) - 2) < 1e-9)
        zoom.cancelRamp()
        #expect(abs(zoom.factor(at: MediaTime(seconds: 5)) - 2) < 1e-9)
        zoom.setFactor(100)
        #expect(zoom.factor == ZoomControl.maximumFactor)
        zoom.setFactor(.nan)
        #expect(zoom.factor == 1)
    }
}
