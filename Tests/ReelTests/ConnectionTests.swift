import Foundation
import Testing
import Reel
import ReelTestSupport

/// A capture connection's turn, mirroring and filter chain, recorded on a manual clock and
/// checked in the decoded file: the test pattern's white corner cell (the counter strip's
/// first cell, top left) lands where the turn puts it.
@Suite struct ConnectionTests {
    static let size = PixelSize(width: 320, height: 240)

    /// Records a second of the blue test pattern through `configure`d connection; returns the
    /// first decoded picture (RGB) and its size.
    func record(_ configure: (CaptureConnection) throws -> Void) async throws -> (rgb: [UInt8], size: PixelSize) {
        let dir = try TemporaryDirectory()
        let session = CaptureSession(clock: ManualClock())
        let camera = TestPatternSource(size: Self.size, frameRate: FrameRate(30), beeps: .never, background: .blue, name: "camera")
        try session.addInput(camera)
        try configure(try #require(session.connection(for: camera)))
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        settings.maxRecordedDuration = MediaTime(seconds: 1)
        let url = dir.url.appendingPathComponent("turned.mp4")
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        #expect(summary.frames == 30)
        let size = try #require(summary.videoSize)
        let rgb = try #require(try MediaProbe.decodeRGB(url, width: size.width, height: size.height, maxFrames: 1).first)
        return (rgb, size)
    }

    /// Which corner of the picture holds the white cell: "top left", "top right"…
    static func whiteCorner(_ picture: (rgb: [UInt8], size: PixelSize)) -> [String] {
        let w = picture.size.width, h = picture.size.height
        let corners = [("top left", 3, 3), ("top right", w - 4, 3), ("bottom left", 3, h - 4), ("bottom right", w - 4, h - 4)]
        return corners.filter { _, x, y in
            let c = RGBColor.average(of: picture.rgb, width: w, x: x, y: y, radius: 1)
            return c.red > 200 && c.green > 200 && c.blue > 200
        }.map(\.0)
    }

    @Test func turnsAndMirrorsPutTheTopLeftCornerWhereTheyShould() async throws {
        let upright = try await record { _ in }
        #expect(upright.size == Self.size)
        #expect(Self.whiteCorner(upright) == ["top left"])

        let cases: [(VideoOrientation, Bool, PixelSize, String)] = [
            (.clockwise90, false, PixelSize(width: 240, height: 320), "top right"),
            (.upsideDown, false, Self.size, "bottom right"),
            (.counterclockwise90, false, PixelSize(width: 240, height: 320), "bottom left"),
            (.upright, true, Self.size, "top right"),
            (.clockwise90, true, PixelSize(width: 240, height: 320), "top left"),
        ]
        for (orientation, mirrored, size, corner) in cases {
            let turned = try await record { connection in
                connection.videoOrientation = orientation
                connection.isVideoMirrored = mirrored
            }
            #expect(turned.size == size, "\(orientation), mirrored \(mirrored)")
            #expect(Self.whiteCorner(turned) == [corner], "\(orientation), mirrored \(mirrored)")
        }
        let byAngle = try await record { $0.videoRotationAngle = -90 }
        #expect(Self.whiteCorner(byAngle) == ["bottom left"], "-90° is a quarter turn counterclockwise")
    }

    @Test func aQuarterTurnWhileRunningWaitsForTheNextStart() async throws {
        let session = CaptureSession(clock: ManualClock(mode: .stepped))
        let camera = TestPatternSource(size: Self.size, frameRate: FrameRate(30), beeps: .never, name: "camera")
        try session.addInput(camera)
        try session.addOutput(SampleHandlerOutput { _, _ in })
        let connection = try #require(session.connection(for: camera))
        try await session.start()
        #expect(throws: ReelError.self) { try connection.setVideoOrientation(.clockwise90) }
        #expect(connection.videoOrientation == .clockwise90, "asked for: it applies at the next start")
        try connection.setVideoOrientation(.upsideDown)   // keeps the size: at once
        connection.isVideoMirrored = true
        let microphone = ToneSource()
        #expect(session.connection(for: microphone) == nil)
        await session.stop()
        try connection.setVideoOrientation(.clockwise90)   // stopped: no refusal
    }

    @Test func aChainOfFiltersAppliesInOrder() async throws {
        // Mono, then the red channel full: a red-tinted grey. The other way round the red
        // comes first and mono takes every colour out.
        let redAfterMono = try await record { connection in
            connection.videoFilters = [.look(.mono), try VideoFilter(graph: "lutrgb=r=255")]
        }
        let c = RGBColor.average(of: redAfterMono.rgb, width: 320, x: 160, y: 160, radius: 4)
        #expect(Int(c.red) > Int(c.green) + 150 && abs(Int(c.green) - Int(c.blue)) <= 30, "red over a dark grey: \(c)")
        let monoAfterRed = try await record { connection in
            connection.videoFilters = [try VideoFilter(graph: "lutrgb=r=255"), .look(.mono)]
        }
        let r = RGBColor.average(of: monoAfterRed.rgb, width: 320, x: 160, y: 160, radius: 4)
        #expect(abs(Int(r.red) - Int(r.blue)) <= 8 && abs(Int(r.red) - Int(r.green)) <= 8, "grey: \(r)")
    }
}
