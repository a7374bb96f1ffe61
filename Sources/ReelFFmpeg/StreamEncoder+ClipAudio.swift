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
            if let ended = audioEndedAt[track], ended >= time - Self.halfSample(audio[track]) { continue }
            if let given = audioGivenUntil[track], given >= time - Self.halfSample(audio[track]) {
                try endAudioEncoder(track, at: time)
            } else {
                audioEnds[track] = time
            }
        }
    }

    /// Gives `buffer` to track `track`'s encoder, finishing it where a clip ends within it or
    /// before it.
    func give(_ buffer: AudioBuffer, track: Int) throws {
        guard let end = audioEnds[track] else { return try feed(buffer, track: track) }
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
        if audioCarriesOn[track] {
            let finished = audio[track]
            let lead = trackLead.convertedValue(to: Int32(finished.settings.sampleRate), rounding: .nearest)
            let next = try finished.successor(leadingSilence: max(0, lead - finished.priming))
            audioOverlapEnd[track] = finished.nextSampleTime
            audio[track] = next
            audioCarriesOn[track] = false
        }
        try audio[track].send(buffer)
        audioGivenUntil[track] = buffer.endTime
        try drainAudio(track)
    }

    /// Finishes track `track`'s encoder: all its sound goes out, and the clip files learn that
    /// the track's sound before `time` is complete.
    private func endAudioEncoder(_ track: Int, at time: MediaTime) throws {
        audioEnds[track] = nil
        guard !audioCarriesOn[track] else { return }
        audioEndedAt[track] = time
        let encoder = audio[track]
        try encoder.finish()
        try drainAudio(track)
        audioCarriesOn[track] = true
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
