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
        // Named, and noted among the shortfalls at the session time it happened.
        let name = state.withLock { s in
            let name = s.sourceNames[source] ?? "source \(source)"
            s.shortfalls.note(event, from: source, name: name, at: s.clock.map { $0.now() - s.origin } ?? .zero)
            return name
        }
        switch event {
        case .droppedFrames:
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
