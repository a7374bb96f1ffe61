import Foundation
import Synchronization
import ReelFFmpeg
import ReelSystem

/// A recording as a session of clips, in the NextLevel tradition: pausing ends a clip,
/// resuming starts the next, and at the end the clips merge into one file without re-encoding.
///
/// A recorder in ``Recorder/PauseMode/clips`` mode keeps its clips here; its ``folder`` holds
/// their files. Clips can be removed (the last take redone) while the recorder is paused or
/// after it stopped, muted for the merge, and merged again into any file.
///
/// Until its clips are merged, the folder also holds a small manifest (``manifestName``): the
/// file the clips are to be merged into and the clips in order, the one being recorded
/// included. A recording cut off by a crash or an abort is then found and finished by
/// ``recover(folder:to:overwrite:progress:)`` (`reel recover`). A folder that holds another recording's
/// clips or manifest is never used again: the recorder refuses it.
public final class RecordingSession: Sendable {
    /// The folder that holds the clips' files: where it is now. While a recorder records into
    /// it, a folder someone renamed or moved (on the same disk) is followed, and one deleted is
    /// made again at its name (see ``ClipsFolderChange``).
    public var folder: URL { state.withLock { $0.folder } }

    /// The name of the manifest a recorder keeps in the clips folder while it records.
    public static let manifestName = "reel-clips.json"

    /// Where a recorder in clip mode keeps the clips of a recording into `url` unless told
    /// otherwise: `NAME.clips` beside `NAME.mp4`.
    public static func defaultFolder(for url: URL) -> URL {
        url.deletingLastPathComponent().appendingPathComponent("\(url.deletingPathExtension().lastPathComponent).clips", isDirectory: true)
    }

    struct State {
        /// Where the folder is now (see ``folder``).
        var folder: URL
        var clips: [Clip] = []
        /// Takes ended by a pause whose clips are not finished yet, and how many of them an
        /// undo (``removeLastClip()``) asked to remove when they are.
        var endedTakes = 0
        var takesToDiscard = 0
        /// Chapter markers of clips not finished yet, by file name.
        var pendingChapters: [String: [Chapter]] = [:]
        var current: MediaTime = .zero
        /// The recorded time of takes ended by a pause whose clips are not finished yet: still
        /// counted (a progress ring does not dip while a clip is finished), unless an undo
        /// asked for one of them to go.
        var finishing: MediaTime = .zero
        /// The frames lost in the clip being recorded, and in those counted in `finishing`: a
        /// clip is counted until it is listed, drops and all, as its time is.
        var currentDrops = FrameDrops()
        var finishingDrops = FrameDrops()
        /// The recorded time of the clips removed (by an undo, or ``removeClip(at:removeFile:)``):
        /// the recorder records that much again before its limit (see ``removedDuration``).
        var removed: MediaTime = .zero
        /// An undo removed the take still being recorded before the recorder saw its pause: its
        /// time is not counted, until the recorder says its clip ended (a duration of zero).
        var ignoresCurrent = false
        /// The clips begun that are not kept: removed (an undo, ``removeClip(at:removeFile:)``),
        /// or found empty. A clip begun as the recording's `n`th (from zero) is the
        /// `n - dropped`th of those kept (see ``index(ofClipBegun:)``).
        var dropped = 0

        /// A clip of `duration` is listed now: no longer counted as being finished, or (its
        /// pause and its end came at once) as being recorded.
        mutating func countAsFinished(_ duration: MediaTime, drops: FrameDrops) {
            let fromFinishing = min(finishing, duration)
            finishing = finishing - fromFinishing
            current = max(.zero, current - (duration - fromFinishing))
            currentDrops.remove(finishingDrops.remove(drops))
        }

