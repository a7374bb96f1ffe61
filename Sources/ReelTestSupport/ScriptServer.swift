import Foundation
import ReelCore
import Synchronization

/// A test server that is a small Python script run with the system's `/usr/bin/python3` (whose
/// GStreamer bindings Debian installs), in its own process: it prints the TCP port it listens on
/// as its first line, and exits when its stdin closes, so a crashed test leaves no server behind.
///
/// Killing it (``kill()``) is what a real server dying mid-stream looks like to a client: the
/// kernel closes its sockets. ``restart()`` brings it back on the same port.
final class ScriptServer: Sendable {
    /// The Python interpreter with Debian's packages (not a pyenv one first on PATH).
    static let python = "/usr/bin/python3"

    /// The port the server listens on (the same after a restart).
    let port: Int
    private let scriptPath: String
    private let arguments: [String]
    private let logPath: String
    private let what: String
    private let timeout: Double
    private let running = Mutex<Running?>(nil)

    private struct Running: @unchecked Sendable {
        let process: Process
        /// The write end of the server's stdin; closing it ends the server.
        let stdin: Pipe
    }

    /// Writes `script` into `directory` and starts it with `arguments`, where `{port}` stands for
    /// the port (`port`, or 0 to let the script pick a free one).
    init(what: String, script: String, directory: URL, arguments: [String], port: Int = 0, timeout: Double = 10) throws {
        self.what = what
        self.timeout = timeout
        scriptPath = directory.appendingPathComponent("server.py").path
        logPath = directory.appendingPathComponent("server.log").path
        self.arguments = arguments
        guard FileManager.default.isExecutableFile(atPath: Self.python) else {
            throw ReelError(.sourceUnavailable, "\(Self.python) is missing", hint: "apt-get install python3")
        }
        do {
            try (Self.stdinWatcher + script).write(toFile: scriptPath, atomically: true, encoding: .utf8)
        } catch {
            throw ReelError(.ioFailure, "cannot write the \(what) script to \(scriptPath): \(error)")
        }
        let (bound, started) = try Self.launch(what: what, script: scriptPath, arguments: arguments, port: port,
                                               log: logPath, timeout: timeout)
        self.port = bound
        running.withLock { $0 = started }
    }

    deinit { kill() }

    /// Lets the script end when this process goes away (its stdin closes).
    private static let stdinWatcher = """
        import os as _os, sys as _sys, threading as _threading
        def _watch_stdin():
            try:
                _sys.stdin.buffer.read()
            finally:
                _os._exit(0)
        _threading.Thread(target=_watch_stdin, daemon=True).start()

        """

    /// Whether the server is running.
    var isRunning: Bool { running.withLock { $0?.process.isRunning ?? false } }

    /// The server's log (its stderr), for a failing test to show.
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Kills the server at once (`SIGKILL`), as a crash or a power cut would, and reaps it.
    func kill() {
        guard let current = running.withLock({ r -> Running? in let c = r; r = nil; return c }) else { return }
        if current.process.isRunning { Foundation.kill(current.process.processIdentifier, SIGKILL) }
        current.process.waitUntilExit()
        try? current.stdin.fileHandleForWriting.close()
    }

    /// Freezes the server (`SIGSTOP`): its connections stay open but nothing more arrives, as
    /// when a camera hangs or the network stalls. ``thaw()`` lets it go on.
    func freeze() {
        running.withLock { r in if let p = r?.process, p.isRunning { _ = Foundation.kill(p.processIdentifier, SIGSTOP) } }
    }

    /// Lets a frozen server go on (`SIGCONT`).
    func thaw() {
        running.withLock { r in if let p = r?.process, p.isRunning { _ = Foundation.kill(p.processIdentifier, SIGCONT) } }
    }

    /// Starts the server again on the same port (after ``kill()``); does nothing if it runs.
    func restart() throws {
        if isRunning { return }
        kill()
        let (again, started) = try Self.launch(what: what, script: scriptPath, arguments: arguments, port: port,
                                               log: logPath, timeout: timeout)
        running.withLock { $0 = started }
        guard again == port else {
            kill()
            throw ReelError(.sourceUnavailable, "the \(what) came back on port \(again), not \(port)")
        }
    }

    private static func launch(what: String, script: String, arguments: [String], port: Int, log: String,
                               timeout: Double) throws -> (Int, Running) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-u", script] + arguments.map { $0.replacingOccurrences(of: "{port}", with: String(port)) }
        var environment = ProcessInfo.processInfo.environment
        // Debian's own modules, not a virtual environment's.
        environment.removeValue(forKey: "PYTHONPATH")
        environment.removeValue(forKey: "PYTHONHOME")
        process.environment = environment
        let output = Pipe(), input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: log) ?? FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw ReelError(.sourceUnavailable, "cannot start the \(what): \(error)")
        }
        let line = Subprocess.readLine(from: output.fileHandleForReading.fileDescriptor, until: Date().addingTimeInterval(timeout))
        guard let line, let bound = Int(line.trimmingCharacters(in: .whitespaces)), bound > 0 else {
            if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            let tail = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").suffix(6).joined(separator: "\n")
            throw ReelError(.sourceUnavailable, "the \(what) did not start within \(timeout) s", hint: "its log says:\n\(tail)")
        }
        return (bound, Running(process: process, stdin: input))
    }
}
