import Foundation
import ReelCore
@testable import ReelLinux
import Synchronization
import Testing

/// The X11 screen source on a scripted server: frame timing, the fall back to copying, the
/// cursor, a screen that changes or goes away, and a stop while connecting — without a server.
@Suite("X11 screen source on a scripted server")
struct ScriptedX11Tests {
    /// What the tests keep of a frame (the frame itself goes back to the pool at once).
    struct Seen: Equatable {
        var presentationTime: MediaTime
        var sequenceNumber: Int64
        /// The first pixel of each row.
        var pixels: [UInt32]
        /// The pixel at (5, 5), where the cursor test puts its cursor.
        var cursorPixel: UInt32
    }

    /// Collects what the source delivers and reports, on a manual clock.
    final class Capture: Sendable {
        let clock = ManualClock()
        let frames = Mutex<[Seen]>([])
        let events = Mutex<[SourceEvent]>([])

        var context: SourceContext {
            SourceContext(id: SourceID(1), clock: clock, origin: .zero,
                          deliver: { [self] sample in
                              guard case .video(let frame) = sample else { return }
                              let seen = frame.withUnsafePlane(0) { plane, stride in
                                  let rows = (0..<frame.height).map { plane.load(fromByteOffset: $0 * stride, as: UInt32.self) }
                                  let cursor = frame.width > 5 && frame.height > 5
                                      ? plane.load(fromByteOffset: 5 * stride + 5 * 4, as: UInt32.self) : 0
                                  return Seen(presentationTime: frame.presentationTime, sequenceNumber: frame.sequenceNumber,
                                              pixels: rows, cursorPixel: cursor)
                              }
                              frames.withLock { $0.append(seen) }
                          },
                          report: { [self] event in events.withLock { $0.append(event) } })
        }

        var seen: [Seen] { frames.withLock { $0 } }

        /// The error of the `.lost` event, once there is one.
        var lostError: ReelError? {
            events.withLock { events in
                for case .lost(let error) in events { return error }
                return nil
            }
        }

        /// Waits (up to a minute, far more than it takes) until the source reports it is lost.
        func waitUntilLost() -> ReelError? {
            for _ in 0..<60_000 {
                if let error = lostError { return error }
                usleep(1_000)
            }
            return nil
        }
    }

    static let screen = PixelSize(width: 64, height: 48)

    static func source(_ server: ScriptedX11Server, region: PixelRect? = nil, drawsCursor: Bool = false) -> X11ScreenSource {
        X11ScreenSource(display: ":42", region: region, frameRate: FrameRate(30), drawsCursor: drawsCursor, server: server)
    }

    @Test func aFrameAtEverySlotOfTheRate() throws {
        let server = ScriptedX11Server(screenSize: Self.screen, images: (1...10).map { .picture(UInt32($0)) })
        let source = Self.source(server)
        #expect(try source.prepare() == .video(size: Self.screen, pixelFormat: .bgra, frameRate: FrameRate(30)))
        let capture = Capture()
        try source.start(capture.context)
        #expect(source.captureMethod == .sharedMemory)
        server.waitUntilPlayedOut()
        source.stop()
        let seen = capture.seen.prefix(10)
        #expect(seen.count == 10)
        for (k, frame) in seen.enumerated() {
            #expect(frame.presentationTime == FrameRate(30).time(ofFrame: Int64(k)))
            #expect(frame.sequenceNumber == Int64(k))
            #expect(frame.pixels == Array(repeating: UInt32(k + 1), count: 48), "frame \(k) holds picture \(k + 1)")
        }
        #expect(server.imageRequests.allSatisfy { $0.shared && !$0.withCursor })
        #expect(source.captureMethod == nil)
        #expect(server.openConnections == 0, "the connection closed with the last frame buffer")
    }

    @Test func aRefusedSegmentFallsBackToCopyingWithoutLosingTheFrame() throws {
        let server = ScriptedX11Server(screenSize: Self.screen, images: [.picture(1), .sharedMemoryRefused, .picture(2), .picture(3)])
        let source = Self.source(server)
        let capture = Capture()
        try source.start(capture.context)
        server.waitUntilPlayedOut()
        #expect(source.captureMethod == .copy)
        source.stop()
        let seen = capture.seen
        #expect(seen.prefix(3).map { $0.pixels[0] } == [1, 2, 3])
        #expect(seen.prefix(3).map(\.sequenceNumber) == [0, 1, 2], "the refused request's slot is filled by the copy")
        #expect(server.imageRequests.prefix(4).map(\.shared) == [true, true, false, false])
        #expect(capture.lostError == nil)
    }

