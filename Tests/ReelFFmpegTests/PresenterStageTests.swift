import Foundation
import Testing
import ReelCore
@testable import ReelFFmpeg

/// The presenter stage draws what the events say into the pictures after them and not before,
/// and takes it away again: rings at the press, captions in the caption box, the followed zoom.
@Suite struct PresenterStageTests {
    static let size = PixelSize(width: 320, height: 180)

    /// A black BGRA picture at `time`, with a white square of `side` around `square` if given.
    static func picture(at time: Double, square: (x: Int, y: Int, side: Int)? = nil) throws -> VideoFrame {
        try VideoFrame(format: .bgra, size: size, presentationTime: MediaTime(seconds: time)) { _, bytes, stride in
            for y in 0..<size.height {
                for x in 0..<size.width {
                    var level: UInt8 = 0
                    if let s = square, abs(x - s.x) < s.side / 2, abs(y - s.y) < s.side / 2 { level = 255 }
                    bytes[y * stride + x * 4] = level; bytes[y * stride + x * 4 + 1] = level
                    bytes[y * stride + x * 4 + 2] = level; bytes[y * stride + x * 4 + 3] = 255
                }
            }
        }
    }

    /// The (blue, green, red) of every pixel that is not black, by position.
    static func lit(_ frame: VideoFrame) -> [(x: Int, y: Int, bgr: (UInt8, UInt8, UInt8))] {
        frame.withUnsafePlane(0) { bytes, stride in
            var found: [(Int, Int, (UInt8, UInt8, UInt8))] = []
            for y in 0..<frame.height {
                for x in 0..<frame.width {
                    let i = y * stride + x * 4
                    if bytes[i] > 8 || bytes[i + 1] > 8 || bytes[i + 2] > 8 { found.append((x, y, (bytes[i], bytes[i + 1], bytes[i + 2]))) }
                }
            }
            return found
        }
    }

    static func stage(_ overlays: PresenterOverlays, _ events: [InputEvent],
                      hidesKeys: (@Sendable (MediaTime) -> Bool)? = nil) -> PresenterStage {
        let log = InputEventLog()
        for event in events { log.append(event) }
        return PresenterStage(overlays: overlays, log: log, origin: .zero, realTime: false, hidesKeys: hidesKeys)
    }

