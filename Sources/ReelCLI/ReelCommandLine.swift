import Foundation
import Reel
import ReelSystem

/// The exit statuses of `reel`, as the man page and `reel record --help` give them.
enum ExitStatus {
    /// Done: for `reel record`, the recording is finalised and holds all that was asked for.
    static let done: Int32 = 0
    /// A runtime failure: the message says what happened and what to do.
    static let failure: Int32 = 1
    /// A usage error.
    static let usage: Int32 = 2
    /// `reel record`: the recording is finalised, but a source did not record all it was asked
    /// to (lost, interrupted, an application that never played or was not recorded).
    static let incomplete: Int32 = 3
    /// The sentence the help and the man page give.
    static let text = "0 done (a recording holds all that was asked for); 1 a runtime failure (the message says what happened and what to do), or a recording stopped before anything was recorded (during --delay or before --start-at too: no file is written, and --json ends with \"failed\", code \"nothingRecorded\"); 2 a usage error; 3 a recording was finalised but is incomplete: a source was lost or interrupted, recorded nothing (an application that never played or played only digital silence: muted or at volume 0 in the mixer, a microphone of digital silence, --app-audio of a sink on which nothing played) or missed part of what it was asked for (the warnings, the summary's \"missing\" lines and --json's \"complete\": false with its \"shortfalls\" say which), a nearly full disk stopped it early, a stream or HLS output stopped early, or a recovery lacks a clip or segment that was recorded; 130 a recording aborted (a second Ctrl-C or other stop signal, reel control abort): its file is left as it is, and the message says how to finish it. Dropped frames do not change the status: the summary says them."
}

/// The `reel` command line: parses the arguments and runs a command.
///
/// Exit status: see ``ExitStatus``.
public enum ReelCommandLine {
    static let help = """
    reel — record screens, cameras and audio on Linux into MP4, MOV, MKV, WebM or GIF files.

    Usage: reel <command> [options]

    Commands:
      record     record a screen, the test camera, a microphone, app audio or the test tone
      preview    show sources in a window; r records and pauses (into clips), Enter saves
      shot       take a picture of the screen, a region, a window or a camera (PNG or JPEG)
      devices    list screens and audio sources and sinks
      recover    finalise recordings that a crash cut off
      merge      join clips into one file (by copying when they match)
      doctor     check what recording needs on this machine, and say how to fix what is missing
      control    drive a running recording (reel record --control): pause, marker, stop, status…

    Run 'reel <command> --help' for a command's options, 'reel --version' for versions.

    """

