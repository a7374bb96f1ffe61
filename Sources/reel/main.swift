import Foundation
import ReelCLI

// First of all: standard input, output and error open (on /dev/null when the caller closed
// them), so nothing reel opens takes their numbers.
StandardDescriptors.openTheClosed()

// Then, before any await: the signals reel answers (INT, TERM, HUP, QUIT, USR1, USR2)
// are caught from here on and answered once the command has said what each does; SIGPIPE is
// ignored.
ProcessSignals.interceptSignals()

let status = await ReelCommandLine.run(Array(CommandLine.arguments.dropFirst()))
exit(status)
