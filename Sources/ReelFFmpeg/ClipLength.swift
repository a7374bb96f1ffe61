import Foundation
import ReelCore

/// Follows where a clip's streams end, to know the clip's length.
struct ClipLength {
    private var ends: [Int: MediaTime] = [:]
    private var longestPacket: [Int: MediaTime] = [:]
    /// Where each stream's last packet (the latest to begin) begins.
    private var lastStarts: [Int: MediaTime] = [:]

    /// Notes a packet of stream `index` from `start` (relative to the clip's zero) lasting `duration`.
    mutating func note(stream index: Int, start: MediaTime, duration: MediaTime) {
        let end = start + duration
        if let current = lastStarts[index] { if current < start { lastStarts[index] = start } } else { lastStarts[index] = start }
        if let current = ends[index] { if current < end { ends[index] = end } } else { ends[index] = end }
        if let current = longestPacket[index] { if current < duration { longestPacket[index] = duration } } else { longestPacket[index] = duration }
    }

    /// The clip's length: where its video ends. Audio ends with the video in Reel's clips (give
    /// or take the encoder's last, padded packet); a stream that goes on for longer than one of
    /// its packets makes the clip that long (files from elsewhere).
    ///
    /// `grid` is the video's frame duration when its time base cannot hold it exactly (Matroska's
    /// milliseconds): the video's end is then put on the frame grid, so that rounding does not
    /// add up from clip to clip.
    func length(video: Int?, grid: MediaTime? = nil) -> MediaTime {
        var length = video.flatMap { ends[$0] } ?? .zero
        if let grid, grid > .zero, video != nil {
            let frames = length.convertedValue(to: grid.timescale, rounding: .nearest) / max(grid.value, 1)
            let snapped = MediaTime(value: frames * grid.value, timescale: grid.timescale)
            // Never before the last frame's start: the next clip's first frame would fall on or
            // before it (a grid from an average frame rate once put it 37 ticks too early).
            let lastStart = video.flatMap { lastStarts[$0] } ?? .zero
            if (length - snapped).seconds.magnitude < grid.seconds / 4, snapped > lastStart { length = snapped }
        }
        for (index, end) in ends where index != video {
            let slack = video == nil ? .zero : (longestPacket[index] ?? .zero)
            if length + slack < end { length = end }
        }
        return length
    }
}
