import Foundation

extension RecordingFile {
    /// What an abort (``Recorder/abort()``) left on the disk, and how to finish it: a value
    /// that an application words as it likes (`reel record` prints it on a second Ctrl-C).
    public struct AbortReport: Sendable, Hashable {
        /// What became of the recording.
        public enum Outcome: Sendable, Hashable {
            /// The recorder writes no file (a replay buffer or live streams only): nothing is left.
            case noFile
            /// Aborted before anything was recorded: no file of the recording's is left.
            case nothingRecorded
            /// Aborted before the first part of the recording reached the disk: nothing was
            /// recorded; `removedFile` when the recording's file (its header) was removed (in
            /// clip mode: its one clip, which held no sample, and the clips folder).
            case nothingReachedTheDisk(removedFile: Bool)
            /// The recording had been finished when the abort came: the file at the URL holds it.
            case finished(URL)
            /// Clip mode: the recording is in the clips in this folder (the file is made only
            /// by the merge at the stop): ``RecordingSession/recover(folder:to:overwrite:progress:)``
            /// merges them. Every clip left holds a part of the recording: one that held no
            /// sample yet (the clip being recorded, before its first part reached the disk) was
            /// removed.
            case clips(folder: URL)
            /// The file at the URL keeps what was recorded up to its last complete part (an
            /// MP4/MOV fragment, a Matroska cluster, an Ogg page, the last written samples),
            /// and ``recoveryTarget`` finishes it.
            case kept(URL, Placement)
            /// The file was deleted while it was recorded and what it held could not be copied
            /// back (nowhere to write it): nothing is kept.
            case lost(URL)
        }

        /// Where a kept recording is, and why there.
        public enum Placement: Sendable, Hashable {
            /// At its name.
            case atItsName
            /// Renamed or moved there (on the same disk) while it was recorded.
            case moved(from: URL)
            /// Deleted from this name while it was recorded, and copied back (to it, or to a
            /// free name beside it).
            case copiedBack(deletedFrom: URL)
            /// Under the hidden name the recording of a file that replaces another keeps until
            /// its first part is on the disk: it never took the name, which still holds the
            /// file it was to replace.
            case notYetNamed(URL)
            /// In the file the recording at the URL is made from at the stop (a GIF's
            /// intermediate recording), which it was not.
            case intermediate(of: URL)
            /// In that intermediate file, finished: the file at the URL was being made from it.
            case beingMade(URL)
        }

        /// What became of the recording.
        public var outcome: Outcome
        /// The file that was at the recording's name before it started (one the recording was
        /// to replace): left as it was.
        public var unchangedFile: URL?
        /// The unfinished copies a finalise by copying, or the making of a GIF at the stop,
        /// that the abort interrupted left beside the recording and could not remove (it
        /// removes them): not needed, and safe to delete.
        public var unfinishedCopies: [URL]
        /// The container the recording was written in.
        public var container: Container
        /// The playlists of the recording's HLS streams into folders (``LiveStream``s of a
        /// `.m3u8` file) that the abort left without their end, so that players would wait
        /// for more: ``PlaylistRecovery/close(_:)`` ends each (`reel recover FOLDER`).
        public var unendedPlaylists: [URL] = []
        /// What ``Recovery/recover(_:to:overwrite:progress:)`` (for a file) or
        /// ``RecordingSession/recover(folder:to:overwrite:progress:)`` (for clips) takes to
        /// finish the recording; `nil` when nothing is kept.
        public var recoveryTarget: URL? {
            switch outcome {
            case .clips(let folder): return folder
            case .kept(_, .intermediate(let of)), .kept(_, .beingMade(let of)): return of
            case .kept(let place, _): return place
            default: return nil
            }
        }
    }

    /// Removes the half-made copies this process was making beside `url` for `purpose` (its
    /// own by their names, which carry its process id): nothing needs them, and one left
    /// behind (empty, when the abort came as it began) was only in the way. Returns those it
    /// could not remove.
    /// For a process about to end at once (an abort that did not wait): removes the finalised
    /// copies this process was making beside the file, half made, which nothing would finish
    /// or remove. Returns those it could not remove.
    package func removeOwnUnfinishedCopies() -> [URL] {
        Self.removeOwnCopies(beside: url, purpose: "finalising")
    }

    private static func removeOwnCopies(beside url: URL, purpose: String) -> [URL] {
        FilePlacement.temporaryFiles(beside: url, purposes: [purpose], pid: getpid()).filter { copy in
            if case .failure(let error) = Syscall.attempt({ unlink(copy.path) }) { return error.rawValue != ENOENT }
            return false
        }
    }

