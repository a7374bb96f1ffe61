import Foundation
import ReelCore

/// One clip to merge.
public struct MergeInput: Sendable, Hashable {
    /// The clip's file. It is only read, never changed.
    public var url: URL
    /// Whether the clip's audio is replaced by silence. The clip keeps its place and length on
    /// the timeline; only what is heard changes.
    public var isMuted: Bool

    /// A clip at `url`, muted or not.
    public init(url: URL, isMuted: Bool = false) {
        self.url = url
        self.isMuted = isMuted
    }
}
