import Foundation

/// What a recorder's sources reported that they did not record, gathered as their events come
/// (on their threads, under the recorder's lock) and made into ``RecordingSummary/shortfalls``
/// when the recording ends: every loss, interruption and incomplete part as it happened, and
/// each silence a source said and did not end (a part of what it records that never had
/// anything to record). A `resumed` ends every silence of its source: a source says again those
/// that go on.
struct SourceShortfalls: Sendable {
    /// A shortfall with the session time it happened at.
    private struct Noted: Sendable {
        var source: String
        var kind: SourceShortfall.Kind
        var error: ReelError
        var at: MediaTime
    }
    private var noted: [Noted] = []
    /// The silences said and not ended, by source and by what was said.
    private var silent: [SourceID: [String: Noted]] = [:]
    /// What the sources said of other programs' recordings they ended, in order: not a
    /// shortfall (``RecordingSummary/endedRecordings``).
    private(set) var ended: [String] = []
    /// The sources interrupted and not back (nor gone for good) since.
    private var interrupted = Set<SourceID>()

    /// Whether a source is interrupted now: said so, and neither back nor gone since.
    var anyInterrupted: Bool { !interrupted.isEmpty }

    /// Notes what `event` says about the source `id`, named `name`, at session time `at`.
    mutating func note(_ event: SourceEvent, from id: SourceID, name: String, at: MediaTime) {
        switch event {
        case .interrupted: interrupted.insert(id)
        case .resumed, .lost, .ended: interrupted.remove(id)
        default: break
        }
        switch event {
        case .lost(let error): noted.append(Noted(source: name, kind: .lost, error: error, at: at))
        case .interrupted(let error): noted.append(Noted(source: name, kind: .interrupted, error: error, at: at))
        case .incomplete(let error): noted.append(Noted(source: name, kind: .incomplete, error: error, at: at))
        case .droppedAudio(let start, let duration):
            // From where the sound is missing, not from when that was found out.
            noted.append(Noted(source: name, kind: .incomplete, error: SourceEvent.droppedAudioError(duration: duration), at: start))
        case .silent(let error):
            silent[id, default: [:]][error.message] = silent[id]?[error.message] ?? Noted(source: name, kind: .silent, error: error, at: at)
        case .resumed:
            silent[id] = nil
        case .endedAnotherRecording(let message):
            ended.append("\(name): \(message)")
        case .droppedFrames, .ended, .missedAudio:
            // Counted, as dropped frames are: the source is not incomplete for them.
            break
        }
    }

    /// The shortfalls in the order they happened, with the recorded time of each (`recorded`
    /// maps a session time to the recorded time before it); a silent source's from zero.
    func summary(recorded: (MediaTime) -> MediaTime) -> [SourceShortfall] {
        let silentToTheEnd = silent.values.flatMap(\.values).map { Noted(source: $0.source, kind: .silent, error: $0.error, at: .zero) }
        return (silentToTheEnd + noted.map { var n = $0; n.at = recorded(n.at); return n })
            .sorted { $0.at < $1.at }
            .map { SourceShortfall(source: $0.source, kind: $0.kind, error: $0.error, at: $0.at) }
    }
}
