#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// A recording's file as the library keeps it safe: the checks before a recording starts
/// (``preflight(overwrite:pauseMode:clipsFolder:inputs:minimumFreeSpace:)``), the tidying of
/// what a killed recording of the same name left (``tidyLeftovers()``), and what an abort
/// leaves and how to finish it (``AbortReport``, from ``Recorder/abort()``).
///
/// A ``Recorder`` does all of it by itself: it runs the preflight and tidies the leftovers
/// when its session starts. An application calls them earlier to refuse a bad name before it
/// opens its sources, as `reel record` does.
///
/// The recording's file is told by its identity (device and inode) and by what this process
/// holds open, never by its name alone: a file someone else put at the name is never touched.
public struct RecordingFile: Sendable, Hashable {
    /// The name the recording is to have.
    public let url: URL

    /// The recording file named `url`.
    public init(url: URL) {
        self.url = url
    }

    /// Whether `a` and `b` are one file: the same file (device and inode) when both exist
    /// (symbolic and hard links included), else the same path once `.`, `..` and links are resolved.
    public static func isSameFile(_ a: URL, _ b: URL) -> Bool {
        if let one = FileIdentity(a), let other = FileIdentity(b) { return one == other }
        return a.standardizedFileURL.resolvingSymlinksInPath().path == b.standardizedFileURL.resolvingSymlinksInPath().path
    }

    // MARK: Before the start

    /// Checks everything that would make the recording fail at its start or lose a file, and
    /// throws a ``ReelError`` saying what and what to do: the folder does not exist or cannot be
    /// written; a file is at the name and `overwrite` is not set (one that holds a recording a
    /// crash cut off is said to be so: overwriting would discard it), or a folder is; the name
    /// is one of `inputs` (a file played as a camera); the clips of an earlier recording of the
    /// name that was never merged are beside it (their folder is what a recording in
    /// `pauseMode` clips, or the merge of those clips, needs; `clipsFolder` elsewhere avoids
    /// them); less than `minimumFreeSpace` bytes are free.
    public func preflight(overwrite: Bool, pauseMode: Recorder.PauseMode = .singleFile, clipsFolder: URL? = nil, inputs: [URL] = [],
                          minimumFreeSpace: Int64? = nil) throws {
        for input in inputs where Self.isSameFile(url, input) {
            throw ReelError(.invalidConfiguration, "\(url.path) is a file the recording reads (\(input.path))",
                            hint: "record into another file")
        }
        try Self.checkPlace(for: url, overwrite: overwrite)
        if clipsFolder == nil {
            let clips = RecordingSession.defaultFolder(for: url)
            if RecordingSession.holdsUnmergedRecording(clips) {
                // Another kind of file of the same name is free to be recorded, unless this
                // recording's own clips need that folder.
                let target = RecordingSession.recordedTarget(ofClipsIn: clips) ?? url
                if target.standardizedFileURL.path == url.standardizedFileURL.path || pauseMode == .clips {
                    throw ReelError(.fileExists, "\(clips.path) holds the clips of a recording of \(target.lastPathComponent) that was never merged",
                                    hint: "first \(LibraryHint.mergeTheClips(clips.path)), or choose another name")
                }
            }
        }
        if let minimumFreeSpace {
            try Self.checkFreeSpace(in: pauseMode == .clips ? (clipsFolder ?? RecordingSession.defaultFolder(for: url)) : url.deletingLastPathComponent(),
                                    minimum: minimumFreeSpace)
        }
    }

