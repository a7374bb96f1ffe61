import Foundation
import Reel

/// The parts of a recording that the signal handlers act on, set as they are made.
final class RecordingParts: @unchecked Sendable {
    private let lock = NSLock()
    private var _url: URL?
    private var _session: CaptureSession?
    private var _recorder: Recorder?
    private var _compositor: Compositor?

    var session: CaptureSession? { lock.lock(); defer { lock.unlock() }; return _session }
    var recorder: Recorder? { lock.lock(); defer { lock.unlock() }; return _recorder }
    var compositor: Compositor? { lock.lock(); defer { lock.unlock() }; return _compositor }
    var replay: ReplaySaver? { lock.lock(); defer { lock.unlock() }; return _replay }
    private var _replay: ReplaySaver?

    func set(replay: ReplaySaver) {
        lock.lock(); defer { lock.unlock() }
        _replay = replay
    }

    private var replayOnly = false

    /// `--replay` without a file: an abort drops the buffer and leaves nothing.
    func setReplayOnly() {
        lock.lock(); defer { lock.unlock() }
        replayOnly = true
    }

    /// The file that was at the recording's name before it started (one `--overwrite` may
    /// replace): an abort before the new recording took the name leaves it as it was.
    private var earlierFile: FileIdentity?

    /// The recording's file (`nil` for none) and session; `reserved` when reel made the file
    /// itself to reserve a dated name (then it is nobody's earlier file).
    func set(url: URL?, session: CaptureSession, reserved: Bool) {
        lock.lock(); defer { lock.unlock() }
        _url = url
        _session = session
        earlierFile = reserved ? nil : url.flatMap { FileIdentity($0) }
    }

    /// The file the recording writes, once its recorder has made it (its inode, whatever its
    /// name becomes).
    private var recordingFile: FileIdentity?

    /// Notes which file the recording writes, now that the recorder has made it: the hidden
    /// file of a replacement, or the name itself, whichever this process holds open.
    func noteRecordingFile() {
        lock.lock()
        let url = _url
        lock.unlock()
        guard let url else { return }
        let candidates = FilePlacement.temporaryFiles(beside: url, purposes: ["new"], pid: getpid()) + [url]
        let held = candidates.lazy.compactMap { OpenFile.held(at: $0) }.first
        lock.lock(); defer { lock.unlock() }
        recordingFile = held?.identity
    }

    func set(recorder: Recorder) {
        lock.lock(); defer { lock.unlock() }
        _recorder = recorder
    }

    func set(compositor: Compositor) {
        lock.lock(); defer { lock.unlock() }
        _compositor = compositor
    }