        /// A clip of an ended take was finished (or found empty): returns whether an undo asked
        /// for it to go.
        @discardableResult
        mutating func settleEndedTake() -> Bool {
            guard endedTakes > 0 else { return false }
            endedTakes -= 1
            guard takesToDiscard > 0 else { return false }
            takesToDiscard -= 1
            return true
        }
        /// What the manifest says, while a recorder has claimed the folder.
        var manifest: ClipsManifest?
        /// Bumped by every change of `manifest`, so that only the newest is written.
        var generation = 0
        /// Whether claiming the folder created it.
        var createdFolder = false
        /// The lock on the folder while a recorder records into it: the sign, for another
        /// recording or `reel recover`, that a folder with no clips yet is in use, not left over.
        var folderLock: RecordingLock?
        /// Finished clips whose files went before the merge (their folder deleted while
        /// recorded, or the files themselves): the merged file lacks them.
        var lostClips: [URL] = []
        /// Hears what became of the folder while recorded (the recorder's events).
        var folderChanged: (@Sendable (ClipsFolderChange) -> Void)?
    }
    let state: Mutex<State>
    /// Held while the folder's whereabouts are checked and acted on, so that one thread does it.
    let following = Mutex(())
    /// The generation of the manifest last written; held while writing, so writes keep order.
    let written = Mutex(0)
    /// Hears the progress of a merge given no listener (see ``setMergeProgressHandler(_:)``).
    let mergeProgress = Mutex<(@Sendable (WorkProgress) -> Void)?>(nil)

    /// Creates a session whose clips live in `folder`.
    public init(folder: URL) {
        state = Mutex(State(folder: folder))
    }

    deinit {
        state.withLock { $0.folderLock?.release() }
    }

    /// Lets go of the folder's lock (the recording into it has ended, or was given up: an
    /// abort leaves the clips for a recovery, not in use).
    func releaseFolderLock() {
        state.withLock { s in
            s.folderLock?.release()
            s.folderLock = nil
        }
    }

    /// Whether a recorder (in this or another program) is recording into `folder` right now.
    static func isInUse(_ folder: URL) -> Bool {
        guard let lock = try? RecordingLock.lockExisting(folder, exclusive: true) else {
            return FileManager.default.fileExists(atPath: folder.path)
        }
        lock.release()
        return false
    }

    /// The clip files of `folder` if it is what a recording cut off before its first clip
    /// held anything left: a manifest that counts no finished clip, and clip files that hold
    /// no packet (a header, or nothing). It holds nothing recorded, so it may be taken over or
    /// tidied away. `nil` if anything in it may hold a recording (or cannot be read).
    static func emptyLeftoverClips(_ folder: URL, manifest: ClipsManifest) -> [URL]? {
        guard manifest.state != .merged, !manifest.clips.contains(where: \.finished) else { return nil }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter(isClipName)
        var empty: [URL] = []
        for name in names {
            let url = folder.appendingPathComponent(name)
            guard clipHoldsNothing(url) else { return nil }
            empty.append(url)
        }
        return empty
    }

    /// Removes what ``emptyLeftoverClips(_:manifest:)`` found (the empty clip files and the
    /// manifest); returns whether it was such a leftover.
    static func removeEmptyLeftover(_ folder: URL, manifest: ClipsManifest) -> Bool {
        guard let clips = emptyLeftoverClips(folder, manifest: manifest) else { return false }
        for clip in clips { unlink(clip.path) }
        unlink(folder.appendingPathComponent(manifestName).path)
        return true
    }

    /// The finished clips, in order. After a recorder merged them into its file at its stop,
    /// they are still listed (what each take held, its duration and frames), but their files
    /// are gone unless the recorder kept them (``Recorder/Settings/keepsClips``).
    public var clips: [Clip] { state.withLock { $0.clips } }

    /// The finished clips' durations added up, plus the clip being recorded (and a clip whose
    /// take a pause ended, while it is being finished).
    public var totalDuration: MediaTime {
        state.withLock { s in s.clips.reduce(s.current + (s.takesToDiscard > 0 ? .zero : s.finishing)) { $0 + $1.duration } }
    }

