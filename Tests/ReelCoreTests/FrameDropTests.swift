import Foundation
import Testing
@testable import ReelCore

/// Why frames were lost (s2 F3: 60 of 150 frames dropped and nothing said why): each gap
/// between the frames written is put down to what the recorder learnt as the frames were lost
/// (its queue refused them, the source skipped them), on a made-up timeline.
@Suite struct FrameDropTests {
    typealias M = RecordingMachineTests
    static let stall = FrameDrops.stallFrames(at: M.rate)

    func take(_ m: inout RecordingMachine, _ numbers: [Int64]) throws {
        for n in numbers { _ = m.take(try M.frame(n), keyframeDue: { _ in false }) }
    }

    /// A frame the queue refused counts as the encoder's; a slot the source skipped as the
    /// capture's; a number nobody explained came too late too; the counts add up to the gaps.
    @Test func eachGapIsPutDownToWhatWasNoted() throws {
        var m = M.machine(audio: false)
        try take(&m, [0, 1, 2])
        var noted = FrameDropLedger()
        noted.note(1, .encoderBehind, after: 2)        // frame 3 refused by the queue
        noted.note(2, .captureLate, after: 3)          // the source skipped 4 and 5
        m.noteDrops(&noted)
        #expect(noted.isEmpty)
        try take(&m, [6, 7, 9])                         // 8: nobody said
        #expect(m.droppedFrames == 4)
        #expect(m.drops[.encoderBehind] == 1 && m.drops[.captureLate] == 3 && m.drops[.stalled] == 0, "\(m.drops)")
        #expect(m.drops.total == m.droppedFrames)
    }

    /// Half a second or more of slots missed at once (a process stopped with SIGSTOP, a freeze)
    /// is a stall, not a late capture; a few frames refused within it stay the encoder's.
    @Test func aLongRunOfMissedSlotsIsAStall() throws {
        var m = M.machine(audio: false)
        try take(&m, [0, 1])
        var noted = FrameDropLedger()
        noted.note(1, .encoderBehind, after: 1)
        noted.note(40, .captureLate, after: 2)
        m.noteDrops(&noted)
        // Said as a stall already while its gap waits for the next frame.
        #expect(m.dropsSoFar[.stalled] == 40 && m.dropsSoFar[.encoderBehind] == 1 && m.droppedFrames == 0, "\(m.dropsSoFar)")
        try take(&m, [43, 44])
        #expect(m.drops[.encoderBehind] == 1 && m.drops[.stalled] == 40 && m.drops[.captureLate] == 0, "\(m.drops)")
        // A short gap just under half a second is late, not stalled.
        var short = M.machine(audio: false)
        try take(&short, [0, Self.stall])
        #expect(short.drops[.captureLate] == Self.stall - 1 && short.drops[.stalled] == 0, "\(short.drops)")
    }

    /// What was noted of frames that did not leave a gap (a source faster than the grid, a
    /// loss before the first frame) is counted nowhere: a count never exceeds the slots.
    @Test func nothingIsCountedBeyondTheSlots() throws {
        var m = M.machine(audio: false)
        var noted = FrameDropLedger()
        noted.note(7, .encoderBehind, after: -1)        // before the recording began
        m.noteDrops(&noted)
        try take(&m, [8, 9])
        #expect(m.droppedFrames == 0, "\(m.drops)")
        noted.note(50, .captureLate, after: 9)          // the source says more than its gap
        m.noteDrops(&noted)
        try take(&m, [12])
        #expect(m.droppedFrames == 2 && m.drops[.captureLate] == 2, "\(m.drops)")
    }

    /// Slots left empty at the end (an interval whose sound came and none of its frames) are
    /// counted with why: what the recorder noted first, then a stall for half a second or more.
    @Test func slotsMissingAtTheEndAreCountedWithWhy() throws {
        var m = M.machine()
        try take(&m, Array(0..<10))
        _ = m.pause(at: M.rate.time(ofFrame: 10))
        _ = m.resume(at: M.rate.time(ofFrame: 40))
        // Frames 10–39 paused, 40–69 lost; a second of sound of 40–69 comes.
        _ = m.take(M.audio(from: 40.0 / 30, frames: 48_000), keyframeDue: { _ in false })
        var noted = FrameDropLedger()
        noted.note(1, .encoderBehind, after: 39)
        m.noteDrops(&noted)
        _ = m.finish(keyframeDue: { _ in false })
        #expect(m.droppedFrames == 30, "\(m.drops)")
        #expect(m.drops[.encoderBehind] == 1 && m.drops[.stalled] == 29 && m.drops.total == 30, "\(m.drops)")
    }