    /// What an abort leaves on disk, and how to finish it. The recording's file is told by
    /// what this process holds open (its inode), never by its name alone: a file the user put
    /// at the name is never touched. One that holds nothing recorded yet (its header, a torn
    /// first part) is removed; one renamed meanwhile is named where it is now; one deleted
    /// meanwhile is copied back from the open file first.
    func abandon(container: Container) -> String {
        lock.lock()
        let url = _url
        let recorder = _recorder
        let replayOnly = self.replayOnly
        let earlierFile = self.earlierFile
        let recordingFile = self.recordingFile
        lock.unlock()
        if replayOnly { return "reel: aborted; the replay buffer was dropped (replays saved before stay)" }
        guard let url else { return "reel: aborted before anything was recorded" }
        if let recorder, let folder = recorder.clipsFolder, FileManager.default.fileExists(atPath: folder.path) {
            // Clip mode: the file is made only by the merge at the stop.
            return "reel: aborted; the recording is in the clips in \(folder.path) (\(url.lastPathComponent) was not written); "
                + "merge them with: reel recover \(Shell.quoted(folder.path))"
        }
        var unchanged: String { earlierFile.map { FileIdentity(url) == $0 } == true ? ", and \(url.path) is unchanged" : "" }
        if let intermediate = recorder?.intermediateURL { return Self.abandon(intermediate, of: url, unchanged: unchanged) }
        // Replacing a file (--overwrite), the new recording keeps a hidden name of its own until
        // its first fragment is on the disk; the name, or the hidden one, if this process has it open.
        let candidates = FilePlacement.temporaryFiles(beside: url, purposes: ["new"], pid: getpid()) + [url]
        guard let file = recordingFile.flatMap(OpenFile.find) ?? candidates.lazy.compactMap({ OpenFile.held(at: $0) }).first else {
            // Not open any more: the stop has finished it (a sound file finishes in a moment).
            if let now = FileIdentity(url), now != earlierFile, recordingFile == nil || recordingFile == now, Recovery.isFinished(url) {
                return "reel: aborted as the recording was finished: \(url.path) holds it"
            }
            return "reel: aborted before anything was recorded\(unchanged)"
        }
        var place: URL
        if file.isDeleted {
            if Recovery.holdsNothingRecorded(file.descriptorPath) {
                return "reel: aborted before the first part of the recording reached the disk: nothing was recorded\(unchanged)"
            }
            // Deleted while it was recorded: what it holds is copied back, or it goes with us.
            guard let rescue = try? OpenFile.copyBack(file, to: url) else {
                return "reel: aborted; \(url.path) was deleted while it was recorded, and what was recorded could not be copied back"
            }
            place = rescue
        } else {
            place = file.path
            if Self.removeIfItHoldsNothing(place, identity: file.identity) {
                let firstPart = container.isMatroska ? "cluster of the recording (up to a keyframe interval, 2 s by default)"
                    : "part of the recording (half a second, and what the encoder holds)"
                return "reel: aborted before the first \(firstPart) reached the disk: nothing was recorded, and no file is left\(unchanged)"
            }
        }
        // The writer runs on: it may have given the file the name meanwhile (a replacement's
        // first fragment is on the disk); where it is now.
        if !file.isDeleted, let again = OpenFile.find(file.identity), !again.isDeleted { place = again.path }
        let recover = "reel recover \(Shell.quoted(place.path))"
        // Still under the hidden name of a replacement (--overwrite): it has not taken the name.
        let stem = url.deletingPathExtension().lastPathComponent
        if place.deletingLastPathComponent().path == url.deletingLastPathComponent().path,
           place.lastPathComponent.hasPrefix(".\(stem).new-\(getpid())-") {
            return "reel: aborted before the recording took the name \(url.lastPathComponent)\(unchanged); "
                + "what was recorded is in \(place.path); finalise it with: \(recover)"
        }
        let moved = file.isDeleted ? " (\(url.lastPathComponent) was deleted while recorded and is copied back)"
            : place.path == url.path ? "" : " (\(url.lastPathComponent) was moved there while recorded)"
        return Self.message(container: container, place: place, moved: moved, recover: recover)
            + Self.unfinishedCopies(beside: place)
    }

    /// The unfinished copies an abort during the stop's finalise (by copying) left beside
    /// `place`, named: the recording does not need them.
    static func unfinishedCopies(beside place: URL) -> String {
        let copies = FilePlacement.temporaryFiles(beside: place, purposes: ["finalising"], pid: getpid())
        guard !copies.isEmpty else { return "" }
        return "; the unfinished copy the finalise was making, \(copies.map(\.path).joined(separator: ", ")), is not needed and can be deleted"
    }

    /// What an abort says of a recording in `container` left at `place`.
    private static func message(container: Container, place: URL, moved: String, recover: String) -> String {
        switch container {
        case .mkv, .webm:
            return "reel: aborted; \(place.path)\(moved) keeps what was recorded up to its last complete cluster; "
                + "\(recover) gives it its index and duration"
        case .ogg, .opus:
            return "reel: aborted; \(place.path)\(moved) keeps what was recorded up to its last complete page; \(recover) ends it properly"
        case .flac, .wav:
            return "reel: aborted; \(place.path)\(moved) keeps what was recorded up to its last written samples; \(recover) gives it its length"
        case .mp4, .mov, .m4a, .gif:
            return "reel: aborted; \(place.path)\(moved) keeps what was recorded up to its last complete fragment and plays; "
                + "finalise it with: \(recover)"
        }
    }

