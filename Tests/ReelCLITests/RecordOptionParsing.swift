import Foundation
@testable import ReelCLI

/// Parsing `reel record`'s options in a test: the options, or the usage error's message.
protocol ParsesRecordOptions {}

extension ParsesRecordOptions {
    func options(_ args: [String]) throws -> RecordOptions {
        try RecordOptions(ParsedArguments.parse(args, specs: RecordOptions.specs))
    }

    /// The usage error `args` give, `nil` if they parse; another error is reported as such.
    func usageError(_ args: [String]) -> String? {
        do {
            _ = try options(args)
            return nil
        } catch let error as UsageError {
            return error.message
        } catch {
            return "not a usage error: \(error)"
        }
    }
}
