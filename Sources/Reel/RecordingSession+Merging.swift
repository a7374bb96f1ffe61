import Foundation
import ReelCore
import ReelFFmpeg

/// Joining a session's clips into one file.
extension RecordingSession {
    /// Joins the clips into `url`: by copying packets when their streams match, by
    /// re-encoding the mismatching ones if `allowsReencoding`, else refusing with
    /// `.incompatibleClips`. The clips stay on disk. `progress` hears how far the merge has
    /// come (see ``Merger/merge(_:to:options:progress:)``); without it, the session's own
    /// listener does (a recorder's, which reports a merge at its stop as events).
    @discardableResult
    public func merge(to url: URL, allowsReencoding: Bool = false, overwrite: Bool = false,
                      progress: (@Sendable (WorkProgress) -> Void)? = nil) throws -> MergeSummary {
        let clips = self.clips
        guard !clips.isEmpty else { throw ReelError(.nothingRecorded, "the session has no clips to merge") }
        return try Merger.merge(clips.map { MergeInput(url: $0.url, isMuted: $0.isMutedOnMerge, chapters: $0.chapters, soundMayBeMissing: true) }, to: url,
                                options: MergeOptions(allowsReencoding: allowsReencoding, overwrite: overwrite),
                                progress: progress ?? mergeProgress.withLock { $0 })
    }

    /// Who hears a merge's progress when ``merge(to:allowsReencoding:overwrite:progress:)``
    /// is given no listener of its own: the recorder that owns the session.
    package func setMergeProgressHandler(_ handler: (@Sendable (WorkProgress) -> Void)?) {
        mergeProgress.withLock { $0 = handler }
    }
}
