import Foundation
import ReelCLI

// First of all, before any await: the signals reel answers (INT, TERM, HUP, QUIT, USR1, USR2)
// are caught from here on and answered once the command has said what each does; SIGPIPE is
// ignored.
ProcessSignals.interceptSignals()

let status = await ReelCommandLine.run(Array(CommandLine.arguments.dropFirst()))
exit(status)
