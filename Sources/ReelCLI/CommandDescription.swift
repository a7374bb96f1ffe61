import Foundation

/// A `reel` command as its help describes it: name, one-line summary, help text and option
/// table. The man page and the shell completions are generated from these, so they say what
/// `reel COMMAND --help` says.
struct CommandDescription: Sendable {
    /// The command's name (`record`).
    var name: String
    /// The help text before the options table (`reel record --help`).
    var help: String
    /// The options it accepts.
    var specs: [OptionSpec]

    /// The commands `reel --help` lists, in its order.
    static let all: [CommandDescription] = [
        CommandDescription(name: "record", help: RecordCommand.help, specs: RecordOptions.specs),
        CommandDescription(name: "preview", help: RecordCommand.previewHelp, specs: RecordOptions.previewSpecs),
        CommandDescription(name: "shot", help: ShotCommand.help, specs: ShotCommand.specs),
        CommandDescription(name: "devices", help: DevicesCommand.help, specs: DevicesCommand.specs),
        CommandDescription(name: "recover", help: RecoverCommand.help, specs: RecoverCommand.specs),
        CommandDescription(name: "merge", help: MergeCommand.help, specs: MergeCommand.specs),
        CommandDescription(name: "doctor", help: DoctorCommand.help, specs: DoctorCommand.specs),
        CommandDescription(name: "control", help: ControlCommand.help, specs: ControlCommand.specs),
    ]

    /// The command's summary: its line in the "Commands:" list of `reel --help`.
    var summary: String { Self.listedCommands.first { $0.name == name }?.summary ?? "" }

    /// The "Commands:" list of `reel --help`, as (name, summary) pairs.
    static var listedCommands: [(name: String, summary: String)] {
        var inList = false
        var result: [(name: String, summary: String)] = []
        for line in ReelCommandLine.help.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("Commands:") { inList = true; continue }
            guard inList else { continue }
            guard line.hasPrefix("  ") else { if !result.isEmpty { break } else { continue } }
            let words = line.split(separator: " ", maxSplits: 1)
            guard words.count == 2 else { continue }
            result.append((String(words[0]), words[1].trimmingCharacters(in: .whitespaces)))
        }
        return result
    }
}
