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

    /// Runs `reel` with `arguments` in the background, calls each step after its delay (seconds
    /// from the start, in order: a click, a key, a server going away) and waits for it to end.
    /// One still running after `timeout` seconds more is terminated, and `finished` is false.
    public static func run(_ arguments: [String], steps: [(Double, () -> Void)],
                           timeout: Double = 30) async throws -> (result: CommandResult, finished: Bool) {
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        var elapsed = 0.0
        for (at, step) in steps {
            try await Task.sleep(for: .milliseconds(Int((at - elapsed) * 1000)))
            elapsed = at
            step()
        }
        let deadline = Date(timeIntervalSinceNow: timeout)
        while process.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let finished = !process.isRunning
        if !finished { process.terminate() }
        process.waitUntilExit()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (CommandResult(status: process.terminationStatus, stdout: stdout, stderr: stderr), finished)
    }
}
