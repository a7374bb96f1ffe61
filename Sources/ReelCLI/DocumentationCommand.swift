/// `reel manpage` and `reel completions bash|zsh|fish`: print the man page (roff) or a shell's
/// completion script, generated from the commands' help and option tables. Not listed by
/// `reel --help`: scripts/install and scripts/package run them to write the installed files.
enum DocumentationCommand {
    /// Runs `command` (`manpage` or `completions`) with its arguments; returns the exit status.
    static func run(_ command: String, _ arguments: [String], console: Console) throws -> Int32 {
        if command == "manpage" {
            if let extra = arguments.first { throw UsageError("unexpected argument '\(extra)' (reel manpage takes none)") }
            console.out(String(ManPage.render().dropLast()))
            return 0
        }
        let shells = ShellCompletions.Shell.allCases.map(\.rawValue).listedWithOr
        guard arguments.count == 1, let shell = ShellCompletions.Shell(rawValue: arguments[0]) else {
            throw UsageError("reel completions needs one shell: \(shells)")
        }
        console.out(String(ShellCompletions.script(for: shell).dropLast()))
        return 0
    }
}
