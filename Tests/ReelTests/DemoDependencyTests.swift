import Foundation
import Testing
import ReelTestSupport

/// scripts/demo installs only what building and running reel needs: scripts/check-demo-deps
/// (run by CI) plans its packages with apt on an empty machine and refuses a browser, a
/// compositor or a server among them, and would refuse one that crept in.
@Suite struct DemoDependencyTests {
    static let root = ReadmeTests.root

    @Test func theDemosPackagesHoldNoBrowserCompositorOrServer() throws {
        let ci = try String(contentsOf: Self.root.appendingPathComponent(".ci/run"), encoding: .utf8)
        #expect(ci.contains("scripts/check-demo-deps"))
        let demo = try String(contentsOf: Self.root.appendingPathComponent("scripts/demo"), encoding: .utf8)
        #expect(demo.contains("scripts/install-deps --for demo"))

        let check = Self.root.appendingPathComponent("scripts/check-demo-deps").path
        let clean = try Subprocess.run([check])
        #expect(clean.status == 0, "\(clean.stderr)")
        #expect(clean.output.contains("no browser, compositor or server"))
        let intruders = ["sway", "chromium", "libnginx-mod-rtmp"]   // a compositor, a browser, a streaming server
        let refused = try Subprocess.run([check] + intruders)
        #expect(refused.status == 1, "\(refused.output)")
        for intruder in intruders {
            #expect(refused.stderr.contains("  \(intruder)\n"), "\(refused.stderr)")
        }
    }
}
