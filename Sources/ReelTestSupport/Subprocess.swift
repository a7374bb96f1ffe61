import Foundation

/// Runs a command and collects its output; for tests and benchmarks.
public struct CommandResult: Sendable {
    public var status: Int32
    public var stdout: Data
    public var stderr: String
    /// Standard output as text.
    public var output: String { String(decoding: stdout, as: UTF8.self) }
}

public enum Subprocess {
    /// Finds an executable on PATH.
    public static func which(_ name: String) -> String? {
        if name.contains("/") { return name }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Runs `arguments[0]` with the rest as arguments, waits, and returns its output.
    /// Standard error goes to a temporary file so a chatty command cannot block.
    @discardableResult
    public static func run(_ arguments: [String], environment: [String: String]? = nil, stdin: Data? = nil,
                           currentDirectory: URL? = nil) throws -> CommandResult {
        let process = Process()
        guard let executable = which(arguments[0]) else {
            throw NSError(domain: "Subprocess", code: 127, userInfo: [NSLocalizedDescriptionKey: "\(arguments[0]) not found"])
        }
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = Array(arguments.dropFirst())
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        let out = Pipe()
        let errURL = FileManager.default.temporaryDirectory.appendingPathComponent("reel-stderr-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let errHandle = try FileHandle(forWritingTo: errURL)
        defer { try? FileManager.default.removeItem(at: errURL) }
        process.standardOutput = out
        process.standardError = errHandle
        let input = Pipe()
        process.standardInput = stdin == nil ? FileHandle.nullDevice : input
        try process.run()
        if let stdin {
            let writer = input.fileHandleForWriting
            Thread {
                writer.write(stdin)
                try? writer.close()
            }.start()
        }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try? errHandle.close()
        let err = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
        return CommandResult(status: process.terminationStatus, stdout: data, stderr: err)
    }
}
