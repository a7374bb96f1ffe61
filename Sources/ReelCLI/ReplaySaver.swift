import Foundation
import Synchronization
import Reel

/// Saves `reel record --replay`'s buffer when asked (key `r`, SIGUSR1, or at the end with
/// `--replay-save-on-exit`): each save gets a dated name of its own in the folder, reserved so
/// that it never replaces a file (a second save in the same second is numbered " (2)"), and
/// the command says where it went (with `--json`, a `saved` event).
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
    /// The saves under way (by number), the next number, and the replays saved.
    private struct State {
        var running: [Int: Task<Void, Never>] = [:]
        var nextID = 0
        var saved = 0
    }
    private let state = Mutex(State())

    init(buffer: ReplayBuffer, folder: URL, container: Container, console: Console, json: Bool,
         beforePrinting: @escaping @Sendable () -> Void = {}) {
        self.buffer = buffer
        self.folder = folder
        self.container = container
        self.console = console
        self.json = json
        self.beforePrinting = beforePrinting
    }

    /// The replays saved so far.
    var saved: Int { state.withLock { $0.saved } }

    /// Makes the folder if it is not there; says what to do if it cannot be made.
    func prepareFolder() throws {
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: folder.path, isDirectory: &isFolder) {
            guard isFolder.boolValue else {
                throw ReelError(.fileExists, "\(folder.path) is a file, not a folder for replays", hint: "choose a folder with --replay-dir")
            }
            return
        }
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw ReelError(.permissionDenied, "cannot create \(folder.path) for the replays", hint: "choose a folder with --replay-dir")
        }
    }

    /// Starts saving the buffer now, without waiting for the file.
    func save() {
        // Registered under the lock before the task can end and remove itself.
        state.withLock { s in
            let id = s.nextID
            s.nextID += 1
            s.running[id] = Task { [self] in
                await saveNow()
                _ = state.withLock { $0.running.removeValue(forKey: id) }
            }
        }
    }

    /// Saves the buffer and reports where, or why not.
    func saveNow() async {
        let url: URL
        do {
            url = try OutputLocation.reserveDatedFile(in: folder, container: container)
        } catch let error as ReelError {
            report(error)
            return
        } catch {
            report(ReelError(.ioFailure, "\(error)"))
            return
        }
        do {
            // The reserved name is an empty file of our own: the save replaces it.
            let summary = try await buffer.save(to: url, container: container, overwrite: true)
            state.withLock { $0.saved += 1 }
            beforePrinting()
            if json {
                console.out(ProgressRenderer.json(["event": "saved", "file": summary.url.path,
                                                   "duration": (summary.duration.seconds * 1000).rounded() / 1000,
                                                   "frames": summary.videoFrames, "bytes": summary.bytes]))
            } else {
                console.out(String(format: "Saved replay %@ (%.2f s)", summary.url.path, summary.duration.seconds))
            }
        } catch {
            OutputLocation.releaseReservation(url)
            report(error as? ReelError ?? ReelError(.encodingFailed, "\(error)"))
        }
    }

    private func report(_ error: ReelError) {
        beforePrinting()
        if json {
            console.out(ProgressRenderer.json(["event": "saveFailed", "code": error.code.rawValue, "message": error.description]))
        }
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
