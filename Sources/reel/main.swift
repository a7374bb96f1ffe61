import Foundation
import ReelCLI

// A parent may have left SIGINT/SIGTERM blocked (some process spawners do); a recorder must hear them.
var signals = sigset_t()
sigemptyset(&signals)
sigaddset(&signals, SIGINT)
sigaddset(&signals, SIGTERM)
pthread_sigmask(SIG_UNBLOCK, &signals, nil)

let status = await ReelCommandLine.run(Array(CommandLine.arguments.dropFirst()))
exit(status)
