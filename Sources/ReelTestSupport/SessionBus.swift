import Foundation
import Synchronization

/// A private D-Bus session bus (`dbus-daemon`) for a test: its own socket in a temporary
/// folder, and no service files, so nothing is started on demand — a bus on which no desktop
/// portal runs. Stopped by ``terminate()`` or when the object goes away.
public final class SessionBus: Sendable {
    /// The address to put in `DBUS_SESSION_BUS_ADDRESS`.
    public let address: String
    /// The variables that point a subprocess's D-Bus clients at this bus.
    public var environment: [String: String] { ["DBUS_SESSION_BUS_ADDRESS": address] }

    private let folder: TemporaryDirectory
    private let process: Mutex<Process?>

    /// Starts the daemon and waits until it prints its address.
    ///
    /// - Throws: when `dbus-daemon` is missing or does not come up within `timeout` seconds.
    public init(timeout: Double = 10) throws {
        guard let executable = Subprocess.which("dbus-daemon") else {
            throw NSError(domain: "SessionBus", code: 127, userInfo: [NSLocalizedDescriptionKey: "dbus-daemon is not installed (apt-get install dbus-daemon)"])
        }
        folder = try TemporaryDirectory(prefix: "reel-bus")
        let socket = folder.url.appendingPathComponent("bus").path
        let config = """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:path=\(socket)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """
        let configURL = folder.url.appendingPathComponent("session.conf")
        try config.write(to: configURL, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--config-file=\(configURL.path)", "--nofork", "--nopidfile", "--print-address=1"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let line = Subprocess.readLine(from: out.fileHandleForReading.fileDescriptor, until: Date().addingTimeInterval(timeout))
        try? out.fileHandleForReading.close()
        guard let line, line.hasPrefix("unix:") else {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            throw NSError(domain: "SessionBus", code: 1, userInfo: [NSLocalizedDescriptionKey: "dbus-daemon did not come up (it printed \(line ?? "nothing"))"])
        }
        address = line
        self.process = Mutex(process)
    }

    deinit { terminate() }

    /// Stops the daemon and waits for it. Safe to call twice.
    public func terminate() {
        let running = process.withLock { process -> Process? in
            defer { process = nil }
            return process
        }
        guard let running else { return }
        // SIGKILL, as for Xvfb: a process started from a concurrency thread may have SIGTERM blocked.
        if running.isRunning { kill(running.processIdentifier, SIGKILL) }
        running.waitUntilExit()
    }
}
