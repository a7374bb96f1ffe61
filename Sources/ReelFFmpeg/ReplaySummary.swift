import Foundation
import ReelCore

/// What a ``ReplayBuffer`` saved.
public struct ReplaySummary: Sendable, Hashable {
    /// The file written.
    public var url: URL
    /// How long the saved file plays: its video's length (its audio's without video).
    public var duration: MediaTime
    /// Where the saved file starts on the recording's timeline (a keyframe).
    public var start: MediaTime
    /// The video frames saved.
    public var videoFrames: Int
    /// The audio packets saved, all tracks together.
    public var audioPackets: Int
    /// The size of the file.
    public var bytes: Int64
}
