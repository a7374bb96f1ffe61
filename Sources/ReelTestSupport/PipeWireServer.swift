import Foundation
import ReelCore

/// A private PipeWire audio server for one test, as a current desktop runs it: PipeWire,
/// WirePlumber and pipewire-pulse (which serves PulseAudio's protocol, so `PULSE_SERVER` points
/// at it), on a runtime folder and a session bus of their own, with a null sink `apps` as the
/// default sink (made through pipewire-pulse, as `pactl load-module module-null-sink` makes it).
///
/// ``restart()`` kills the three and starts them again (the sinks are made again), as a user's
/// `systemctl --user restart pipewire` does. Every program writes to a log in the server's
/// folder and is ended by its PID in ``terminate()``.
public final class PipeWireServer: @unchecked Sendable {
    /// The variables that put a program (`reel`, `pactl`) on this server: `XDG_RUNTIME_DIR`,
    /// `PULSE_SERVER`, `DBUS_SESSION_BUS_ADDRESS`.
    public let environment: [String: String]
    /// The PulseAudio server string of pipewire-pulse.
    public let server: String
    /// The server's folder: logs, the runtime folder.
    public let folder: TemporaryDirectory
    /// The null sinks made at each start, the first the default.
    public let sinks: [String]

    private let bus: SessionBus
    private let programs: LaunchedPrograms
    private let runtime: URL

    /// Starts the server with null sinks `sinks` (the first the default) and waits until
    /// pipewire-pulse answers.
    ///
    /// - Throws: when a program is missing or does not come up within `timeout` seconds.
    public init(sinks: [String] = ["apps"], timeout: Double = 20) throws {
        self.sinks = sinks
        folder = try TemporaryDirectory(prefix: "reel-pipewire")
        programs = LaunchedPrograms(folder: folder.url)
        bus = try SessionBus()
        runtime = folder.url.appendingPathComponent("run")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        server = "unix:" + runtime.appendingPathComponent("pulse/native").path
        environment = [
            "XDG_RUNTIME_DIR": runtime.path,
            "PULSE_SERVER": server,
            "DBUS_SESSION_BUS_ADDRESS": bus.address,
        ]
        do {
            try start(timeout: timeout)
        } catch {
            terminate()
            throw error
        }
    }

    deinit { terminate() }

    /// The log of `pipewire`, `wireplumber` or `pipewire-pulse`.
    public func log(_ name: String) -> URL { programs.log(name) }

    private func start(timeout: Double) throws {
        let deadline = Date().addingTimeInterval(timeout)
        var base = environment
        base["PATH"] = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/sbin:/usr/bin:/sbin:/bin"
        base["HOME"] = folder.url.path
        try programs.launch("pipewire", ["pipewire"], environment: base)
        try waitFor("PipeWire's socket", until: deadline, log: log("pipewire")) {
            FileManager.default.fileExists(atPath: runtime.appendingPathComponent("pipewire-0").path)
        }
        try programs.launch("wireplumber", ["wireplumber"], environment: base)
        try programs.launch("pipewire-pulse", ["pipewire-pulse"], environment: base)
        try waitFor("pipewire-pulse answering", until: deadline, log: log("pipewire-pulse")) {
            (try? pactl(["info"]))?.contains("PipeWire") == true
        }
        for sink in sinks {
            _ = try pactl(["load-module", "module-null-sink", "sink_name=\(sink)", "rate=48000", "channels=2"])
        }
        // WirePlumber sees the sinks before anything plays into them, and keeps the default
        // (which it can only once its metadata is up).
        try waitFor("the sinks", until: deadline, log: log("wireplumber")) {
            let listed = (try? pactl(["list", "short", "sinks"])) ?? ""
            return sinks.allSatisfy { listed.contains("\t\($0)\t") }
        }
        if let first = sinks.first {
            try waitFor("\(first) as the default sink", until: deadline, log: log("wireplumber")) {
                _ = try? pactl(["set-default-sink", first])
                return (try? pactl(["get-default-sink"]))?.trimmingCharacters(in: .whitespacesAndNewlines) == first
            }
        }
    }

    /// Runs `pactl` on this server and returns what it printed.
    ///
    /// - Throws: when it fails.
    @discardableResult
    public func pactl(_ arguments: [String]) throws -> String {
        let result = try Subprocess.run(["pactl"] + arguments, environment: environment)
        guard result.status == 0 else {
            throw ReelError(.ioFailure, "pactl \(arguments.joined(separator: " ")) failed: \(result.stderr)")
        }
        return result.output
    }

    /// Plays a sine tone into `sink` with `pacat` as the application `applicationName` (see
    /// ``PulseServer/playTone(on:folder:frequency:seconds:amplitude:applicationName:sink:)``).
    @discardableResult
    public func playTone(frequency: Double, seconds: Double, amplitude: Double = 0.5, applicationName: String? = nil,
                         sink: String? = nil) throws -> ToneFeed {
        try PulseServer.playTone(on: server, folder: folder.url, frequency: frequency, seconds: seconds, amplitude: amplitude,
                                 applicationName: applicationName, sink: sink ?? sinks.first ?? "@DEFAULT_SINK@")
    }

    /// Kills PipeWire, WirePlumber and pipewire-pulse and starts them again, with the sinks.
    /// Players and recordings lose their connections.
    public func restart(timeout: Double = 20) throws {
        for name in ["pipewire-pulse", "wireplumber", "pipewire"] { programs.kill(name) }
        for leftover in ["pipewire-0", "pipewire-0.lock", "pulse/native", "pulse/pid"] {
            try? FileManager.default.removeItem(at: runtime.appendingPathComponent(leftover))
        }
        try start(timeout: timeout)
    }

    /// Ends every program and the bus. Safe to call twice.
    public func terminate() {
        programs.terminate()
        bus.terminate()
    }

    private func waitFor(_ what: String, until deadline: Date, log: URL, _ check: () -> Bool) throws {
        while Date() < deadline {
            if check() { return }
            usleep(20_000)
        }
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        throw ReelError(.sourceUnavailable, "no \(what) in time; \(log.lastPathComponent) says: \(text.suffix(800))")
    }
}
