import Testing
import ReelCore
@testable import ReelFFmpeg

/// The live stream's connection states: what is reported when, and the pauses between attempts.
@Suite struct LiveStreamLinkTests {
    static let half = MediaTime(value: 1, timescale: 2)
    static let eight = MediaTime(value: 8, timescale: 1)

    @Test func aLossIsReportedOnceAndTheReturnCountsAsAReconnect() {
        var link = LiveStreamLink(connected: true, initialBackoff: Self.half, maximumBackoff: Self.eight)
        let broke = link.broke()
        #expect(broke)
        var pauses: [Double] = []
        for _ in 0..<6 {
            let (report, pause) = link.connectFailed()
            #expect(!report, "the loss was reported when the connection broke")
            pauses.append(pause.seconds)
        }
        #expect(pauses == [0.5, 1, 2, 4, 8, 8], "doubling up to the maximum")
        let back = link.connected()
        #expect(back, "the return is reported")
        #expect(link.reconnects == 1 && link.state == .connected)
        let next = link.connectFailed()
        #expect(next.report && next.pause == Self.half, "a new loss is reported, and the pauses start over")
    }

    @Test func aFailedAttemptWhileConnectedReportsTheLossOnce() {
        var link = LiveStreamLink(connected: true, initialBackoff: Self.half, maximumBackoff: Self.eight)
        let first = link.connectFailed(), second = link.connectFailed(), broke = link.broke()
        #expect(first.report && !second.report)
        #expect(!broke, "not connected: nothing more to report")
    }

    @Test func aListenerWaitingForItsFirstCallerReportsNothing() {
        var link = LiveStreamLink(connected: false, initialBackoff: Self.half, maximumBackoff: Self.eight)
        let waiting = link.connectFailed()
        #expect(!waiting.report)
        let first = link.connected()
        #expect(!first && link.reconnects == 0, "the first caller is not a return")
        let lost = link.broke(), again = link.connected()
        #expect(lost, "once it had a caller, losing it is reported")
        #expect(again && link.reconnects == 1)
    }
}
