import Foundation
import ReelCLI

let status = await ReelCommandLine.run(Array(CommandLine.arguments.dropFirst()))
exit(status)
