import ReelCore

extension AssetWriter {
    /// The preset the video is being encoded at now; `nil` without a video track.
    package var videoPreset: String? { encoder.videoPreset }

    /// Goes on encoding the video at `preset` from the next frame, in the same track (see
    /// ``StreamEncoder/changeVideoPreset(to:)``).
    package func changeVideoPreset(to preset: String) throws -> PresetChangeOutcome {
        try encoder.changeVideoPreset(to: preset)
    }
}
