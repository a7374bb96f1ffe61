import Foundation
import Synchronization
import ReelSystem
import Reel

/// Saves `reel record --replay`'s buffer when asked (key `r`, SIGUSR1, or at the end with
/// `--replay-save-on-exit`): each save is written under a hidden temporary name and given a
/// dated name of its own only once complete, one that no file has (a second save in the same
/// second is numbered " (2)"), and the command says where it went (with `--json`, a `saved`
/// event). A kill while saving leaves no empty dated file; the next run in the folder names a
/// complete save that a kill left hidden, and points at an unfinished one.
///
/// Saves run beside the recording and beside each other; ``waitForSaves()`` waits for those
/// under way before the command exits.
final class ReplaySaver: @unchecked Sendable {
    let buffer: ReplayBuffer
    let folder: URL
    let container: Container
    private let console: Console
    private let json: Bool
    /// Called before a line is printed (to clear the progress line).
    private let beforePrinting: @Sendable () -> Void
    /// Hears each event as its JSON line, with or without `--json` (the control socket's subscribers).
    private let onEvent: @Sendable (String) -> Void
    /// The saves under way (by number), the next number, and the replays saved.
    private struct State {
        var running: [Int: Task<Void, Never>] = [:]
        var nextID = 0
        var saved = 0
        /// Saves asked for that failed, those with nothing to save yet among them (s6: a save
        /// asked before anything was recorded exited 0, though a failed save is exit 1): the
        /// part of the timeline each would have held, `nil` when the buffer held no video.
        var failures: [Range<MediaTime>?] = []
        /// The part of the timeline each replay saved holds.
        var savedSpans: [Range<MediaTime>] = []

        /// Failed saves whose moment no save holds: what was asked for and is lost. A save that
        /// failed on a full disk and was asked again once space was freed, holding all the
        /// failed one would have (issue 26, F3: the run exited 1 though nothing asked was lost).
        var failedNotMadeGood: Int {
            failures.count { failure in
                guard let failure else { return true }
                // Within 50 ms: the saved file's start (a keyframe, on the file's time base) and the
                // held packets' can differ by a rounding (s43: a save holding the whole moment was
                // judged not to hold it), far less than a frame's worth.
                let slack = MediaTime(value: 1, timescale: 20)
                return !savedSpans.contains { $0.lowerBound <= failure.lowerBound + slack && $0.upperBound + slack >= failure.upperBound }
            }
        }
    }
    private let state = Mutex(State())

    /// A saver of `buffer` into `folder`, which ``prepareFolder(_:console:)`` made ready.
    init(buffer: ReplayBuffer, folder: URL, container: Container, console: Console, json: Bool,
         beforePrinting: @escaping @Sendable () -> Void = {}, onEvent: @escaping @Sendable (String) -> Void = { _ in }) {
        self.buffer = buffer
        self.folder = folder
        self.container = container
        self.console = console
        self.json = json
        self.beforePrinting = beforePrinting
        self.onEvent = onEvent
    }

    /// The replays saved so far.
    var saved: Int { state.withLock { $0.saved } }
    /// The saves that failed and whose moment no later save holds (a moment asked for and
    /// not saved).
    var failed: Int { state.withLock { $0.failedNotMadeGood } }
    /// The saves that failed, those a later save made good among them.
    var failedAtAll: Int { state.withLock { $0.failures.count } }

    /// Makes `folder` ready for saves and tidies what saves cut off by a kill left in it
    /// (``ReplayBuffer/prepareFolder(_:)``), saying what it did. Returns whether it made the folder.
    static func prepareFolder(_ folder: URL, console: Console) throws -> Bool {
        let report: ReplayBuffer.FolderPreparation
        do {
            report = try ReplayBuffer.prepareFolder(folder)
        } catch let error as ReelError {
            throw CommandLineHints.rephrased(error)
        }
        for line in notes(report) { console.err(line) }
        return report.madeFolder
    }

    /// What the command says of a folder's leftovers (see ``prepareFolder(_:console:)``).
    static func notes(_ report: ReplayBuffer.FolderPreparation) -> [String] {
        report.named.map { "reel: note: a replay saved while reel was killed is now \($0.path)" }
            + report.cutShort.map { "reel: note: \($0.path) is a replay save that a kill cut short before its index was written; reel cannot make it play (it is kept)" }
    }

    /// Starts saving the buffer now, without waiting for the file.
    func save() {
        // Registered under the lock before the task can end and remove itself.
        state.withLock { s in
            let id = s.nextID
            s.nextID += 1
            s.running[id] = Task { [self] in
                _ = await saveNow()
                _ = state.withLock { $0.running.removeValue(forKey: id) }
            }
        }
    }

    /// Saves the buffer and reports where, or why not; returns whether it saved.
    @discardableResult
    func saveNow() async -> Bool {
        if case .success = await saveReportingFile() { return true }
        return false
    }

    /// Saves the buffer and reports where, or why not; returns the file or the error.
    func saveReportingFile() async -> Result<URL, ReelError> {
        let asked = buffer.savedSpanIfAskedNow
        do {
            let summary = try await buffer.save(inFolder: folder, container: container)
            state.withLock {
                $0.saved += 1
                $0.savedSpans.append(summary.start..<(summary.start + summary.duration))
            }
            beforePrinting()
            let event = ProgressRenderer.json(["event": "saved", "file": summary.url.path,
                                               "duration": (summary.duration.seconds * 1000).rounded() / 1000,
                                               "frames": summary.videoFrames, "bytes": summary.bytes])
            onEvent(event)
            if json {
                console.out(event)
            } else {
                console.out(String(format: "Saved replay %@ (%.2f s)", Format.path(summary.url), summary.duration.seconds))
            }
            return .success(summary.url)
        } catch {
            var failure = error as? ReelError ?? ReelError(.encodingFailed, "\(error)")
            state.withLock { $0.failures.append(asked) }
            if failure.code == .insufficientStorage {
                failure.message += " (in \(folder.path))"
                failure.hint = "the buffer still holds the moment for as long as it keeps it: free space there and save again, or record with another --replay-dir"
            }
            report(failure)
            return .failure(failure)
        }
    }

    private func report(_ error: ReelError) {
        beforePrinting()
        let event = ProgressRenderer.json(["event": "saveFailed", "code": error.code.rawValue, "message": error.description])
        onEvent(event)
        if json { console.out(event) }
        console.err("reel: warning: the replay could not be saved: \(error.description)")
    }

    /// Waits for the saves under way.
    func waitForSaves() async {
        while true {
            let tasks = state.withLock { Array($0.running.values) }
            if tasks.isEmpty { return }
            for task in tasks { await task.value }
        }
    }
}
