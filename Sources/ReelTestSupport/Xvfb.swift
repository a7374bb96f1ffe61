import Foundation
import ReelCore
import Synchronization
internal import CXCB

/// A private X server (`Xvfb`) for a test, on a display number no one else uses.
///
/// Each test starts its own server, so tests can run in parallel. The server has one screen of
/// the given size at depth 24 with a black root window, listens only on its local socket, and
/// is terminated by ``terminate()`` or when the object goes away.
///
/// ```swift
/// let server = try XvfbServer(size: PixelSize(width: 1920, height: 1080))
/// let source = X11ScreenSource(display: server.display)
/// ```
public final class XvfbServer: Sendable {
    /// The display name, e.g. `:117`.
    public let display: String
    /// The display number.
    public let displayNumber: Int
    /// The size of screen 0.
    public let size: PixelSize
    private let process: Mutex<Process?>

    /// Starts `Xvfb` with one screen of `size` and waits until it accepts connections.
    ///
    /// - Parameters:
    ///   - size: the size of screen 0.
    ///   - depth: the colour depth (24 gives the 32-bit pixels Reel captures).
    ///   - timeout: how long to wait for the server, in seconds.
    ///   - extraArguments: more arguments for Xvfb, e.g. `["-extension", "MIT-SHM"]` for a
    ///     server without shared memory.
    ///   - launcher: a command that runs Xvfb, e.g. `setpriv --reuid=65534 … --` for a server
    ///     running as another user (one that cannot attach this process's shared memory); it
    ///     must exec Xvfb, so that the process started is the server.
    ///   - resetsWhenLastClientLeaves: start it without `-noreset`, as Xvfb runs by default:
    ///     whenever its last client disconnects it resets (every window gone), and a connection
    ///     made meanwhile fails or is cut.
    /// - Throws: a ``ReelError`` when Xvfb is missing or does not come up in time.
    public init(size: PixelSize = PixelSize(width: 1920, height: 1080), depth: Int = 24, timeout: Double = 10,
                extraArguments: [String] = [], launcher: [String] = [], resetsWhenLastClientLeaves: Bool = false) throws {
        guard let executable = Self.findExecutable("Xvfb") else {
            throw ReelError(.sourceUnavailable, "Xvfb is not installed", hint: "apt-get install xvfb")
        }
        let deadline = Date().addingTimeInterval(timeout)
        var lastProblem = "no free display number"
        for number in Self.candidateNumbers() where !Self.isTaken(number) {
            guard Date() < deadline else { break }
            let process = Process()
            let arguments = [":\(number)", "-screen", "0", "\(size.width)x\(size.height)x\(depth)",
                             "-nolisten", "tcp"] + (resetsWhenLastClientLeaves ? [] : ["-noreset"]) + ["-br", "-displayfd", "1"] + extraArguments
            if let first = launcher.first {
                process.executableURL = URL(fileURLWithPath: first)
                process.arguments = Array(launcher.dropFirst()) + [executable.path] + arguments
            } else {
                process.executableURL = executable
                process.arguments = arguments
            }
            let ready = Pipe()
            process.standardOutput = ready
            process.standardError = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            do {
                try process.run()
            } catch {
                throw ReelError(.sourceUnavailable, "cannot start Xvfb: \(error)")
            }
            // Xvfb writes its display number to -displayfd once it accepts connections; it exits
            // when another server holds the number, and then we try the next one.
            let answer = Subprocess.readLine(from: ready.fileHandleForReading.fileDescriptor, until: deadline)
            try? ready.fileHandleForReading.close()
            let claimed = answer.flatMap { Int($0) } == number
            if claimed, Self.waitForConnection(":\(number)", until: deadline) {
                self.display = ":\(number)"
                self.displayNumber = number
                self.size = size
                self.process = Mutex(process)
                return
            }
            Self.kill(process)
            // Only a server that announced the number owns its socket; another server may.
            if claimed { Self.removeLeftovers(number) }
            lastProblem = "Xvfb :\(number) did not come up (status \(process.terminationStatus))"
        }
        throw ReelError(.sourceUnavailable, "cannot start an X server for the test: \(lastProblem)",
                        hint: "check that Xvfb runs: Xvfb :99 -screen 0 640x480x24")
    }

    deinit {
        terminate()
    }

    /// Stops the server and waits for it to exit. Safe to call twice.
    public func terminate() {
        let running = process.withLock { process -> Process? in
            defer { process = nil }
            return process
        }
        guard let running else { return }
        Self.kill(running)
        Self.removeLeftovers(displayNumber)
    }

    /// Whether the server is still running.
    public var isRunning: Bool { process.withLock { $0?.isRunning ?? false } }

    /// A display number on which no server runs now (for testing what happens without one).
    public static func unusedDisplay() -> String {
        for number in candidateNumbers() where !isTaken(number) {
            return ":\(number)"
        }
        return ":4095"
    }

    // MARK: - Helpers

    /// Kills the server with `SIGKILL` and waits for it.
    ///
    /// Not `SIGTERM`: a process started from a Swift concurrency or Dispatch thread inherits
    /// that thread's blocked signal mask, and Xvfb never unblocks it, so `SIGTERM` stays pending.
    private static func kill(_ process: Process) {
        if process.isRunning { _ = Glibc.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// Removes the socket and lock file that a killed server leaves behind.
    private static func removeLeftovers(_ number: Int) {
        unlink("/tmp/.X11-unix/X\(number)")
        unlink("/tmp/.X\(number)-lock")
    }

    /// Numbers 90..<400 starting at a random one, so parallel tests rarely collide.
    private static func candidateNumbers() -> [Int] {
        let range = 90..<400
        let start = Int.random(in: range)
        return Array(start..<range.upperBound) + Array(range.lowerBound..<start)
    }

    private static func isTaken(_ number: Int) -> Bool {
        FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)")
            || FileManager.default.fileExists(atPath: "/tmp/.X\(number)-lock")
    }

    private static func findExecutable(_ name: String) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") + ["/usr/bin"] {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return URL(fileURLWithPath: candidate) }
        }
        return nil
    }

    /// Tries to connect to `display` until it works or the deadline passes.
    private static func waitForConnection(_ display: String, until deadline: Date) -> Bool {
        while Date() < deadline {
            if let connection = xcb_connect(display, nil) {
                let ok = xcb_connection_has_error(connection) == 0
                xcb_disconnect(connection)
                if ok { return true }
            }
            usleep(20_000)
        }
        return false
    }
}
