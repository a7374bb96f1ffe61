import Foundation
import ReelFFmpeg
import ReelSystem

extension RecordingSession {
    /// What ``RecordingSession/recover(folder:to:overwrite:progress:)`` made of a clips folder.
    public struct RecoveredRecording: Sendable, Hashable {
        /// The merged file.
        public var url: URL
        /// The clips folder.
        public var folder: URL
        /// How many clips were merged.
        public var clipCount: Int
        /// The clips that a crash or an abort had cut off, finalised (in place) before merging.
        public var finalisedClips: [URL]
        /// Clips the manifest lists that were left out: missing, or cut off before they held
        /// anything.
        public var skippedClips: [String]
        /// Clips the manifest lists whose files are gone (deleted or moved away after they were
        /// made; the one being recorded when the recording was cut off too): what they held is
        /// not in the merged file, which is then incomplete. Also in ``skippedClips``.
        public var missingClips: [String] = []
        /// The merged file's duration.
        public var duration: MediaTime
        /// Video frames in the merged file.
        public var videoFrames: Int64
        /// Whether the clips' files were removed (after the merged file was read back and found
        /// to hold every frame of them). They stay when the recording asked to keep them, when
        /// the folder has no manifest, or when a clip could not be read.
        public var removedClips: Bool
        /// The video frames the merged clips lost while they were recorded, by why, as their
        /// recorder kept them in the manifest, as ``Clip/frameDrops`` said them then: none for
        /// a clip the recorder did not finish (cut off while it was recorded), nor for a
        /// folder without a manifest or whose recorder kept no drops.
        public var frameDrops = FrameDrops()

        /// Packets that merged clips list and do not play, each clip whole on the disk, left
        /// out of the merged file (see ``MergeSummary/packetsLeftOut``; `clip` counts the clips
        /// merged): the clips are kept then.
        public var packetsLeftOut: [MergeSummary.PacketsLeftOut] = []

        /// The markers of the clips that begin at or after the merged file's end (placed just
        /// before a kill, after what could be recovered), left out of it (see
        /// ``MergeSummary/leftOutMarkers``): on its timeline.
        public var leftOutMarkers: [Chapter] = []

        /// Whether the merged file was there already: an earlier merge of these clips (the
        /// recorder's at its stop, or an earlier recovery) made it and was cut off before it
        /// said so; this recovery checked it and finished that merge's tidy instead of merging again.
        public var finishedEarlierMerge = false

        /// The video frames the merged clips lost while they were recorded (``frameDrops`` in all).
        public var droppedFrames: Int64 { frameDrops.total }
    }

    /// The clips folder that `url` stands for in `reel recover`: `url` itself if it is a
    /// folder; for a recording file that does not exist, its ``defaultFolder(for:)`` if that
    /// holds a manifest. `nil` otherwise (a file to recover as it is).
    public static func clipsFolder(toRecover url: URL) -> URL? {
        var info = stat()
        if stat(url.path, &info) == 0 {
            return (info.st_mode & S_IFMT) == S_IFDIR ? url : nil
        }
        let folder = defaultFolder(for: url)
        return FileManager.default.fileExists(atPath: folder.appendingPathComponent(manifestName).path) ? folder : nil
    }

    /// The file the clips in `folder` were recorded for, if its manifest says so (`nil` for a
    /// folder without one).
    public static func recordedTarget(ofClipsIn folder: URL) -> URL? {
        (try? ClipsManifest.read(in: folder)).map { URL(fileURLWithPath: $0.target) }
    }

    /// The clips folders directly inside `folder` whose recording was never merged (cut off by a
    /// crash or an abort, or a merge that failed) and whose file does not exist.
    public static func unmergedRecordings(in folder: URL) -> [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().map { folder.appendingPathComponent($0, isDirectory: true) }.filter(holdsUnmergedRecording)
    }

    /// Whether `candidate` is a clips folder whose recording was never merged and whose file
    /// does not exist: ``unmergedRecordings(in:)`` for one folder, which a recording's
    /// preflight asks about its own clips folder without reading every folder beside it.
    static func holdsUnmergedRecording(_ candidate: URL) -> Bool {
        guard let manifest = try? ClipsManifest.read(in: candidate), manifest.state != .merged,
              !FileManager.default.fileExists(atPath: manifest.target) else { return false }
        return !isInUse(candidate) && emptyLeftoverClips(candidate, manifest: manifest) == nil
    }

