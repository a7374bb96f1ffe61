import Foundation
import ReelCore
@testable import ReelLinux
import Synchronization
import Testing

/// Damage-aware X11 capture on recorded event sequences (a scripted server, a manual clock):
/// an unchanged screen costs no read and gives the same picture again; a change costs the rows
/// it touched; buffers that come back from downstream in any order are brought up to date, so
/// no frame ever shows a stale tile; the cursor is drawn over, and moving it costs its rows.
@Suite("X11 damage-aware capture on recorded event sequences")
struct ScriptedX11DamageTests {
    static let screen = PixelSize(width: 64, height: 48)
    static let background: UInt32 = 0xFF00_0000

    /// What the test keeps of each frame: all its pixels and its identity.
    struct Seen {
        var pixels: [UInt32]
        var identity: PictureIdentity?
        var sequenceNumber: Int64
    }

    /// Collects frames on a manual clock, holding the last `held` of them (as an encoder's
    /// queue would), so the pool's buffers come back out of order and late.
    final class Capture: Sendable {
        let clock = ManualClock()
        let frames = Mutex<[Seen]>([])
        let holding = Mutex<[VideoFrame]>([])
        let events = Mutex<[SourceEvent]>([])
        let held: Int

        init(held: Int = 0) { self.held = held }

        var context: SourceContext {
            SourceContext(id: SourceID(1), clock: clock, origin: .zero, deliver: { [self] sample in
                guard case .video(let frame) = sample else { return }
                let pixels = frame.withUnsafePlane(0) { plane, stride in
                    (0..<frame.height).flatMap { row in
                        (0..<frame.width).map { plane.load(fromByteOffset: row * stride + $0 * 4, as: UInt32.self) }
                    }
                }
                frames.withLock { $0.append(Seen(pixels: pixels, identity: frame.identity, sequenceNumber: frame.sequenceNumber)) }
                if held > 0 {
                    holding.withLock { kept in
                        kept.append(frame)
                        if kept.count > held { kept.removeFirst(kept.count - held) }
                    }
                }
            }, report: { [self] event in events.withLock { $0.append(event) } })
        }

        var seen: [Seen] { frames.withLock { $0 } }
    }

    /// The screen (or `region` of it) after each step, with the cursor drawn over: what each
    /// frame must show.
    static func expected(_ steps: [ScriptedX11Server.DamageStep], region: PixelRect, cursor: X11CursorImage?) -> [[UInt32]] {
        var canvas = Array(repeating: background, count: screen.width * screen.height)
        var pointer = cursor.map { (x: $0.x, y: $0.y) }
        return steps.map { step in
            for (rect, pixel) in step.paints {
                for y in rect.y..<(rect.y + rect.height) { for x in rect.x..<(rect.x + rect.width) { canvas[y * screen.width + x] = pixel } }
            }
            if let moved = step.pointer { pointer = (moved.x, moved.y) }
            var picture: [UInt32] = []
            for y in region.y..<(region.y + region.height) {
                for x in region.x..<(region.x + region.width) {
                    var pixel = canvas[y * screen.width + x]
                    if let cursor, let pointer {
                        let cx = x - (pointer.x - cursor.xhot), cy = y - (pointer.y - cursor.yhot)
                        if cx >= 0, cy >= 0, cx < cursor.width, cy < cursor.height { pixel = cursor.pixels[cy * cursor.width + cx] }
                    }
                    picture.append(pixel)
                }
            }
            return picture
        }
    }

    static func run(_ server: ScriptedX11Server, region: PixelRect? = nil, drawsCursor: Bool = false, held: Int = 0) throws -> [Seen] {
        let source = X11ScreenSource(display: ":42", region: region, frameRate: FrameRate(30), drawsCursor: drawsCursor, server: server)
        let capture = Capture(held: held)
        try source.start(capture.context)
        server.waitUntilPlayedOut()
        source.stop()
        capture.holding.withLock { $0 = [] }
        return capture.seen
    }

    static func paint(_ x: Int, _ y: Int, _ w: Int, _ h: Int, _ pixel: UInt32) -> ScriptedX11Server.DamageStep {
        ScriptedX11Server.DamageStep(paints: [(PixelRect(x: x, y: y, width: w, height: h), pixel)])
    }

