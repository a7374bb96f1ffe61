import Foundation
import ReelSystem

/// What became of a recording's clips folder while it was recorded — someone renamed, moved or
/// deleted it — and what the recorder did about it, so that nothing recorded after it is lost
/// and what was lost is said (``RecordingEvent/clipsFolderChanged(_:)``).
public enum ClipsFolderChange: Sendable, Hashable {
    /// Renamed or moved on the same disk, from `from` to `to`: the recording follows it. The
    /// clips in it are there, the next ones go there, and the merge takes them from there.
    case moved(from: URL, to: URL)
    /// Deleted (or moved to another disk, which copies and deletes): made again at its name,
    /// where the recording goes on. `lostClips` are the finished clips that were in it: the
    /// merged file lacks them (``RecordingSummary/lostClips``). The clip being recorded is not
    /// lost: its writer holds it, and it is copied into the new folder when it ends.
    case remade(URL, lostClips: [URL])
}

/// Following the clips folder while a recorder records into it.
extension RecordingSession {
    /// Finished clips whose files went before they could be merged — their folder deleted
    /// while recorded, or the files themselves removed — in the order they were recorded.
    public var lostClips: [URL] { state.withLock { $0.lostClips } }

    /// Who hears what became of the folder while recorded: the recorder that owns the session.
    package func setFolderChangeHandler(_ handler: (@Sendable (ClipsFolderChange) -> Void)?) {
        state.withLock { $0.folderChanged = handler }
    }

    /// Checks where the folder is now, while a recorder records into it (the lock it holds on
    /// the folder tells): renamed or moved on the same disk, the session follows it (its clips'
    /// URLs too); deleted, it is made again at its name and the clips that were in it are
    /// counted lost. Either is said to the folder's listener. Called before each clip's file is
    /// made or finished and once a second while recording.
    /// - Throws: when a deleted folder cannot be made again (its parent gone read-only, the disk
    ///   full): the clip being recorded is then copied to a rescue folder by its writer.
    func followFolder() throws {
        try following.withLock { _ in
            let (lock, folder, recording) = state.withLock { ($0.folderLock, $0.folder, $0.manifest != nil) }
            guard recording else { return }
            let whereabouts = lock?.whereabouts(expected: folder)
                ?? (FileManager.default.fileExists(atPath: folder.path) ? .inPlace : .deleted)
            switch whereabouts {
            case .inPlace:
                return
            case .moved(let now):
                let handler = state.withLock { s -> (@Sendable (ClipsFolderChange) -> Void)? in
                    s.folder = now
                    for i in s.clips.indices where s.clips[i].url.deletingLastPathComponent().standardizedFileURL == folder.standardizedFileURL {
                        s.clips[i].url = now.appendingPathComponent(s.clips[i].url.lastPathComponent)
                    }
                    return s.folderChanged
                }
                handler?(.moved(from: folder, to: now))
            case .deleted:
                try remake(folder)
            }
        }
    }

    /// Makes the deleted folder again at its name, locks it, counts the clips that were in it
    /// lost and writes the manifest there (still listing them: a recovery after a crash names
    /// them missing). Deleted again as that is done (someone tidying up), it is made again, a
    /// few times. Called holding ``following``: the manifest's write does not follow the folder
    /// itself (that took the lock again on the same thread, which never returns).
    private func remake(_ folder: URL) throws {
        var lost: [URL] = []
        for attempt in 1...3 {
            do {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            } catch {
                let e = ((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError)?.code ?? Int(EIO)
                var failure = Self.folderError(Int32(e), folder)
                failure.message = "\(folder.path), the folder of the clips, was deleted while recorded, and cannot be made again: \(failure.message)"
                throw failure
            }
            let lock = try? RecordingLock.lockExisting(folder, exclusive: true)
            let manifest = state.withLock { s in
                s.folderLock?.release()
                s.folderLock = lock
                s.createdFolder = true
                let gone = s.clips.map(\.url).filter { !FileManager.default.fileExists(atPath: $0.path) }
                s.clips.removeAll { gone.contains($0.url) }
                s.lostClips += gone
                lost += gone
                return Self.update(&s) { _ in }
            }
            do {
                try write(manifest, follows: false)
                break
            } catch where attempt < 3 && !FileManager.default.fileExists(atPath: folder.path) {
                // Deleted again as the manifest was written: made again.
            }
        }
        let handler = state.withLock { $0.folderChanged }
        handler?(.remade(folder, lostClips: lost))
    }

    /// Takes out of the session the finished clips whose files are gone (removed by someone
    /// while recorded), counting them lost; returns every clip lost so far.
    func setAsideMissingClips() -> [URL] {
        state.withLock { s in
            let missing = s.clips.map(\.url).filter { !FileManager.default.fileExists(atPath: $0.path) }
            s.clips.removeAll { missing.contains($0.url) }
            s.lostClips += missing
            return s.lostClips
        }
    }
}
