import Foundation

/// One clip of a recording session: what was recorded between a start (or resume) and a pause
/// (or stop), in its own file.
public struct Clip: Sendable, Hashable {
    /// The clip's file.
    public var url: URL
    /// The clip's duration.
    public var duration: MediaTime
    /// Video frames in the clip.
    public var frameCount: Int64
    /// Whether the clip has audio.
    public var hasAudio: Bool
    /// Whether the clip's audio is replaced by silence when the session is merged.
    public var isMutedOnMerge: Bool
    /// The chapter markers put into the clip (times from its start): the merged file has them
    /// where the clip begins in it.
    public var chapters: [Chapter]
    /// The video frames lost while this clip was recorded, by why (frames lost at its resume,
    /// before its first frame, count to it). A recording's summary in clip mode adds up those
    /// of the clips it holds: a clip removed before the merge takes its drops with it.
    public var frameDrops: FrameDrops

    /// The video frames lost while this clip was recorded (``frameDrops`` in all).
    public var droppedFrames: Int64 { frameDrops.total }

    /// Creates a clip's description; each argument is the property of the same name.
    public init(url: URL, duration: MediaTime, frameCount: Int64, hasAudio: Bool, isMutedOnMerge: Bool = false,
                chapters: [Chapter] = [], frameDrops: FrameDrops = FrameDrops()) {
        self.url = url
        self.duration = duration
        self.frameCount = frameCount
        self.hasAudio = hasAudio
        self.isMutedOnMerge = isMutedOnMerge
        self.chapters = chapters
        self.frameDrops = frameDrops
    }
}
