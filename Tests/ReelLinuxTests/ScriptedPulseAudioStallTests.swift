import Foundation
import ReelCore
@testable import ReelLinux
import Testing

/// A reader that stalls (its process stopped, the system too busy) on a scripted server: what
/// the server held keeps its place, what it dropped is reported as lost, and a device that
/// delivers nothing for a while is not loss.
extension ScriptedPulseAudioTests {
    static func seconds(_ value: Int64) -> MediaTime { MediaTime(value: value, timescale: 1) }

    /// The sound lost that the source reported: (from, duration) on the timeline.
    static func droppedAudio(_ capture: Capture) -> [(MediaTime, MediaTime)] {
        capture.events.withLock { $0.compactMap { if case .droppedAudio(let at, let duration) = $0.0 { (at, duration) } else { nil } } }
    }

    /// The sound the source reported its capture missed on a busy machine: (from, duration).
    static func missedAudio(_ capture: Capture) -> [(MediaTime, MediaTime)] {
        capture.events.withLock { $0.compactMap { if case .missedAudio(let at, let duration) = $0.0 { (at, duration) } else { nil } } }
    }

    /// How many frames `buffers` hold.
    static func frames(_ buffers: [AudioBuffer]) -> Int { buffers.reduce(0) { $0 + $1.frameCount } }

    /// The gaps between consecutive buffers, in ticks, with where each begins; overlaps fail.
    static func gaps(_ buffers: [AudioBuffer]) -> [(at: Int64, length: Int64)] {
        var gaps: [(at: Int64, length: Int64)] = []
        for (previous, next) in zip(buffers, buffers.dropFirst()) {
            let gap = ticks(next.presentationTime) - ticks(previous.endTime)
            #expect(gap >= 0, "buffers overlap by \(-gap) ticks at \(next.presentationTime)")
            #expect(firstFrame(of: next) > firstFrame(of: previous), "no frame is delivered twice")
            if gap != 0 { gaps.append((ticks(previous.endTime), gap)) }
        }
        return gaps
    }

    @Test func soundTheServerHeldThroughAStallKeepsItsPlace() throws {
        // 1 s on time; the reader stops for 5 s; the server held all of it, which arrives at
        // once; 2 s on time.
        let steps = Self.steady(100) + [.readerStalls(for: Self.seconds(5)), .data(frames: 240_000, after: .zero)] + Self.steady(200)
        let (capture, _) = try Self.record([.stream(steps)])
        let buffers = capture.received
        #expect(Self.frames(buffers) == (100 + 500 + 200) * 480, "every frame is delivered")
        #expect(Self.gaps(buffers).isEmpty, "no gap: the backlog follows what came before it")
        #expect(buffers.last?.endTime == capture.clock.now())
        #expect(Self.droppedAudio(capture).isEmpty)
    }

    @Test func aBacklogReadSlowlyKeepsItsPlaceToo() throws {
        // The reader stops for 5 s; the server held all of it, which takes 2 s to read on a busy
        // machine (100 ms of sound every 40 ms).
        var steps = Self.steady(100) + [.readerStalls(for: Self.seconds(5))]
        steps += Array(repeating: .data(frames: 4_800, after: Self.milliseconds(40)), count: 50)
        steps += [.data(frames: 96_000, after: .zero)] + Self.steady(200)
        let (capture, _) = try Self.record([.stream(steps)])
        let buffers = capture.received
        #expect(Self.frames(buffers) == (100 + 500 + 200 + 200) * 480)
        #expect(Self.gaps(buffers).isEmpty, "no gap: the backlog follows what came before it")
        #expect(buffers.last?.endTime == capture.clock.now())
        #expect(Self.droppedAudio(capture).isEmpty)
    }

    @Test func soundTheServerDroppedInAStallIsReportedWhereTheFileHasSilence() throws {
        // 1 s on time; the reader stops for 5 s; the server held the first 3 s of it and
        // dropped the newest 2 s; 2 s on time.
        let steps = Self.steady(100) + [.readerStalls(for: Self.seconds(5)), .data(frames: 144_000, after: .zero)] + Self.steady(200)
        let (capture, _) = try Self.record([.stream(steps)])
        let buffers = capture.received
        #expect(Self.frames(buffers) == (100 + 300 + 200) * 480, "every frame the server kept is delivered")
        #expect(buffers.count < 100 + 300 + 200, "the backlog goes in larger buffers")
        let gaps = Self.gaps(buffers)
        let reported = Self.droppedAudio(capture)
        #expect(gaps.map(\.length) == [96_000], "one gap, of the 2 s the server dropped")
        #expect(reported.count == 1)
        guard let gap = gaps.first, let (at, duration) = reported.first else { return }
        #expect(duration == Self.seconds(2))
        #expect(Self.ticks(at) == gap.at, "said where the silence is")
        // The sound kept ends at 5 s (the clock starts at 1 s); the gap is within the second
        // after it (the timeline follows the clock within a second).
        #expect(at >= Self.seconds(5) && at <= Self.seconds(6), "at \(at)")
        #expect(buffers.last?.endTime == capture.clock.now())
    }

