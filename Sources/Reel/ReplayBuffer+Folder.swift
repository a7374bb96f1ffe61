import Foundation
import ReelSystem
import ReelFFmpeg

// A folder of replay saves: made ready before a moment can be lost, tidied after a kill, and
// each save given a dated name of its own once it is complete.

extension ReplayBuffer {
    /// What ``prepareFolder(_:)`` found and did.
    public struct FolderPreparation: Sendable, Equatable {
        /// Whether the folder was made (it was not there).
        public var madeFolder = false
        /// Complete saves that a kill had left under their hidden temporary name, each now under
        /// a dated name of its own (the first free one).
        public var named: [URL] = []
        /// Saves a kill cut short before their index was written: kept where they are (hidden
        /// names, starting with a dot) for the app to point at or delete; they do not play.
        public var cutShort: [URL] = []
    }

    /// Makes `folder` if it is not there and checks that a file can be made in it, so that a
    /// folder that cannot take a save is found before a moment is lost; then deals with what
    /// saves cut off by a kill left in it: a second name of a save that got its own is removed
    /// (the save keeps its name), a complete save still under its hidden name is given a dated
    /// name, an unfinished one is kept and reported.
    ///
    /// - Throws: `.fileExists` when `folder` is a file, `.permissionDenied` (or the error of the
    ///   file system) when it cannot be made or written; nothing is left behind then.
    public static func prepareFolder(_ folder: URL) throws -> FolderPreparation {
        var report = FolderPreparation()
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: folder.path, isDirectory: &isFolder) {
            guard isFolder.boolValue else {
                throw ReelError(.fileExists, "\(folder.path) is a file, not a folder for replays", hint: LibraryHint.chooseReplayFolder)
            }
        } else {
            do {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                report.madeFolder = true
            } catch {
                let reason = ((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError).map { Syscall.describe(Int32($0.code)) }
                    ?? (error as NSError).localizedDescription
                throw ReelError(.permissionDenied, "cannot create \(folder.path) for the replays: \(reason)", hint: LibraryHint.chooseReplayFolder)
            }
        }
        let probe = FilePlacement.temporaryURL(beside: folder.appendingPathComponent("Reel"), purpose: "replay-probe")
        let fd = open(probe.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let e = errno
            if report.madeFolder { rmdir(folder.path) }
            let why = e == EROFS ? "it is on a read-only file system" : Syscall.describe(e)
            throw ReelError(Syscall.code(forErrno: e, absent: .ioFailure), "cannot save replays in \(folder.path): \(why)",
                            hint: LibraryHint.chooseWritableReplayFolder, errno: e)
        }
        close(fd)
        unlink(probe.path)
        tidyLeftovers(in: folder, into: &report)
        return report
    }

    /// What saves cut off by a kill left in `folder` (see ``prepareFolder(_:)``).
    private static func tidyLeftovers(in folder: URL, into report: inout FolderPreparation) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        for name in names.sorted() where name.hasPrefix(".") {
            guard let marker = name.range(of: ".replay-", options: .backwards), !name.contains(".replay-probe-") else { continue }
            let url = folder.appendingPathComponent(name)
            var info = stat()
            guard lstat(url.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, !Recovery.isBeingRecorded(url) else { continue }
            if info.st_nlink > 1 {
                unlink(url.path)
            } else if Recovery.isFinished(url) {
                let stem = String(name[name.index(after: name.startIndex)..<marker.lowerBound])
                let candidates = Recorder.numberedNames(in: folder, stem: stem.isEmpty ? "Reel replay" : stem, pathExtension: url.pathExtension)
                if let placed = try? FilePlacement.placeAtFirstFree(url, candidates: candidates, what: "the saved replay") {
                    report.named.append(placed)
                }
            } else {
                report.cutShort.append(url)
            }
        }
    }

    /// Writes what ``save(to:container:overwrite:)`` writes into `folder` under a new dated
    /// name (`Reel 2026-11-29 at 14.05.09.mp4`, numbered when taken), chosen once the file is
    /// complete: a crash meanwhile leaves no empty dated file (``prepareFolder(_:)`` names or
    /// reports what it leaves). A folder removed while recording is made again rather than the
    /// moment lost. The summary says where the save went.
    ///
    /// - Throws: as ``save(to:container:overwrite:)``; `.fileExists` when every numbered name
    ///   of the moment is taken.
    public func save(inFolder folder: URL, container: Container = .mp4, date: Date = Date()) async throws -> ReplaySummary {
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return try await save(toFirstFreeOf: Recorder.datedNames(in: folder, container: container, date: date), container: container)
    }
}
