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

    /// A clip at `url`, muted or not, with `chapters` besides its file's own.
    public init(url: URL, isMuted: Bool = false, chapters: [Chapter] = []) {
        self.url = url
        self.isMuted = isMuted
        self.chapters = chapters
    }
}
