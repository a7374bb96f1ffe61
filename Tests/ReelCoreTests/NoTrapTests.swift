import Testing
@testable import ReelCore

/// Values that come from input (a damaged file's time base, a frame rate typed by a user) never
/// stop the process: they become something the settings' validation can refuse with an error.
@Suite struct NoTrapTests {
    @Test func aTimescaleThatIsNotPositiveCountsAsSeconds() {
        #expect(MediaTime(value: 3, timescale: 0) == MediaTime(value: 3, timescale: 1))
        #expect(MediaTime(value: 3, timescale: -5).seconds == 3)
        #expect(MediaTime(value: 1, timescale: 2).converted(to: 0).timescale == 1)
    }

    @Test(arguments: [(0, 1), (30, 0), (-30, 1), (30, -1)] as [(Int32, Int32)])
    func aFrameRateThatIsNotPositiveIsRefusedByValidation(_ frames: Int32, _ per: Int32) {
        let rate = FrameRate(frames, per: per)
        #expect(!rate.isValid)
        #expect(rate.frameDuration == MediaTime(value: 1, timescale: 1))
        #expect(rate.frameIndex(at: MediaTime(value: 5, timescale: 1)) == 5)
        let error = #expect(throws: ReelError.self) { try VideoSettings(frameRate: rate).validate() }
        #expect(error?.code == .invalidConfiguration)
    }
}
