import ReelCore
import ReelFFmpeg

/// What a recording in clip mode keeps count of as its clips are finished, for progress, the
/// size limit and the session: which clips are settled (finished, or discarded empty), where
/// the clips not settled yet begin on the recorded timeline, what the finished clips hold, and
/// the time of clips an undo removed that was handed back to the limit. A value the pipeline
/// keeps on the recorder's thread (the clip sink says a clip finished there too: the encoder
/// runs on it).
struct ClipAccounting {
    /// Where the clips not settled yet begin on the recorded timeline (the end of the last
    /// clip finished or discarded).
    private(set) var settledUpTo = MediaTime.zero
    /// The clips settled (by index) from ``firstUnsettled`` on; every clip before it is.
    private var settledClips = Set<Int>()
    private(set) var firstUnsettled = 0
    /// The media bytes of the finished clips, and their files' sizes.
    private(set) var finishedMedia: Int64 = 0
    private(set) var finishedBytes: Int64 = 0
    /// The media bytes of each finished clip, by file name: progress counts those of the clips
    /// kept (an undone clip takes its bytes with it).
    private var mediaOfClips: [String: Int64] = [:]
    /// What the finished clips add to the merged file at most (media and index).
    private(set) var finishedShare: Int64 = 0
    /// The recorded time of removed clips handed back to the machine's limit so far.
    private(set) var handedBack = MediaTime.zero
    /// Under a size limit: the clips so far leave no room for another.
    var sizeUsedUp = false

    /// Clip `clip` (an interval of `timeline`) is finished or discarded: the clips after it are
    /// the ones not settled. `recorded` is the recorded time now (the end of a clip still open).
    mutating func settle(_ clip: Int, timeline: RecordingTimeline, recorded: MediaTime) {
        settledClips.insert(clip)
        while settledClips.remove(firstUnsettled) != nil { firstUnsettled += 1 }
        guard timeline.intervals.indices.contains(clip) else { return }
        let interval = timeline.intervals[clip]
        settledUpTo = max(settledUpTo, interval.offset + (interval.duration ?? max(.zero, recorded - interval.offset)))
    }

    /// The clips before `end` (an interval index) that are not settled yet (looked at with
    /// every sample: no array is made).
    func unsettled(before end: Int) -> some Sequence<Int> {
        (firstUnsettled..<max(firstUnsettled, end)).lazy.filter { [settledClips] in !settledClips.contains($0) }
    }

    /// Counts what a finished clip's file holds.
    mutating func add(_ done: MovieFileSink.Finished) {
        finishedMedia += done.mediaBytes
        finishedBytes += done.bytes
        mediaOfClips[done.url.lastPathComponent] = done.mediaBytes
        finishedShare += done.mediaBytes + 48 * done.packets
    }

    /// The media bytes of `clips` (those the session keeps) among the finished ones.
    func media(of clips: [Clip]) -> Int64 {
        clips.reduce(0) { $0 + (mediaOfClips[$1.url.lastPathComponent] ?? 0) }
    }

    /// The time of the clips removed by now (`removed`, the session's count) not handed back to
    /// the limit yet; `nil` when there is none.
    mutating func handBack(removedSoFar removed: MediaTime) -> MediaTime? {
        guard removed > handedBack else { return nil }
        defer { handedBack = removed }
        return removed - handedBack
    }
}
