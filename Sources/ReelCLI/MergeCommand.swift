import Foundation
import Reel

/// `reel merge`: joins clips into one file, by copying their packets when they were recorded
/// with the same settings, and says where the file went and what it holds.
struct MergeCommand {
    /// The clips, in order.
    var inputs: [MergeInput]
    var output: URL
    var options: MergeOptions
    var json: Bool
    let console: Console

    static let specs: [OptionSpec] = [
        OptionSpec("output", short: "o", value: .required, placeholder: "FILE", completion: .file, help: "the merged file (.mp4, .mov, .mkv; sound only .m4a, .opus, .ogg, .flac, .wav)"),
        OptionSpec("reencode", help: "encode clips again when they differ (size, codec, settings) instead of refusing"),
        OptionSpec("mute", value: .required, repeatable: true, placeholder: "N",
                   help: "replace the audio of clip N (1 is the first) with silence; may be repeated"),
        OptionSpec("overwrite", help: "replace FILE if it exists; a symbolic link is followed (the file it leads to is replaced, the link stays); a clip is never replaced"),
        OptionSpec("json", help: "print progress and the result as JSON lines on standard output"),
        OptionSpec("help", short: "h", help: "show this help"),
    ]

    static let help = """
    Usage: reel merge CLIP CLIP… -o FILE [--reencode] [--mute N]… [--overwrite] [--json]

    Joins clips one after the other into one file. Clips recorded with the same settings are
    joined by copying (as fast as copying the files, no loss of quality); clips that differ in
    size, codec or settings are refused unless --reencode is given, which encodes everything
    again with the first clip's settings. The clips are never changed.

    Examples:
      reel merge part1.mp4 part2.mp4 part3.mp4 -o talk.mp4
      reel merge intro.mp4 demo.mp4 --mute 1 -o demo-full.mp4

    """

    /// Builds the command from parsed arguments; usage errors throw `UsageError`.
    init(_ args: ParsedArguments, console: Console) throws {
        self.console = console
        guard !args.positionals.isEmpty else {
            throw UsageError("no clips to merge: give the clips' files, then -o FILE")
        }
        guard let path = args.value("output") ?? nil, !path.isEmpty else {
            throw UsageError("no output file: give -o FILE")
        }
        var url = URL(fileURLWithPath: path)
        try OutputLocation.checkOutputPath(path, option: "-o", wanted: "the merged file's name", allowsFolder: false)
        if url.pathExtension.isEmpty {
            try OutputLocation.checkNoFileWithoutEnding(path, option: "-o")
            let implied = Container(pathExtension: URL(fileURLWithPath: args.positionals[0]).pathExtension) ?? .mp4
            url = url.appendingPathExtension(implied.fileExtension)
        }
        guard let container = Container(pathExtension: url.pathExtension) else {
            throw UsageError("unknown file type '.\(url.pathExtension)' (use .mp4, .mov or .mkv; for sound only .m4a, .opus, .ogg, .flac or .wav)")
        }
        output = url
        var muted = Set<Int>()
        for value in args.all("mute") {
            let n = try ValueParser.integer(value, option: "mute", in: 1...max(1, args.positionals.count))
            muted.insert(n - 1)
        }
        inputs = args.positionals.enumerated().map { MergeInput(url: URL(fileURLWithPath: $0.element), isMuted: muted.contains($0.offset)) }
        options = MergeOptions(allowsReencoding: args.has("reencode"), overwrite: args.has("overwrite"), container: container)
        json = args.has("json")
    }

