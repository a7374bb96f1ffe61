import Foundation
import ReelFFmpeg

/// What the outputs hear of one audio input: its sound moved on the timeline by its offset,
/// then through its filters (see ``CaptureConnection/audioOffset`` and
/// ``CaptureConnection/audioFilters``). Runs on the source's thread; ``drain()`` gives out what
/// the filters hold back, from another thread once the source has stopped or while it runs
/// (the stage's lock keeps the pieces in order).
final class AudioStage: @unchecked Sendable {
    private let offset: MediaTime
    private let filters: [AudioFilter]
    private let lock = NSLock()
    private var graph: AudioFilterGraph?
    /// Set once the filters failed: no sound leaves the stage from then on (none unfiltered),
    /// and that is reported once.
    private var failed = false
    private let failure: @Sendable (ReelError) -> Void
    /// Hands the stage's sound to the outputs (under the stage's lock, so in time order).
    private let deliver: @Sendable (AudioBuffer) -> Void

    /// A stage, or `nil` when `offset` and `filters` leave the sound as it is.
    init?(offset: MediaTime, filters: [AudioFilter], failure: @escaping @Sendable (ReelError) -> Void,
          deliver: @escaping @Sendable (AudioBuffer) -> Void) {
        guard offset != .zero || !filters.isEmpty else { return nil }
        self.offset = offset
        self.filters = filters
        self.failure = failure
        self.deliver = deliver
    }

    /// Gives the outputs the sound for `buffer`: none while a filter holds it back, several
    /// pieces when it gives out what it held, and none once the filters failed (the source's
    /// sound ends there, as a lost source's does).
    func apply(_ buffer: AudioBuffer) {
        var moved = buffer
        moved.presentationTime = buffer.presentationTime + offset
        lock.lock()
        defer { lock.unlock() }
        guard !filters.isEmpty else { return deliver(moved) }
        guard !failed else { return }
        do {
            if graph?.format != moved.format { graph = try AudioFilterGraph(filters: filters, format: moved.format) }
            for piece in try graph?.process(moved) ?? [moved] { deliver(piece) }
        } catch {
            fail(error)
        }
    }

    /// Gives the outputs every sample the filters still hold (a filter that looks ahead holds
    /// seconds), with its time: at the end of the input's sound (the session stops) or where a
    /// recording must have all its sound now (its limit). Sound that comes after goes through
    /// a new graph.
    func drain() {
        lock.lock()
        defer { lock.unlock() }
        guard let spent = graph else { return }
        graph = nil
        do {
            for piece in try spent.drain() { deliver(piece) }
        } catch {
            fail(error)
        }
    }

    private func fail(_ error: any Error) {
        failed = true
        graph = nil
        failure(error as? ReelError ?? ReelError(.encodingFailed, "\(error)"))
    }
}

/// An output that may need its inputs' sound up to now before the session stops (a recorder
/// at its duration limit, waiting for sound a filter holds back to look ahead): the session
/// hands it, before it prepares, a way to have every input it hears drain its audio filters.
protocol HeldSoundOutput: AnyObject, Sendable {
    /// Keeps `drain`, which gives the output at once the sound its inputs' filters hold.
    func setHeldSoundDrain(_ drain: @escaping @Sendable () -> Void)
    /// Keeps how much later than the pictures its inputs' sound is moved at most (the largest
    /// positive ``CaptureConnection/audioOffset`` of those it hears; zero for none): sound that
    /// far ahead waits for the pictures, and a stop leaves out what lies past the last one.
    func setSoundLead(_ lead: MediaTime)
}