    @Test func aDeviceThatDeliversNothingForAWhileLosesNothing() throws {
        // 1 s on time; the device delivers nothing for 3 s while it is read on time (a
        // suspended sink's monitor, an idle pipe); 2 s on time.
        let steps = Self.steady(100) + [.data(frames: 480, after: MediaTime(value: 3_010, timescale: 1000))] + Self.steady(200)
        let (capture, _) = try Self.record([.stream(steps)])
        #expect(Self.gaps(capture.received).map(\.length) == [144_000], "the 3 s without sound are a gap")
        #expect(Self.droppedAudio(capture).isEmpty, "nothing was lost")
    }

    @Test func aStallWhileTheDeviceDeliversNothingLosesNothing() throws {
        // The reader stops for 2 s, and then the device delivers nothing for 2 s more: only
        // what the clock says, not what the stall could explain.
        let steps = Self.steady(100) + [.readerStalls(for: Self.seconds(2)), .data(frames: 96_000, after: .zero),
                                        .data(frames: 480, after: MediaTime(value: 2_010, timescale: 1000))] + Self.steady(200)
        let (capture, _) = try Self.record([.stream(steps)])
        #expect(Self.gaps(capture.received).map(\.length) == [96_000])
        #expect(Self.droppedAudio(capture).isEmpty, "the stall lost nothing")
    }

    /// A microphone read from the moment its stream opens (no backlog) whose latency is said
    /// 10 ms more for 50 ms, 300 ms in (a server's timing report is a snapshot): every frame is
    /// delivered once, in whole buffers, without a gap. Its count followed that as if it were a
    /// backlog's and cut 10 ms of the sound under way.
    @Test func latencyNoiseCutsNothing() throws {
        let steps = Self.steady(30) + Self.steady(5, latency: Self.milliseconds(10)) + Self.steady(100)
        let (capture, _) = try Self.record([.stream(steps)])
        let buffers = capture.received
        #expect(Self.frames(buffers) == 135 * 480, "every frame is delivered")
        #expect(buffers.dropFirst().allSatisfy { $0.frameCount == 480 }, "\(buffers.map(\.frameCount).filter { $0 != 480 })")
        #expect(Self.gaps(buffers).isEmpty)
    }

    /// One timing report 80 ms off, 1 s in (on a busy machine the reply to the timing request
    /// came late, PulseAudio counted the wait as transport: 68 and 168 ms were seen): the count
    /// follows it earlier, and a second later, when that report is forgotten, back later, which
    /// leaves a hole of silence in sound that kept arriving on time. The hole is said as missed
    /// audio, where it is and as long as it is. It was silence in the file with nothing said
    /// (`--app-audio` on a loaded machine, issue 26 N1).
    @Test func aHoleTheCountLeavesInSteadySoundIsSaid() throws {
        let steps = Self.steady(100) + Self.steady(1, latency: Self.milliseconds(80)) + Self.steady(300)
        let (capture, _) = try Self.record([.stream(steps)])
        let gaps = Self.gaps(capture.received)
        let missed = Self.missedAudio(capture)
        #expect(gaps.map(\.length) == [3_840], "one hole, of the 80 ms the count moved back later")
        #expect(missed.count == 1, "\(missed)")
        #expect(Self.droppedAudio(capture).isEmpty, "missed on a busy machine, not lost by a stalled reader")
        guard let gap = gaps.first, let (at, duration) = missed.first else { return }
        #expect(Self.ticks(at) == gap.at, "said where the silence is")
        #expect(duration == Self.milliseconds(80))
    }

    /// A recording that knows what it lost (PipeWire's capture of Reel's sink: graph cycles its
    /// thread missed, sound its buffer could not hold) delivers silence in its place: the count
    /// stays on the clock (no gap, no re-anchoring), and the loss is said where the silence is,
    /// as long as it is, losses of a kind within a second in one event: cycles missed on a busy
    /// machine as missed audio (counted, as dropped frames are), sound that did not fit as
    /// dropped audio (the source is incomplete).
    @Test(arguments: [RecordedLoss.Kind.missedCycles, .overflow])
    func soundARecordingSaysItLostIsSaidWhereItsSilenceIs(kind: RecordedLoss.Kind) throws {
        // 1 s on time; 30 ms lost; 200 ms on time; 50 ms lost; 2 s on time.
        let steps = Self.steady(100) + [.lost(frames: 1_440, after: Self.milliseconds(30), kind: kind)] + Self.steady(20)
            + [.lost(frames: 2_400, after: Self.milliseconds(50), kind: kind)] + Self.steady(200)
        let (capture, _) = try Self.record([.stream(steps)])
        let buffers = capture.received
        #expect(Self.frames(buffers) == (100 + 3 + 20 + 5 + 200) * 480, "silence takes the place of what was lost")
        // (The silence is not numbered as the script's frames are: times only.)
        #expect(zip(buffers, buffers.dropFirst()).allSatisfy { $1.presentationTime == $0.endTime }, "no gap, no overlap")
        #expect(buffers.last?.endTime == capture.clock.now(), "the count is on the clock")
        let reported = kind == .missedCycles ? Self.missedAudio(capture) : Self.droppedAudio(capture)
        let other = kind == .missedCycles ? Self.droppedAudio(capture) : Self.missedAudio(capture)
        #expect(reported.count == 1, "\(reported)")
        #expect(other.isEmpty, "said as the other kind: \(other)")
        let before = buffers.first { Self.firstFrame(of: $0) == 47_520 }
        guard let (at, duration) = reported.first, let before else { return }
        #expect(duration == Self.milliseconds(80))
        #expect(at == before.endTime, "said from where the first silence begins")
    }
}