    /// Runs the command line `arguments` (without the program name); returns the exit status.
    public static func run(_ arguments: [String], console: Console = Console(),
                           environment: [String: String] = ProcessInfo.processInfo.environment) async -> Int32 {
        guard let command = arguments.first else {
            console.err(help)
            return 2
        }
        let rest = Array(arguments.dropFirst())
        // Not a command for people: the guard a recording of application audio starts (see
        // ApplicationAudioSource.runGuard).
        if command == ApplicationAudioGuard.command, rest.count == 1 {
            for line in ApplicationAudioSource.runGuard(stateFile: rest[0]) { console.err("reel: \(line)") }
            return 0
        }
        // The signals blocked in main are answered from here on; `reel record` sets its
        // handlers before this (signals that came earlier are answered by them).
        if command != "record" && command != "preview" {
            // A stop signal ends the command as its default action would, but not before the
            // copy it was writing (a recovery's, a merge's, a GIF's, under a hidden name) is
            // removed: on a nearly full disk that space is what the user needs back, and the
            // copy holds nothing that is not still where it was made from.
            // Said also when no copy was being written (an in-place recovery: it was silent, and
            // its --json had no last event).
            ProcessSignals.shared.setHandler(ProcessSignals.stopping) { [console] signo in
                let work = WorkProgressView.workInHand
                let removed = UnfinishedCopies.removeAll()
                let signal = ProcessSignals.name(signo)
                if !removed.isEmpty {
                    let names = removed.map(\.path).joined(separator: ", ")
                    console.err("reel: interrupted by \(signal): removed the unfinished copy \(names); "
                                + "what it was made from is kept: run the command again to finish it")
                } else if let work {
                    console.err("reel: interrupted by \(signal) while working on \(work.subject ?? "the merge"): run the command again to finish it "
                                + "(it says so if nothing is left to do)")
                }
                if work?.json == true {
                    var event: [String: Any] = ["event": "interrupted", "signal": signal, "removedCopies": removed.map(\.path)]
                    if let subject = work?.subject { event["file"] = subject }
                    console.out(ProgressRenderer.json(event))
                }
                ProcessSignals.dieBy(signo)
            }
            ProcessSignals.shared.install(console: console)
        }
        do {
            switch command {
            case "record":
                let parsed = try ParsedArguments.parse(rest, specs: RecordOptions.specs)
                if parsed.has("help") {
                    console.out(RecordCommand.help + optionHelp(RecordOptions.specs))
                    return 0
                }
                let options = try RecordOptions(parsed)
                try options.validateCombinations()
                if let note = try options.sessionScreenNote(environment: environment) { console.err("reel: \(note)") }
                return await RecordCommand(options: options, console: console, environment: environment).run()
            case "preview":
                try RecordOptions.checkPreviewArguments(rest)
                let parsed = try ParsedArguments.parse(rest, specs: RecordOptions.previewSpecs)
                if parsed.has("help") {
                    console.out(RecordCommand.previewHelp + optionHelp(RecordOptions.previewSpecs))
                    return 0
                }
                var options = try RecordOptions(parsed)
                try options.makePreview()
                try options.validateCombinations()
                return await RecordCommand(options: options, console: console, environment: environment).run()
            case "devices":
                let parsed = try ParsedArguments.parse(rest, specs: DevicesCommand.specs)
                if parsed.has("help") {
                    console.out(DevicesCommand.help + optionHelp(DevicesCommand.specs))
                    return 0
                }
                if let extra = parsed.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
                return DevicesCommand(console: console, json: parsed.has("json"), environment: environment).run()
            case "shot":
                let parsed = try ParsedArguments.parse(rest, specs: ShotCommand.specs)
                if parsed.has("help") {
                    console.out(ShotCommand.help + optionHelp(ShotCommand.specs))
                    return 0
                }
                return await ShotCommand(console: console, environment: environment).run(parsed)
            case "recover":
                let parsed = try ParsedArguments.parse(rest, specs: RecoverCommand.specs)
                if parsed.has("help") {
                    console.out(RecoverCommand.help + optionHelp(RecoverCommand.specs))
                    return 0
                }
                return RecoverCommand(console: console).run(parsed)
            case "merge":
                let parsed = try ParsedArguments.parse(rest, specs: MergeCommand.specs)
                if parsed.has("help") {
                    console.out(MergeCommand.help + optionHelp(MergeCommand.specs))
                    return 0
                }
                return try MergeCommand(parsed, console: console).run()
            case "control":
                let parsed = try ParsedArguments.parse(rest, specs: ControlCommand.specs)
                if parsed.has("help") {
                    console.out(ControlCommand.help + optionHelp(ControlCommand.specs))
                    return 0
                }
                return ControlCommand(console: console, environment: environment).run(parsed)
            case "doctor":
                let parsed = try ParsedArguments.parse(rest, specs: DoctorCommand.specs)
                if parsed.has("help") {
                    console.out(DoctorCommand.help + optionHelp(DoctorCommand.specs))
                    return 0
                }
                return try DoctorCommand(parsed, console: console, environment: environment).run()
            case "help" where rest.count == 1 && commandNames.contains(rest[0]):
                // `reel help record` is `reel record --help`.
                return await run([rest[0], "--help"], console: console, environment: environment)
            case "-h", "--help", "help":
                if let extra = rest.first { throw UsageError("no help on '\(extra)' (use \(commandList))") }
                console.out(help)
                return 0
            case "--version", "version":
                if let extra = rest.first { throw UsageError("unexpected argument '\(extra)' (reel --version takes none)") }
                console.out(VersionCommand.report())
                return 0
            case "manpage", "completions":
                return try DocumentationCommand.run(command, rest, console: console)
            default:
                throw UsageError("unknown command '\(command)' (use \(commandList))")
            }
        } catch let error as UsageError {
            console.err("reel: \(error.message)")
            console.err("Run 'reel \(commandNames.contains(command) ? command + " " : "")--help' for usage.")
            return 2
        } catch {
            console.err("reel: error: \(Format.oneLine("\(CommandLineHints.rephrased(error))"))")
            return 1
        }
    }

    /// The commands `reel --help` lists (`record`, `devices`, …).
    static var commandNames: [String] { CommandDescription.all.map(\.name) }

    /// The commands, for a usage error: "record, devices, recover, merge or doctor".
    static var commandList: String {
        let names = commandNames
        return names.dropLast().joined(separator: ", ") + (names.count > 1 ? " or " : "") + (names.last ?? "")
    }

    /// The options table of a command's help.
    static func optionHelp(_ specs: [OptionSpec]) -> String {
        let width = specs.map { $0.synopsis.count }.max() ?? 0
        return "Options:\n" + specs.map { spec in
            "  " + spec.synopsis.padding(toLength: width + 2, withPad: " ", startingAt: 0) + spec.help
        }.joined(separator: "\n") + "\n"
    }
}
