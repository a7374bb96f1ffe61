import Foundation
import Testing
@testable import ReelCLI
import Reel
import ReelTestSupport

/// `reel record` with no source records the session's screen, as `--screen` does, and says so;
/// with no display it is the usage error "nothing to record", as before.
@Suite struct SessionScreenOptionTests: ParsesRecordOptions {
    @Test func noSourceIsTheSessionsScreen() throws {
        let o = try options(["--duration", "5", "-o", "/tmp/x.mp4"])
        #expect(o.screen == .some(nil))
        #expect(o.recordsSessionScreen)
        #expect(o.videoSourceCount == 1)
        // A source given is recorded as asked, and nothing says otherwise.
        for args in [["--screen"], ["--mic"], ["--camera=test"], ["--tone"], ["--window"], ["--region", "64x64+0+0"]] {
            let given = try options(args)
            #expect(!given.recordsSessionScreen, "\(args)")
            #expect(try given.sessionScreenNote(environment: [:]) == nil, "\(args)")
        }
    }

    @Test func theFirstLineSaysWhichScreen() throws {
        let o = try options([])
        let x11 = try #require(try o.sessionScreenNote(environment: ["DISPLAY": ":7"]))
        #expect(x11.hasPrefix("recording the screen of this session, X11 display :7"), "\(x11)")
        let wayland = try #require(try o.sessionScreenNote(environment: ["DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-1"]))
        #expect(wayland.contains("Wayland"), "\(wayland)")
        let session = try #require(try o.sessionScreenNote(environment: ["XDG_SESSION_TYPE": "wayland"]))
        #expect(session.contains("Wayland"), "\(session)")
    }

    @Test func noDisplayIsStillNothingToRecord() throws {
        let o = try options([])
        for environment in [[:], ["DISPLAY": "", "WAYLAND_DISPLAY": "", "XDG_SESSION_TYPE": "x11"]] {
            #expect {
                try o.sessionScreenNote(environment: environment)
            } throws: { error in
                guard let usage = error as? UsageError else { return false }
                return usage.message.hasPrefix("nothing to record") && usage.message.contains("--screen=:N")
            }
        }
    }

    @Test func previewStillWantsAPicture() throws {
        var o = try options([])
        #expect(throws: UsageError.self) { try o.makePreview() }
    }
}

/// The `reel` binary with no source, on a real X server and on none.
@Suite(.tags(.realTime)) struct SessionScreenRecordTests {
    @Test func recordsTheDisplaysScreenAndSaysSoFirst() throws {
        let x = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("session.mp4")
        let r = try ReelBinary.run(["record", "--duration", "1", "-o", url.path],
                                   environment: ["DISPLAY": x.display, "WAYLAND_DISPLAY": "", "XDG_SESSION_TYPE": ""])
        #expect(r.status == 0, "\(r.stderr)")
        let first = r.stderr.split(separator: "\n").first.map(String.init) ?? ""
        #expect(first.hasPrefix("reel: recording the screen of this session, X11 display \(x.display)"), "\(r.stderr)")
        let video = try #require(try MediaProbe.probe(url).videoStreams.first)
        #expect(video.width == 320 && video.height == 240)
        #expect((video.frameCount ?? 0) > 0)
    }

    @Test func withNoDisplayNothingIsRecorded() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("none.mp4")
        let r = try ReelBinary.run(["record", "--duration", "1", "-o", url.path],
                                   environment: ["DISPLAY": "", "WAYLAND_DISPLAY": "", "XDG_SESSION_TYPE": ""])
        #expect(r.status == 2)
        #expect(r.stderr.hasPrefix("reel: nothing to record: no source given, and this session has no display"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }
}
