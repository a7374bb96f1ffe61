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
    /// Reads up to a newline from `fd`, or `nil` at end of file or at the deadline (for a
    /// server that says on a pipe when it is ready).
    public static func readLine(from fd: Int32, until deadline: Date) -> String? {
        var bytes: [UInt8] = []
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { return nil }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(remaining * 1000, 1000)))
            if ready < 0 && errno == EINTR { continue }
            guard ready >= 0 else { return nil }
            if ready == 0 { continue }
            var byte: UInt8 = 0
            let count = read(fd, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            guard count == 1 else { return nil }
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
    }

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
