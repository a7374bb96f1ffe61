import Foundation
import Testing
@testable import ReelCLI
import Reel
import ReelTestSupport

/// `--show-clicks`, `--show-keys`, `--highlight-cursor`, `--follow-cursor` and its `--zoom`, as
/// `reel record` parses them.
@Suite struct PresenterOptionTests: ParsesRecordOptions {
    @Test func theOverlaysAndTheFollowedZoomAreRead() throws {
        let all = try options(["--screen", "--show-clicks", "--show-keys", "--highlight-cursor", "--follow-cursor", "--zoom", "3"])
        #expect(all.presenter == PresenterOverlays(showsMouseClicks: true, showsKeys: true, highlightsCursor: true, followsCursor: true, zoomFactor: 3))
        #expect(try options(["--screen", "--follow-cursor"]).presenter.zoomFactor == 2)
        #expect(try options(["--screen"]).presenter.isEmpty)
    }

    @Test func whatCannotWorkIsRefusedSayingWhy() {
        #expect(usageError(["--camera=test", "--show-keys"])?.contains("recording of the screen") == true)
        #expect(usageError(["--screen", "--follow-cursor", "--zoom", "2:1"])?.contains("FACTOR:RATE does not apply") == true)
        #expect(usageError(["--screen", "--follow-cursor", "--zoom", "1.1"])?.contains("between 1.25 and 8") == true)
        // One range in every message (100 and 0 said 1 to 16 with --follow-cursor; -1 'needs a factor').
        for zoom in ["100", "0", "-1", "8.5"] {
            let said = usageError(["--screen", "--follow-cursor", "--zoom", zoom])
            #expect(said?.contains("--zoom with --follow-cursor must be between 1.25 and 8, not \(zoom)") == true, "\(zoom): \(String(describing: said))")
        }
        #expect(usageError(["--camera=test", "--zoom", "-1"])?.contains("--zoom must be between 1 and 16, not -1") == true)
        #expect(usageError(["--screen", "--zoom", "2"])?.contains("--follow-cursor") == true)
    }

    @Test func onWaylandTheOptionsAreRefusedSayingWhy() throws {
        let opts = try options(["--screen", "--show-clicks", "--show-keys"])
        #expect(throws: ReelError.self) { try opts.refusePresenterOnWayland() }
        do {
            try opts.refusePresenterOnWayland()
        } catch let error as ReelError {
            #expect(error.message.contains("--show-clicks, --show-keys cannot work on Wayland"))
            #expect(error.message.contains("gives no program the clicks"))
        }
        try options(["--screen"]).refusePresenterOnWayland()
    }
}
