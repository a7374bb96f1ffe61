import Foundation

/// Which video frames a finished recording holds and where they lie in its file: what a
/// ``FrameLog`` linked to the recorder writes into its `presentation_time` and `recorded`
/// columns.
package struct RecordedFrames: Sendable {
    /// A run of frames of the recorder's video source written to consecutive slots of the file.
    package struct Run: Sendable {
        package var sequence: Int64
        package var slot: Int64
        package var count: Int64
    }

    /// The source whose frames the recorder wrote (or the compositor's stream).
    let videoSource: SourceID?
    let frameRate: FrameRate
    let timeline: RecordingTimeline
    /// The recorded duration: nothing from here on is in the file.
    let end: MediaTime
    /// The frames of `videoSource` that were written, in order.
    let runs: [Run]

    /// What a recording of `videoSource`'s frames at `frameRate` holds: `runs` of its frames,
    /// on `timeline`, up to `end`.
    package init(videoSource: SourceID?, frameRate: FrameRate, timeline: RecordingTimeline, end: MediaTime, runs: [Run]) {
        self.videoSource = videoSource
        self.frameRate = frameRate
        self.timeline = timeline
        self.end = end
        self.runs = runs
    }

    /// Where the frame `sequence` of `source`, presented at `time` on the session timeline,
    /// lies in the file, or `nil` if the file does not hold it.
    ///
    /// For the recorder's own video source that is the frame's slot in the file, if it was
    /// written. For any other video source (a camera feeding a compositor) it is the first
    /// frame slot of the file at or after the frame's time: the first composed frame that can
    /// show it, if the recording holds that moment.
    package func fileTime(of sequence: Int64, source: SourceID, at time: MediaTime) -> MediaTime? {
        if source == videoSource {
            // The last run that starts at or before the frame.
            var low = 0, high = runs.count
            while low < high {
                let mid = (low + high) / 2
                if runs[mid].sequence <= sequence { low = mid + 1 } else { high = mid }
            }
            guard low > 0 else { return nil }
            let run = runs[low - 1]
            guard sequence < run.sequence + run.count else { return nil }
            return frameRate.time(ofFrame: run.slot + (sequence - run.sequence))
        }
        guard let recorded = timeline.recordedTime(for: time) else { return nil }
        // Times on the nanosecond clock lie up to a nanosecond past the slot they stand for.
        let slack = MediaTime(value: 1, timescale: 1_000_000)
        let slot = frameRate.time(ofFrame: frameRate.frameIndex(at: max(.zero, recorded - slack), rounding: .up))
        return slot < end ? slot : nil
    }
}
