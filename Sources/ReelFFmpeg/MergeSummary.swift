import Foundation
import ReelCore

/// What ``Merger/merge(_:to:options:progress:)`` wrote.
public struct MergeSummary: Sendable, Hashable {
    /// Where the merged file is.
    public var url: URL
    /// The length of the merged timeline: the sum of the clips' lengths.
    public var duration: MediaTime
    /// How many clips were joined.
    public var clipCount: Int
    /// The video frames in the merged file.
    public var videoFrames: Int64
    /// The positions in the input list (counted from zero) of the clips that were decoded and
    /// encoded again; empty when every packet was copied. When any clip needs re-encoding the
    /// whole merge is encoded again with the first clip's settings, so this lists every clip.
    public var reencodedClips: [Int]
    /// Why the clips were re-encoded (the first difference found), or `nil`.
    public var reencodingReason: String?
    /// The size of the merged file in bytes.
    public var bytes: Int64
    /// The clips whose index lists packets that they do not play, each file whole on the disk:
    /// merged with every packet they play, the others left out. (A clip recovered by an earlier
    /// `reel recover` after its disk filled listed its last sound packet past its end.) A clip
    /// whose bytes are missing is refused instead.
    public var packetsLeftOut: [PacketsLeftOut] = []
    /// The clips' markers (chapters) that begin at or after the merged file's end, left out
    /// of it: placed in a clip just before a kill, after what its recovery could keep.
    public var leftOutMarkers: [Chapter] = []

    /// Packets a clip's index lists that the clip does not play (see ``packetsLeftOut``).
    public struct PacketsLeftOut: Sendable, Hashable {
        /// The clip's position in the input list, counted from zero.
        public var clip: Int
        /// Its file's name.
        public var file: String
        /// The video packets left out.
        public var videoPackets: Int64 = 0
        /// The audio packets left out.
        public var audioPackets: Int64 = 0
    }
}
