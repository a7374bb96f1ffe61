import Testing
import ReelCore
@testable import ReelFFmpeg

/// The live stream's connection states: what is reported when, and the pauses between attempts.
@Suite struct LiveStreamLinkTests {
    static let half = MediaTime(value: 1, timescale: 2)
    static let eight = MediaTime(value: 8, timescale: 1)
    static let lost = ReelError(.ioFailure, "rtmp://host/live/***: the connection broke (End of file)")

    @Test func aLossIsReportedOnceAndTheReturnCountsAsAReconnect() {
        var link = LiveStreamLink(connected: true, initialBackoff: Self.half, maximumBackoff: Self.eight)
        let broke = link.broke(Self.lost)
        #expect(broke)
        var pauses: [Double] = []
        for _ in 0..<6 {
            let (report, pause) = link.connectFailed(Self.lost)
            #expect(!report, "the loss was reported when the connection broke")
            pauses.append(pause.seconds)
        }
        #expect(pauses == [0.5, 1, 2, 4, 8, 8], "doubling up to the maximum")
        let back = link.connected()
        #expect(back, "the return is reported")
        #expect(link.reconnects == 1 && link.state == .connected)
        let next = link.connectFailed(Self.lost)
        #expect(next.report && next.pause == Self.half, "a new loss is reported, and the pauses start over")
    }

    @Test func aFailedAttemptWhileConnectedReportsTheLossOnce() {
        var link = LiveStreamLink(connected: true, initialBackoff: Self.half, maximumBackoff: Self.eight)
        let first = link.connectFailed(Self.lost), second = link.connectFailed(Self.lost), broke = link.broke(Self.lost)
        #expect(first.report && !second.report)
        #expect(!broke, "not connected: nothing more to report")
    }

    @Test func aListenerWaitingForItsFirstCallerReportsNothing() {
        var link = LiveStreamLink(connected: false, initialBackoff: Self.half, maximumBackoff: Self.eight)
        let waiting = link.connectFailed(Self.lost)
        #expect(!waiting.report)
        let first = link.connected()
        #expect(!first && link.reconnects == 0, "the first caller is not a return")
        let lost = link.broke(Self.lost), again = link.connected()
        #expect(lost, "once it had a caller, losing it is reported")
        #expect(again && link.reconnects == 1)
    }

    @Test func aServerStillDownAtTheStopEndedTheStreamEarly() {
        var link = LiveStreamLink(connected: true, initialBackoff: Self.half, maximumBackoff: Self.eight)
        #expect(link.endedEarly() == nil, "connected at the stop")
        _ = link.broke(Self.lost)
        _ = link.connectFailed(ReelError(.ioFailure, "nothing accepts streams at rtmp://host/live/*** (connection refused)"))
        let early = link.endedEarly()
        #expect(early?.message == Self.lost.message + "; it was not back when the recording stopped", "the loss that began it")
        #expect(early?.code == .ioFailure)
        _ = link.connected()
        #expect(link.endedEarly() == nil, "back before the stop: frames dropped, nothing ended early")
    }

    @Test func aListenerWhosePlayerLeftDidNotEndEarly() {
        var link = LiveStreamLink(connected: false, isListener: true, initialBackoff: Self.half, maximumBackoff: Self.eight)
        #expect(link.endedEarly() == nil, "no caller yet")
        _ = link.connected()
        _ = link.broke(Self.lost)
        #expect(link.endedEarly() == nil, "a player that went away is not a lost output")
    }
}
