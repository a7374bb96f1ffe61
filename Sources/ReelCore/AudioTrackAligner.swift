/// Lays the audio buffers of one source onto a track's timeline as one contiguous run of
/// samples, as an encoder needs it.
///
/// Audio time is derived from sample counts; buffers carry presentation times on the session
/// clock. When a buffer starts later than the samples so far reach (a gap: the source paused or
/// lost data), the gap is filled with silence; when it starts earlier (an overlap or drift the
/// other way), the overlapping samples are dropped. Differences within `tolerance` are taken
/// as jitter and ignored, so the run stays contiguous. The result: every sample sits within
/// `tolerance` of its true time, and the track never drifts from the video.
package struct AudioTrackAligner: Sendable {
    /// The format of the audio.
    package let format: AudioFormat
    /// The largest difference between a buffer's time and the samples so far that is ignored.
    package let tolerance: MediaTime
    /// Samples laid down so far: the next sample's index on the track's timeline.
    package private(set) var nextSample: Int64 = 0
    /// Silent samples inserted for gaps so far.
    package private(set) var insertedSilence: Int64 = 0
    /// Samples dropped for overlaps so far.
    package private(set) var droppedSamples: Int64 = 0

    package init(format: AudioFormat, tolerance: MediaTime = MediaTime(value: 20, timescale: 1000)) {
        self.format = format
        self.tolerance = tolerance
    }

    /// The time the next sample will have.
    package var nextTime: MediaTime { MediaTime(value: nextSample, timescale: Int32(format.sampleRate)) }

    /// Places `buffer`, whose presentation time is already relative to the track's zero, and
    /// returns the buffers to encode: silence for a gap followed by the part of `buffer` that
    /// does not overlap what came before. At most `limit` samples in all are laid down (a
    /// maximum recorded duration), if given.
    /// Throws `invalidConfiguration` for a buffer in another format than the track's (a source
    /// whose audio changed format mid-recording).
    package mutating func place(_ buffer: AudioBuffer, limit: Int64? = nil) throws -> [AudioBuffer] {
        guard buffer.format == format else {
            throw ReelError(.invalidConfiguration, "a source's audio changed from \(format) to \(buffer.format) during the recording",
                            hint: "a source must deliver audio in the format it was prepared with")
        }
        let rate = Int32(format.sampleRate)
        let start = buffer.presentationTime.convertedValue(to: rate, rounding: .nearest)
        // The first buffer is placed exactly; later ones within the tolerance are taken as jitter.
        let toleranceSamples = nextSample > 0 ? tolerance.convertedValue(to: rate) : 0
        var output: [AudioBuffer] = []
        var skip = 0
        let difference = start - nextSample
        if difference > toleranceSamples {
            var gap = Int(difference)
            if let limit { gap = Int(min(Int64(gap), max(0, limit - nextSample))) }
            if gap > 0 {
                output.append(.silence(format: format, frameCount: gap, at: nextTime))
                nextSample += Int64(gap)
                insertedSilence += Int64(gap)
            }
        } else if difference < -toleranceSamples {
            skip = Int(min(Int64(buffer.frameCount), -difference))
            droppedSamples += Int64(skip)
        }
        var end = buffer.frameCount
        if let limit { end = min(end, skip + Int(max(0, limit - nextSample))) }
        if end > skip {
            var piece = (skip == 0 && end == buffer.frameCount) ? buffer : buffer.slice(frames: skip..<end)
            piece.presentationTime = nextTime
            output.append(piece)
            nextSample += Int64(end - skip)
        }
        return output
    }
}