    /// A recorder cut off after its merge's file took its name but before it said so: the
    /// target, written after the manifest said `merging`, holds every frame (and, without
    /// video, every second of sound) of the finished clips. The recorder's work is finished:
    /// the clips go (unless kept) and the recovery is the target. `nil` when that is not so.
    private static func finishedMerge(folder: URL, manifest: ClipsManifest) throws -> RecoveredRecording? {
        guard manifest.state == .merging, !manifest.clips.isEmpty, manifest.clips.allSatisfy(\.finished) else { return nil }
        let target = URL(fileURLWithPath: manifest.target)
        let attributes = { (url: URL) in try? FileManager.default.attributesOfItem(atPath: url.path) }
        guard let written = attributes(target)?[.modificationDate] as? Date,
              let said = attributes(folder.appendingPathComponent(manifestName))?[.modificationDate] as? Date,
              written >= said, !Recovery.isCutOff(target), let count = try? PacketCount.count(target) else { return nil }
        let frames = manifest.clips.reduce(Int64(0)) { $0 + ($1.frames ?? 0) }
        let seconds = manifest.clips.reduce(0.0) { $0 + ($1.duration ?? 0) }
        if frames > 0 {
            guard count.videoPackets == frames else { return nil }
        } else {
            guard count.audioPackets > 0, count.holdsAudio(of: seconds, clips: manifest.clips.count) else { return nil }
        }
        removeTemporaryName(of: target)
        if !manifest.keepsClips {
            for entry in manifest.clips { unlink(folder.appendingPathComponent(entry.file).path) }
        }
        unlink(folder.appendingPathComponent(manifestName).path)
        rmdir(folder.path)
        return RecoveredRecording(url: target, folder: folder, clipCount: manifest.clips.count, finalisedClips: [], skippedClips: [],
                                  duration: MediaTime(seconds: seconds),
                                  videoFrames: count.videoPackets, removedClips: !manifest.keepsClips,
                                  frameDrops: manifest.clips.reduce(into: FrameDrops()) { $0.add($1.frameDrops) },
                                  finishedEarlierMerge: true)
    }

    /// Removes the temporary name a merge cut off between the hard link that named its file
    /// `target` and the unlink of that name left beside it: the same file (device and inode)
    /// under a second, hidden name — nothing goes with it (else it was pointed out as an
    /// unfinished copy to delete by hand).
    private static func removeTemporaryName(of target: URL) {
        let placed = FileIdentity.followingLinks(target)
        guard let file = FileIdentity(itself: placed) else { return }
        for name in FilePlacement.temporaryFiles(beside: placed, purposes: ["merging"]) where FileIdentity(itself: name) == file {
            unlink(name.path)
        }
    }

