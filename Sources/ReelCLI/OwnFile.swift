import Foundation
import Reel

/// `--each-source`: what each source's own recording left, said as the main file's is. One that
/// ended early (a full disk, its source lost) or failed is warned about on stderr, is
/// `"complete": false` in `--json`, and makes the run incomplete (exit 3): such a file stopped
/// being written on a full disk while reel exited 0 with `"complete": true` (s26 F8).
struct OwnFile {
    /// The source's name.
    let name: String
    /// Where its recording was written.
    let url: URL
    /// What the recording left, or why it failed.
    let result: Result<RecordingSummary, ReelError>

    /// Whether the file holds all that was asked of it (``RecordingSummary/isWhole``, as for
    /// the main file); false when its recording failed.
    var isWhole: Bool {
        if case .success(let summary) = result { return summary.isWhole }
        return false
    }

    /// The file as the `sourceFile` event and the `finished` event's `"sources"` have it:
    /// `"ending"` and `"complete"` as the main file's, its shortfalls, or `"error"` when it failed.
    var json: [String: Any] {
        switch result {
        case .success(let own):
            var object: [String: Any] = ["source": name, "file": own.url.path, "frames": own.frames, "dropped": own.droppedFrames,
                                         "ending": own.ending.rawValue, "complete": own.isWhole]
            if !own.isComplete { object["shortfalls"] = own.shortfalls.map { ProgressRenderer.json($0) } }
            if !own.isWhole { object["message"] = incompleteWords(own) }
            return object
        case .failure(let error):
            return ["source": name, "file": url.path, "complete": false, "failed": true, "error": error.description]
        }
    }

    /// The warning for stderr when the file is not whole; `nil` when it is.
    var warning: String? {
        switch result {
        case .success(let own) where !own.isWhole:
            return "reel: warning: the recording of \(name) on its own is incomplete: \(incompleteWords(own)); "
                + String(format: "%@ holds %.2f s (exit status %d)", Format.path(own.url), own.duration.seconds, ExitStatus.incomplete)
        case .success:
            return nil
        case .failure(let error):
            return "reel: warning: the recording of \(name) on its own failed: \(error.description) (exit status \(ExitStatus.incomplete))"
        }
    }

    /// Why a finished file is not whole, in words.
    private func incompleteWords(_ own: RecordingSummary) -> String {
        var words: [String] = []
        if own.ending == .lowDiskSpace { words.append("it stopped early, the disk is full or nearly full") }
        words += own.shortfalls.map { "missing " + ProgressRenderer.line($0) }
        if words.isEmpty { words.append("it did not record all it was asked to") }
        return words.joined(separator: "; ")
    }

    /// Waits for each source's own recording to end and takes what it left.
    static func results(of recorders: [(String, Recorder)]) async -> [OwnFile] {
        var files: [OwnFile] = []
        for (name, recorder) in recorders {
            do { files.append(OwnFile(name: name, url: recorder.url, result: .success(try await recorder.result()))) } catch {
                files.append(OwnFile(name: name, url: recorder.url,
                                     result: .failure(error as? ReelError ?? ReelError(.encodingFailed, "\(error)"))))
            }
        }
        return files
    }
}
