import Foundation
import Reel

/// `reel control`: sends one command to a recording's control socket (`reel record --control`)
/// and says what it answered; `subscribe` prints its events until it ends.
struct ControlCommand {
    let console: Console
    let environment: [String: String]

    static let specs: [OptionSpec] = [
        OptionSpec("json", help: "print the reply (and events) as the socket sends them: one JSON object a line"),
        OptionSpec("help", short: "h", help: "show this help"),
    ]

    static var help: String {
        let commands = RecordControl.commands.map { c in
            let name = c.name + (c.argument.map { " \($0)" } ?? "")
            return "  " + name.padding(toLength: 18, withPad: " ", startingAt: 0) + c.help
        }.joined(separator: "\n")
        return """
        Usage: reel control [PATH|PID] COMMAND [ARG] [--json]

        Drives a recording started with 'reel record --control': from a hotkey, a status bar or a
        script. Without PATH or PID it finds the one recording of yours that has a control socket
        (in $XDG_RUNTIME_DIR/reel/, where one made with --control=PATH is linked as PID.sock);
        with several running it lists them and asks which. Sockets left by recordings that were
        killed are removed as they are found.

        Commands:
        \(commands)

        Examples:
          reel record --screen --mic --control &
          reel control marker "Demo starts"
          reel control pause
          reel control 12345 status --json
          reel control /tmp/rec.sock subscribe

        The protocol, for programs: each line sent is a JSON object {"command": …, "id": …,
        "arg": …}; each gets one reply line with the same id, {"id": …, "ok": true, …} or
        {"id": …, "ok": false, "error": …, "hint": …}; after subscribe, every event the
        recording's --json prints follows, one a line. A connection that sends nothing for 5 s is
        closed; past 64 clients a new one gets a "busy" reply, which reel control shows.

        Exit status: 0 the command was done; 1 it was refused or no recording answered (the
        message says why); 2 a usage error, or several recordings and none chosen.

        """
    }

    /// Runs `reel control` with its parsed arguments; returns the exit status.
    func run(_ args: ParsedArguments) -> Int32 {
        var words = args.positionals
        let names = RecordControl.commands.map(\.name)
        var target: URL?
        if words.count == 1, let only = words.first, !names.contains(only) {
            // A recording named (its PID or socket) and no command: say what is missing.
            if (!only.isEmpty && only.allSatisfy(\.isNumber)) || only.contains("/") || only.hasSuffix(".sock") {
                console.err("reel: no command after '\(only)': give one of \(names.joined(separator: ", "))")
            } else {
                console.err("reel: unknown command '\(only)' (use \(names.joined(separator: ", ")))")
            }
            return ExitStatus.usage
        }
        if let first = words.first, !names.contains(first) {
            if first.allSatisfy(\.isNumber) && !first.isEmpty {
                guard let folder = try? ControlServer.defaultFolder(environment: environment) else {
                    console.err("reel: error: XDG_RUNTIME_DIR is not set, so recording \(first)'s socket cannot be found (give its path)")
                    return ExitStatus.failure
                }
                // Listing sweeps away what recordings that died left.
                let socket = folder.appendingPathComponent("\(first).sock")
                guard ControlServer.listeningSockets(environment: environment).contains(socket) else {
                    console.err("reel: error: no recording of yours with process number \(first) has a control socket (reel control with no number lists them)")
                    return ExitStatus.failure
                }
                target = socket
            } else {
                target = URL(fileURLWithPath: first)
            }
            words.removeFirst()
        }
        guard let command = words.first else {
            console.err("reel: no command: give one of \(names.joined(separator: ", "))")
            console.err("Run 'reel control --help' for usage.")
            return ExitStatus.usage
        }
        guard let spec = RecordControl.commands.first(where: { $0.name == command }) else {
            console.err("reel: unknown command '\(command)' (use \(names.joined(separator: ", ")))")
            return ExitStatus.usage
        }
        let argument = words.count > 1 ? words[1] : nil
        if words.count > (spec.argument == nil ? 1 : 2) {
            console.err("reel: unexpected argument '\(words[spec.argument == nil ? 1 : 2])'" + (spec.argument == nil ? " (\(command) takes none)" : ""))
            return ExitStatus.usage
        }
        if target == nil {
            let running = ControlServer.listeningSockets(environment: environment)
            switch running.count {
            case 0:
                console.err("reel: error: no recording of yours has a control socket (start one with: reel record … --control)")
                return ExitStatus.failure
            case 1:
                target = running[0]
            default:
                console.err("reel: several recordings are running; give the PID or path of one:")
                for socket in running {
                    let place = (try? FileManager.default.destinationOfSymbolicLink(atPath: socket.path)) ?? socket.path
                    console.err("  \(socket.deletingPathExtension().lastPathComponent)  \(place)")
                }
                return ExitStatus.usage
            }
        }
        let json = args.has("json")
        do {
            let client = try ControlClient(target!)
            let (reply, line) = try client.request(command, argument: argument)
            guard reply["ok"] as? Bool == true else {
                if json { console.out(line) }
                let message = reply["error"] as? String ?? "the recording refused \(command)"
                console.err("reel: error: \(message)" + ((reply["hint"] as? String).map { " (\($0))" } ?? ""))
                return ExitStatus.failure
            }
            if command == "subscribe" {
                // --json prints every line as the socket sends it: the reply first.
                if json { console.out(line) }
                if !json { console.err("reel: following the events of \(target!.path) (Ctrl-C ends)") }
                while let event = try client.readLine(within: 24 * 3600) { console.out(String(decoding: event, as: UTF8.self)) }
                return ExitStatus.done
            }
            if json { console.out(line) } else { console.out(Self.describe(reply, command: command)) }
            return ExitStatus.done
        } catch {
            console.err("reel: error: \(Format.oneLine("\(CommandLineHints.rephrased(error))"))")
            return ExitStatus.failure
        }
    }