    /// Checks that `url`'s folder exists and can be written, and that nothing is at `url`
    /// unless `overwrite` (then not a folder); throws a ``ReelError`` saying what is wrong. A
    /// file that holds a recording a crash cut off is refused with how to recover it.
    package static func checkPlace(for url: URL, overwrite: Bool) throws {
        let folder = url.deletingLastPathComponent()
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ReelError(.ioFailure, "the folder \(folder.path) does not exist", hint: LibraryHint.createFolderOrChooseAnother)
        }
        guard access(folder.path, W_OK) == 0 else {
            throw ReelError(.permissionDenied, "cannot write to the folder \(folder.path)", hint: LibraryHint.chooseAnotherFolder)
        }
        // A link to nothing: refused as 'already exists' when the file was made, which did not
        // say what was there.
        if !FileManager.default.fileExists(atPath: url.path), let target = try? FileManager.default.destinationOfSymbolicLink(atPath: url.path) {
            throw ReelError(.fileExists, "\(url.path) is a link to \(target), which does not exist: a recording is not made through a broken link",
                            hint: "remove the link, or choose another name")
        }
        // Nothing there, or the empty file of a dated name this process reserved for it.
        guard FileManager.default.fileExists(atPath: url.path), !Recorder.isOwnReservation(url) else { return }
        // Another recording's file, being written: refused before anything is recorded, even
        // with overwrite. Found only when this one's file took the name, after a second of
        // recording, which was then thrown away (issue 26, F4 of the stranger pass).
        try RecordingLock.checkNotBeingWritten(url)
        if !overwrite && Recovery.isCutOff(url) && !RecordingLock.isBeingWritten(url) {
            // A crash's recording: overwriting would throw away what it holds.
            throw ReelError(.fileExists, "\(url.path) already exists and holds a recording that was cut off (a crash or a kill)",
                            hint: "first \(LibraryHint.finalise(url.path)); or choose another name; \(LibraryHint.overwritingDiscardsIt)")
        }
        if !overwrite && (FileIdentity.size(of: url) ?? 0) > 0 && Recovery.holdsNothingRecorded(url) && !RecordingLock.isBeingWritten(url) {
            // A recording killed before its first part reached the disk: its header alone.
            throw ReelError(.fileExists, "\(url.path) already exists: a recording that was cut off before any part of it reached the disk (it holds nothing recorded)",
                            hint: "nothing is lost by replacing it: \(LibraryHint.allowOverwriting)")
        }
        if !overwrite {
            throw ReelError(.fileExists, "\(url.path) already exists", hint: LibraryHint.allowOverwriting)
        }
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw ReelError(.fileExists, "\(url.path) is a folder", hint: LibraryHint.giveAFileName)
        }
    }

    /// Throws `.insufficientStorage` when less than `minimum` bytes are free in `folder` (or
    /// in the nearest folder above it that exists), `.permissionDenied` when it is on a file
    /// system that keeps no files (`/proc`, `/sys`: no size at all).
    package static func checkFreeSpace(in folder: URL, minimum: Int64) throws {
        guard let space = FreeSpace.ofNearest(folder) else { return }
        if space.total == 0 {
            throw ReelError(.permissionDenied, "\(folder.path) cannot hold recordings: it is on a file system that keeps no files (such as /proc or /sys)",
                            hint: LibraryHint.chooseAnotherFolder)
        }
        if space.available < minimum {
            throw ReelError(.insufficientStorage, "only \(space.available / 1_000_000) MB free in \(folder.path), less than the \(minimum / 1_000_000) MB kept free",
                            hint: LibraryHint.freeSpaceOrLowerMinimum)
        }
    }

    // MARK: What a killed recording left

    /// What ``tidyLeftovers()`` found beside the name.
    public enum Leftover: Sendable, Hashable {
        /// A hidden file an earlier recording of the name made and was killed (`kill -9`, a
        /// crash) before it held anything: removed.
        case removed(URL)
        /// A hidden file an earlier recording of the name was killed in before it took the
        /// name, which holds what it recorded: kept; ``Recovery/recover(_:to:overwrite:progress:)``
        /// (`reel recover`) finalises it.
        case cutOff(URL)
    }

    /// Tidies what earlier recordings of this name that were killed before their first
    /// fragment took the name left: their hidden files (`.NAME.new-PID-N.EXT`). One that holds
    /// nothing recorded is removed; one that does is kept and returned, to be recovered. Files
    /// of a process that still runs, or that a recorder is writing now, and files that do not
    /// look like a recording of this kind, are left alone.
    @discardableResult
    public func tidyLeftovers() -> [Leftover] {
        var found: [Leftover] = []
        for leftover in unlockedNewFiles where !Self.isOfALiveProcess(leftover, of: url) {
            if let identity = FileIdentity(leftover), Self.removeIfItHoldsNothing(leftover, identity: identity) {
                found.append(.removed(leftover))
            } else if Recovery.isCutOff(leftover) {
                found.append(.cutOff(leftover))
            }
        }
        return found
    }

    /// The recordings cut off under a hidden name before they could take this one (a
    /// recording with `--overwrite` keeps the old file until its own is complete) that hold
    /// something recorded. Found by their lock and kind, not their maker's number (often taken
    /// again after a power loss); never removed: each is the only copy of what it recorded.
    package func hiddenRecordings() -> [URL] {
        unlockedNewFiles.filter { !Recovery.holdsNothingRecorded($0) }
    }

    /// The hidden files a recording of this name makes (`.NAME.new-PID-N.EXT`) that look like
    /// a recording of this kind and that no recorder is writing now.
    private var unlockedNewFiles: [URL] {
        FilePlacement.temporaryFiles(beside: url, purposes: ["new"]).filter { Self.isRecordingLike($0, of: url) && !Recovery.isBeingRecorded($0) }
    }

    /// Whether `leftover` could be a file made for a recording of `url`: a regular file (not
    /// a link), of `url`'s extension, empty or beginning as that kind of file does.
    static func isRecordingLike(_ leftover: URL, of url: URL) -> Bool {
        var info = stat()
        guard leftover.pathExtension.lowercased() == url.pathExtension.lowercased(),
              lstat(leftover.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return false }
        if info.st_size == 0 { return true }
        guard let handle = FileHandle(forReadingAtPath: leftover.path) else { return false }
        defer { try? handle.close() }
        let head = [UInt8]((try? handle.read(upToCount: 12)) ?? Data())
        guard head.count >= 8 else { return false }
        func starts(_ text: String, at offset: Int = 0) -> Bool { head[offset...].starts(with: Array(text.utf8)) }
        switch Container(pathExtension: url.pathExtension) {
        case .mp4, .mov, .m4a: return starts("ftyp", at: 4)
        case .mkv, .webm: return head.starts(with: [0x1A, 0x45, 0xDF, 0xA3])
        case .gif: return starts("GIF8")
        case .wav: return head.count >= 12 && starts("RIFF") && starts("WAVE", at: 8)
        case .flac: return starts("fLaC")
        case .ogg, .opus: return starts("OggS")
        case nil: return false
        }
    }

    /// Whether the hidden file `leftover` was made by a process that is still running (or
    /// whose ID cannot be read from its name): a recorder that has just created it and not
    /// yet locked it.
    static func isOfALiveProcess(_ leftover: URL, of url: URL) -> Bool {
        !FilePlacement.makerIsGone(of: leftover, beside: url, purposes: ["new"])
    }

    /// Removes `file` if it holds nothing recorded and is the file `identity` (a recording's,
    /// or a killed one's left under its hidden name). The writer may still be running: the
    /// file is first moved aside to a hidden name and looked at again there, so that a part it
    /// completed meanwhile is seen, and the file given its name back.
    static func removeIfItHoldsNothing(_ file: URL, identity: FileIdentity) -> Bool {
        guard FileIdentity(file) == identity, Recovery.holdsNothingRecorded(file) else { return false }
        let aside = FilePlacement.temporaryURL(beside: file, purpose: "aborted")
        guard rename(file.path, aside.path) == 0 else { return false }
        if FileIdentity(aside) == identity && Recovery.holdsNothingRecorded(aside) {
            unlink(aside.path)
            return true
        }
        rename(aside.path, file.path)
        return false
    }
}
