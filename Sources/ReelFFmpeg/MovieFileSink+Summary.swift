import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

extension MovieFileSink {
    /// Drains `encoder` (whose first sink this file is) into its sinks and finalises the file:
    /// what the file then holds. Whatever stops the finalising (a folder made read-only, a
    /// failing disk), the complete fragments are on the disk, and the error says so and how
    /// to finish them; a full disk's says how to recover.
    package func finishRecording(drainingInto encoder: StreamEncoder) throws -> AssetWriter.Summary {
        do {
            try advisingRecoveryWhenFull(stopping: true, encoder: encoder) { try encoder.finish() }
        } catch let error as ReelError where error.code == .insufficientStorage {
            throw error
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

    /// The disk filled while recording or as the recording stopped (`stopping`): its last part
    /// could not be written. What reached the disk (an MP4/MOV's complete fragments and the
    /// whole samples of one cut short, a sound file's whole frames or pages, an MKV's complete
    /// clusters) is finalised in place as a recovery does, which needs no room (an MP4's index
    /// goes into the space reserved for it, a sound file's header is patched, an MKV gets its
    /// size and duration, without cues: see ``MatroskaInPlaceEnd``), so the file plays as a
    /// regular one; the error says what it keeps and what was lost, the pictures' and the
    /// sound's apart when they differ, and ``keptByFullDisk`` says it to the recorder. (A WAV,
    /// Ogg, MKV or WebM was left with the advice to free space and recover it, the WAV ending
    /// mid-sample.) `nil` for what cannot be finalised so (a GIF, a file not cut off).
    private func finaliseWhatTheFullDiskKept(_ error: ReelError, stopping: Bool) -> ReelError? {
        let container = configuration.container
        let fragmented = container.isISOBaseMedia && configuration.fragmentInterval != nil
        let matroska = container == .mkv || container == .webm
        guard fragmented || matroska || [.wav, .flac, .ogg, .opus].contains(container) else { return nil }
        let videoRecorded = configuration.video.flatMap { video in videoEndIndex > 0 ? video.settings.frameRate.time(ofFrame: videoEndIndex) : nil }
        let soundRecorded = zip(configuration.audio, audioMuxedEnd).map { MediaTime(value: $1, timescale: Int32($0.settings.sampleRate)) }.max()
        // Closed with what reached the disk, its lock kept: ended in place through it, each
        // change a step of the file's gate as at a stop (see ``FinaliseGate``), so that an
        // abort meanwhile finds the file open and waits for the step under way (it ran beside
        // the ending, and an abort before the ending stopped nothing).
        abandon(keepingLock: true)
        defer { lock?.release() }
        // In place, as the recording it is: a GIF recording's intermediate is not made into the
        // GIF on the disk that just filled. An MKV is not copied first, as a recovery tries:
        // the disk just filled.
        guard Recovery.isCutOff(url),
              let kept = try? (matroska ? Recovery.endMatroskaWithoutRoom(url, held: lock) : Recovery.finaliseInPlace(url, held: lock)) else {
            return nil
        }
        let tracks = fragmented ? Self.trackLengths(url) : Self.packetEnds(url)
        func lost(_ recorded: MediaTime?, _ kept: MediaTime?) -> Double? {
            recorded.map { max(0, $0.seconds - (kept ?? .zero).seconds) }
        }
        let pictures = lost(videoRecorded, tracks.video), sound = lost(soundRecorded, tracks.audio)
        let seconds = { (x: Double) in String(format: "%.2f", x) }
        let what: String
        var lostSomething = true
        if let pictures, let sound, seconds(pictures) != seconds(sound) {
            // The sound's lost end and the pictures' apart: one may have reached the disk whole.
            what = seconds(pictures) == seconds(0) ? "every picture was written, but the last \(seconds(sound)) s of the sound could not be written"
                : seconds(sound) == seconds(0) ? "the last \(seconds(pictures)) s of the pictures could not be written (all the sound was)"
                : "the last \(seconds(pictures)) s of the pictures and \(seconds(sound)) s of the sound recorded could not be written"
        } else {
            let recorded = max(videoRecorded ?? .zero, soundRecorded ?? .zero)
            let lost = seconds(max(0, recorded.seconds - kept.duration.seconds))
            // Said only when something was (the room of the index reservation took the rest).
            lostSomething = lost != seconds(0)
            what = lostSomething ? "the last \(lost) s recorded could not be written" : "nothing recorded was lost"
        }
        let frameCount = kept.videoFrames == 1 ? "1 frame" : "\(kept.videoFrames) frames"
        let keeps: String
        if configuration.video != nil, let keptPictures = tracks.video, let keptSound = tracks.audio,
           abs(keptPictures.seconds - keptSound.seconds) > 0.05 {
            // Its pictures and its sound end apart (by more than a frame or two): the file's length
            // is the longer's, and would overstate the other (an MP4 said 0.67 s, 20 frames; its
            // sound held 0.49 s).
            keeps = "\(seconds(keptPictures.seconds)) s of pictures (\(frameCount)) and \(seconds(keptSound.seconds)) s of sound"
        } else {
            keeps = "the first \(seconds(kept.duration.seconds)) s" + (configuration.video == nil ? "" : ", \(frameCount)")
        }
        let when = stopping ? "as \(url.path) was finished" : "while \(url.path) was recorded, which ended the recording"
        let said = ReelError(.insufficientStorage,
                             "the disk filled \(when): it keeps \(keeps) and plays; \(what)",
                             hint: "free some disk space or record to another disk", errno: error.errno)
        keptByFullDisk = KeptByFullDisk(url: kept.url, duration: kept.duration, videoFrames: kept.videoFrames,
                                        bytes: FileIdentity.size(of: kept.url) ?? 0, lost: lostSomething ? said : nil)
        return said
    }

    /// Where the video and the longest sound of the file at `url` end, read packet by packet
    /// (an MKV, WAV or Ogg file's header does not say its tracks' lengths); `nil` for a kind it
    /// lacks or that cannot be read.
    private static func packetEnds(_ url: URL) -> (video: MediaTime?, audio: MediaTime?) {
        guard let count = try? PacketCount.count(url) else { return (nil, nil) }
        return (count.videoPackets > 0 ? MediaTime(seconds: count.videoEnd) : nil,
                count.audioPackets > 0 ? MediaTime(seconds: count.audioEnd) : nil)
    }

    /// How long the video track and the longest audio track of the finished file at `url` last
    /// (`nil` for a kind it lacks or that cannot be read).
    private static func trackLengths(_ url: URL) -> (video: MediaTime?, audio: MediaTime?) {
        guard let input = try? InputFile(url: url, readsStreamInfo: false) else { return (nil, nil) }
        var video: MediaTime?, audio: MediaTime?
        for i in 0..<Int(input.context.pointee.nb_streams) {
            let stream = input.context.pointee.streams[i]!.pointee
            guard stream.duration > 0, stream.time_base.den > 0 else { continue }
            let length = MediaTime(seconds: Double(stream.duration) * Double(stream.time_base.num) / Double(stream.time_base.den))
            switch stream.codecpar.pointee.codec_type {
            case AVMEDIA_TYPE_VIDEO: video = max(video ?? .zero, length)
            case AVMEDIA_TYPE_AUDIO: audio = max(audio ?? .zero, length)
            default: break
            }
        }
        return (video, audio)
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
    /// An MP4/MOV is finalised in place there and then, and the error says what it keeps
    /// (see finaliseWhatTheFullDiskKept): as the recording stops
    /// (`stopping`), or while it records.
    ///
    /// Only the file's own failure is so: when another sink of `encoder` that the recording
    /// depends on failed (an application's, writing to another disk), the file's disk is not
    /// full; the file is finished as at a stop, with what it took, and the error names the
    /// sink. (Any full disk was taken for the file's: a sink's `ENOSPC` said the disk of the
    /// file filled.)
    package func advisingRecoveryWhenFull<T>(stopping: Bool = false, encoder: StreamEncoder? = nil, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch where !failedItself && encoder?.failedSink.map({ $0 !== self }) == true {
            throw finishing(endedBy: encoder!.failedSink!, error)
        } catch var error as ReelError where error.code == .insufficientStorage && failedItself {
            // A file that holds nothing yet (the disk filled before its first fragment, or a
            // replacement's hidden file that is gone) is nothing to recover.
            guard Recovery.isCutOff(url) else {
                error.hint = "the disk filled before anything was recorded; free some space and record again"
                throw error
            }
            if let finalised = finaliseWhatTheFullDiskKept(error, stopping: stopping) { throw finalised }
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

    /// Another sink the recording depends on failed with `error`, which ends the recording:
    /// the file keeps what it took and is finished as at a stop (finalised). The error names
    /// the sink and says where the recording is.
    private func finishing(endedBy sink: any PacketSink, _ error: any Error) -> ReelError {
        let name = (sink as? CustomStringConvertible)?.description ?? String(describing: type(of: sink))
        var failure = error as? ReelError ?? ReelError(.ioFailure, "\(error)")
        failure.message = "\(name) failed, which ended the recording: \(failure.message)"
        let kept: String
        do {
            try finish()
            kept = finished.map { "what was recorded until then is in \($0.url.path), which plays" }
                ?? "nothing was recorded into \(url.path)"
        } catch {
            kept = Recovery.isCutOff(url) ? "what was recorded is kept in \(url.path); \(LibraryHint.finalise(url.path))"
                : "\(url.path) could not be finished: \(error)"
        }
        failure.hint = failure.hint.map { "\($0); \(kept)" } ?? kept
        return failure
    }
}
