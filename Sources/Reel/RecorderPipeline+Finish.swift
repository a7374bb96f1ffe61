import Foundation
import ReelFFmpeg

extension RecorderPipeline {
    /// Ends the recording: gives what the machine held, pads the sound to the end, finishes
    /// the encode into the file (or the clips, which are then merged into the recorder's file).
    func finish() throws -> RecordingSummary {
        // A recording paused at its limit ends there.
        if machine.pausedAtLimit && ending == .requested { ending = .maxDuration }
        let encoder = writer.encoder
        try perform(finishing: machine.finish(keyframeDue: { encoder.keyframeDue(atGridIndex: $0) }))
        // Markers asked for after the last sample: at the end.
        try placeMarkers(upTo: nil)
        var recorded = max(recordedDuration, soundKeptTo ?? .zero)
        if let single = try finishSingleFile(recorded: recorded) {
            return try madeFromIntermediate(single)
        }
        // Clip mode: every clip is finished now; the file holds the clips the session kept
        // (takes removed are not in it), unless a limit cut it shorter still. Clips whose files
        // went while recorded (their folder deleted) are not in it either, and are said.
        freeSpace?.settle()
        try? session.followFolder()
        lostClips = session.setAsideMissingClips()
        let clips = session.clips
        let kept = clips.reduce(MediaTime.zero) { $0 + $1.duration }
        recorded = ending == .maxFileSize ? min(recorded, kept) : kept
        var url = self.url
        var frames = clips.reduce(0) { $0 + $1.frameCount }
        finishedFramesAtEnd = frames
        var bytes: Int64 = 0
        // Counted now: merging removes the clips from the session.
        let clipCount = clips.count
        guard !clips.isEmpty else {
            if !lostClips.isEmpty {
                try? session.recordingEnded(merged: false)
                throw ReelError(.ioFailure, "every clip of the recording was deleted while it was recorded (\(lostClips.map(\.lastPathComponent).joined(separator: ", "))): nothing is left to merge into \(url.path)",
                                hint: "keep the clips folder \(session.folder.path) until the recording is merged")
            }
            session.releaseClaim()
            throw nothingRecorded
        }
        if settings.mergesClipsAtEnd {
            let merged = try mergeClips(clips)
            url = merged.url
            frames = merged.videoFrames
            bytes = FileIdentity.size(of: url) ?? 0
        } else {
            try session.recordingEnded(merged: false)
            url = session.folder
        }
        // The frames lost in the clips kept: a take removed took its drops with it.
        let drops = clips.reduce(into: FrameDrops()) { $0.add($1.frameDrops) }
        return summary(url: url, duration: recorded, frames: frames, bytes: bytes, clipCount: clipCount, drops: drops)
    }

    /// What the file kept when its disk filled and the rest could not be written, if that
    /// ended the recording (see ``MovieFileSink/keptByFullDisk``): the file was finalised in
    /// place and plays (a GIF's intermediate, as the MP4 it is).
    var keptByFullDisk: MovieFileSink.KeptByFullDisk? {
        writer.movie?.keptByFullDisk
    }

    /// Ends a recording whose disk filled, its file finalised in place with what reached the
    /// disk (``keptByFullDisk``): as one the disk stopped (``RecordingEnding/lowDiskSpace``),
    /// with what the file holds. (It failed with an error that said so in words alone.) A GIF
    /// is made from its intermediate if the disk has room for it; else the summary names the
    /// intermediate, which keeps the recording, and says how to make the GIF
    /// (``RecordingSummary/gifNotMade``). (A GIF's failed, naming the intermediate alone.)
    func endedByFullDisk(_ kept: MovieFileSink.KeptByFullDisk) -> RecordingSummary {
        freeSpace?.settle()
        writer.abandon()
        ending = .lowDiskSpace
        finishedFramesAtEnd = kept.videoFrames
        var made = summary(url: kept.url, duration: kept.duration, frames: kept.videoFrames, bytes: kept.bytes, clipCount: timeline.intervals.count)
        made.relocation = writer.movie?.relocation
        do {
            return try madeFromIntermediate(made)
        } catch {
            made.gifNotMade = gifNotMade(error, keptIn: kept.url)
            return made
        }
    }

