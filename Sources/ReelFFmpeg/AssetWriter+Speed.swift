import ReelCore

extension AssetWriter {
    /// The preset the video is being encoded at now; `nil` without a video track or before
    /// writing has started.
    package var videoPreset: String? { encoder?.videoPreset }

    /// Goes on encoding the video at `preset` from the next frame, in the same track (see
    /// ``StreamEncoder/changeVideoPreset(to:)``).
    ///
    /// - Throws: `.notRunning` before writing has started; what the encoder throws.
    package func changeVideoPreset(to preset: String) throws -> PresetChangeOutcome {
        guard let encoder else { throw ReelError(.notRunning, "the writer has not started writing", hint: "call startWriting() first") }
        return try encoder.changeVideoPreset(to: preset)
    }
}
