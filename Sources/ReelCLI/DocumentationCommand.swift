/// `reel manpage` and `reel completions bash|zsh|fish`: print the man page (roff) or a shell's
/// completion script, generated from the commands' help and option tables. Not listed by
/// `reel --help`: scripts/install and scripts/package run them to write the installed files.
enum DocumentationCommand {
    /// Runs `command` (`manpage` or `completions`) with its arguments; returns the exit status.
    static func run(_ command: String, _ arguments: [String], console: Console) throws -> Int32 {
        let shells = ShellCompletions.Shell.allCases.map(\.rawValue).listedWithOr
        if arguments == ["--help"] || arguments == ["-h"] {
            console.out(command == "manpage"
                ? "Usage: reel manpage\n\nPrints reel's man page (roff), generated from the commands' help and options: reel manpage | man -l -"
                : "Usage: reel completions SHELL\n\nPrints the completion script for SHELL (\(shells)), generated from reel's options:\n"
                  + "  source <(reel completions bash)\n  reel completions zsh > ~/.zfunc/_reel\n  reel completions fish > ~/.config/fish/completions/reel.fish")
            return 0
        }
        if command == "manpage" {
            if let extra = arguments.first { throw UsageError("unexpected argument '\(extra)' (reel manpage takes none)") }
            console.out(String(ManPage.render().dropLast()))
            return 0
        }
        guard arguments.count == 1, let shell = ShellCompletions.Shell(rawValue: arguments[0]) else {
            throw UsageError("reel completions needs one shell: \(shells)")
        }
        console.out(String(ShellCompletions.script(for: shell).dropLast()))
        return 0
    }
}
