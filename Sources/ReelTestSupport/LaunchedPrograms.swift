import Foundation

/// Programs a test harness starts (servers, daemons), each writing to a log file of its own in
/// `folder` (none inherits the test's standard output), found by name, and ended by its PID with
/// SIGKILL: by ``kill(_:)`` one at a time, or all by ``terminate()``, newest first.
public final class LaunchedPrograms: @unchecked Sendable {
    /// Where the logs go.
    public let folder: URL
    private let lock = NSLock()
    // Guarded by `lock`: every program started, by name, oldest first.
    private var programs: [(name: String, process: Process)] = []

    /// Programs whose logs go to `folder`.
    public init(folder: URL) { self.folder = folder }

    /// The log file of the program `name`.
    public func log(_ name: String) -> URL { folder.appendingPathComponent("\(name).log") }

    /// Starts `arguments` (a program found on `PATH` unless its path is given) as `name`, its
    /// output appended to its log.
    ///
    /// - Throws: when the program is not installed or cannot be started.
    public func launch(_ name: String, _ arguments: [String], environment: [String: String]) throws {
        guard let executable = arguments[0].hasPrefix("/") ? arguments[0] : Subprocess.which(arguments[0]) else {
            throw NSError(domain: "LaunchedPrograms", code: 127,
                          userInfo: [NSLocalizedDescriptionKey: "\(arguments[0]) is not installed (scripts/install-deps installs it)"])
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = Array(arguments.dropFirst())
        process.environment = environment
        if !FileManager.default.fileExists(atPath: log(name).path) {
            _ = FileManager.default.createFile(atPath: log(name).path, contents: nil)
        }
        let output = try FileHandle(forWritingTo: log(name))
        output.seekToEndOfFile()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try? output.close()
        lock.withLock { programs.append((name, process)) }
    }

    /// The PID of the program `name` (the newest of that name), if it runs.
    public func pid(of name: String) -> Int32? {
        lock.withLock { programs.last { $0.name == name && $0.process.isRunning }?.process.processIdentifier }
    }

    /// Kills the program `name` (every one of that name) with SIGKILL and waits for it.
    public func kill(_ name: String) {
        let found = lock.withLock { programs.filter { $0.name == name }.map(\.process) }
        for process in found {
            if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        lock.withLock { programs.removeAll { $0.name == name } }
    }

    /// Ends every program, newest first, by PID. Safe to call twice.
    public func terminate() {
        let all = lock.withLock { () -> [Process] in
            defer { programs = [] }
            return programs.map(\.process)
        }
        for process in all.reversed() {
            if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }
}