    /// Clip mode: the disk filled under the clips (a clip's write or its finish found no room),
    /// which ends the recording as one the disk stopped (``RecordingEnding/lowDiskSpace``), as a
    /// single file's does, not as a failure: the clip the disk cut off is ended where it is
    /// with what reached the disk, as a recovery does there (no room needed), and the clips keep
    /// the recording. They are not merged: the disk that just filled has no room for the file
    /// (``RecordingSummary/clipsNotMerged`` says how to merge them). `nil`, changing nothing,
    /// when the clips' disk is not full (another disk's sink filled) or no clip holds anything,
    /// and for a camera recorder's take (``Recorder/Settings/failsWhenItsClipsDiskFills``).
    /// A recording the free-space floor stopped (`--min-free`, 100 MB by default) whose merge
    /// then found no room ends so too, however much the failed merge gave back.
    func endedClipsByFullDisk(_ error: ReelError) -> RecordingSummary? {
        guard clipFiles != nil, !settings.failsWhenItsClipsDiskFills, error.code == .insufficientStorage,
              ending == .lowDiskSpace || (FreeSpace.of(session.folder)?.available).map({ $0 < 8 << 20 }) == true,
              let folder = abandon() else { return nil }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter(RecordingSession.isClipName).sorted()
        var frames: Int64 = 0, seconds = 0.0, bytes: Int64 = 0, clips = 0
        for name in names {
            let clip = folder.appendingPathComponent(name)
            if Recovery.isCutOff(clip) { _ = try? Recovery.recover(clip) }
            guard let count = try? PacketCount.count(clip), count.videoPackets > 0 || count.audioPackets > 0 else { continue }
            frames += count.videoPackets
            seconds += max(count.videoEnd, count.audioEnd)
            bytes += FileIdentity.size(of: clip) ?? 0
            clips += 1
        }
        guard clips > 0 else { return nil }
        ending = .lowDiskSpace
        finishedFramesAtEnd = frames
        var made = summary(url: folder, duration: MediaTime(seconds: seconds), frames: frames, bytes: bytes, clipCount: clips)
        let held = plan.video == nil ? "" : frames == 1 ? ", 1 frame" : ", \(frames) frames"
        made.clipsNotMerged = ReelError(.insufficientStorage,
                                        "the disk filled while the clips in \(folder.path) were recorded, which ended the recording: they keep the first \(String(format: "%.2f", seconds)) s\(held) and play, and \(url.lastPathComponent) was not made from them (no room left for it)",
                                        hint: "free some disk space, then \(LibraryHint.mergeTheClips(folder.path))", errno: error.errno)
        return made
    }

    /// Why the GIF of a recording the disk stopped could not be made (`error`), and how to make
    /// it from `intermediate`, which keeps the recording (see ``RecordingSummary/gifNotMade``).
    private func gifNotMade(_ error: any Error, keptIn intermediate: URL) -> ReelError {
        let failure = error as? ReelError ?? ReelError(.encodingFailed, "\(error)")
        let room = failure.code == .insufficientStorage ? "free some disk space, then " : ""
        return ReelError(failure.code, "\(url.lastPathComponent) could not be made from the recording: \(failure.message)",
                         hint: "the recording is kept in \(intermediate.path), which plays; \(room)\(LibraryHint.makeTheGIF(url.path))",
                         errno: failure.errno, averror: failure.averror)
    }

    /// The actions the machine gives at the end, then the sound padded to where the recording
    /// ends (so that every track ends together).
    private func perform(finishing actions: [RecordingMachine.Action]) throws {
        for action in actions {
            switch action {
            case .video(let frame, let time): try writer.appendVideo(frame, at: time)
            case .audio(let buffer, let input): try writer.appendAudio(buffer, input: input)
            case .pauseReached, .intervalBegins: break
            }
        }
        var end = recordedDuration
        if plan.video != nil, machine.video.videoDecidesEnd(hasAudio: !plan.audioTracks.isEmpty), let last = writer.lastVideoTime {
            // The frames that were actually written decide where the recording ends (unless
            // the video went away and the audio went on).
            end = min(end, last + settings.video.frameRate.frameDuration)
        }
        if let kept = soundKeptTo { end = max(end, kept) }
        if ending != .maxFileSize { try writer.padAudio(to: end) }
    }

