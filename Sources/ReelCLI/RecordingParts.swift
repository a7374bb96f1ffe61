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
        earlierFile = reserved ? nil : url.flatMap(FileIdentity.init)
    }

    func set(recorder: Recorder) {
        lock.lock(); defer { lock.unlock() }
        _recorder = recorder
    }

    func set(compositor: Compositor) {
        lock.lock(); defer { lock.unlock() }
        _compositor = compositor
    }

    /// What an abort leaves on disk, and how to finish it. A file this recording made that
    /// holds nothing recorded yet (its header, or a torn first part) is removed first: an abort
    /// in the first moments leaves no file that does not play, nor a hidden one, and the name
    /// free for the next try.
    func abandon(container: Container) -> String {
        lock.lock()
        let url = _url
        let recorder = _recorder
        let replayOnly = self.replayOnly
        let earlierFile = self.earlierFile
        lock.unlock()
        if replayOnly { return "reel: aborted; the replay buffer was dropped (replays saved before stay)" }
        guard let url else { return "reel: aborted before anything was recorded" }
        if let recorder, let folder = recorder.clipsFolder, FileManager.default.fileExists(atPath: folder.path) {
            // Clip mode: the file is made only by the merge at the stop.
            return "reel: aborted; the recording is in the clips in \(folder.path) (\(url.lastPathComponent) was not written); "
                + "merge them with: reel recover \(Shell.quoted(folder.path))"
        }
        let unchanged = earlierFile == nil ? "" : ", and \(url.path) is unchanged"
        // Replacing a file (--overwrite), the new recording keeps a hidden name of its own until
        // its first fragment is on the disk: the old file is then still there, unchanged.
        if let hidden = FilePlacement.temporaryFiles(beside: url, purposes: ["new"], pid: getpid()).first {
            if Self.removeIfItHoldsNothing(hidden, container: container) {
                return "reel: aborted before the first part of the recording reached the disk: nothing was recorded\(unchanged)"
            }
            return "reel: aborted; \(url.path) is unchanged; what was recorded is in \(hidden.path); "
                + "finalise it with: reel recover \(Shell.quoted(hidden.path))"
        }
        guard let identity = FileIdentity(url) else { return "reel: aborted before anything was recorded" }
        if identity == earlierFile { return "reel: aborted before anything was recorded\(unchanged)" }
        if Self.removeIfItHoldsNothing(url, container: container) {
            let firstPart = container == .mkv ? "cluster of the recording (up to a keyframe interval, 2 s by default)"
                : "part of the recording (half a second, and what the encoder holds)"
            return "reel: aborted before the first \(firstPart) reached the disk: nothing was recorded, and no file is left"
        }
        switch container {
        case .mkv:
            return "reel: aborted; \(url.path) keeps what was recorded up to its last complete cluster; "
                + "reel recover \(Shell.quoted(url.path)) gives it its index and duration"
        case .ogg, .opus:
            return "reel: aborted; \(url.path) keeps what was recorded up to its last complete page; "
                + "reel recover \(Shell.quoted(url.path)) ends it properly"
        case .flac, .wav:
            return "reel: aborted; \(url.path) keeps what was recorded up to its last written samples; "
                + "reel recover \(Shell.quoted(url.path)) gives it its length"
        case .mp4, .mov, .m4a:
            return "reel: aborted; \(url.path) keeps what was recorded up to its last complete fragment and plays; "
                + "finalise it with: reel recover \(Shell.quoted(url.path))"
        }
    }

    /// What an earlier recording of this name that was killed (`kill -9`, a crash) before its
    /// first fragment took the name left: its hidden file. One that holds nothing recorded is
    /// removed; one that does is pointed out, with how to finish it. Files of a process that
    /// still runs (the process ID is in the name: `.NAME.new-PID-N.EXT`), or that another
    /// recorder is writing now, are left alone.
    static func tidyLeftovers(beside url: URL, container: Container, console: Console) {
        for leftover in FilePlacement.temporaryFiles(beside: url, purposes: ["new"])
        where !Recovery.isBeingRecorded(leftover) && !isOfALiveProcess(leftover, stem: url.deletingPathExtension().lastPathComponent) {
            if removeIfItHoldsNothing(leftover, container: container) {
                console.err("reel: note: removed \(leftover.path), which an earlier recording of \(url.lastPathComponent) "
                            + "that was cut off left holding nothing")
            } else {
                console.err("reel: note: \(leftover.path) holds an earlier recording of \(url.lastPathComponent) that was cut off "
                            + "before it took the name; finalise it with: reel recover \(Shell.quoted(leftover.path))")
            }
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

    /// Whether the file at `url`, which this recording made, holds nothing that was recorded:
    /// an MP4/MOV with no complete fragment (only its header, or a torn first one), an MKV with
    /// no cluster. Audio-only files are never taken for empty.
    static func holdsNothing(_ url: URL, container: Container) -> Bool {
        switch container {
        case .mkv: return !holdsACluster(url)
        case .mp4, .mov, .m4a: return !Recovery.isCutOff(url) && !Recovery.isFinished(url)
        case .ogg, .opus, .flac, .wav: return false
        }
    }

    /// Removes `file`, which this recording made, if it holds nothing recorded. The writer may
    /// still be running: the file is first moved aside to a hidden name and looked at again
    /// there, so that a part it completed meanwhile is seen, and the file given its name back.
    static func removeIfItHoldsNothing(_ file: URL, container: Container) -> Bool {
        guard holdsNothing(file, container: container) else { return false }
        let aside = FilePlacement.temporaryURL(beside: file, purpose: "aborted")
        guard rename(file.path, aside.path) == 0 else { return false }
        if holdsNothing(aside, container: container) {
            unlink(aside.path)
            return true
        }
        rename(aside.path, file.path)
        return false
    }

    /// Whether the Matroska file at `url` holds a cluster (libavformat writes each whole, once
    /// it is complete): the header alone is a few kilobytes, so a file past 1 MiB does.
    static func holdsACluster(_ url: URL) -> Bool {
        guard let file = FileHandle(forReadingAtPath: url.path) else { return false }
        defer { try? file.close() }
        guard let head = try? file.read(upToCount: 1 << 20) else { return false }
        return head.count == 1 << 20 || head.range(of: Data([0x1F, 0x43, 0xB6, 0x75])) != nil
    }
}