    /// The video frames lost in the clips kept, by why: those of the finished clips
    /// (``Clip/frameDrops``) plus the clip being recorded (and a clip whose take a pause ended,
    /// while it is being finished), as ``totalDuration`` counts their time. A clip removed
    /// takes its drops with it (an undo right after a pause, at once): what the recording keeps
    /// has lost this many, and a merge's summary says so.
    public var frameDrops: FrameDrops {
        state.withLock { s in
            var all = s.clips.reduce(into: s.currentDrops) { $0.add($1.frameDrops) }
            if s.takesToDiscard == 0 { all.add(s.finishingDrops) }
            return all
        }
    }

    /// The recorded time of the clips removed from the session so far: a recorder recording
    /// into it hands that time back to its maximum duration, which counts the clips that remain.
    var removedDuration: MediaTime { state.withLock { $0.removed } }

    /// How long the clip being recorded is so far (zero while paused).
    public var currentClipDuration: MediaTime { state.withLock { $0.current } }

    /// Removes the clip at `index` from the session and, if asked, its file.
    public func removeClip(at index: Int, removeFile: Bool = true) throws {
        let (clip, manifest) = try state.withLock { s -> (Clip, (ClipsManifest, Int)?) in
            guard s.clips.indices.contains(index) else {
                throw ReelError(.invalidConfiguration, "there is no clip \(index + 1) (the session has \(s.clips.count))")
            }
            let clip = s.clips.remove(at: index)
            s.removed = s.removed + clip.duration
            s.dropped += 1
            return (clip, Self.update(&s) { $0.clips.removeAll { $0.file == clip.url.lastPathComponent } })
        }
        try write(manifest)
        if removeFile { try? FileManager.default.removeItem(at: clip.url) }
    }

    /// Removes the last clip (the last take) and its file. Right after a pause the take just
    /// ended may still be being finished (it is not in ``clips`` yet): then that take is the one
    /// removed, as soon as it is finished. ``clips`` never shows it, ``totalDuration`` leaves
    /// it out at once, and the recorder never says it finished
    /// (``RecordingEvent/clipFinished(_:)``).
    ///
    /// With no clip and none being finished it does nothing and returns `false`, as
    /// ``removeAllClips(removeFiles:)`` does nothing then: an undo button pressed once too
    /// often is no error.
    ///
    /// - Returns: whether a clip (or a take being finished) was removed.
    /// - Throws: the error of writing the clips' manifest (a full disk): the clip is no longer
    ///   listed, and its file is kept.
    @discardableResult
    public func removeLastClip() throws -> Bool {
        if state.withLock({ Self.discardOnePendingTake(&$0) }) { return true }
        let count = clips.count
        guard count > 0 else { return false }
        try removeClip(at: count - 1)
        return true
    }

    /// A take a pause ended whose clip is not finished yet, if there is one, is to go once it
    /// is: its time leaves ``totalDuration`` at once. Returns whether there was one.
    private static func discardOnePendingTake(_ s: inout State) -> Bool {
        guard s.endedTakes > s.takesToDiscard else { return false }
        s.takesToDiscard += 1
        s.dropped += 1
        s.current = .zero
        s.finishing = .zero
        s.currentDrops = FrameDrops()
        s.finishingDrops = FrameDrops()
        s.ignoresCurrent = true
        return true
    }

    /// Notes that a pause ended the take being recorded (its clip is finished later).
    func takeEnded() {
        state.withLock { $0.endedTakes += 1 }
    }

    /// Removes every clip from the session, and their files if `removeFiles`: the takes a pause
    /// ended whose clips are still being finished too, files and all (as ``removeLastClip()``
    /// removes such a take). Does nothing when there is none. A manifest that cannot be written (a full disk)
    /// is left as it was: the clips are no longer listed all the same.
    public func removeAllClips(removeFiles: Bool = true) {
        let (removed, manifest) = state.withLock { s -> ([Clip], (ClipsManifest, Int)?) in
            while Self.discardOnePendingTake(&s) {}
            let all = s.clips
            s.clips = []
            s.removed = all.reduce(s.removed) { $0 + $1.duration }
            s.dropped += all.count
            let names = Set(all.map(\.url.lastPathComponent))
            return (all, Self.update(&s) { $0.clips.removeAll { names.contains($0.file) } })
        }
        try? write(manifest)
        if removeFiles { for clip in removed { try? FileManager.default.removeItem(at: clip.url) } }
    }

