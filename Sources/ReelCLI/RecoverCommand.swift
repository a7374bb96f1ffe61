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

    Makes recordings that were cut off (a crash, a kill, a power loss) into finalised files
    with everything they held: up to their last complete fragment, at most a second before the
    cut. Without -o each file is finalised in place: its index is written into the space kept
    for it at the front where there is room (no copy of the media data; a file interrupted
    while being finalised is finished), else the file is replaced by a finalised copy once
    that is complete.

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
}
