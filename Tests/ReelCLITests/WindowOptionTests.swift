import Foundation
import Testing
import Reel
@testable import ReelCLI

/// `--window` and `--window-size` as `reel record` parses them.
struct WindowOptionTests: ParsesRecordOptions {
    @Test func aWindowIsAScreenSourceChosenByIdNameFocusOrClick() throws {
        var parsed = try options(["--window"])
        #expect(parsed.window == .focused && parsed.screen == .some(nil) && parsed.windowResize == .fit)
        #expect(parsed.videoSourceCount == 1)
        parsed = try options(["--screen=:3", "--window=0x2a00004", "--window-size", "fill"])
        #expect(parsed.window == .id(0x2a0_0004) && parsed.screen == .some(":3") && parsed.windowResize == .fill)
        #expect(try options(["--window=Firefox"]).window == .name("Firefox"))
        #expect(try options(["--window=pick"]).window == .pick)
        #expect(try options(["--screen"]).window == nil)
    }

    @Test func whatCannotBeHonouredIsRefusedWithItsReason() {
        #expect(usageError(["--window", "--window-size", "follow"])?.hasPrefix("--window-size=follow is not offered: an H.264 track in MP4, MOV or Matroska keeps one picture size") == true)
        // The hint offers what works for one window, not a per-source option.
        let follow = usageError(["--window", "--window-size", "follow"]) ?? ""
        #expect(follow.contains("use fit (the whole window, letterboxed) or fill"))
        #expect(!follow.contains("--each-source"))
        #expect(usageError(["--window", "--window-size", "stretch"]) == "--window-size needs fit or fill, not 'stretch'")
        #expect(usageError(["--screen", "--window-size", "fit"]) == "--window-size does nothing without --window")
        #expect(usageError(["--window", "--region", "100x100+0+0"]) == "--region and --window cannot go together: --window records the whole window")
        #expect(usageError(["--window", "firefox"])?.contains("--window takes its value with '=' (--window=firefox)") == true)
    }
}

extension WindowOptionTests {
    @Test func devicesSaysWhereWindowsComeFromWithoutAnXDisplay() {
        let wayland = DevicesCommand.windowListing(["WAYLAND_DISPLAY": "wayland-1"])
        #expect(wayland.lines == ["  in this Wayland session the desktop portal's dialog chooses the window (--window)"])
        let none = DevicesCommand.windowListing([:])
        #expect(none.lines == ["  none: --window records X11 windows, and DISPLAY is not set"] && none.json.isEmpty)
        let dead = DevicesCommand.windowListing(["DISPLAY": ":4093"])
        #expect(dead.lines.first?.contains("no X server at display :4093") == true, "\(dead.lines)")
    }
}
