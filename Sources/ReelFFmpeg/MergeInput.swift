import Foundation
import ReelCore

/// One clip to merge.
public struct MergeInput: Sendable, Hashable {
    /// The clip's file. It is only read, never changed.
    public var url: URL
    /// Whether the clip's audio is replaced by silence. The clip keeps its place and length on
    /// the timeline; only what is heard changes.
    public var isMuted: Bool
    /// Chapters to add at these times of the clip (from its start), beside those its file
    /// holds (which the merged file keeps too, each moved to where the clip begins in it).
    public var chapters: [Chapter]
    /// Whether a clip with the picture and no sound, where the first clip has sound, is joined
    /// with silence for its span (a recording's own clip cut by its size limit before its first
    /// sound was encoded). Otherwise such a clip is refused, as a file whose sound may have
    /// been lost to damage: a merge never drops a track without a word.
    public var soundMayBeMissing: Bool

    /// A clip at `url`, muted or not, with `chapters` besides its file's own; with
    /// `soundMayBeMissing`, joined with silence if it has no sound (see ``soundMayBeMissing``).
    public init(url: URL, isMuted: Bool = false, chapters: [Chapter] = [], soundMayBeMissing: Bool = false) {
        self.url = url
        self.isMuted = isMuted
        self.chapters = chapters
        self.soundMayBeMissing = soundMayBeMissing
    }
}
