import Foundation
import ReelCore

extension MovieFileSink {
    /// Drains `encoder` (whose first sink this file is) into its sinks and finalises the file:
    /// what the file then holds. Whatever stops the finalising (a folder made read-only, a
    /// failing disk), the complete fragments are on the disk, and the error says so and how
    /// to finish them; a full disk's says how to recover.
    package func finishRecording(drainingInto encoder: StreamEncoder) throws -> AssetWriter.Summary {
        do {
            try advisingRecoveryWhenFull { try encoder.finish() }
        } catch var error as ReelError where error.code != .insufficientStorage && error.code != .nothingRecorded {
            // Said once: a hint that says how to finalise the file already (advisingRecoveryWhenFull's) is not repeated.
            if configuration.container.isISOBaseMedia || configuration.container == .mkv, Recovery.isCutOff(url),
               error.hint?.contains(LibraryHint.finalise(url.path)) != true {
                let kept = "what was recorded is kept in \(url.path); \(LibraryHint.finalise(url.path))"
                error.hint = error.hint.map { "\($0); \(kept)" } ?? kept
            }
            throw error
        }
        guard let done = finished else { throw ReelError(.encodingFailed, "\(url.path) was not finished") }
        return summary(of: done, encoder: encoder)
    }

    /// What `done` holds, with the audio `encoder` encoded: all of it unless the size limit
    /// refused the last packets.
    package func summary(of done: Finished, encoder: StreamEncoder) -> AssetWriter.Summary {
        var duration = MediaTime.zero
        if let rate = configuration.video?.settings.frameRate, done.videoEnd > 0 { duration = rate.time(ofFrame: done.videoEnd) }
        var samples: [Int64] = []
        for (i, a) in encoder.audio.enumerated() where i < done.audioEnds.count {
            let written = isFull ? min(a.encodedSampleCount, max(0, done.audioEnds[i])) : a.encodedSampleCount
            samples.append(written)
            duration = max(duration, MediaTime(value: written, timescale: Int32(a.settings.sampleRate)))
        }
        return AssetWriter.Summary(url: done.url, duration: duration, videoFrames: done.videoFrames, audioSamples: samples,
                                   bytes: done.bytes, finalisation: done.finalisation)
    }
}