    /// Makes the clips of a recording cut off in clip mode (a crash, a kill, an abort, a failed
    /// merge) into the file they were recorded for: each clip that was cut off is finalised in
    /// place (``Recovery/recover(_:to:overwrite:progress:)``), then the clips are merged in order, muted
    /// ones silent, into `output` — by default the file the manifest names (for a folder
    /// without a manifest, `NAME.clips` gives `NAME.EXT` beside it; so does a clips folder
    /// copied, moved or renamed since its manifest was written).
    ///
    /// The file written (`output`, or the file the manifest names) is replaced only with
    /// `overwrite`: without it, if the file exists the merge is refused and the clips stay. Once the merged
    /// file is complete it is read back; only if it holds every frame of the clips (and no clip
    /// listed is missing: one moved away can be put back, and the folder merged again) are their
    /// files removed (and the manifest, and the folder if then empty), unless the recording
    /// asked to keep them.
    ///
    /// `progress` hears how far the merge has come (see ``Merger/merge(_:to:options:progress:)``).
    public static func recover(folder: URL, to output: URL? = nil, overwrite: Bool = false,
                               progress: (@Sendable (WorkProgress) -> Void)? = nil) throws -> RecoveredRecording {
        var info = stat()
        guard stat(folder.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw ReelError(.ioFailure, "\(folder.path) is not a folder of clips", hint: "give the clips folder or the recording's file name")
        }
        if isInUse(folder) {
            throw ReelError(.busy, "\(folder.path) is being recorded into right now\(RecordingLock.holder(of: folder).map { " (\($0))" } ?? "")",
                            hint: "wait until that recording stops; it merges its clips itself")
        }
        var manifest = try ClipsManifest.read(in: folder)
        if let manifest, removeEmptyLeftover(folder, manifest: manifest) {
            // Cut off before its first clip held anything: nothing was recorded. Its empty clip
            // files and the manifest (and the folder, if nothing else is in it) go, so that the
            // name is free again.
            rmdir(folder.path)
            throw ReelError(.nothingRecorded, "\(folder.path) held no clips: its recording was cut off before anything was recorded on the disk, so there is nothing to recover",
                            hint: "what it may have recorded in its first second was still in memory and ended with it; "
                                + "the empty clips folder was tidied away, so \(URL(fileURLWithPath: manifest.target).lastPathComponent) can be recorded again")
        }
        if let manifest, let done = try finishedMerge(folder: folder, manifest: manifest) { return done }
        if let manifest, manifest.state == .merged {
            // Merged, then cut off while the clips were being removed: the file holds them all.
            throw ReelError(.nothingRecorded, "the clips in \(folder.path) were merged into \(manifest.target) already; nothing to recover",
                            hint: "\(manifest.target) holds the recording; what is left in the folder can be deleted")
        }
        var entries: [ClipsManifest.Entry]
        if let manifest {
            entries = manifest.clips
        } else {
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter(isClipName).sorted()
            entries = names.map { ClipsManifest.Entry(file: $0, muted: false, finished: false) }
        }
        guard manifest != nil || !entries.isEmpty else {
            throw ReelError(.invalidMedia, "\(folder.path) is a folder without the clips of a recording",
                            hint: "give the recording's file, or the clips folder of a recording in clip mode")
        }
        guard !entries.isEmpty else {
            throw ReelError(.nothingRecorded, "\(folder.path) holds no clips", hint: "the recording was cut off before its first clip held anything")
        }
        var outputFolder: ObjCBool = false
        let intoFolder = output.map { FileManager.default.fileExists(atPath: $0.path, isDirectory: &outputFolder) && outputFolder.boolValue } ?? false
        let target: URL
        if let output, !intoFolder {
            target = output
        } else if let manifest {
            // Where it was recorded for; `-o FOLDER` keeps the name and changes the place. A
            // folder that is not where its manifest was last written was copied, moved or
            // renamed since: the merge goes beside it (s46, s47 #4: into the path the manifest
            // names, wherever the copy was), `NAME.clips` giving `NAME.EXT`, another name the
            // recording's.
            var recorded = URL(fileURLWithPath: manifest.target)
            if let written = manifest.folder, FileIdentity(URL(fileURLWithPath: written)) != FileIdentity(folder) {
                let name = folder.lastPathComponent
                let stem = name.hasSuffix(".clips") && name.count > 6 ? String(name.dropLast(6)) : recorded.deletingPathExtension().lastPathComponent
                recorded = folder.deletingLastPathComponent().appendingPathComponent(stem).appendingPathExtension(recorded.pathExtension)
            }
            target = output.map { $0.appendingPathComponent(recorded.lastPathComponent) } ?? recorded
            if output == nil, !FileManager.default.fileExists(atPath: recorded.deletingLastPathComponent().path) {
                throw ReelError(.invalidConfiguration, "the clips in \(folder.path) were recorded for \(recorded.path), whose folder no longer exists",
                                hint: LibraryHint.mergeTheClipsElsewhere(folder.path))
            }
        } else {
            let name = folder.lastPathComponent
            guard name.hasSuffix(".clips"), name.count > 6 else {
                throw ReelError(.invalidConfiguration, "\(folder.path) has no manifest saying which file its clips are for",
                                hint: "name the merged file")
            }
            let ext = URL(fileURLWithPath: entries[0].file).pathExtension
            let file = URL(fileURLWithPath: String(name.dropLast(6))).appendingPathExtension(ext).lastPathComponent
            target = (output ?? folder.deletingLastPathComponent()).appendingPathComponent(file)
        }
        // The file there may be the merge an earlier recovery made, cut off before it said
        // merged (decided once the clips are read: of these very clips). Any other file there
        // is refused as before.
        let madeEarlier = manifest?.merge.flatMap { $0.isFile(at: target) ? $0 : nil }
        let taken = ReelError(.fileExists, "\(target.path) already exists, so the clips in \(folder.path) were not merged into it",
                              hint: "they stay there; \(LibraryHint.mergeTheClipsElsewhere(folder.path))")
        if !overwrite && madeEarlier == nil && FileManager.default.fileExists(atPath: target.path) { throw taken }

        var inputs: [MergeInput] = []
        var finalised: [URL] = []
        var skipped: [String] = []
        var missing: [String] = []
        var unreadable = false
        var frames: Int64 = 0
        var hasAudio = false
        var audioSeconds = 0.0
        var drops = FrameDrops()
        for (i, entry) in entries.enumerated() {
            let url = folder.appendingPathComponent(entry.file)
            guard FileManager.default.fileExists(atPath: url.path) else {
                skipped.append(entry.file)
                // Listed once its file was made: gone since (deleted, moved away), finished or not.
                if manifest != nil { missing.append(entry.file) }
                continue
            }
            if Recovery.isCutOff(url) {
                _ = try Recovery.recover(url)
                finalised.append(url)
            }
            let count: PacketCount
            do {
                count = try PacketCount.count(url)
            } catch {
                // A clip the recorder finished must read; one it did not may have been cut off
                // before it held anything.
                if entry.finished { throw error }
                skipped.append(entry.file)
                unreadable = true
                continue
            }
            guard count.videoPackets > 0 || count.audioPackets > 0 else {
                skipped.append(entry.file)
                continue
            }
            frames += count.videoPackets
            hasAudio = hasAudio || count.audioPackets > 0
            audioSeconds += count.audioSeconds
            inputs.append(MergeInput(url: url, isMuted: entry.muted, chapters: (entry.chapters ?? []).map(\.chapter), soundMayBeMissing: true))
            drops.add(entry.frameDrops)
            if manifest != nil, !entry.finished {
                manifest!.clips[i].finished = true
                manifest!.clips[i].frames = count.videoPackets
                // Bookkeeping for a later recovery: a full disk under the clips (the merged
                // file may go to another) does not stop this one.
                try? manifest!.write(into: folder, stamping: false)
            }
        }
        guard !inputs.isEmpty else {
            // Clips of no manifest that all hold nothing: nothing was recorded; they go, so
            // that the name is free again.
            if manifest == nil, skipped.count == entries.count,
               emptyUnlistedClips(in: folder, listed: []).count == entries.count {
                for entry in entries { unlink(folder.appendingPathComponent(entry.file).path) }
                rmdir(folder.path)
                throw ReelError(.nothingRecorded, "none of the clips in \(folder.path) holds anything: its recording was cut off before anything was recorded on the disk, so there is nothing to recover",
                                hint: "the empty clips were tidied away, so the name can be recorded again")
            }
            throw ReelError(.nothingRecorded, "none of the clips in \(folder.path) holds anything",
                            hint: "the recording was cut off before its first clip held anything")
        }
        // The earlier recovery's merge of these clips: its work is finished here (checked as a
        // merge is), never merged again beside it. A merge of other clips (one was missing
        // then) is a file like any other.
        let earlierMerge = madeEarlier.flatMap { $0.clips == inputs.map(\.url.lastPathComponent) ? $0 : nil }
        if madeEarlier != nil && earlierMerge == nil && !overwrite { throw taken }
        var duration = MediaTime.zero
        var packetsLeftOut: [MergeSummary.PacketsLeftOut] = []
        var leftOutMarkers: [Chapter] = []
        if earlierMerge == nil {
            let merged = try Merger.merge(inputs, to: target, options: MergeOptions(overwrite: overwrite), beforePlacing: { complete, leftOut in
                // Noted on the disk before the file takes its name (see ClipsManifest.merge); a
                // full disk under the clips (the merged file may go to another) does not stop it.
                // With a clip missing the folder is kept on purpose, its merge not to be finished
                // by a later recovery (which would say an earlier one was cut off): not noted.
                guard missing.isEmpty, var noted = manifest, let file = FileIdentity(complete), let bytes = FileIdentity.size(of: complete) else { return }
                noted.merge = ClipsManifest.MergedFile(device: file.device, inode: file.inode, bytes: bytes,
                                                       clips: inputs.map(\.url.lastPathComponent), leftPacketsOut: !leftOut.isEmpty)
                if (try? noted.write(into: folder, stamping: false)) != nil { manifest = noted }
            }, progress: progress)
            duration = merged.duration
            packetsLeftOut = merged.packetsLeftOut
            leftOutMarkers = merged.leftOutMarkers
        }
        // Read back what is on disk before anything is removed.
        let check = try PacketCount.count(target)
        if earlierMerge != nil { duration = MediaTime(seconds: max(check.videoEnd, check.audioEnd)) }
        guard check.videoPackets == frames, !hasAudio || check.audioPackets > 0 else {
            throw ReelError(.encodingFailed, "the merged file \(target.path) holds \(check.videoPackets) frames but the clips \(frames)",
                            hint: "the clips are kept in \(folder.path)")
        }
        // Without video no frame count tells a loss: the seconds of sound must all be there.
        guard frames > 0 || check.holdsAudio(of: audioSeconds, clips: inputs.count) else {
            throw ReelError(.encodingFailed, "the merged file \(target.path) holds \(String(format: "%.2f", check.audioSeconds)) s of sound but the clips \(String(format: "%.2f", audioSeconds)) s",
                            hint: "the clips are kept in \(folder.path)")
        }
        if earlierMerge != nil { removeTemporaryName(of: target) }
        var removed = false
        // A clip listed and gone (moved away, perhaps to be put back): the folder stays as it
        // was, its manifest and clips with it, so that the recording can be merged again whole
        // (s47 #8: the other clips and the manifest were removed).
        if let manifest, missing.isEmpty {
            var done = manifest
            done.state = .merged
            // Said merged before a clip goes (a kill between leaves a folder recover knows is
            // done); where that cannot be written (a full disk), the clips stay.
            let saidMerged = (try? done.write(into: folder, stamping: false)) != nil
            // Clips with packets the merged file leaves out (listed, not played) stay too.
            if saidMerged && !manifest.keepsClips && !unreadable && packetsLeftOut.isEmpty && earlierMerge?.leftPacketsOut != true {
                for entry in entries {
                    let clip = folder.appendingPathComponent(entry.file)
                    try? FileManager.default.removeItem(at: clip)
                    // The unfinished copy a clip's finalise left when it was killed (its maker
                    // gone): the clip is in the merged file now; it kept the folder for ever.
                    let purposes = ["finalising", "recovering"]
                    _ = LeftoverCopies.tidy(LeftoverCopies.beside(clip, purposes: purposes), purposes: purposes)
                }
                removed = true
            }
            if saidMerged { unlink(folder.appendingPathComponent(manifestName).path) }
            // A clip the recorder had just made when it was killed (made ahead at a pause, for
            // the resume) holds nothing and is in no manifest: it would keep the folder, and
            // block the name, for ever; among kept clips it is no clip.
            if saidMerged { for leftover in emptyUnlistedClips(in: folder, listed: Set(entries.map(\.file))) { unlink(leftover.path) } }
            rmdir(folder.path)  // only if empty
        }
        var recovered = RecoveredRecording(url: target, folder: folder, clipCount: inputs.count, finalisedClips: finalised,
                                           skippedClips: skipped, missingClips: missing, duration: duration,
                                           videoFrames: check.videoPackets, removedClips: removed, frameDrops: drops,
                                           packetsLeftOut: packetsLeftOut, finishedEarlierMerge: earlierMerge != nil)
        recovered.leftOutMarkers = leftOutMarkers
        return recovered
    }