    /// What an abort leaves of the recording into this file, and makes safe to leave. The
    /// recording's file is told by what this process holds open, never by its name alone: a
    /// file the user put at the name is never touched. One that holds nothing recorded yet
    /// (its header, a torn first part) is removed; one renamed meanwhile is named where it is
    /// now; one deleted meanwhile is copied back from the open file first.
    ///
    /// - Parameters:
    ///   - container: what the recording is written in.
    ///   - clipsFolder: in clip mode, the clips' folder.
    ///   - intermediate: the file recorded into until the stop, for a file made then (a GIF).
    ///   - earlierFile: the file at the name before the recording began (one it replaces).
    ///   - recordingFile: the recording's file, once known.
    ///   - finaliseGate: the gate of that file's finalise (see `FinaliseGate`), once known.
    package func abandon(container: Container, clipsFolder: URL?, intermediate: URL?, earlierFile: FileIdentity?,
                         recordingFile: FileIdentity?, finaliseGate: FinaliseGate? = nil) -> AbortReport {
        var report = AbortReport(outcome: .nothingRecorded, unchangedFile: nil, unfinishedCopies: [], container: container)
        if let earlierFile, FileIdentity(url) == earlierFile { report.unchangedFile = url }
        if let clipsFolder, FileManager.default.fileExists(atPath: clipsFolder.path) {
            report.outcome = .clips(folder: clipsFolder)
            report.unchangedFile = nil
            return report
        }
        if let intermediate {
            report.outcome = abandon(intermediate: intermediate, unchanged: report.unchangedFile != nil, gate: finaliseGate)
            // The file this process was making from it at the stop, half made.
            report.unfinishedCopies = Self.removeOwnCopies(beside: url, purpose: "converting")
            return report
        }
        // Replacing a file, the new recording keeps a hidden name of its own until its first
        // fragment is on the disk; the name, or the hidden one, if this process has it open.
        let held = recordingFile.flatMap(OpenFile.find) ?? Self.heldFile(for: url)
        // The stop may be finalising the file: that is given up first, between two of its steps
        // (see `FinaliseGate`), so that the file is not changed while it is looked at; if it
        // was complete by then, the recording is finished, wherever the finalised file is (a
        // compact copy that took the file's place is another file). Given up, the finalise
        // lets the file go at once: it is the one found open before.
        if let finished = finaliseGate?.giveUp() {
            report.outcome = .finished(finished)
            report.unchangedFile = nil
            return report
        }
        guard let file = held else {
            // Not open any more: the stop has finished it (a sound file finishes in a moment).
            if let now = FileIdentity(url), now != earlierFile, recordingFile == nil || recordingFile == now, Recovery.isFinished(url) {
                report.outcome = .finished(url)
            }
            return report
        }
        var place: URL
        if file.isDeleted {
            if Recovery.holdsNothingRecorded(file.descriptorPath) {
                report.outcome = .nothingReachedTheDisk(removedFile: false)
                return report
            }
            // Deleted while it was recorded: what it holds is copied back, or it goes with us.
            guard let rescue = try? OpenFile.copyBack(file, to: url) else {
                report.outcome = .lost(url)
                return report
            }
            place = rescue
        } else {
            place = file.path
            if Self.removeIfItHoldsNothing(place, identity: file.identity) {
                report.outcome = .nothingReachedTheDisk(removedFile: true)
                return report
            }
        }
        // The writer runs on: it may have given the file the name meanwhile (a replacement's
        // first fragment is on the disk); where it is now.
        if !file.isDeleted, let again = OpenFile.find(file.identity), !again.isDeleted { place = again.path }
        let placement: AbortReport.Placement
        if FilePlacement.maker(of: place, beside: url, purpose: "new") == getpid() {
            placement = .notYetNamed(url)
        } else if file.isDeleted {
            placement = .copiedBack(deletedFrom: url)
        } else {
            placement = place.path == url.path ? .atItsName : .moved(from: url)
        }
        report.outcome = .kept(place, placement)
        report.unfinishedCopies = Self.removeOwnCopies(beside: place, purpose: "finalising")
        return report
    }

    /// The recording's file this process holds open: the hidden file of a replacement, or the
    /// name itself.
    static func heldFile(for url: URL) -> OpenFile? {
        let candidates = FilePlacement.temporaryFiles(beside: url, purposes: ["new"], pid: getpid()) + [url]
        return candidates.lazy.compactMap { OpenFile.held(at: $0) }.first
    }

    /// What an abort leaves of a recording made at the stop from `intermediate` (a GIF): the
    /// intermediate, removed if it holds nothing.
    private func abandon(intermediate: URL, unchanged: Bool, gate: FinaliseGate?) -> AbortReport.Outcome {
        // Its finalise, if under way, is given up first: not changed while it is looked at.
        // Looked for before: given up, the finalise lets the file go at once, and the file is
        // then the intermediate as the abort left it, not one the stop finished and is making
        // the GIF of.
        let open = OpenFile.held(at: intermediate)
        let finalised = gate?.giveUp() != nil
        guard let file = open, !finalised else {
            // Closed, or finalised: the stop finished it, and it is being made into the GIF, or was.
            if FileManager.default.fileExists(atPath: intermediate.path) { return .kept(intermediate, .beingMade(url)) }
            if FileIdentity(url) != nil, !unchanged { return .finished(url) }
            return .nothingRecorded
        }
        if file.isDeleted {
            guard !Recovery.holdsNothingRecorded(file.descriptorPath), let rescue = try? OpenFile.copyBack(file, to: intermediate) else {
                return .lost(intermediate)
            }
            return .kept(rescue, .copiedBack(deletedFrom: intermediate))
        }
        if Self.removeIfItHoldsNothing(file.path, identity: file.identity) { return .nothingReachedTheDisk(removedFile: true) }
        return .kept(file.path, .intermediate(of: url))
    }
}
