import Foundation
import ReelSystem

/// What an abort leaves in the clips folder: only what holds a recording.
extension RecordingSession {
    /// After an abort (``Recorder/abort()``): the clips not finished that hold no sample — the
    /// one being recorded, before its first part reached the disk: a header, or nothing —
    /// go, file and manifest entry, so that nothing undecodable that looks like a recording is
    /// left. A finished clip, or one that holds a part of the recording (finalised by a
    /// recovery), stays. When no clip is left, nothing was recorded: the manifest and the
    /// folder go too (the folder only if empty), and `true` is returned.
    ///
    /// Called with the folder still locked by this recording, before the lock is let go.
    func tidyAfterAbort() -> Bool {
        let (folder, finished, listed) = state.withLock { s in
            (s.folder, Set(s.manifest?.clips.filter(\.finished).map(\.file) ?? []), s.manifest != nil)
        }
        guard listed else { return false }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])
            .filter { Self.isClipName($0) && !finished.contains($0) }
        var removed = Set<String>()
        for name in names where Self.removeClipIfItHoldsNothing(folder.appendingPathComponent(name)) {
            removed.insert(name)
        }
        let (manifest, empty) = state.withLock { s -> ((ClipsManifest, Int)?, Bool) in
            let update = removed.isEmpty ? nil : Self.update(&s) { $0.clips.removeAll { removed.contains($0.file) } }
            return (update, s.manifest?.clips.isEmpty ?? false)
        }
        // A manifest that cannot be written (a full disk) still lists the clip: a recovery
        // then skips it as missing, which is what it is.
        try? write(manifest)
        guard empty else { return false }
        state.withLock { $0.manifest = nil }
        unlink(folder.appendingPathComponent(Self.manifestName).path)
        rmdir(folder.path)
        return true
    }

    /// Removes the clip file `url` if it holds nothing recorded (see ``clipHoldsNothing(_:)``):
    /// set aside under a hidden name first and checked again there, so that a file its writer
    /// filled meanwhile is put back, not lost.
    private static func removeClipIfItHoldsNothing(_ url: URL) -> Bool {
        guard let identity = FileIdentity(url), clipHoldsNothing(url) else { return false }
        let aside = FilePlacement.temporaryURL(beside: url, purpose: "aborted")
        guard rename(url.path, aside.path) == 0 else { return false }
        if FileIdentity(aside) == identity && clipHoldsNothing(aside) {
            unlink(aside.path)
            return true
        }
        rename(aside.path, url.path)
        return false
    }
}