    /// Finishes a recording that is not in clips: the single file (or only the sinks). `nil`
    /// in clip mode, whose clips are finished then.
    private func finishSingleFile(recorded: MediaTime) throws -> RecordingSummary? {
        guard let movie = writer.movie else {
            let summary = try writer.finish()
            if clipFiles != nil { return nil }
            // No file: the sinks took what was encoded (a replay buffer, live streams).
            _ = summary
            finishedFramesAtEnd = writer.framesEncoded
            guard writer.framesEncoded > 0 || timeline.hasBegun else {
                throw nothingRecorded
            }
            return self.summary(url: url, duration: recorded, frames: writer.framesEncoded, bytes: 0, clipCount: timeline.intervals.count)
        }
        guard writer.wroteSomething else {
            // Our own file, created empty (a recording that never left its first pause).
            writer.abandon()
            unlink(movie.url.path)
            // With the markers placed while it waited (a stop before a scheduled start).
            movie.removeChaptersOfAGoneFile()
            throw nothingRecorded
        }
        // No picture in a video file: the size limit left no room for its first frame (a
        // detailed screen's first keyframe is over a megabyte), or the stop came before the
        // first frame (a moment of the tone may be in). That is no recording: ours, it goes,
        // and a file it was to replace stays. A video source that never came while sound was
        // recorded for a second or more keeps its file.
        let pictureless = plan.video != nil && movie.videoFramesMuxed == 0
        let noRoom = pictureless && writer.isFull
        let tooShort = pictureless && writer.framesEncoded == 0 && machine.soundRecorded < MediaTime(value: 1, timescale: 1)
        if noRoom || tooShort, movie.discardWithoutPicture() {
            writer.abandon()
            if noRoom {
                throw ReelError(.nothingRecorded, "the first frame alone is larger than the size limit (\(settings.maxFileSize ?? 0) bytes): nothing was recorded",
                                hint: "allow a larger file or a smaller first frame (a higher quality number, a smaller size)")
            }
            throw nothingRecorded
        }
        // A marker placed ahead of pictures that never came (the stop came first) is at the end.
        // A video source that stopped coming (a network camera waited for until the stop) while
        // the sound went on: the file lasts as long as its sound, and so do its chapters and
        // what is said (s6 N7: the summary said 3.7 s of a file of 8).
        let limited = writer.isFull || ending == .maxFileSize
        let soundRunsOn = !limited && plan.video != nil && !plan.audioTracks.isEmpty
            && machine.soundRecorded > recorded + MediaTime(value: 1, timescale: 2)
        let end = soundRunsOn ? machine.soundRecorded : recorded
        movie.setChapters(chapters.map { Chapter(start: min($0.start, end), title: $0.title) }, end: end)
        guard let file = try writer.finish() else { return nil }
        var duration = recorded
        // A size limit may have left out the last packets.
        if writer.isFull || ending == .maxFileSize { duration = min(duration, file.duration) }
        else if soundRunsOn { duration = max(duration, min(machine.soundRecorded, file.duration)) }
        finishedFramesAtEnd = file.videoFrames
        var made = summary(url: file.url, duration: duration, frames: file.videoFrames, bytes: file.bytes, clipCount: timeline.intervals.count)
        made.relocation = movie.relocation
        return made
    }

    /// Merges the clips into the recorder's file; they go only once the merged file, read back
    /// from the disk, is known to hold every frame of them (without video: every second of
    /// their sound). What fails leaves the clips, and says where they are.
    private func mergeClips(_ clips: [Clip]) throws -> MergeSummary {
        let merged: MergeSummary
        do {
            try session.mergeStarting()
            merged = try session.merge(to: url, allowsReencoding: false, overwrite: replacesFile)
        } catch var error as ReelError {
            try? session.recordingEnded(merged: false)
            error.hint = "the recording is in the clips in \(session.folder.path); \(LibraryHint.mergeTheClipsElsewhere(session.folder.path))"
            throw error
        }
        let clipFrames = clips.reduce(0) { $0 + $1.frameCount }
        let onDisk = try? PacketCount.count(merged.url)
        guard merged.videoFrames == clipFrames, onDisk?.videoPackets == clipFrames else {
            try? session.recordingEnded(merged: false)
            throw ReelError(.encodingFailed, "the merged file holds \(onDisk?.videoPackets ?? merged.videoFrames) frames but the clips \(clipFrames)",
                            hint: "the clips are kept in \(session.folder.path)")
        }
        if clipFrames == 0 {
            let clipSeconds = clips.reduce(0.0) { $0 + ((try? PacketCount.count($1.url))?.audioSeconds ?? .infinity) }
            guard let onDisk, onDisk.holdsAudio(of: clipSeconds, clips: clips.count) else {
                try? session.recordingEnded(merged: false)
                throw ReelError(.encodingFailed, "the merged file holds \(String(format: "%.2f", onDisk?.audioSeconds ?? 0)) s of sound but the clips \(String(format: "%.2f", clipSeconds)) s",
                                hint: "the clips are kept in \(session.folder.path)")
            }
        }
        try session.recordingEnded(merged: true)
        // Kept clips stay as plain files; the manifest's work is done. The session still lists
        // the clips merged (what each take held).
        if !settings.keepsClips { session.removeFilesOfClips() }
        session.removeManifestAndEmptyFolder()
        return merged
    }

