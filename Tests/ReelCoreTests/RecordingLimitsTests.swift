import Testing
@testable import ReelCore

/// The limits as values: each takes what was recorded (on a manual clock, no encoder) and says
/// go on, or stop for its reason at that time; the recorder only applies what it says.
@Suite struct RecordingLimitsTests {
    /// A recording of 30 frames a second of 10 kB each, with 40 kB still in the encoder: the
    /// size limit stops it while the next two frames still fit, at the time it was asked.
    @Test func theSizeLimitStopsWhileTheNextFramesFit() {
        let clock = ManualClock(mode: .stepped)
        let limit = FileSizeLimit(maximum: 1_000_000)
        var written: Int64 = 0
        var stop: LimitAction?
        for _ in 0..<300 {
            clock.advance(by: FrameRate(30).frameDuration)
            written += 10_000
            let action = limit.action(.init(projected: written + 40_000, typicalFrameBytes: 10_000), at: clock.now())
            if action != .goOn { stop = action; break }
        }
        // 2 frames of room: it stops once written + 40 kB + 20 kB reaches 1 MB, at 940 kB written.
        #expect(written == 940_000)
        #expect(stop == .stop(.maxFileSize, at: clock.now()), "at the time of the 94th frame")
        #expect(limit.action(.init(projected: 0, typicalFrameBytes: 0, full: true), at: .zero) == .stop(.maxFileSize, at: .zero),
                "a file that refused a packet, or clips with no room for another, stop at once")
        #expect(FileSizeLimit(maximum: nil).action(.init(projected: .max / 4, typicalFrameBytes: .max / 4, full: true), at: .zero) == .goOn,
                "no limit")
    }

    @Test func theDurationStopsOnlyOnceTheMachineIsComplete() {
        let limit = DurationLimit(maximum: MediaTime(seconds: 2))
        let at = MediaTime(seconds: 2)
        #expect(limit.action(reached: false, complete: false, at: at) == .goOn)
        #expect(limit.action(reached: true, complete: false, at: at) == .reached(.maxDuration), "a take paused at its limit goes on")
        #expect(limit.action(reached: true, complete: true, at: at) == .stop(.maxDuration, at: at))
        #expect(limit.action(reached: false, complete: true, at: at) == .stop(.maxDuration, at: at), "sound only: every track at it")
    }

    /// A disk of 10 MB free when read, a recording that writes 1 MB a second to it: looked at
    /// every second, it stops once what reached the disk since and what is on its way leave
    /// less than the 4 MB minimum.
    @Test func theFreeSpaceStopsNearItsMinimum() {
        let clock = ManualClock(mode: .stepped)
        var guarding = FreeSpaceGuard(minimum: 4_000_000)
        let reading = FreeSpaceGuard.Reading(available: 10_000_000, total: 100_000_000, onDisk: 0)
        var stop: LimitAction?
        var onDisk: Int64 = 0
        for _ in 0..<100 {
            clock.advance(by: MediaTime(value: 1, timescale: 10))
            onDisk += 100_000
            guard guarding.isDue(recorded: clock.now(), written: onDisk) else { continue }
            let action = guarding.action(reading, onDisk: onDisk, toCome: 500_000, at: clock.now())
            if action != .goOn { stop = action; break }
        }
        // Looked at every quarter megabyte (every 0.3 MB here): at 5.5 MB on the disk 10 - 5.5 is 4 + 0.5, at 5.8 less.
        #expect(onDisk == 5_800_000)
        #expect(stop == .stop(.lowDiskSpace, at: MediaTime(value: 58, timescale: 10)))
        #expect(FreeSpaceGuard(minimum: nil).action(reading, onDisk: .max / 2, toCome: 0, at: .zero) == .goOn)
    }
}