    /// Merges; returns the exit status.
    func run() -> Int32 {
        let summary: MergeSummary
        let progress = WorkProgressView(console: console, json: json)
        do {
            defer { progress.finish() }
            summary = try Merger.merge(inputs, to: output, options: options, progress: progress.handler)
        } catch let error as ReelError {
            return fail(error)
        } catch {
            return fail(ReelError(.ioFailure, "\(error)"))
        }
        let muted = inputs.indices.filter { inputs[$0].isMuted }.map { $0 + 1 }
        // A merge into this name killed before left its unfinished copy (`.NAME.merging-PID-…`,
        // as large as the merge): once its maker is gone, it goes (s47 #6: never removed nor said).
        let (removed, kept) = LeftoverCopies.tidy(LeftoverCopies.beside(summary.url, purposes: ["merging"]), purposes: ["merging"],
                                                 inputs: inputs.map(\.url))
        if json {
            var object: [String: Any] = ["event": "merged", "file": summary.url.path,
                                         "duration": (summary.duration.seconds * 1000).rounded() / 1000,
                                         "clips": summary.clipCount, "frames": summary.videoFrames, "bytes": summary.bytes,
                                         "reencoded": summary.reencodedClips.map { $0 + 1 }, "muted": muted]
            if let reason = summary.reencodingReason { object["reencodingReason"] = reason }
            if !summary.packetsLeftOut.isEmpty { object["packetsLeftOut"] = Self.json(summary.packetsLeftOut) }
            if !summary.leftOutMarkers.isEmpty { object["leftOutMarkers"] = RecoverCommand.json(summary.leftOutMarkers) }
            if !removed.isEmpty { object["removedLeftovers"] = removed.map(\.copy.path) }
            if !kept.isEmpty { object["leftovers"] = kept.map(\.copy.path) }
            console.out(ProgressRenderer.json(object))
            return 0
        }
        for leftover in removed {
            console.err("reel: note: removed \(leftover.copy.path), an unfinished copy left by an interrupted merge whose process is gone")
        }
        for leftover in kept {
            console.err("reel: note: \(leftover.copy.path) is an unfinished copy left by an interrupted merge; delete it if nothing else needs it")
        }
        console.out("Saved \(Format.path(summary.url))")
        console.out(String(format: "  duration  %.2f s, %@", summary.duration.seconds, Format.bytes(summary.bytes)))
        let count = summary.clipCount == 1 ? "1 clip" : "\(summary.clipCount) clips"
        var clips = summary.reencodedClips.isEmpty ? "\(count) joined without re-encoding" : "\(count), encoded again"
        if let reason = summary.reencodingReason { clips += " (\(reason))" }
        if !muted.isEmpty { clips += "; muted: " + muted.map { "clip \($0)" }.joined(separator: ", ") }
        console.out("  clips     \(clips)")
        // A sound-only file has no video to count.
        if Container(pathExtension: summary.url.pathExtension)?.isAudioOnly != true {
            console.out("  video     \(summary.videoFrames) frames")
        }
        for line in Self.words(summary.packetsLeftOut) { console.out(line) }
        for marker in summary.leftOutMarkers {
            console.err("reel: note: chapter '\(Format.printable(marker.title))' at \(Format.clock(seconds: marker.start.seconds)) begins past the merged file's end: left out")
        }
        return 0
    }

    /// The packets clips list and do not play, left out of a merge (see
    /// ``MergeSummary/packetsLeftOut``): a line each, and for `--json`. `clip` counts from one.
    static func words(_ leftOut: [MergeSummary.PacketsLeftOut]) -> [String] {
        leftOut.map { left in
            let what = [(left.videoPackets, "video"), (left.audioPackets, "audio")].filter { $0.0 > 0 }
                .map { "\($0.0) \($0.1) packet\($0.0 == 1 ? "" : "s")" }.joined(separator: " and ")
            return "  left out  clip \(left.clip + 1) (\(left.file)): \(what) listed past its end, which no player plays"
        }
    }

    static func json(_ leftOut: [MergeSummary.PacketsLeftOut]) -> [[String: Any]] {
        leftOut.map { ["clip": $0.clip + 1, "file": $0.file, "video": $0.videoPackets, "audio": $0.audioPackets] }
    }

    private func fail(_ error: ReelError) -> Int32 {
        let error = CommandLineHints.rephrased(error)
        if json {
            console.out(ProgressRenderer.json(["event": "failed", "code": error.code.rawValue, "message": error.description]))
        }
        console.err("reel: error: \(Format.oneLine(error.description))")
        return 1
    }
}