    /// The clip files in `folder` not named in `listed` that hold nothing (no packet, or not
    /// even a header: a clip the recorder had just made when it was killed).
    static func emptyUnlistedClips(in folder: URL, listed: Set<String>) -> [URL] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { isClipName($0) && !listed.contains($0) }
        return names.map { folder.appendingPathComponent($0) }.filter(clipHoldsNothing)
    }

    /// Whether the clip file `url` holds nothing recorded: it is empty, holds no packet, or
    /// (unreadable as a whole) is the start of a recording with nothing in it yet. The one
    /// test of a clip that may be tidied away.
    static func clipHoldsNothing(_ url: URL) -> Bool {
        if FileIdentity.size(of: url) == 0 { return true }
        guard let count = try? PacketCount.count(url) else { return Recovery.holdsNothingRecorded(url) }
        return count.videoPackets == 0 && count.audioPackets == 0
    }
}

extension RecordingSession {
    /// Whether `name` is what a recorder calls a clip file (`clip-001.mp4`).
    static func isClipName(_ name: String) -> Bool {
        let parts = name.split(separator: ".")
        guard parts.count == 2, Container(pathExtension: String(parts[1])) != nil, parts[0].hasPrefix("clip-") else { return false }
        let number = parts[0].dropFirst(5)
        return number.count >= 3 && number.allSatisfy { $0.isASCII && $0.isNumber }
    }

    static func recoverHint(folder: URL, otherwise: String) -> String {
        "\(LibraryHint.mergeTheClips(folder.path)); \(otherwise)"
    }
}
