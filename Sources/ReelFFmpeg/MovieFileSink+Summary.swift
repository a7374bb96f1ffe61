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
        } catch let error as ReelError where error.code == .insufficientStorage {
            throw finaliseWhatTheFullDiskKept(error)
        } catch var error as ReelError where error.code != .nothingRecorded {
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

    /// The disk filled as the recording stopped: its last part could not be written. What
    /// reached the disk (its complete fragments, and the whole samples of one cut short) is
    /// finalised in place as a recovery does, which needs no room (the index goes into the
    /// space reserved for it), so the file plays as a regular one; the error says what it
    /// keeps and what was lost. (It failed with the advice to recover the file, which the
    /// stop could do itself.) An MKV plays as it is; anything else is left to the advice.
    private func finaliseWhatTheFullDiskKept(_ error: ReelError) -> ReelError {
        guard configuration.container.isISOBaseMedia, configuration.fragmentInterval != nil else { return error }
        let recorded = recordedDuration
        // Closed with what reached the disk; the recovery takes a lock of its own.
        abandon()
        guard Recovery.isCutOff(url), let kept = try? Recovery.recover(url) else { return error }
        let lost = max(0, recorded.seconds - kept.duration.seconds)
        let frames = configuration.video == nil ? "" : ", \(kept.videoFrames) frames"
        return ReelError(.insufficientStorage,
                         "the disk filled as \(url.path) was finished: it keeps the first \(String(format: "%.2f", kept.duration.seconds)) s"
                            + "\(frames) and plays; the last \(String(format: "%.2f", lost)) s recorded could not be written",
                         hint: "free some disk space or record to another disk", errno: error.errno)
    }

    /// How long the media handed to the file lasts: its video frames, or its longest audio track.
    private var recordedDuration: MediaTime {
        var duration = MediaTime.zero
        if let rate = configuration.video?.settings.frameRate, videoEndIndex > 0 { duration = rate.time(ofFrame: videoEndIndex) }
        for (track, end) in zip(configuration.audio, audioMuxedEnd) {
            duration = max(duration, MediaTime(value: end, timescale: Int32(track.settings.sampleRate)))
        }
        return duration
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

extension MovieFileSink {
    /// The bytes the file holds on the disk so far (handed to the system): a free-space check
    /// counts what reached the disk since it read the free space.
    package var bytesOnDisk: Int64 { muxer.bytesOnDisk }

    /// Runs `body`, adding to a full disk's error how to get the recording back: the file keeps
    /// what was completely written (for MP4/MOV the complete fragments), which recovering it
    /// finalises: an MP4/MOV on the full disk too, another file once there is space.
    package func advisingRecoveryWhenFull<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch var error as ReelError where error.code == .insufficientStorage {
            // A file that holds nothing yet (the disk filled before its first fragment, or a
            // replacement's hidden file that is gone) is nothing to recover.
            guard Recovery.isCutOff(url) else {
                error.hint = "the disk filled before anything was recorded; free some space and record again"
                throw error
            }
            error.hint = configuration.container.isISOBaseMedia
                ? "\(LibraryHint.finalise(url.path)) (which works on the full disk too)"
                : "free some disk space, then \(LibraryHint.finalise(url.path))"
            throw error
        } catch var error as ReelError where [.permissionDenied, .ioFailure].contains(error.code) && Recovery.isCutOff(url) {
            // The file cannot be written any more (made immutable, a failing disk): what
            // reached it is kept, and the user is told so rather than to choose another folder.
            error.hint = "\(url.path) keeps what was recorded up to then; \(LibraryHint.finalise(url.path))"
            throw error
        }
    }
}
