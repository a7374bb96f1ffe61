import Testing
import ReelCore

@Suite struct RecordingTimelineTests {
    let rate = FrameRate(30)
    func t(_ frame: Int64) -> MediaTime { rate.time(ofFrame: frame) }
    func timeline(from start: Int64 = 0) -> RecordingTimeline {
        var timeline = RecordingTimeline(frameDuration: rate.frameDuration)
        timeline.begin(at: t(start))
        return timeline
    }

    @Test func nothingBeforeItBegins() {
        var timeline = RecordingTimeline(frameDuration: rate.frameDuration)
        #expect(!timeline.hasBegun && !timeline.isPaused && timeline.zero == nil)
        #expect(timeline.pause(at: t(3)) == nil)
        #expect(timeline.resume(at: t(3)) == nil)
        #expect(timeline.recordedDuration(upTo: t(10)) == .zero)
        #expect(timeline.recordedTime(for: t(1)) == nil)
        timeline.begin(at: t(2))
        timeline.begin(at: t(5))
        #expect(timeline.zero == t(2), "it begins once")
    }

    @Test func pausesAndResumesSnapToTheNextSlot() {
        var timeline = timeline(from: 10)
        let halfFrame = MediaTime(value: 1, timescale: 60)
        #expect(timeline.pause(at: t(14) + halfFrame) == t(15))
        #expect(timeline.isPaused)
        #expect(timeline.pause(at: t(16)) == nil, "already paused")
        #expect(timeline.resume(at: t(20)) == t(20), "on a slot: that slot")
        #expect(!timeline.isPaused)
        #expect(timeline.resume(at: t(21)) == nil, "not paused")
        #expect(timeline.slot(atOrAfter: t(3)) == t(10), "before zero: zero")
    }

    @Test func aResumeNeverStartsBeforeThePauseEnded() {
        var timeline = timeline()
        #expect(timeline.pause(at: t(10)) == t(10))
        #expect(timeline.resume(at: t(4)) == t(10))
        #expect(timeline.intervals.map(\.offset) == [.zero, t(10)])
    }

    @Test func gapsAreTakenOutOfTheRecordedTime() {
        var timeline = timeline(from: 10)
        timeline.pause(at: t(20))      // [10, 20): 10 frames
        timeline.resume(at: t(30))     // [30, …)
        #expect(timeline.recordedTime(for: t(15)) == t(5))
        #expect(timeline.recordedTime(for: t(25)) == nil, "paused: not recorded")
        #expect(timeline.recordedTime(for: t(30)) == t(10))
        #expect(timeline.intervalIndex(containing: t(20)) == nil, "the pause slot is left out")
        #expect(timeline.intervalIndex(containing: t(31)) == 1)
        #expect(timeline.recordedDuration(upTo: t(25)) == t(10))
        #expect(timeline.recordedDuration(upTo: t(35)) == t(15))
        timeline.pause(at: t(40))
        #expect(timeline.recordedDuration(upTo: t(99)) == t(20), "a paused recording stops counting at its pause")
        #expect(timeline.intervals[1].duration == t(10))
    }

    @Test func splitCutsASpanIntoItsRecordedPieces() {
        var timeline = timeline()
        timeline.pause(at: t(10))
        timeline.resume(at: t(20))
        let pieces = timeline.split(from: t(5), to: t(25))
        #expect(pieces.map(\.interval) == [0, 1])
        #expect(pieces.map(\.start) == [t(5), t(20)])
        #expect(pieces.map(\.end) == [t(10), t(25)])
        #expect(timeline.split(from: t(12), to: t(18)).isEmpty, "all inside the gap")
    }

    /// A pause at the slot where recording began leaves no empty interval behind: a recording
    /// that starts paused has its first interval (its first clip) at the first resume.
    @Test func aRecordingThatBeginsPausedHasNoEmptyInterval() {
        var timeline = timeline(from: 5)
        #expect(timeline.pause(at: .zero) == t(5))
        #expect(timeline.hasBegun && timeline.isPaused && timeline.intervals.isEmpty)
        #expect(timeline.zero == t(5))
        #expect(timeline.recordedDuration(upTo: t(20)) == .zero)
        #expect(timeline.resume(at: t(10)) == t(10))
        #expect(timeline.intervals.map(\.start) == [t(10)])
        #expect(timeline.intervals.map(\.offset) == [.zero])
        #expect(timeline.recordedTime(for: t(12)) == t(2))
        // A pause at the slot where a resume started leaves none either.
        timeline.pause(at: t(20))
        timeline.resume(at: t(30))
        timeline.pause(at: t(30))
        #expect(timeline.intervals.count == 1 && timeline.isPaused)
        #expect(timeline.resume(at: t(40)) == t(40))
        #expect(timeline.intervals.map(\.offset) == [.zero, t(10)])
    }
}