    /// For a file made at the stop (a GIF), makes it from the finished intermediate `single`
    /// holds, which goes once the file is complete, has its name and holds every frame of it.
    /// What fails keeps the intermediate, and says how to finish it.
    /// A recording the disk stopped (``RecordingEnding/lowDiskSpace``) whose GIF cannot be made
    /// (the disk has no room for it) ends as such all the same, in its intermediate, and says
    /// so (``RecordingSummary/gifNotMade``); it failed, naming the intermediate alone.
    private func madeFromIntermediate(_ single: RecordingSummary) throws -> RecordingSummary {
        guard intermediate != nil, container == .gif else { return single }
        do {
            return try makeGIF(from: single)
        } catch where ending == .lowDiskSpace {
            var kept = single
            kept.gifNotMade = gifNotMade(error, keptIn: single.url)
            return kept
        }
    }

    private func makeGIF(from single: RecordingSummary) throws -> RecordingSummary {
        // Where the intermediate is now (someone may have moved it while it was recorded).
        let recorded = single.url
        let kept = "the recording is kept in \(recorded.path); \(LibraryHint.makeTheGIF(recorded.path))"
        let meter = ProgressMeter(stage: .converting, total: 2 * (FileIdentity.size(of: recorded) ?? 0), clock: HostClock(), handler: onConverting)
        meter.update(completed: 0)
        let gif: GIFConverter.Summary
        do {
            gif = try GIFConverter.convert(recorded, to: url, overwrite: replacesFile, meter: meter)
        } catch var error as ReelError {
            // The name taken meanwhile: recovering under that name would be refused as well.
            error.hint = error.code == .fileExists ? "\(kept); \(LibraryHint.nameTheGIF)" : error.hint.map { "\($0); \(kept)" } ?? kept
            throw error
        }
        meter.finish()
        guard gif.frames == single.frames else {
            throw ReelError(.encodingFailed, "\(url.lastPathComponent) holds \(gif.frames) pictures but the recording \(single.frames)", hint: kept)
        }
        unlink(recorded.path)
        var made = single
        made.url = gif.url
        made.bytes = gif.bytes
        return made
    }

    /// Nothing was recorded: the sources gave nothing, or a nearly full disk stopped the
    /// recording first (then the sources are not to blame: it blamed them).
    private var nothingRecorded: ReelError {
        guard ending == .lowDiskSpace else {
            return ReelError(.nothingRecorded, "nothing was recorded", hint: "check that the sources deliver samples")
        }
        let minimum = settings.minimumFreeSpace.map { " (\($0 / 1_000_000) MB)" } ?? ""
        return ReelError(.insufficientStorage, "the disk of \(spaceFolder.path) came down to the minimum of free space\(minimum) "
                         + "before anything was recorded: nothing was recorded", hint: LibraryHint.freeSpaceOrLowerMinimum)
    }

    /// The summary; `drops` the frames lost in what the file holds (all the machine counted
    /// unless given: clip mode gives those of the clips kept).
    private func summary(url: URL, duration: MediaTime, frames: Int64, bytes: Int64, clipCount: Int,
                         drops: FrameDrops? = nil) -> RecordingSummary {
        let drops = drops ?? machine.drops
        var summary = RecordingSummary(url: url, duration: duration, frames: frames, droppedFrames: drops.total, bytes: bytes,
                         videoSize: writer.videoSize ?? plan.videoSize, video: plan.video != nil ? settings.video : nil,
                         audioTracks: plan.titles, audio: plan.titles.isEmpty ? nil : settings.audio,
                         container: container, reachedLimit: ending == .maxDuration, clipCount: clipCount, ending: ending)
        summary.lostClips = lostClips
        summary.frameDrops = drops
        return summary
    }
}
