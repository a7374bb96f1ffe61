import Foundation
import ReelCore
import ReelSystem

/// Where a recording's file is: the name it takes from a file it replaces, and where it went if
/// someone moved or deleted it while it was recorded.
extension MovieFileSink {
    /// Replaces the file this one is to replace once it holds something that plays: its first
    /// complete fragment is on the disk (packets are flushed as they are muxed), or, `finishing`,
    /// the recording is being finalised. Until then a kill leaves the old file as it was.
    func takeTheFilesName(finishing: Bool = false) throws {
        guard let target = replaces, finishing || !nameTakenByAnother else { return }
        if firstMediaEnd == nil, muxer.bytesWritten > mediaStart { firstMediaEnd = muxer.bytesWritten }
        // Written, not only queued, up to the end of that fragment: a kill from now on leaves
        // the new file playing.
        guard finishing || firstMediaEnd.map({ muxer.bytesOnDisk >= $0 }) == true else { return }
        // A rename ignores locks: a recording that another program began there meanwhile stays.
        try RecordingLock.checkNotBeingWritten(target)
        if let now = FileIdentity(itself: target), now != replacedFile {
            // Another file was put at the name while recording (the one to replace moved away):
            // the overwrite was not about that one. It stays; the recording keeps its own name
            // until it is finished, then takes a free one beside it.
            guard finishing else {
                nameTakenByAnother = true
                return
            }
            let stem = target.deletingPathExtension().lastPathComponent, folder = target.deletingLastPathComponent()
            let names = (2...99).map { folder.appendingPathComponent("\(stem) (\($0))").appendingPathExtension(target.pathExtension) }
            url = try FilePlacement.placeAtFirstFree(url, candidates: names, what: "the recording")
            replaces = nil
            tookTheName = true
            return
        }
        if rename(url.path, target.path) != 0 {
            throw Syscall.fileError(errno, creating: target, action: "replace")
        }
        url = target
        replaces = nil
        tookTheName = true
    }

    /// Finalises the file where it is now. Someone may have renamed or moved it (on the same
    /// disk) while it was recorded: it is finalised at its new name, which the summary gives.
    /// One deleted while recorded still has all its content behind the writer's lock: that is
    /// copied back to its name first (to a free name beside it if the name was taken again),
    /// rather than vanishing when the writer lets go.
    func followTheFile() throws {
        guard let lock else { return }
        switch lock.whereabouts(expected: url) {
        case .inPlace:
            return
        case .moved(let now):
            url = now
        case .deleted:
            // Back to its name; with nowhere left to write there (its folder deleted too, or
            // made read-only), to the first of the rescue folders that takes it.
            var failure: ReelError?
            for folder in [url.deletingLastPathComponent()] + rescueFolders {
                let rescue = FilePlacement.rescueName(for: folder.appendingPathComponent(url.lastPathComponent))
                do {
                    _ = try lock.copyContent(to: rescue)
                    url = rescue
                    return
                } catch let error as ReelError {
                    unlink(rescue.path)
                    failure = failure ?? error
                }
            }
            var error = failure ?? ReelError(.ioFailure, "cannot copy \(url.path) back")
            error.hint = "\(url.path) was deleted while it was recorded, and what was recorded could not be copied back "
                + "there nor to \(rescueFolders.map(\.path).joined(separator: ", "))"
            throw error
        }
    }

    /// Where a recording deleted while it was recorded is copied to when its own folder takes
    /// nothing more: the home folder, the working folder, /var/tmp and the temporary folder
    /// (those that exist).
    static var defaultRescueFolders: [URL] {
        let environment = ProcessInfo.processInfo.environment
        let candidates = [environment["HOME"], FileManager.default.currentDirectoryPath, "/var/tmp", environment["TMPDIR"] ?? "/tmp"]
        var seen = Set<String>()
        return candidates.compactMap { $0 }.filter { !$0.isEmpty && seen.insert($0).inserted }
            .filter { var folder: ObjCBool = false; return FileManager.default.fileExists(atPath: $0, isDirectory: &folder) && folder.boolValue }
            .map { URL(fileURLWithPath: $0, isDirectory: true) }
    }
}