    @Test func theCursorIsDrawnWhereItIsInTheRegion() throws {
        // A 2x2 opaque red cursor whose hot spot is its top left, at (15, 25) on the screen:
        // (5, 5) in a region that starts at (10, 20).
        let red: UInt32 = 0xFFFF_0000
        let cursor = X11CursorImage(pixels: [red, red, red, red], width: 2, height: 2, x: 16, y: 26, xhot: 1, yhot: 1)
        let server = ScriptedX11Server(screenSize: Self.screen, cursor: cursor, images: [.picture(0xFF00_00FF)])
        let source = Self.source(server, region: PixelRect(x: 10, y: 20, width: 32, height: 16), drawsCursor: true)
        let capture = Capture()
        try source.start(capture.context)
        server.waitUntilPlayedOut()
        source.stop()
        guard let first = capture.seen.first else { Issue.record("no frame"); return }
        #expect(first.cursorPixel == red)
        #expect(first.pixels[4] == 0xFF00_00FF, "the rows above the cursor are the picture")
        #expect(server.imageRequests.first?.withCursor == true)
    }

    @Test func aDisplayThatGoesAwayIsReportedLost() throws {
        let server = ScriptedX11Server(screenSize: Self.screen, images: [.picture(1), .picture(2), .serverGone])
        let source = Self.source(server)
        let capture = Capture()
        try source.start(capture.context)
        let error = capture.waitUntilLost()
        source.stop()
        #expect(error?.code == .sourceUnavailable)
        #expect(error?.message.contains("went away") == true, "\(String(describing: error))")
        #expect(capture.seen.map { $0.pixels[0] } == [1, 2])
        #expect(server.openConnections == 0)
    }

    @Test func aScreenThatShrankIsReportedLostWithAHint() throws {
        let server = ScriptedX11Server(screenSize: Self.screen, sharedMemory: false,
                                       images: [.picture(1), .refused(errorCode: 8)])
        let source = Self.source(server, region: PixelRect(x: 32, y: 0, width: 32, height: 48))
        let capture = Capture()
        try source.start(capture.context)
        #expect(source.captureMethod == .copy)
        let error = capture.waitUntilLost()
        source.stop()
        #expect(error?.message.contains("X error 8") == true, "\(String(describing: error))")
        #expect(error?.hint?.contains("changed size") == true)
        #expect(capture.seen.count == 1)
    }

    @Test func aRegionOutsideTheScreenOrNoServerIsRefused() {
        let outside = Self.source(ScriptedX11Server(screenSize: Self.screen, images: []),
                                  region: PixelRect(x: 40, y: 0, width: 32, height: 48))
        #expect(throws: ReelError.self) { try outside.prepare() }
        do {
            _ = try outside.prepare()
        } catch let error as ReelError {
            #expect(error.code == .invalidConfiguration)
        } catch {
            Issue.record("unexpected \(error)")
        }
        let absent = Self.source(ScriptedX11Server(screenSize: Self.screen, connections: [.refused], images: []))
        do {
            _ = try absent.prepare()
            Issue.record("prepare should fail")
        } catch let error as ReelError {
            #expect(error.code == .sourceUnavailable)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func aStopWhileConnectingLeavesNothingOpenOrRunning() throws {
        let server = ScriptedX11Server(screenSize: Self.screen, connections: [.connectsAfterCancel], images: [.picture(1)])
        let source = Self.source(server)
        let capture = Capture()
        let started = DispatchSemaphore(value: 0)
        let startError = Mutex<(any Error)?>(nil)
        Thread.detachNewThread {
            do { try source.start(capture.context) } catch { startError.withLock { $0 = error } }
            started.signal()
        }
        server.waitUntilConnecting()
        source.stop()
        // The stop has returned: the connection that completed after it is closed again.
        #expect(server.openConnections == 0)
        #expect(source.captureMethod == nil)
        started.wait()
        #expect(startError.withLock { $0 } == nil, "a start that the stop overtook does not fail")
        #expect(capture.seen.isEmpty)
        #expect(server.imageRequests.isEmpty, "no capture thread ran")
    }
}
