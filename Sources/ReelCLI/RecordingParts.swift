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

    /// A dated name reel reserved for the recording (an empty file of its own), until a
    /// recorder takes it: an abort before then removes it.
    private var reservation: URL?

    /// The file asked for, known good, before anything is made (`reserved`: an empty dated
    /// file reel made for it): an abort from now on names it (a file it would replace is unchanged).
    func set(output url: URL, reserved: Bool) {
        lock.lock(); defer { lock.unlock() }
        _url = url
        reservation = reserved ? url : nil
    }

    /// Ends the control socket (`--control`), its file removed.
    private var _closeControl: (@Sendable () -> Void)?

    func set(closingControl: @escaping @Sendable () -> Void) {
        lock.withLock { _closeControl = closingControl }
    }

    /// Closes the control socket before an abort ends the process: its file was left behind
    /// by a stop signal's abort, and a client then met a dead socket ("connection refused")
    /// rather than none. A command being answered is given up to `patience` seconds to end.
    private func closeControl(patience: Double) {
        guard let close = lock.withLock({ _closeControl }) else { return }
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            close()
            done.signal()
        }
        _ = done.wait(timeout: .now() + patience)
    }

    /// What an abort that does not wait leaves (a stop signal while the abort waited for a
    /// finalise step): this process's half-made finalised copy is removed, and the file named
    /// with how to finish it.
    func leaveAtOnce() -> String {
        closeControl(patience: 0.2)
        let url = lock.withLock { _url }
        guard let url, url.path != "/dev/null" else { return "reel: aborted without waiting" }
        let stuck = RecordingFile(url: url).removeOwnUnfinishedCopies()
        return "reel: aborted without waiting: \(url.path) is as a crash now would leave it "
            + "(it plays; finish it with: reel recover \(Shell.quoted(url.path)))"
            + stuck.map { "; remove the unfinished copy \(Shell.quoted($0.path))" }.joined()
    }

    /// The recording's file (`nil` for none) and session.
    func set(url: URL?, session: CaptureSession) {
        lock.lock(); defer { lock.unlock() }
        _url = url
        _session = session
    }

    func set(recorder: Recorder) {
        lock.lock(); defer { lock.unlock() }
        _recorder = recorder
    }

    func set(compositor: Compositor) {
        lock.lock(); defer { lock.unlock() }
        _compositor = compositor
    }

    /// What an abort kept (the file) and the command that finishes it: for `--json`'s
    /// "aborted" event.
    private(set) var keptByAbort: (file: String, finish: String)? {
        get { lock.lock(); defer { lock.unlock() }; return _keptByAbort }
        set { lock.lock(); defer { lock.unlock() }; _keptByAbort = newValue }
    }
    private var _keptByAbort: (file: String, finish: String)?

    /// What an abort leaves on disk, and how to finish it, in words: the library decides
    /// (``Recorder/abort()``), this says it.
    func abandon() -> String {
        closeControl(patience: 1)
        lock.lock()
        let url = _url
        let recorder = _recorder
        let replayOnly = self.replayOnly
        let reservation = self.reservation
        lock.unlock()
        if replayOnly { return "reel: aborted; the replay buffer was dropped (replays saved before stay)" }
        guard let url else { return "reel: aborted before anything was recorded" }
        guard let recorder else {
            // Nothing made yet: a file at the name is the one that was there (or reel's own
            // empty reservation, removed).
            if let reservation { Recorder.releaseReservation(reservation) }
            return "reel: aborted before anything was recorded" + ((FileIdentity.size(of: url) ?? 0) > 0 ? ", and \(url.path) is unchanged" : "")
        }
        let report = recorder.abort()
        // For --json's "aborted" event: the file kept, and what finishes it.
        if case .kept(let place, _) = report.outcome, let recover = Self.recoverCommand(report) {
            keptByAbort = (place.path, recover)
        }
        return Self.message(report, name: recorder.url)
    }

    /// The command that finishes what `report` kept: `reel recover TARGET`, with `--overwrite`
    /// where the recording was to replace the file still at the name it makes (a GIF made at
    /// the stop; recover refuses to replace a file unless told).
    static func recoverCommand(_ report: RecordingFile.AbortReport) -> String? {
        guard let target = report.recoveryTarget else { return nil }
        let replaces: Bool
        switch report.outcome {
        case .kept(_, .intermediate(let of)), .kept(_, .beingMade(let of)): replaces = report.unchangedFile?.path == of.path
        default: replaces = false
        }
        return "reel recover \(Shell.quoted(target.path))" + (replaces ? " --overwrite" : "")
    }

    /// What `report` says of the recording into `url`, as `reel record` prints it: its file,
    /// and every `--hls` folder whose playlist the abort left without its end.
    static func message(_ report: RecordingFile.AbortReport, name url: URL) -> String {
        let folders = report.unendedPlaylists.map { $0.deletingLastPathComponent() }
        let ending = folders.map { "; the playlist in the --hls folder \($0.path) has no end yet (players would wait for more): "
            + "end it with: reel recover \(Shell.quoted($0.path))" }.joined()
        return fileMessage(report, name: url) + ending
    }

    /// What `report` says of the recording's file.
    private static func fileMessage(_ report: RecordingFile.AbortReport, name url: URL) -> String {
        let unchanged = report.unchangedFile.map { ", and \($0.path) is unchanged" } ?? ""
        let recover = recoverCommand(report) ?? ""
        let copies = report.unfinishedCopies.isEmpty ? ""
            : "; the unfinished copy \(report.container == .gif ? "of the GIF " : "")the abort interrupted, "
                + "\(report.unfinishedCopies.map(\.path).joined(separator: ", ")), is not needed and can be deleted"
        switch report.outcome {
        case .noFile, .nothingRecorded:
            return "reel: aborted before anything was recorded\(unchanged)"
        case .nothingReachedTheDisk(removedFile: false):
            return "reel: aborted before the first part of the recording reached the disk: nothing was recorded\(unchanged)"
        case .nothingReachedTheDisk(removedFile: true):
            // MP4's fragments and Matroska's clusters both close every half second.
            let firstPart = report.container.isMatroska ? "cluster of the recording (half a second, and what the encoder holds)"
                : "part of the recording (half a second, and what the encoder holds)"
            return "reel: aborted before the first \(firstPart) reached the disk: nothing was recorded, and no file is left\(unchanged)"
        case .finished(let file):
            return "reel: aborted as the recording was finished: \(file.path) holds it"
        case .clips(let folder):
            return "reel: aborted; the recording is in the clips in \(folder.path) (\(url.lastPathComponent) was not written); "
                + "merge them with: \(recover)"
        case .lost(let file):
            return "reel: aborted; \(file.path) was deleted while it was recorded, and what was recorded could not be copied back"
        case .kept(let place, .notYetNamed(let name)):
            return "reel: aborted before the recording took the name \(name.lastPathComponent)\(unchanged); "
                + "what was recorded is in \(place.path); finalise it with: \(recover)"
        case .kept(let place, .beingMade(let file)):
            return "reel: aborted while \(file.lastPathComponent) was being made; the recording is kept in \(place.path); "
                + "make it into the GIF with: \(recover)\(copies)"
        case .kept(let place, .intermediate(let file)):
            return "reel: aborted; what was recorded is in \(place.path) (\(file.lastPathComponent) is made from it at the stop, and was not)\(unchanged); "
                + "make it into the GIF with: \(recover)\(copies)"
        case .kept(let place, let placement):
            let moved = switch placement {
            case .copiedBack(let from): " (\(from.lastPathComponent) was deleted while recorded and is copied back)"
            case .moved(let from): " (\(from.lastPathComponent) was moved there while recorded)"
            default: ""
            }
            return kept(container: report.container, place: place, moved: moved, recover: recover) + copies
        }
    }

    /// What an abort says of a recording in `container` kept at `place`.
    private static func kept(container: Container, place: URL, moved: String, recover: String) -> String {
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

    /// Says what ``RecordingFile/tidyLeftovers()`` found beside `url`.
    static func tidyLeftovers(beside url: URL, console: Console) {
        for leftover in RecordingFile(url: url).tidyLeftovers() {
            switch leftover {
            case .removed(let file):
                console.err("reel: note: removed \(file.path), which an earlier recording of \(url.lastPathComponent) "
                            + "that was cut off left holding nothing")
            case .cutOff(let file):
                console.err("reel: note: \(file.path) holds an earlier recording of \(url.lastPathComponent) that was cut off "
                            + "before it took the name; finalise it with: reel recover \(Shell.quoted(file.path))")
            }
        }
    }
}