    /// Frames lost while nothing is recorded (a pause: the wait of `--delay`, a preview before
    /// recording) are neither counted nor said, also before a frame comes to settle them: said
    /// while paused, they were warnings at 00:00:00.0 of nothing recorded (s5 F6).
    @Test func framesLostWhileNothingIsRecordedAreNotSaid() throws {
        var m = M.machine(audio: false)
        try take(&m, [0, 1])
        _ = m.pause(at: M.rate.time(ofFrame: 2))
        var noted = FrameDropLedger()
        noted.note(6, .encoderBehind, after: 3)         // 4–9 lost in the pause
        m.noteDrops(&noted)
        #expect(m.dropsSoFar.total == 0, "\(m.dropsSoFar)")
        try take(&m, [10, 11])                          // still paused: 4–9 had no slot
        _ = m.resume(at: M.rate.time(ofFrame: 12))
        try take(&m, [12, 13])
        #expect(m.droppedFrames == 0 && m.dropsSoFar.total == 0, "\(m.dropsSoFar)")
        // Before the first frame, with the recording begun paused (a schedule's wait) as a
        // preview's and --delay's are: not said either.
        var waiting = M.machine(audio: false)
        try take(&waiting, [0])
        _ = waiting.pause(at: M.rate.time(ofFrame: 0))
        noted.note(6, .captureLate, after: 0)
        waiting.noteDrops(&noted)
        #expect(waiting.dropsSoFar.total == 0, "\(waiting.dropsSoFar)")
    }

    /// With `--frame-mode content|vfr`, frames lost before a repeat the mode leaves out are not
    /// counted (the slot repeats the picture before: the file lacks nothing), and what is said
    /// while recording agrees: a still screen said "5 frames dropped" live and 0 in the summary
    /// (s5 F6). Lost before a changed picture, they are counted and said.
    @Test(arguments: [FrameMode.content, .variable])
    func framesLostBeforeALeftOutRepeatAreNeitherCountedNorSaid(mode: FrameMode) throws {
        var m = M.machine(audio: false, frameMode: mode)
        for n in Int64(0)..<3 { _ = m.take(try M.frame(n, picture: 1), keyframeDue: { $0 == 0 }) }
        var noted = FrameDropLedger()
        noted.note(5, .captureLate, after: 2)           // 3–7 missed; 8 shows the same picture
        m.noteDrops(&noted)
        _ = m.take(try M.frame(8, picture: 1), keyframeDue: { _ in false })
        #expect(m.droppedFrames == 0 && m.dropsSoFar.total == 0, "\(mode): \(m.dropsSoFar)")
        noted.note(2, .captureLate, after: 8)           // 9–10 missed; 11 shows a new picture
        m.noteDrops(&noted)
        _ = m.take(try M.frame(11, picture: 2), keyframeDue: { _ in false })
        #expect(m.droppedFrames == 2 && m.dropsSoFar.total == 2, "\(mode): \(m.dropsSoFar)")
    }

    /// The notices said while recording: a reason once it lost a few frames, then at most every
    /// ten seconds of recorded time, each with the frames since the last.
    @Test func noticesSayEachReasonOnceItLosesAFewAndThenEveryTenSeconds() {
        var notices = FrameDropNotices()
        var drops = FrameDrops()
        func at(_ s: Int64) -> MediaTime { MediaTime(value: s, timescale: 1) }
        drops.add(FrameDropNotices.least - 1, .captureLate)
        #expect(notices.notices(for: drops, at: at(1)).isEmpty, "too few to say")
        drops.add(1, .captureLate)
        drops.add(60, .encoderBehind)
        let first = notices.notices(for: drops, at: at(2))
        #expect(first.map(\.reason) == [.encoderBehind, .captureLate] && first.map(\.count) == [60, FrameDropNotices.least], "\(first)")
        drops.add(30, .encoderBehind)
        #expect(notices.notices(for: drops, at: at(5)).isEmpty, "within ten seconds")
        let later = notices.notices(for: drops, at: at(12))
        #expect(later.map(\.reason) == [.encoderBehind] && later.first?.count == 30 && later.first?.total.total == 95, "\(later)")
    }
}
