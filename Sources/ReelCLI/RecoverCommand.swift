import Foundation
import Reel

/// `reel recover FILE`: makes a recording cut off by a crash into a finalised file.
struct RecoverCommand {
    let console: Console

    static let specs: [OptionSpec] = [
        OptionSpec("output", short: "o", value: .required, placeholder: "FILE", help: "write the finalised file here (default: in place)"),
        OptionSpec("overwrite", help: "replace the -o file if it exists"),
        OptionSpec("help", short: "h", help: "show this help"),
    ]

    static let help = """
    Usage: reel recover FILE… [-o OUT]
           reel recover NAME.clips [-o OUT]

    Makes recordings that were cut off (a crash, a kill, a power loss) into finalised files
    with everything they held: up to their last complete fragment, at most a second before the
    cut. Without -o each file is finalised in place: its index is written into the space kept
    for it at the front where there is room (no copy of the media data; a file interrupted
    while being finalised is finished), else the file is replaced by a finalised copy once
    that is complete.

    A recording in --pause-mode clips that was cut off is in its clips folder (NAME.clips
    beside NAME.mp4, or the --keep-clips folder): give the folder, or NAME.mp4 if that does
    not exist. The clips are finalised and merged into NAME.mp4 (or -o OUT), never over an
    existing file, and removed once it holds every frame of them (kept with --keep-clips).

    """

    func run(_ args: ParsedArguments) -> Int32 {
        let files = args.positionals
        guard !files.isEmpty else {
            console.err("reel: recover needs a file")
            return 2
        }
        let output = (args.value("output") ?? nil).map { URL(fileURLWithPath: $0) }
        if output != nil && files.count > 1 {
            console.err("reel: -o works with one file at a time")
            return 2
        }
        var status: Int32 = 0
        for path in files {
            let url = URL(fileURLWithPath: path)
            if let folder = RecordingSession.clipsFolder(toRecover: url) {
                // A clip-mode recording cut off before its clips were merged.
                let file = folder == url ? output : output ?? url
                if !recoverClips(in: folder, to: file, overwrite: output != nil && args.has("overwrite")) { status = 1 }
                continue
            }
            do {
                let summary = try Recorder.recover(url, to: output, overwrite: args.has("overwrite"))
                let how: String
                switch summary.finalisation {
                case .inPlace(let bytes): how = "finalised in place, \(bytes) bytes written"
                case .copied(let reason, let bytes): how = "copied, \(bytes) bytes written: \(reason)"
                case .notNeeded: how = "nothing to finalise"
                }
                console.out(String(format: "Recovered %@: %.2f s, %lld frames (%@)", summary.url.path, summary.duration.seconds,
                                   summary.videoFrames, how))
            } catch let error as ReelError {
                console.err("reel: error: \(error.description)")
                status = 1
            } catch {
                console.err("reel: error: \(error)")
                status = 1
            }
        }
        return status
    }

    /// Merges the clips in `folder` into `output` (default: the file they were recorded for);
    /// returns whether it worked.
    private func recoverClips(in folder: URL, to output: URL?, overwrite: Bool) -> Bool {
        do {
            let r = try RecordingSession.recover(folder: folder, to: output, overwrite: overwrite)
            var line = String(format: "Recovered %@ from %d clips in %@: %.2f s, %lld frames", r.url.path, r.clipCount, folder.path,
                              r.duration.seconds, r.videoFrames)
            if !r.finalisedClips.isEmpty { line += " (\(r.finalisedClips.count) cut off, finalised first)" }
            console.out(line)
            console.out(r.removedClips ? "  the clips were removed" : "  the clips are kept in \(folder.path)")
            if !r.skippedClips.isEmpty { console.out("  left out (missing or empty): \(r.skippedClips.joined(separator: ", "))") }
            return true
        } catch let error as ReelError {
            console.err("reel: error: \(error.description)")
        } catch {
            console.err("reel: error: \(error)")
        }
        return false
    }
}
