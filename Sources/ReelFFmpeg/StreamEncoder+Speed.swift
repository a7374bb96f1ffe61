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

    /// Goes on encoding the video at `preset` from the next frame, in the same stream: the
    /// encoder so far is flushed (its packets reach every sink), and a new one, whose header
    /// was checked to be byte-identical, starts with an IDR picture. Every sink sees one
    /// stream whose decoding times keep rising (the B-frame delay, pinned, stays the same).
    ///
    /// - Throws: what flushing the encoder and writing its packets throw.
    package func changeVideoPreset(to preset: String) throws -> PresetChangeOutcome {
        guard let video else { return .refused("there is no video track") }
        guard video.changesPresetInStream else {
            return .refused("\(VideoEncoder.encoderNames(for: video.settings.codec).first ?? video.settings.codec.rawValue) cannot change its speed within a stream: not adapted")
        }
        let names = VideoCodec.presetNames
        if let current = names.firstIndex(of: video.settings.effectivePreset), let faster = names.firstIndex(of: "faster"),
           current > faster {
            // Its lookahead holds many frames (medium: 40): flushing it stalls the recording
            // for seconds, losing more than the step would save (seen at 1080p60: 2–3 s lost).
            return .refused("preset \(video.settings.effectivePreset) is slower than faster: flushing its lookahead would stall the recording; not adapted (record at faster or a quicker preset to adapt)")
        }
        guard sawFirstVideoPacket else { return .deferred }
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
        try video.finish()
        try drainVideo()
        self.video = next
        return .changed
    }
}