    @Test func anUnchangedScreenIsNotReadAndAChangeCostsItsRows() throws {
        let steps = [ScriptedX11Server.DamageStep(), Self.paint(8, 11, 16, 5, 0xFF11_2233), ScriptedX11Server.DamageStep(),
                     ScriptedX11Server.DamageStep(), Self.paint(0, 40, 64, 8, 0xFF44_5566)]
        let server = ScriptedX11Server(screenSize: Self.screen, damage: steps, background: Self.background)
        let seen = try Self.run(server)
        let whole = PixelRect(x: 0, y: 0, width: 64, height: 48)
        let expected = Self.expected(steps, region: whole, cursor: nil)
        try #require(seen.count >= steps.count)
        for k in steps.indices { #expect(seen[k].pixels == expected[k], "frame \(k) shows the screen after step \(k)") }
        // The first frame fills buffer A, the second buffer B (A is the last frame, kept to be
        // given again): each new buffer is read whole. The fifth frame gets A back, which holds
        // the first picture: it reads the rows each change since then touched (from an even row).
        #expect(server.screenReads == [whole, whole, PixelRect(x: 0, y: 10, width: 64, height: 6), PixelRect(x: 0, y: 40, width: 64, height: 8)])
        let ids = seen.prefix(steps.count).map { $0.identity?.id }
        #expect(ids[2] == ids[1] && ids[3] == ids[1], "an unchanged slot gives the same picture again")
        #expect(ids[1] != ids[0] && ids[4] != ids[3])
        #expect(seen[4].identity?.base == ids[3] && seen[4].identity?.changedRows == [40..<48], "the encoder learns the rows that changed")
        #expect(seen[2].identity?.base == ids[2] && seen[2].identity?.changedRows == [], "a repeat says it is one")
        #expect(seen.map(\.sequenceNumber) == (0..<Int64(seen.count)).map { $0 }, "every slot has its frame")
    }

    @Test func aRegionLooksOnlyAtDamageInsideIt() throws {
        let region = PixelRect(x: 16, y: 8, width: 32, height: 24)
        let steps = [ScriptedX11Server.DamageStep(), Self.paint(0, 0, 8, 48, 0xFFAA_0000), Self.paint(40, 30, 20, 10, 0xFF00_AA00),
                     Self.paint(20, 12, 4, 2, 0xFF00_00AA)]
        let server = ScriptedX11Server(screenSize: Self.screen, damage: steps)
        let seen = try Self.run(server, region: region)
        let expected = Self.expected(steps, region: region, cursor: nil)
        for k in steps.indices { #expect(seen[k].pixels == expected[k], "frame \(k)") }
        #expect(seen[1].identity?.id == seen[0].identity?.id, "a change outside the region changes nothing")
        // Two new buffers read whole; then the first comes back and reads the region's rows
        // that the changes since its picture reached: 12..<14 and 30..<32 of the screen.
        #expect(server.screenReads == [region, region, PixelRect(x: 16, y: 12, width: 32, height: 2), PixelRect(x: 16, y: 30, width: 32, height: 2)])
    }

    /// The property that matters: whatever the order in which buffers come back, and however
    /// old the picture they hold, every frame is exactly the screen — no stale tile.
    @Test(arguments: [0, 3])
    func everyFrameIsTheScreenWhateverTheBuffersHeld(held: Int) throws {
        var random = SplitMix(seed: 14 + UInt64(held))
        let cursorPixel: UInt32 = 0xFFFF_FFFF
        let cursor = X11CursorImage(pixels: Array(repeating: cursorPixel, count: 9), width: 3, height: 3, x: 5, y: 5, xhot: 1, yhot: 1)
        var steps: [ScriptedX11Server.DamageStep] = []
        for _ in 0..<60 {
            var step = ScriptedX11Server.DamageStep()
            switch random.next() % 4 {
            case 0: break
            case 1: step.pointer = .init(x: Int(random.next() % 70) - 3, y: Int(random.next() % 54) - 3)
            default:
                for _ in 0..<(1 + random.next() % 3) {
                    let x = Int(random.next() % 60), y = Int(random.next() % 44)
                    let rect = PixelRect(x: x, y: y, width: 1 + Int(random.next() % UInt64(64 - x)), height: 1 + Int(random.next() % UInt64(48 - y)))
                    step.paints.append((rect, 0xFF00_0000 | UInt32(truncatingIfNeeded: random.next())))
                }
                if random.next() % 2 == 0 { step.pointer = .init(x: Int(random.next() % 64), y: Int(random.next() % 48)) }
            }
            steps.append(step)
        }
        let server = ScriptedX11Server(screenSize: Self.screen, sharedMemory: held == 0, cursor: cursor, damage: steps)
        let seen = try Self.run(server, drawsCursor: true, held: held)
        let expected = Self.expected(steps, region: PixelRect(x: 0, y: 0, width: 64, height: 48), cursor: cursor)
        try #require(seen.count >= steps.count)
        for k in steps.indices {
            #expect(seen[k].pixels == expected[k], "frame \(k) is the screen after step \(k)")
        }
        let reread = server.screenReads.reduce(0) { $0 + $1.height }
        #expect(reread < steps.count * 48 * 3 / 4, "rows read: \(reread), where reading every frame whole reads \(steps.count * 48)")
    }

    @Test func unknownDamageReadsEverything() throws {
        let steps = [ScriptedX11Server.DamageStep(), ScriptedX11Server.DamageStep(paints: [(PixelRect(x: 0, y: 0, width: 4, height: 4), 0xFF12_3456)],
                                                                                    reported: .some(nil))]
        let server = ScriptedX11Server(screenSize: Self.screen, damage: steps)
        let seen = try Self.run(server)
        #expect(seen[1].pixels[0] == 0xFF12_3456)
        #expect(server.screenReads.prefix(2).map(\.height) == [48, 48], "when the server cannot say, the whole screen is read")
        #expect(seen[1].identity?.base == nil, "and the encoder converts it all")
    }

    /// A small, seeded generator: the sequences are the same on every run.
    struct SplitMix {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}

@Suite("Row sets and damage history")
struct ScreenDamageTests {
    @Test func rowSetsMergeAndBridge() {
        var rows = RowSet([10..<20, 30..<40])
        rows.insert(18..<32)
        #expect(rows.ranges == [10..<40])
        rows.insert(50..<52)
        #expect(rows.ranges == [10..<40, 50..<52])
        #expect(rows.bridged(16).ranges == [10..<52])
        #expect(rows.bridged(4).ranges == [10..<40, 50..<52])
        #expect(RowSet.rows(of: PixelRect(x: 5, y: 11, width: 3, height: 4), in: PixelRect(x: 0, y: 0, width: 64, height: 48)) == 10..<16)
        #expect(RowSet.rows(of: PixelRect(x: 70, y: 11, width: 3, height: 4), in: PixelRect(x: 0, y: 0, width: 64, height: 48)).isEmpty)
        #expect(RowSet.rows(of: PixelRect(x: 0, y: 45, width: 3, height: 9), in: PixelRect(x: 0, y: 0, width: 64, height: 47)) == 44..<47)
    }

    @Test func aBufferIsBroughtUpToDateFromThePictureItHolds() {
        var damage = ScreenDamage(height: 48)
        let a = UnsafeMutableRawPointer(bitPattern: 0x1000)!, b = UnsafeMutableRawPointer(bitPattern: 0x2000)!
        _ = damage.addPicture(changing: RowSet())
        #expect(damage.rowsToRead(into: a).ranges == [0..<48], "a buffer never seen is read whole")
        damage.noteFilled(a, cursor: 4..<8)
        _ = damage.addPicture(changing: RowSet([10..<12]))
        #expect(damage.rowsToRead(into: b).ranges == [0..<48])
        damage.noteFilled(b, cursor: 0..<0)
        _ = damage.addPicture(changing: RowSet([20..<22]))
        #expect(damage.rowsToRead(into: a).ranges == [4..<8, 10..<12, 20..<22], "two pictures behind, and its cursor")
        #expect(damage.rowsToRead(into: b).ranges == [20..<22])
        _ = damage.addPicture(changing: nil)
        #expect(damage.rowsToRead(into: b).ranges == [0..<48], "after a picture of unknown change, everything")
        for _ in 0..<(ScreenDamage.depth + 1) { _ = damage.addPicture(changing: RowSet()) }
        #expect(damage.changes(since: damage.newest - 1) == RowSet())
        #expect(damage.changes(since: 1) == nil, "older than the history reaches")
    }
}
