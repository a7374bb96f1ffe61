import Foundation

/// The `reel` executable built next to the test bundle, run as a user would run it.
public enum ReelBinary {
    /// Where the built `reel` is.
    public static var url: URL {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var dir = bundle.deletingLastPathComponent()
        // The test binary may sit inside a .xctest bundle folder.
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("reel")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return bundle.deletingLastPathComponent().appendingPathComponent("reel")
    }

    /// Runs `reel` with `arguments` and returns its exit status and output.
    public static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> CommandResult {
        try Subprocess.run([url.path] + arguments, environment: environment)
    }
}