    /// What an abort leaves of a recording into `url` made at the stop from `intermediate` (a
    /// GIF): the intermediate, and how to make it into the GIF; removed if it holds nothing.
    private static func abandon(_ intermediate: URL, of url: URL, unchanged: String) -> String {
        let recover = "reel recover \(Shell.quoted(url.path))"
        guard let file = OpenFile.held(at: intermediate) else {
            // Closed: the stop finished it, and it is being made into the GIF, or was.
            if FileManager.default.fileExists(atPath: intermediate.path) {
                return "reel: aborted while \(url.lastPathComponent) was being made; the recording is kept in \(intermediate.path); "
                    + "make it into the GIF with: \(recover)"
            }
            if FileIdentity(url) != nil, unchanged.isEmpty {
                return "reel: aborted as the recording was finished: \(url.path) holds it"
            }
            return "reel: aborted before anything was recorded\(unchanged)"
        }
        if file.isDeleted {
            guard !Recovery.holdsNothingRecorded(file.descriptorPath), let rescue = try? OpenFile.copyBack(file, to: intermediate) else {
                return "reel: aborted; the recording's file \(intermediate.path) was deleted while it was recorded, and nothing of it is kept"
            }
            return "reel: aborted; what was recorded is in \(rescue.path) (copied back: it was deleted while recorded); "
                + "make it into the GIF with: reel recover \(Shell.quoted(rescue.path))"
        }
        if removeIfItHoldsNothing(file.path, identity: file.identity) {
            return "reel: aborted before the first part of the recording (half a second, and what the encoder holds) reached the disk: "
                + "nothing was recorded, and no file is left\(unchanged)"
        }
        return "reel: aborted; what was recorded is in \(file.path.path) (\(url.lastPathComponent) is made from it at the stop, and was not)\(unchanged); "
            + "make it into the GIF with: \(recover)"
    }

    /// What an earlier recording of this name that was killed (`kill -9`, a crash) before its
    /// first fragment took the name left: its hidden file. One that holds nothing recorded is
    /// removed; one that does is pointed out, with how to finish it. Files of a process that
    /// still runs (the process ID is in the name: `.NAME.new-PID-N.EXT`), or that another
    /// recorder is writing now, are left alone.
    static func tidyLeftovers(beside url: URL, console: Console) {
        for leftover in FilePlacement.temporaryFiles(beside: url, purposes: ["new"])
        where isRecordingLike(leftover, of: url) && !Recovery.isBeingRecorded(leftover)
            && !isOfALiveProcess(leftover, stem: url.deletingPathExtension().lastPathComponent) {
            if let identity = FileIdentity(leftover), removeIfItHoldsNothing(leftover, identity: identity) {
                console.err("reel: note: removed \(leftover.path), which an earlier recording of \(url.lastPathComponent) "
                            + "that was cut off left holding nothing")
            } else if Recovery.isCutOff(leftover) {
                console.err("reel: note: \(leftover.path) holds an earlier recording of \(url.lastPathComponent) that was cut off "
                            + "before it took the name; finalise it with: reel recover \(Shell.quoted(leftover.path))")
            }
        }
    }

    /// Whether `leftover` could be a file reel made for a recording of `url`: a regular file
    /// (not a link), of `url`'s extension, empty or beginning as that kind of file does.
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

    /// Whether the hidden file `leftover` (`.STEM.new-PID-N.EXT`) was made by a process that is
    /// still running (or whose ID cannot be read from its name): a recorder that has just
    /// created it and not yet locked it.
    static func isOfALiveProcess(_ leftover: URL, stem: String) -> Bool {
        let name = leftover.lastPathComponent.dropFirst(stem.count + 2)  // ".STEM."
        let fields = name.split(separator: "-")
        guard fields.count >= 3, fields[0] == "new", let pid = Int32(fields[1]), pid > 0 else { return true }
        return kill(pid, 0) == 0 || errno != ESRCH
    }

    /// Removes `file` if it holds nothing recorded and is the file `identity` (this recording's,
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