    /// Removes the files of the clips once they are merged into the recorder's file; the
    /// clips stay listed.
    func removeFilesOfClips() {
        for clip in clips { try? FileManager.default.removeItem(at: clip.url) }
    }

    /// Marks the clip at `index` to be silent in a merge (it keeps its place on the timeline).
    public func setMutedOnMerge(_ muted: Bool, at index: Int) throws {
        let manifest = try state.withLock { s -> (ClipsManifest, Int)? in
            guard s.clips.indices.contains(index) else { throw ReelError(.invalidConfiguration, "there is no clip \(index + 1)") }
            s.clips[index].isMutedOnMerge = muted
            let name = s.clips[index].url.lastPathComponent
            return Self.update(&s) { m in
                for i in m.clips.indices where m.clips[i].file == name { m.clips[i].muted = muted }
            }
        }
        try write(manifest)
    }

    // MARK: The recorder's side

    /// Notes a clip file the recorder has begun (its place follows the clips before it), before
    /// anything is written into it: on the clips' opening thread (see `ClipFileSink`), while a
    /// clip before it may be finished (and listed so) on the other.
    func clipStarted(_ url: URL) throws {
        try write(state.withLock { s in
            Self.update(&s) { $0.clips.append(.init(file: url.lastPathComponent, muted: false, finished: false)) }
        })
    }

    /// Notes a clip file the recorder removed again because nothing was written into it; returns
    /// the manifest's write, which the recorder runs on its clips' finishing thread (see `ClipFileSink`).
    func clipDiscarded(_ url: URL) -> @Sendable () throws -> Void {
        let manifest = state.withLock { s in
            // A take an undo removed was counted then.
            if !s.settleEndedTake() { s.dropped += 1 }
            return Self.update(&s) { $0.clips.removeAll { $0.file == url.lastPathComponent } }
        }
        return { [self] in try write(manifest) }
    }

    /// Where the recording's clip `interval` (from zero, every clip begun counted), begun now,
    /// stands among the clips kept: after those before it that were not removed, as NextLevel
    /// counts its session's clips after an undo.
    func index(ofClipBegun interval: Int) -> Int {
        state.withLock { max(0, interval - $0.dropped) }
    }

    /// Appends a finished clip; returns `false` when an undo had asked for it to go (it is
    /// removed, file and all, and not to be said finished).
    @discardableResult
    func append(_ clip: Clip) throws -> Bool {
        let (listed, write) = list(clip)
        try write()
        return listed
    }

    /// Appends a finished clip to ``clips`` (and its take to the counts) at once, and returns
    /// what is then to be done on the disk: the manifest's write, and the removal of a take an
    /// undo asked to go (`listed` is then `false`: it is never to be said finished). A recorder
    /// runs `write` on its clips' finishing thread, after the clip's finish (see `ClipFileSink`);
    /// a newer manifest written meanwhile (an undo, the next clip listed) is never overwritten by it.
    func list(_ clip: Clip) -> (listed: Bool, write: @Sendable () throws -> Void) {
        let discarded = state.withLock { s -> Bool in
            guard s.settleEndedTake() else { return false }
            s.current = .zero
            s.finishing = max(.zero, s.finishing - clip.duration)
            s.finishingDrops.remove(clip.frameDrops)
            s.removed = s.removed + clip.duration
            return true
        }
        if discarded {
            // An undo came while this take was being finished: it goes now.
            let manifest = state.withLock { s in Self.update(&s) { $0.clips.removeAll { $0.file == clip.url.lastPathComponent } } }
            return (false, { [self] in
                try write(manifest)
                try? FileManager.default.removeItem(at: clip.url)
            })
        }
        let manifest = state.withLock { s in
            var clip = clip
            clip.chapters += s.pendingChapters.removeValue(forKey: clip.url.lastPathComponent) ?? []
            s.clips.append(clip)
            s.countAsFinished(clip.duration, drops: clip.frameDrops)
            return Self.update(&s) { m in
                let entry = ClipsManifest.Entry(file: clip.url.lastPathComponent, muted: clip.isMutedOnMerge, finished: true,
                                                frames: clip.frameCount, duration: clip.duration.seconds,
                                                chapters: clip.chapters.isEmpty ? nil : clip.chapters.map(ClipsManifest.ChapterEntry.init),
                                                drops: ClipsManifest.Entry.kept(clip.frameDrops))
                if let i = m.clips.firstIndex(where: { $0.file == entry.file }) { m.clips[i] = entry } else { m.clips.append(entry) }
            }
        }
        return (true, { [self] in try write(manifest) })
    }

