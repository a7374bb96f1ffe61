import Foundation
import Synchronization

/// What the recorder's queue refused and what its sources said they lost: audio spans (the
/// summary counts those inside the recording), and the recorded source's lost frames with why,
/// for the worker to put the gaps between the frames written down to (see ``FrameDropLedger``).
extension Recorder {
    /// Video frames dropped so far.
    public var droppedFrames: Int64 { dropped.load(ordering: .relaxed) }

    /// Audio dropped so far because the recorder fell behind, or lost because a source could
    /// not read it in time (the file has silence there).
    public var droppedAudio: MediaTime {
        refusedAudio.withLock { spans in spans.values.joined().reduce(MediaTime.zero) { $0 + ($1.end - $1.start) } }
    }

    /// Counts the sound of `source` from `start` to `end` (session times) as missing from the
    /// file (``droppedAudio``): refused by a full queue, or lost before it reached the recorder.
    func noteMissingAudio(from source: SourceID, start: MediaTime, end: MediaTime) {
        refusedAudio.withLock { spans in
            var list = spans[source, default: []]
            if let last = list.last, start <= last.end + MediaTime(value: 1, timescale: 1000), start >= last.start {
                list[list.count - 1].end = max(last.end, end)
            } else if list.count < 4096 {
                list.append((start, end))
            } else {
                list[list.count - 1].end = max(list[list.count - 1].end, end)
            }
            spans[source] = list
        }
    }

    /// The queue refused `frame` of the recorded source: the recorder is behind.
    func noteRefused(_ frame: VideoFrame) {
        state.withLock { $0.dropLedger.note(1, .encoderBehind, after: frame.sequenceNumber - 1) }
        dropsNoted.store(true, ordering: .releasing)
    }

    /// The source `source` said it lost `count` frames for `reason`: noted if it is the
    /// recorded one, after its newest frame.
    func noteSourceDrops(_ count: Int, _ reason: FrameDropReason, from source: SourceID) {
        // Counted while the recording records only: a source's losses before its first frame
        // or after its end are not the recording's.
        if recordingWindow.load(ordering: .relaxed) == 1 {
            sourceDrops.withLock { $0[source, default: FrameDrops()].add(Int64(count), reason) }
        }
        let noted = state.withLock { s in
            guard source == s.videoSource else { return false }
            s.dropLedger.note(Int64(count), reason, after: s.lastVideoSequence ?? -1)
            return true
        }
        if noted { dropsNoted.store(true, ordering: .releasing) }
    }

    /// Tells the pipeline, before it finishes, how the recording ends: every source gone, its
    /// limit passed on the clock, the frames lost since the last sample, and the session time
    /// now when a source is interrupted at the end (the sound is kept to here: see
    /// ``RecorderPipeline/soundInterrupted(untilSessionTime:)``).
    func handOverEnd(to pipeline: RecorderPipeline) {
        let (gone, limitPassed, interruptedUntil) = state.withLock { s in
            (s.machine.sourcesWentAway, s.limitPassedOnClock, s.shortfalls.anyInterrupted ? s.clock.map { $0.now() - s.origin } : nil)
        }
        if gone { pipeline.sourcesWentAway() }
        if limitPassed { pipeline.limitPassedOnClock() }
        if let interruptedUntil { pipeline.soundInterrupted(untilSessionTime: interruptedUntil) }
        handOverDrops(to: pipeline)
    }

    /// Hands what was learnt of lost frames to the pipeline's machine (on the worker).
    func handOverDrops(to pipeline: RecorderPipeline) {
        guard dropsNoted.exchange(false, ordering: .acquiring) else { return }
        var noted = state.withLock { s in
            defer { s.dropLedger = FrameDropLedger() }
            return s.dropLedger
        }
        pipeline.machine.noteDrops(&noted)
    }
}
