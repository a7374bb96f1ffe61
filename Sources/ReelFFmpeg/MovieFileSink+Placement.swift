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
        guard let target = placement.replacing else { return }
        if case .displaced = placement.state, !finishing { return }
        if firstMediaEnd == nil, muxer.bytesWritten > mediaStart { firstMediaEnd = muxer.bytesWritten }
        // Written, not only queued, up to the end of that fragment: a kill from now on leaves
        // the new file playing.
        guard finishing || firstMediaEnd.map({ muxer.bytesOnDisk >= $0 }) == true else { return }
        // A rename ignores locks: a recording that another program began there meanwhile stays.
        try RecordingLock.checkNotBeingWritten(target)
        // Another file put at the name while recording (the one to replace moved away): the
        // overwrite was not about that one. It stays; the recording keeps its own name until it
        // is finished, then takes a free one beside it.
        let stem = target.deletingPathExtension().lastPathComponent, folder = target.deletingLastPathComponent()
        let names = (2...99).map { folder.appendingPathComponent("\(stem) (\($0))").appendingPathExtension(target.pathExtension) }
        switch placement.firstPartOnDisk(finishing: finishing, atTarget: FileIdentity(itself: target), beside: names) {
        case .replace(let file, let target):
            if rename(file.path, target.path) != 0 {
                throw Syscall.fileError(errno, creating: target, action: "replace")
            }
            placement.named(target)
            chaptersTakeTheName()
        case .placeAtFirstFree(let file, let candidates):
            placement.named(try FilePlacement.placeAtFirstFree(file, candidates: candidates, what: "the recording"))
        default:
            return
        }
    }

    /// Finalises the file where it is now. Someone may have renamed or moved it (on the same
    /// disk) while it was recorded: it is finalised at its new name, which the summary gives.
    /// One deleted while recorded still has all its content behind the writer's lock: that is
    /// copied back to its name first (to a free name beside it if the name was taken again),
    /// rather than vanishing when the writer lets go; with nowhere left to write there (its
    /// folder deleted too, or made read-only), to the first of the rescue folders that takes it.
    func followTheFile() throws {
        guard let lock else { return }
        guard case .copyBack(let name, let folders) = placement.found(lock.whereabouts(expected: url), rescueFolders: rescueFolders)
        else { return }
        var failure: ReelError?
        for folder in folders {
            let rescue = FilePlacement.rescueName(for: folder.appendingPathComponent(name.lastPathComponent))
            do {
                _ = try lock.copyContent(to: rescue)
                placement.named(rescue)
                return
            } catch let error as ReelError {
                unlink(rescue.path)
                failure = failure ?? error
            }
        }
        var error = failure ?? ReelError(.ioFailure, "cannot copy \(name.path) back")
        error.hint = "\(name.path) was deleted while it was recorded, and what was recorded could not be copied back "
            + "there nor to \(rescueFolders.map(\.path).joined(separator: ", "))"
        throw error
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
