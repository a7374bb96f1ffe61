import Foundation
import Reel

/// The options of `reel record` that take more than a line to read: filters, the replay
/// buffer, the control socket.
extension RecordOptions {
    /// `--filter [N:]FILTER`, each checked now (a bad graph names the filter at fault).
    mutating func parseFilters(_ args: ParsedArguments) throws {
        for text in args.all("filter").compactMap({ $0 }) {
            let (target, graph) = try Self.splitFilter(text, videoSourceCount: videoSourceCount, what: "--filter \(text)")
            if filters.contains(where: { $0.source == target }) {
                throw UsageError(target.map { "--filter is given twice for video source \($0)" } ?? "--filter is given twice for the recorded picture; join the filters with ',' in one graph")
            }
            do {
                filters.append((target, try VideoFilter(parsing: graph)))
            } catch let error as ReelError {
                throw UsageError("--filter: \(error.message)" + (CommandLineHints.rephrased(error).hint.map { " (\($0))" } ?? ""))
            }
        }
    }

    /// `[N:]FILTER` split into the video source it is for (from 1; `nil`: the recorded
    /// picture) and the graph; `what` names it in the error.
    static func splitFilter(_ text: String, videoSourceCount: Int, what: String) throws -> (Int?, String) {
        // A graph starts with a filter's name, never a digit: "2:mono" is source 2's look.
        guard let colon = text.firstIndex(of: ":"), !text[..<colon].isEmpty, text[..<colon].allSatisfy(\.isASCII),
              text[..<colon].allSatisfy(\.isNumber) else { return (nil, text) }
        guard let n = Int(text[..<colon]), n >= 1, n <= videoSourceCount else {
            throw UsageError("\(what): there \(videoSourceCount == 1 ? "is 1 video source" : "are \(videoSourceCount) video sources"), so N must be \(videoSourceCount == 1 ? "1" : "1 to \(videoSourceCount)")")
        }
        return (n, String(text[text.index(after: colon)...]))
    }

    /// `--replay` and the options that go with it, checked against the rest.
    mutating func parseReplay(_ args: ParsedArguments) throws {
        guard args.has("replay") else {
            if let given = ["replay-dir", "replay-max-size", "replay-save-on-exit", "replay-spill"].first(where: args.has) {
                throw UsageError("--\(given) does nothing without --replay")
            }
            return
        }
        let text = args.value("replay")! ?? ""
        let seconds = try ValueParser.duration(text, option: "replay").seconds
        guard seconds >= 1, seconds <= Self.longestReplay.seconds else {
            throw UsageError("--replay must keep between 1 second and 1 hour, not '\(text)'")
        }
        replay = MediaTime(seconds: seconds)
        if args.has("replay-max-size") {
            let size = try ValueParser.size(args.value("replay-max-size")!, option: "replay-max-size", allowsZero: true)
            guard size >= 1_000_000 else {
                throw UsageError("--replay-max-size must be at least 1M (one group of pictures), not \(args.value("replay-max-size")! ?? "")")
            }
            replayMaxSize = size
        }
        if let dir = args.value("replay-dir") ?? nil {
            guard !dir.isEmpty else { throw UsageError("--replay-dir needs a folder") }
            replayDirectory = URL(fileURLWithPath: dir, isDirectory: true)
        }
        replaySavesOnExit = args.has("replay-save-on-exit")
        replaySpills = args.has("replay-spill")
        let writesFile = output != nil || outputFolder != nil
        if !writesFile, pauseMode == .clips, replay != nil {
            throw UsageError("--pause-mode clips and --keep-clips need -o FILE: a replay buffer alone writes no file to cut into clips (pausing it takes the gap out)")
        }
        if !writesFile, let given = ["max-size", "frame-log"].first(where: args.has) {
            throw UsageError("--\(given) needs a file to record (-o FILE) beside --replay")
        }
        if let output, let folder = replayDirectory, output.standardizedFileURL.path == folder.standardizedFileURL.path {
            throw UsageError("-o and --replay-dir both name \(output.path); give --replay-dir a folder of its own")
        }
        if virtualClock { throw UsageError("--replay needs real time: it cannot be combined with --faster-than-real-time") }
    }

    /// Whether the recording writes a file: always, except with `--replay` and no `-o`.
    public var writesFile: Bool { replay == nil || output != nil || outputFolder != nil }

    /// `--control[=PATH]`: `nil` without it, `.some(nil)` for the default path.
    static func controlPath(_ args: ParsedArguments) throws -> URL?? {
        guard args.has("control") else { return nil }
        guard let text = args.value("control") ?? nil else { return .some(nil) }
        guard !text.isEmpty else { throw UsageError("--control=: give a path for the socket, or no = for the default one") }
        return .some(URL(fileURLWithPath: text))
    }
}
