import ReelCore

/// A sink that keeps each clip's sound whole (clip files): told when an audio track's encoder
/// was finished at a clip's end, and given the priming of the encoder that carries the track on,
/// which overlaps the finished one's last packet and which sinks of one continuous track (a live
/// stream, a replay buffer) do not take.
package protocol ClipAudioSink: PacketSink {
    /// Every packet of audio stream `stream` before recorded time `time` has been given: the
    /// clips that begin before it have all their sound.
    func audioEnded(_ stream: EncodedStream, at time: MediaTime) throws
}

/// One audio track's state in clip mode.
struct ClipAudioTrack {
    /// Where the track's encoder is to be finished (a clip ends there), until it is.
    var end: MediaTime?
    /// The encoder was finished: the next sound goes to a new one carrying the track on.
    var carriesOn = false
    /// The time (in samples) before which the new encoder's packets go to clip files only.
    var overlapEnd: Int64?
    /// The end of the sound given so far, and where the last encoder was finished.
    var givenUntil: MediaTime?
    var endedAt: MediaTime?
}

/// Clip mode's sound. The video encoder runs through a pause (its lookahead given out by
/// repeats of the last picture), but an audio encoder holds up to two frames of sound (AAC's
/// 1024 samples of delay and a part frame) that only more sound pushes out, and none comes in a
/// pause: the clip would end only at the resume. So each track's encoder is finished where the
/// clip ends, its last packets going into the clip, and a new one of the same settings carries
/// the track on from there, with its own priming before the next clip's zero (as a clip file
/// opened by an encoder of its own had). Opening an audio encoder costs well under a
/// millisecond.
extension StreamEncoder {
    /// Each audio track's encoder is finished once its sound reaches recorded time `time` (the
    /// end of a clip: at once, if it has), and the sound after `time` goes to a new encoder.
    package func endClipAudio(at time: MediaTime) throws {
        for track in audio.indices {
            // Said twice for one end (its clip's sound came before the video reached it).
            if let ended = clipAudio[track].endedAt, ended >= time - Self.halfSample(audio[track]) { continue }
            if let given = clipAudio[track].givenUntil, given >= time - Self.halfSample(audio[track]) {
                try endAudioEncoder(track, at: time)
            } else {
                clipAudio[track].end = time
            }
        }
    }

    /// Gives `buffer` to track `track`'s encoder, finishing it where a clip ends within it or
    /// before it.
    func give(_ buffer: AudioBuffer, track: Int) throws {
        guard let end = clipAudio[track].end else { return try feed(buffer, track: track) }
        let before = Int((end - buffer.presentationTime).convertedValue(to: Int32(buffer.format.sampleRate), rounding: .nearest))
        if before <= 0 {
            try endAudioEncoder(track, at: end)
            try feed(buffer, track: track)
        } else if before < buffer.frameCount {
            try feed(buffer.slice(frames: 0..<before), track: track)
            try endAudioEncoder(track, at: end)
            try feed(buffer.slice(frames: before..<buffer.frameCount), track: track)
        } else {
            try feed(buffer, track: track)
            if before == buffer.frameCount { try endAudioEncoder(track, at: end) }
        }
    }

    /// Sends `buffer` to the track's encoder (a new one if the last was finished) and gives out
    /// what it made.
    private func feed(_ buffer: AudioBuffer, track: Int) throws {
        if clipAudio[track].carriesOn {
            let finished = audio[track]
            let lead = trackLead.convertedValue(to: Int32(finished.settings.sampleRate), rounding: .nearest)
            let next = try finished.successor(leadingSilence: max(0, lead - finished.priming))
            clipAudio[track].overlapEnd = finished.nextSampleTime
            audio[track] = next
            clipAudio[track].carriesOn = false
        }
        try audio[track].send(buffer)
        clipAudio[track].givenUntil = buffer.endTime
        try drainAudio(track)
    }

    /// Finishes track `track`'s encoder: all its sound goes out, and the clip files learn that
    /// the track's sound before `time` is complete.
    private func endAudioEncoder(_ track: Int, at time: MediaTime) throws {
        clipAudio[track].end = nil
        guard !clipAudio[track].carriesOn else { return }
        clipAudio[track].endedAt = time
        let encoder = audio[track]
        try encoder.finish()
        try drainAudio(track)
        clipAudio[track].carriesOn = true
        let stream = try encoder.stream
        for attached in sinks where attached.open {
            if let clips = attached.sink as? any ClipAudioSink { try clips.audioEnded(stream, at: time) }
        }
    }

    /// Half a sample of `encoder`'s rate: times within it are the same sample.
    private static func halfSample(_ encoder: AudioEncoder) -> MediaTime {
        MediaTime(value: 1, timescale: Int32(encoder.settings.sampleRate * 2))
    }
}