    /// How long the clip being recorded is, as the recorder sees it (zero once its pause is
    /// reached), and how much recorded time lies in clips past their pause and not finished
    /// yet (`finishing`), with the frames each lost (`drops`); a take an undo removed before
    /// that is not counted.
    func setCurrentDuration(_ duration: MediaTime, finishing: MediaTime = .zero,
                            drops: (current: FrameDrops, finishing: FrameDrops) = (FrameDrops(), FrameDrops())) {
        state.withLock { s in
            if s.ignoresCurrent { s.ignoresCurrent = duration > .zero }
            if !s.ignoresCurrent {
                s.current = duration
                s.currentDrops = drops.current
            }
            s.finishing = finishing
            s.finishingDrops = drops.finishing
        }
    }

    /// Records that the complete clips are being merged into the target now: a recording
    /// cut off before it says merged is then told from one cut off while recording.
    func mergeStarting() throws {
        try write(state.withLock { s in Self.update(&s) { $0.state = .merging } })
    }

    /// Records that the clips are complete (`merged`: and merged into the target).
    func recordingEnded(merged: Bool) throws {
        defer { releaseFolderLock() }
        try write(state.withLock { s in Self.update(&s) { $0.state = merged ? .merged : .stopped } })
    }

    /// Removes the manifest and, if it is then empty, the folder (never anything else).
    func removeManifestAndEmptyFolder() {
        state.withLock { $0.manifest = nil }
        unlink(folder.appendingPathComponent(Self.manifestName).path)
        releaseFolderLock()
        rmdir(folder.path)
    }

    /// Changes the manifest, if there is one, and returns it with its new generation.
    static func update(_ s: inout State, _ change: (inout ClipsManifest) -> Void) -> (ClipsManifest, Int)? {
        guard var manifest = s.manifest else { return nil }
        change(&manifest)
        s.manifest = manifest
        s.generation += 1
        return (manifest, s.generation)
    }

    /// Writes `manifest` unless a newer one has been written: under a new name, then renamed
    /// over the old, so that a crash leaves one or the other whole. Writes are one at a time
    /// (the recorder's two clips' threads both write it), the generation compared in turn. A
    /// folder gone from its place is followed (or made again) first, unless `follows` is
    /// `false` (the folder is being followed on this thread).
    func write(_ manifest: (ClipsManifest, Int)?, follows: Bool = true) throws {
        guard let (manifest, generation) = manifest else { return }
        for attempt in 1...2 {
            if follows, !FileManager.default.fileExists(atPath: folder.path) { try followFolder() }
            var into = folder
            do {
                try written.withLock { last in
                    guard generation > last else { return }
                    into = folder
                    try manifest.write(into: into)
                    last = generation
                }
                return
            } catch where follows && attempt == 1 && (into != folder || !FileManager.default.fileExists(atPath: into.path)) {
                // The folder was moved or deleted as the manifest was written into it (it is
                // written on the clips' threads, while someone tidies up): followed or made
                // again, and written there. Asked of the folder written into, not of the one
                // the session has now: the other clips' thread may have followed it meanwhile
                // (then the write failed at the old place and the new one exists; the error
                // ended the recording, 1 in ~3 quick tiers under load).
            }
        }
    }
}