    /// What a reply says, for people.
    static func describe(_ reply: [String: Any], command: String) -> String {
        switch command {
        case "status":
            var lines = ["state     \(reply["state"] as? String ?? "?")"]
            if let left = reply["startsIn"] as? Double {
                lines.append("starts in \(RecordSchedule.timeLeft(left))"
                             + ((reply["startsAt"] as? String).map { " (at \($0))" } ?? ""))
            }
            lines += [
                         "elapsed   \(Format.clock(seconds: reply["elapsed"] as? Double ?? 0))"]
            if let file = reply["file"] as? String { lines.append("file      \(file)") }
            lines.append("size      \(Format.bytes((reply["bytes"] as? NSNumber)?.int64Value ?? 0))")
            lines.append("frames    \(reply["frames"] as? Int ?? 0) (\(reply["dropped"] as? Int ?? 0) dropped)")
            if let clips = reply["clips"] as? Int { lines.append("clips     \(clips)") }
            if let pauses = reply["pauses"] as? Int, pauses > 0 { lines.append("paused    \(pauses) time\(pauses == 1 ? "" : "s")") }
            if let sources = reply["sources"] as? [String] { lines.append("sources   \(sources.joined(separator: ", "))") }
            for stream in reply["streams"] as? [[String: Any]] ?? [] {
                lines.append("stream    \(stream["name"] as? String ?? "?")")
            }
            if let replay = reply["replay"] as? [String: Any] {
                lines.append("replay    \(Format.clock(seconds: replay["duration"] as? Double ?? 0)) held, \(replay["saved"] as? Int ?? 0) saved")
            }
            if let pid = reply["pid"] as? Int { lines.append("pid       \(pid)") }
            return lines.joined(separator: "\n")
        case "pause": return "paused"
        case "resume": return "recording"
        case "stop":
            if reply["already"] as? Bool == true { return "already stopping (the recording is ending)" }
            switch reply["outcome"] as? String {
            case "nothingWritten": return "stopping before the recording began: nothing is written"
            case "noFile": return "stopping (this recording writes no file)"
            default: return "stopping (the file is being finalised)"
            }
        case "abort": return "aborted"
        case "save-replay": return "saved \(reply["file"] as? String ?? "the replay")"
        case "marker": return "marker placed"
        case "filter": return "filter: \(reply["filter"] as? String ?? "?")"
        case "swap": return "swapped"
        default: return "ok"
        }
    }
}