    /// What is typed while the recording is paused never shows: not while paused, not after the
    /// resume (a password typed during a pause showed with the next keys), and the line typed
    /// before the pause goes with it.
    @Test func keysTypedWhileThePauseLastsNeverShow() throws {
        func typed(_ text: String, at start: Double) -> [InputEvent] {
            text.enumerated().map { InputEvent(time: MediaTime(seconds: start + Double($0.offset) * 0.05), .keyPressed(KeyPress($0.element))) }
        }
        // Paused from 1.5 s to 3 s (and before 0.5 s: a --delay).
        let paused: @Sendable (MediaTime) -> Bool = { $0.seconds < 0.5 || ($0.seconds >= 1.5 && $0.seconds < 3) }
        let stage = Self.stage(PresenterOverlays(showsKeys: true),
                               typed("pw", at: 0.1) + typed("user", at: 1.0) + typed("hunter2", at: 2.0) + typed("x", at: 3.2), hidesKeys: paused)
        let alone = Self.stage(PresenterOverlays(showsKeys: true), typed("user", at: 1.0) + typed("x", at: 3.2))
        let onlyX = Self.stage(PresenterOverlays(showsKeys: true), typed("x", at: 3.2))
        func lit(_ stage: PresenterStage, at time: Double) throws -> Int { Self.lit(try #require(stage.apply(to: try Self.picture(at: time)))).count }
        // Before the first pause ends nothing; then "user" as it would be alone.
        #expect(try lit(stage, at: 0.4) == 0)
        #expect(try lit(stage, at: 1.3) == (try lit(alone, at: 1.3)) && (try lit(alone, at: 1.3)) > 20, "user")
        // Paused: nothing, though "hunter2" is typed.
        for time in [1.6, 2.2, 2.9] { #expect(try lit(stage, at: time) == 0, "at \(time) s") }
        // After the resume, "x" alone: not "userhunter2x", not "userx".
        _ = try lit(onlyX, at: 3.1)
        #expect(try lit(stage, at: 3.3) == (try lit(onlyX, at: 3.3)) && (try lit(onlyX, at: 3.3)) > 0, "x alone")
    }

    @Test(arguments: [(MouseButton.left, true), (.right, false)])
    func aRingShowsAroundThePressFromItsPictureForHalfASecond(_ button: MouseButton, yellow: Bool) throws {
        let stage = Self.stage(PresenterOverlays(showsMouseClicks: true),
                               [InputEvent(time: MediaTime(seconds: 0.5), .buttonPressed(button, x: 100, y: 90))])
        for tenth in 0...12 {
            let time = Double(tenth) / 10
            let out = try #require(stage.apply(to: try Self.picture(at: time)))
            let lit = Self.lit(out)
            if time < 0.5 || time >= 1.0 {
                #expect(lit.isEmpty, "nothing at \(time)s, found \(lit.count) pixels")
                continue
            }
            #expect(!lit.isEmpty, "a ring at \(time)s")
            for pixel in lit {
                let distance = (Double(pixel.x - 100) * Double(pixel.x - 100) + Double(pixel.y - 90) * Double(pixel.y - 90)).squareRoot()
                #expect(distance >= 3 && distance <= 15, "a ring, not a disc: a pixel \(distance) from the press at \(time)s")
                let (b, _, r) = pixel.bgr
                #expect(yellow ? r > b : b > r, "\(button)'s colour: \(pixel.bgr)")
            }
        }
    }

    @Test func typedKeysShowInTheCaptionBoxAndAreGoneAfterThePause() throws {
        let typed: [InputEvent] = "hi".enumerated().map { InputEvent(time: MediaTime(seconds: 1 + Double($0.offset) * 0.1), .keyPressed(KeyPress($0.element))) }
        let stage = Self.stage(PresenterOverlays(showsKeys: true), typed)
        let box = PresenterStage.captionLayout("hi", in: Self.size).box
        func inBox(_ frame: VideoFrame) -> Int {
            Self.lit(frame).filter { $0.x >= box.x && $0.x < box.x + box.width && $0.y >= box.y && $0.y < box.y + box.height }.count
        }
        for time in [0.0, 0.9] { #expect(Self.lit(try #require(stage.apply(to: try Self.picture(at: time)))).isEmpty) }
        let shown = try #require(stage.apply(to: try Self.picture(at: 1.2)))
        #expect(inBox(shown) > 20 && inBox(shown) == Self.lit(shown).count, "white letters in the box, nothing outside it")
        #expect(inBox(try #require(stage.apply(to: try Self.picture(at: 3.0)))) > 20)
        for time in [3.7, 5.0] { #expect(Self.lit(try #require(stage.apply(to: try Self.picture(at: time)))).isEmpty, "gone at \(time)s") }
    }

    @Test func theFollowedZoomEnlargesWhatIsAroundThePointer() throws {
        var events: [InputEvent] = []
        for i in 0..<30 { events.append(InputEvent(time: MediaTime(seconds: Double(i) * 0.1), .pointerMoved(x: 200 + Double(i % 2), y: 100))) }
        let stage = Self.stage(PresenterOverlays(followsCursor: true, zoomFactor: 2), events)
        let square = (x: 200, y: 100, side: 20)
        var last = 0
        let zoomed = ViewResolver(realTime: false)
        for frame in 0..<60 {
            let picture = try Self.picture(at: Double(frame) / 30, square: square)
            let out = try #require(stage.apply(to: picture))
            if frame >= 10 {
                // Zoomed in by then. The zoom is left for the encoder's conversion: the picture is the source's, marked.
                #expect(out.buffer === picture.buffer && out.view != nil, "picture \(frame) marked, not scaled")
            }
            last = Self.lit(try #require(zoomed.resolve(out))).count
        }
        // 19 x 19 white pixels, twice as wide and high once zoomed in.
        #expect(last > 3 * 19 * 19 && last < 5 * 19 * 19, "\(last) white pixels")
    }

    /// While the followed view holds still a picture only zoomed keeps its source's identity
    /// (the same picture again is a repeat, and the rows that changed are known), so that the
    /// encoder converts only what changed; the first through a view, and any drawn on, is new.
    /// Every zoomed picture's identity was dropped: each was converted whole.
    @Test func aViewThatHoldsStillKeepsThePicturesIdentity() throws {
        // The pointer moves a little around (200, 100): the view moves in, then holds still.
        let stage = Self.stage(PresenterOverlays(followsCursor: true, zoomFactor: 2), (0..<30).map {
            InputEvent(time: MediaTime(seconds: Double($0) * 0.1), .pointerMoved(x: 200 + Double($0 % 2), y: 100))
        })
        var kept: [Int] = [], views: [PixelRect?] = []
        for frame in 0..<90 {
            var picture = try Self.picture(at: Double(frame) / 30)
            picture.identity = PictureIdentity(id: UInt64(1000 + frame), base: frame == 0 ? nil : UInt64(999 + frame), changedRows: [10..<12])
            let out = try #require(stage.apply(to: picture))
            views.append(out.view)
            if let identity = out.identity, out.view != nil {
                #expect(identity == picture.identity && out.view != nil && out.view == views.dropLast().last ?? nil, "picture \(frame)")
                kept.append(frame)
            }
        }
        #expect(kept.count > 30, "the view held still for a second or more: kept \(kept), views \(views.map { $0.map { "\($0)" } ?? "-" })")
        #expect(kept.allSatisfy { views[$0 - 1] == views[$0] }, "kept only through the view the last picture had")
    }

    @Test func aCaptionIsDrawnOnTheZoomedPictureNotZoomed() throws {
        var events: [InputEvent] = []
        for i in 0..<30 { events.append(InputEvent(time: MediaTime(seconds: Double(i) * 0.1), .pointerMoved(x: 200 + Double(i % 2), y: 100))) }
        events.append(InputEvent(time: MediaTime(seconds: 1.5), .keyPressed(KeyPress("a"))))
        events.sort { $0.time < $1.time }
        let stage = Self.stage(PresenterOverlays(showsKeys: true, followsCursor: true, zoomFactor: 2), events)
        var out: VideoFrame?
        for frame in 0...48 { out = stage.apply(to: try Self.picture(at: Double(frame) / 30, square: (200, 100, 20))) }
        let shown = try #require(out)
        #expect(shown.view == nil, "made here, so that the caption is not zoomed")
        let box = PresenterStage.captionLayout("a", in: Self.size).box
        let inBox = Self.lit(shown).filter { $0.x >= box.x && $0.x < box.x + box.width && $0.y >= box.y && $0.y < box.y + box.height }
        #expect(inBox.count > 10, "letters in the box")
        // The square, zoomed twice, is still there outside the box.
        #expect(Self.lit(shown).count - inBox.count > 3 * 19 * 19)
    }

    /// The luma (BT.709) of a BGRA pixel.
    static func luma(_ b: UInt8, _ g: UInt8, _ r: UInt8) -> Double { 0.0722 * Double(b) + 0.7152 * Double(g) + 0.2126 * Double(r) }

    @Test(arguments: [MouseButton.left, .right, .middle, .other(8)])
    func eachRingStandsOutOnWhiteAndOnBlack(_ button: MouseButton) throws {
        for background: UInt8 in [255, 0] {
            let stage = Self.stage(PresenterOverlays(showsMouseClicks: true), [InputEvent(time: .zero, .buttonPressed(button, x: 160, y: 90))])
            let plain = try VideoFrame(format: .bgra, size: Self.size) { _, bytes, _ in
                bytes.initializeMemory(as: UInt8.self, repeating: background)
            }
            let out = try #require(stage.apply(to: plain))
            // Along the row through the press, the ring's darkest and brightest pixels.
            let row = out.withUnsafePlane(0) { bytes, stride in
                (130..<190).map { x in Self.luma(bytes[90 * stride + x * 4], bytes[90 * stride + x * 4 + 1], bytes[90 * stride + x * 4 + 2]) }
            }
            if background == 255 {
                #expect(try #require(row.min()) < 90, "\(button) on white: its darkest pixel is \(row.min()!) of 255")
            } else {
                #expect(try #require(row.max()) > 100, "\(button) on black: its brightest pixel is \(row.max()!) of 255")
            }
        }
    }

    @Test func aPictureWithNothingToDrawGoesThroughUncopied() throws {
        let stage = Self.stage(PresenterOverlays(showsMouseClicks: true, showsKeys: true), [])
        let frame = try Self.picture(at: 1)
        #expect(try #require(stage.apply(to: frame)).buffer === frame.buffer)
    }

    @Test(arguments: [PixelFormat.yuv420p, .nv12, .yuyv])
    func ringsAreDrawnOnYUVPicturesToo(_ format: PixelFormat) throws {
        let stage = Self.stage(PresenterOverlays(showsMouseClicks: true), [InputEvent(time: .zero, .buttonPressed(.left, x: 50, y: 40))])
        let frame = try VideoFrame(format: format, size: Self.size) { plane, bytes, _ in
            bytes.initializeMemory(as: UInt8.self, repeating: plane == 0 || format == .yuyv ? 16 : 128)
        }
        let out = try #require(stage.apply(to: frame))
        let brighter = out.withUnsafePlane(0) { bytes, stride in
            (0..<Self.size.width).filter { x in bytes[40 * stride + (format == .yuyv ? x * 2 : x)] > 100 }
        }
        #expect(!brighter.isEmpty && brighter.allSatisfy { abs($0 - 50) >= 3 && abs($0 - 50) <= 15 }, "\(brighter)")
    }
}
