import Foundation
import ReelFFmpeg

/// What the outputs hear of one audio input: its sound moved on the timeline by its offset,
/// then through its filters (see ``CaptureConnection/audioOffset`` and
/// ``CaptureConnection/audioFilters``). Runs on the source's thread.
final class AudioStage: @unchecked Sendable {
    private let offset: MediaTime
    private let filters: [AudioFilter]
    private var graph: AudioFilterGraph?
    /// Set once the filters failed: the sound goes on unfiltered, reported once.
    private var failed = false
    private let failure: @Sendable (ReelError) -> Void

    /// A stage, or `nil` when `offset` and `filters` leave the sound as it is.
    init?(offset: MediaTime, filters: [AudioFilter], failure: @escaping @Sendable (ReelError) -> Void) {
        guard offset != .zero || !filters.isEmpty else { return nil }
        self.offset = offset
        self.filters = filters
        self.failure = failure
    }

    /// The sound the outputs get for `buffer`: none while a filter holds it back, several
    /// pieces when it gives out what it held.
    func apply(_ buffer: AudioBuffer) -> [AudioBuffer] {
        var moved = buffer
        moved.presentationTime = buffer.presentationTime + offset
        guard !filters.isEmpty, !failed else { return [moved] }
        do {
            if graph?.format != moved.format { graph = try AudioFilterGraph(filters: filters, format: moved.format) }
            return try graph?.process(moved) ?? [moved]
        } catch {
            failed = true
            graph = nil
            failure(error as? ReelError ?? ReelError(.encodingFailed, "\(error)"))
            return [moved]
        }
    }
}
