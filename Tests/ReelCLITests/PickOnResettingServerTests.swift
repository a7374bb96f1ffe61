import Foundation
import Reel
import ReelTestSupport
import Testing

/// `--region pick` on a bare X server that resets when its last client leaves (Xvfb without
/// `-noreset`, no window manager), driven by xdotool, which disconnects right after the button
/// is released: reel must stay connected from the pick to the capture, or the server resets in
/// between and the capture finds no X server (it did, about one time in two to eight).
@Suite(.serialized, .tags(.realTime)) struct PickOnResettingServerTests {
    /// How many picks each test makes: enough that the gap, had it come back, shows.
    static let rounds = 12

    /// Runs `reel ARGUMENTS` and drags 160x120+100+200 once its crosshair shows.
    func pickedByADrag(_ arguments: [String], on xvfb: XvfbServer) async throws -> (status: Int32, stdout: String, stderr: String) {
        // Connected before reel is, and closed once reel holds the grab: the server resets only
        // when reel itself lets go.
        let watch = try CursorWatch(display: xvfb.display)
        let drag = {
            let grabbed = watch.waitForChange(timeout: 20)
            watch.close()
            #expect(grabbed, "reel's crosshair never showed")
            WindowRecordTests.xdotool(["mousemove", "100", "200", "mousedown", "1", "mousemove", "180", "260",
                                       "mousemove", "259", "319", "mouseup", "1"], display: xvfb.display)
        }
        let (r, finished) = try await ReelBinary.run(arguments, steps: [(0, drag)], timeout: 30)
        if !finished { Issue.record("reel did not finish: \(r.stderr)") }
        return (r.status, r.output, r.stderr)
    }

    @Test("reel record --region pick records what was dragged every time")
    func record() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480), resetsWhenLastClientLeaves: true)
        let dir = try TemporaryDirectory()
        for round in 1...Self.rounds {
            let url = dir.url.appendingPathComponent("picked-\(round).mkv")
            let r = try await pickedByADrag(["record", "--screen=\(xvfb.display)", "--region", "pick", "--no-cursor", "--preset", "ultrafast",
                                             "--duration", "0.5", "-o", url.path], on: xvfb)
            #expect(r.status == 0, "round \(round): \(r.stderr)")
            let video = try MediaProbe.probe(url).videoStreams.first
            #expect(video?.width == 160 && video?.height == 120, "round \(round): \(r.stderr)")
            if r.status != 0 { break }
        }
    }

    @Test("reel shot --region pick takes what was dragged every time")
    func shot() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480), resetsWhenLastClientLeaves: true)
        let dir = try TemporaryDirectory()
        for round in 1...Self.rounds {
            let url = dir.url.appendingPathComponent("picked-\(round).png")
            let r = try await pickedByADrag(["shot", "--screen=\(xvfb.display)", "--region", "pick", "--no-cursor", "-o", url.path], on: xvfb)
            #expect(r.status == 0 && r.stdout.contains("(160x120 PNG)"), "round \(round): \(r.stderr)")
            if r.status != 0 { break }
        }
    }
}
