import Foundation
import ReelCore
@testable import ReelLinux
import Testing

/// Picking a region by hand on a scripted server: what the drag gives, kept inside the screen,
/// and each way it can end without one said as such.
@Suite("X11 region picked by hand on a scripted server")
struct ScriptedX11RegionPickTests {
    static let screen = PixelSize(width: 640, height: 480)

    func pick(_ result: X11RegionPickResult) throws -> PixelRect {
        try X11ScreenSource.pickRegion(display: ":42", server: ScriptedX11Server(screenSize: Self.screen, pickedRegion: result),
                                       isCancelled: { false })
    }

    @Test func theRectangleDraggedIsKeptInsideTheScreen() throws {
        #expect(try pick(.region(PixelRect(x: 100, y: 200, width: 160, height: 120))) == PixelRect(x: 100, y: 200, width: 160, height: 120))
        #expect(try pick(.region(PixelRect(x: -20, y: 400, width: 700, height: 200))) == PixelRect(x: 0, y: 400, width: 640, height: 80))
    }

    /// What is recorded of an odd drag is even (4:2:0): the region answered (and said for
    /// reuse) is that, not the drag's 321x241.
    @Test func anOddDragIsAnsweredAtTheEvenSizeRecorded() throws {
        #expect(try pick(.region(PixelRect(x: 11, y: 21, width: 321, height: 241))) == PixelRect(x: 11, y: 21, width: 320, height: 240))
        #expect(try pick(.region(PixelRect(x: -3, y: 401, width: 200, height: 100))) == PixelRect(x: 0, y: 401, width: 196, height: 78))
    }

    @Test func withoutARectangleItSaysWhy() throws {
        #expect { try pick(.region(PixelRect(x: 0, y: 0, width: 10, height: 40))) } throws: {
            ($0 as? ReelError)?.code == .invalidConfiguration && "\($0)".contains("smaller than 16x16")
        }
        #expect { try pick(.givenUp) } throws: { "\($0)".contains("Escape or Ctrl-C gave up") }
        #expect { try pick(.notGrabbed) } throws: { "\($0)".contains("could not be grabbed") }
        #expect { try pick(.cancelled) } throws: { ($0 as? ReelError)?.code == .sourceUnavailable }
    }

    /// The source of a region picked captures on the connection the pick was made on: a server
    /// refusing every later connection (an Xvfb resetting once its other clients left) is
    /// captured all the same, and the connection goes with the capture.
    @Test func thePickedRegionIsCapturedOnTheConnectionItWasPickedOn() throws {
        let server = ScriptedX11Server(screenSize: Self.screen, connections: [.connects, .refused, .refused, .refused],
                                       images: (1...3).map { .picture(UInt32($0)) },
                                       pickedRegion: .region(PixelRect(x: 100, y: 200, width: 160, height: 120)))
        let source = try X11ScreenSource.pickingRegion(display: ":42", frameRate: FrameRate(30), drawsCursor: false, server: server,
                                                       isCancelled: { false })
        #expect(source.region == PixelRect(x: 100, y: 200, width: 160, height: 120))
        #expect(try source.prepare() == .video(size: PixelSize(width: 160, height: 120), pixelFormat: .bgra, frameRate: FrameRate(30)))
        let capture = ScriptedX11Tests.Capture()
        try source.start(capture.context)
        server.waitUntilPlayedOut()
        source.stop()
        #expect(capture.seen.count >= 3)
        #expect(server.openConnections == 0, "the connection closed with the capture")
    }

    /// A screen source prepared keeps its connection for the capture, and a stop lets it go.
    @Test func aPreparedScreenKeepsItsConnectionUntilStopped() throws {
        let server = ScriptedX11Server(screenSize: Self.screen, connections: [.connects, .refused])
        let source = X11ScreenSource(display: ":42", region: nil, frameRate: FrameRate(30), drawsCursor: false, server: server)
        _ = try source.prepare()
        _ = try source.prepare()
        #expect(server.openConnections == 1)
        source.stop()
        #expect(server.openConnections == 0)
    }
}
