import Foundation
import Synchronization

/// The maximum duration kept on the clock. The recorded time counts what the sources
/// delivered, so a source that stalls (a network camera gone quiet, waited for so that it can
/// be picked up again) would keep a recording from ever reaching its limit, and an app waiting
/// for it with it. Under a real-time clock a recorder with a maximum duration watches the
/// clock: once that much time has passed since the first sample while it was recording and
/// not paused, and `limitGrace` more, it ends with what the sources gave (``RecordingEnding/maxDuration``),
/// each source that delivered nothing for the grace said to be interrupted (a shortfall).
///
/// Sound an audio filter holds back to look ahead (`loudnorm` holds seconds) would come only
/// after the grace, or never (a recording shorter than the look-ahead): half a second past the
/// limit the filters are drained, so that the sound up to then reaches the recording at once.
extension Recorder: HeldSoundOutput {
    /// How long past the maximum duration, on the clock, a recording whose sources delivered
    /// less is ended.
    package static let limitGrace = MediaTime(value: 2, timescale: 1)
    /// How long past the maximum duration, on the clock, the sound the inputs' audio filters
    /// hold is drained (sources deliver their sound within this).
    static let drainAfterLimit = MediaTime(value: 1, timescale: 2)

    func setHeldSoundDrain(_ drain: @escaping @Sendable () -> Void) {
        state.withLock { $0.drainHeldSound = drain }
    }

    func setSoundLead(_ lead: MediaTime) {
        state.withLock { $0.soundLead = lead }
    }

    /// Starts the watch on a thread of its own; it ends with the recording.
    func watchLimit(_ limit: MediaTime, clock: any MediaClock) {
        let thread = Thread { [self] in runLimitWatch(limit, clock: clock) }
        thread.name = "reel.limit"
        thread.start()
    }

    /// Counts the unpaused time from the first sample (a camera slow to start does not eat
    /// into the recording), or from the start while none has come (a recording of sources that
    /// never deliver ends too).
    private func runLimitWatch(_ limit: MediaTime, clock: any MediaClock) {
        let step = MediaTime(value: 1, timescale: 4)
        var sinceStart = MediaTime.zero, sinceFirstSample = MediaTime.zero
        var last = clock.now()
        var drained = false
        while true {
            clock.sleep(until: last + step)
            let now = clock.now()
            let (recording, paused, delivered) = state.withLock { s in
                (s.machine.isRecording, s.machine.isPaused(at: now - s.origin), !s.latestSample.isEmpty)
            }
            guard recording else { return }
            if !paused {
                sinceStart = sinceStart + (now - last)
                if delivered { sinceFirstSample = sinceFirstSample + (now - last) }
            }
            last = now
            // Clips removed (an undo) are recorded again: their time is handed back.
            let passed = (delivered ? sinceFirstSample : sinceStart) - (recordingSession?.removedDuration ?? .zero)
            if !drained, passed >= limit + Self.drainAfterLimit {
                drained = true
                state.withLock { $0.drainHeldSound }?()
            }
            guard passed >= limit + Self.limitGrace else { continue }
            endOnClock(limit: limit, at: now)
            return
        }
    }

    /// Ends the recording whose limit passed on the clock at `now`: the sources that gave
    /// nothing for the grace are said to be interrupted, and the queue is closed (the worker
    /// finishes the file with what came).
    private func endOnClock(limit: MediaTime, at now: MediaTime) {
        let (stalled, queue) = state.withLock { s -> ([(SourceID, MediaTime?)], Channel<RecorderInput>?) in
            guard s.machine.isRecording, !s.limitPassedOnClock else { return ([], nil) }
            s.limitPassedOnClock = true
            let sessionNow = now - s.origin
            let stalled = s.sourceNames.keys.sorted { $0.rawValue < $1.rawValue }.compactMap { id -> (SourceID, MediaTime?)? in
                let latest = s.latestSample[id]
                guard latest.map({ sessionNow - $0 >= Self.limitGrace }) ?? true else { return nil }
                return (id, latest)
            }
            return (stalled, s.queue)
        }
        guard let queue else { return }
        let seconds = String(format: "%g", limit.seconds)
        for (id, latest) in stalled {
            let since = latest.map { String(format: "since %.1f s into the session", $0.seconds) } ?? "at all"
            sourceEvent(.interrupted(ReelError(.sourceUnavailable,
                                               "delivered nothing \(since); the \(seconds) s to record passed on the clock, so the recording ended with what came",
                                               hint: "check the source (a camera that stalls, a stream that went quiet)")),
                        from: id)
        }
        stopAudioWaiting()
        queue.close()
    }
}
