import Foundation
import ReelFFmpeg

/// Clip mode: the clip sink's files in the session's folder, each clip settled into the
/// session as it is finished, and the time of clips an undo removed handed back to the limit
/// (the counts are ``ClipAccounting``'s).
extension RecorderPipeline {
    /// How the clips' sink makes its files and says what they hold: a file per clip in the
    /// session's folder, never over one that is there (the folder was claimed empty of clips),
    /// each with the room the clips before it left in the merged file. The session's counts
    /// change on the recorder's thread; the folder is followed and the manifest written on the
    /// sink's two clips' threads (no disk I/O on the recorder's thread, issue 28).
    func clipEvents() -> ClipFileSink.Events {
        let session = session
        return ClipFileSink.Events(
            configuration: { [unowned self] clip in
                fileConfiguration(url: clipURL(clip), overwrite: false,
                                  maximumFileSize: settings.maxFileSize.map { $0 - finishedShare - mergeHeadroom })
            },
            // A folder moved or deleted meanwhile (during a pause): followed, or made again; a
            // clip deleted with it is copied back into the folder made again.
            placing: { url in
                try session.followFolder()
                return session.folder.appendingPathComponent(url.lastPathComponent)
            },
            opened: { _, url in try session.clipStarted(url) },
            finished: { [unowned self] clip, done in try clipFinished(clip, done) },
            discarded: { [unowned self] clip, url in
                clipAccount.settle(clip, timeline: timeline, recorded: recordedDuration)
                return ClipFileSink.Listing(write: session.clipDiscarded(url))
            })
    }

    /// The share of the merged file of the clips finished, those on the finishing thread too
    /// (see ``ClipAccounting/finishedShare``), and their bytes on the disk.
    var finishedShare: Int64 { clipAccount.finishedShare + (clipFiles?.finishingShare ?? 0) }
    var finishedBytes: Int64 { clipAccount.finishedBytes + (clipFiles?.finishingBytes ?? 0) }

    /// The file of clip `clip` (from zero) in the session's folder.
    func clipURL(_ clip: Int) -> URL {
        session.folder.appendingPathComponent(String(format: "clip-%03d.%@", clip + 1, fileContainer.fileExtension))
    }

    /// What merging the clips may add beyond their media and index: the merger keeps space for
    /// the index at the front of files of 6.5 MB and more (see `Merger.indexReservation`).
    var mergeHeadroom: Int64 {
        guard settings.pauseMode == .clips, let max = settings.maxFileSize, max >= 6_500_000 else { return 0 }
        return 70_000
    }

    /// A clip's file is finished: into the session; returns the manifest's write, once done
    /// which the clip is said finished (an app then finds the manifest saying so).
    private func clipFinished(_ clip: Int, _ done: MovieFileSink.Finished) throws -> ClipFileSink.Listing? {
        guard timeline.intervals.indices.contains(clip) else { return nil }
        let interval = timeline.intervals[clip]
        clipAccount.settle(clip, timeline: timeline, recorded: recordedDuration)
        var duration = interval.duration ?? max(.zero, machine.recordedDuration - interval.offset)
        if let limit = machine.configuration.limit { duration = min(duration, max(.zero, limit - interval.offset)) }
        if plan.video != nil, machine.video.videoDecidesEnd(hasAudio: !plan.audioTracks.isEmpty), done.videoEnd > 0 {
            // The frames that were written decide where the clip ends (unless the video went
            // away and the audio went on).
            duration = min(duration, settings.video.frameRate.time(ofFrame: done.videoEnd))
        }
        clipAccount.add(done)
        let finished = Clip(url: done.url, duration: duration, frameCount: done.videoFrames, hasAudio: !plan.audioTracks.isEmpty,
                            frameDrops: machine.drops(inInterval: clip))
        // A take an undo removed while it was being finished is gone, never said finished.
        let (listed, write) = session.list(finished)
        return ClipFileSink.Listing(write: write, then: listed ? { [unowned self] in onClipFinished?(finished) } : nil)
    }

    /// Tells the session how long the clip being recorded is, and the clips past their pause not
    /// finished yet, for its progress (a clip is counted until it is listed).
    func reportUnfinishedClips() {
        let current = timeline.intervals.last.flatMap { $0.end == nil ? $0.offset : nil }
        let recorded = recordedDuration
        session.setCurrentDuration(current.map { max(.zero, recorded - $0) } ?? .zero,
                                   finishing: max(.zero, (current ?? recorded) - clipAccount.settledUpTo),
                                   drops: unfinishedClipDrops(recording: current != nil))
    }

    /// The frames lost in the clip being recorded (if `recording`), and in the clips past their
    /// pause that are not finished yet: the session counts them until the clips are listed.
    private func unfinishedClipDrops(recording: Bool) -> (current: FrameDrops, finishing: FrameDrops) {
        let count = timeline.intervals.count
        var finishing = FrameDrops()
        for clip in clipAccount.unsettled(before: recording ? count - 1 : count) { finishing.add(machine.drops(inInterval: clip)) }
        return (recording && count > 0 ? machine.drops(inInterval: count - 1) : FrameDrops(), finishing)
    }

    /// In clip mode the limit counts the clips that remain: the time of clips removed since
    /// (an undo while paused) is recorded again.
    func handBackRemovedClips() {
        guard clipFiles != nil, let removed = clipAccount.handBack(removedSoFar: session.removedDuration) else { return }
        machine.handBack(removed)
        clipsRemoved = true
    }

    /// Whether clips were removed (their time handed back) since the last call: progress then
    /// says so at once (the bytes of the clips kept, their time), not at the next half second
    /// recorded, which may be long in coming while paused.
    func takeClipsRemoved() -> Bool {
        defer { clipsRemoved = false }
        return clipsRemoved
    }
}
