import Foundation
import ReelFFmpeg

/// What the sources say: named, noted among the shortfalls, and said as recording events.
extension Recorder {
    public func sourceEvent(_ event: SourceEvent, from source: SourceID) {
        // Counted as gaps between the frames written; why, noted for those gaps.
        if case .droppedFrames(let count, let reason) = event {
            noteSourceDrops(count, reason, from: source)
            return
        }
        // Counted as dropped audio and said now and then, as dropped frames are: no shortfall.
        if case .missedAudio(let start, let duration) = event {
            noteMissingAudio(from: source, start: start, end: start + duration)
            let due = state.withLock { s -> (String, MediaTime)? in
                let now = s.clock.map { $0.now() - s.origin } ?? start
                return s.audioMisses.missed(duration, by: source, at: now).map { (s.sourceNames[source] ?? "source \(source)", $0) }
            }
            if let (name, said) = due { continuation.yield(.audioMissed(name: name, duration: said)) }
            return
        }
        // Named, and noted among the shortfalls at the session time it happened.
        let name = state.withLock { s in
            let name = s.sourceNames[source] ?? "source \(source)"
            s.shortfalls.note(event, from: source, name: name, at: s.clock.map { $0.now() - s.origin } ?? .zero)
            return name
        }
        switch event {
        case .droppedFrames, .missedAudio:
            break
        case .lost(let error):
            continuation.yield(.sourceLost(name: name, error: error))
            markGone(source)
        case .interrupted(let error):
            continuation.yield(.sourceInterrupted(name: name, error: error))
        case .resumed:
            continuation.yield(.sourceResumed(name: name))
            state.withLock { $0.machine.sourceResumed(source) }
        case .ended:
            markGone(source)
        case .silent(let error):
            continuation.yield(.sourceSilent(name: name, error: error))
        case .incomplete(let error):
            continuation.yield(.sourceIncomplete(name: name, error: error))
        case .droppedAudio(let start, let duration):
            noteMissingAudio(from: source, start: start, end: start + duration)
            continuation.yield(.sourceIncomplete(name: name, error: SourceEvent.droppedAudioError(duration: duration)))
        case .endedAnotherRecording(let message):
            continuation.yield(.anotherRecordingEnded(name: name, message: message))
        }
    }

    /// Notes a source gone for good; once every source is, the recording ends cleanly with
    /// what it has (``RecordingEnding/sourcesGone``).
    func markGone(_ source: SourceID) {
        let (action, queue) = state.withLock { s in
            let action = s.machine.sourceGone(source)
            if action.videoSourceGone { pendingControls.add(1, ordering: .releasing) }
            return (action, s.queue)
        }
        if action.videoSourceGone { stopAudioWaiting() }
        if action.endRecording { queue?.close() }
    }
}

extension Recorder {
    /// What says that one of the ``sinks`` the recording does not depend on was dropped: a
    /// live stream says so in its own events, so only other sinks are named here.
    static func sinkDropped(_ sink: any PacketSink, error: (any Error)?) -> RecordingEvent? {
        guard !(sink is LiveStream) else { return nil }
        let name = (sink as? CustomStringConvertible)?.description ?? String(describing: type(of: sink))
        return .sinkDropped(name: name, error: error.map { $0 as? ReelError ?? ReelError(.ioFailure, "\($0)") })
    }
}

/// When sound a source's capture missed on a busy machine is said while recording
/// (``RecordingEvent/audioMissed(name:duration:)``): at once the first time, then not again for
/// ``interval`` of session time for that source, what it missed meanwhile said with the next.
struct AudioMissNotices: Sendable {
    /// The session time between two notices of one source.
    static let interval = MediaTime(value: 10, timescale: 1)

    private var lastSaid: [SourceID: MediaTime] = [:]
    private var unsaid: [SourceID: MediaTime] = [:]

    /// Notes that `source` missed `duration` of sound, found at session time `now`: what to
    /// say now (all it missed since it was last said), or `nil` if it was said too recently.
    mutating func missed(_ duration: MediaTime, by source: SourceID, at now: MediaTime) -> MediaTime? {
        let total = unsaid[source, default: .zero] + duration
        if let last = lastSaid[source], now - last < Self.interval {
            unsaid[source] = total
            return nil
        }
        lastSaid[source] = now
        unsaid[source] = nil
        return total
    }
}
