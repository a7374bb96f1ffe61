import ReelCore

/// What came of asking an encoder to change its preset within a stream.
package enum PresetChangeOutcome: Sendable, Hashable {
    /// The next frame is encoded at the new preset.
    case changed
    /// Not now (the encoder has given no packet yet, so its header is not known); ask again later.
    case deferred
    /// Not at all, and why: the stream goes on at its preset.
    case refused(String)
}

extension StreamEncoder {
    /// The preset the video is being encoded at now; `nil` without a video track.
    package var videoPreset: String? { video?.settings.effectivePreset }

    /// Goes on encoding the video at `preset` from the next frame, in the same stream: a new
    /// encoder, whose header was checked to be byte-identical, starts with an IDR picture, and
    /// the encoder so far is flushed on a thread of its own (the recorder does not wait for its
    /// lookahead). Every sink sees one stream: all of the old encoder's packets, then the new
    /// one's (held back until the flush has ended), decoding times rising throughout (the
    /// B-frame delay, pinned, stays the same).
    ///
    /// - Returns: `.deferred` while the previous change's flush is still running, as before
    ///   the first packet.
    /// - Throws: what writing the packets out so far throws, and what an earlier change's flush
    ///   threw (else that surfaces at the next frame, or at ``finish()``).
    package func changeVideoPreset(to preset: String) throws -> PresetChangeOutcome {
        guard let video else { return .refused("there is no video track") }
        guard video.changesPresetInStream else {
            return .refused("\(VideoEncoder.encoderNames(for: video.settings.codec).first ?? video.settings.codec.rawValue) cannot change its speed within a stream: not adapted")
        }
        guard sawFirstVideoPacket else { return .deferred }
        // One flush at a time: a second would hold the new encoder's packets behind two, and the
        // old one's lookahead still takes the machine's time. Asked again at a later frame.
        try writeFlushedVideo(waiting: false)
        guard videoFlush == nil else { return .deferred }
        guard let pinned = pinnedVideoHeader else {
            return .refused("libx264 did not describe its options in the stream (no SEI): the header cannot be pinned, not adapted")
        }
        let next: VideoEncoder
        do {
            // Opened and checked before the old one is touched: a refusal changes nothing.
            next = try video.replacement(preset: preset, pinned: pinned)
        } catch let error as ReelError {
            return .refused(error.message)
        }
        // What the old encoder gave is written; the rest comes from the flush's thread, which
        // from now on alone holds the old encoder.
        try drainVideo()
        self.video = next
        videoFlush = VideoEncoderFlush(video, beforeFlush: beforeVideoFlush)
        return .changed
    }

    /// Waits for the flush of an earlier change, if one runs, and writes what it gave (tests:
    /// the next ``changeVideoPreset(to:)`` is then not deferred for it, however slow the machine).
    package func waitForVideoFlush() throws {
        try writeFlushedVideo(waiting: true)
    }
}
