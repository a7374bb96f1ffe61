import Foundation
import ReelCore
import Synchronization

/// A headless Wayland desktop for tests, as `scripts/wayland/README` describes: sway with the
/// headless backend (run as a throwaway user, `reelwl`, because sway refuses to run as root),
/// PipeWire, WirePlumber and pipewire-pulse (`PULSE_SERVER` points at it), and the ScreenCast portal (xdg-desktop-portal with the wlr backend,
/// which picks the output without a dialog; the backend runs with an `LD_PRELOAD` shim, built
/// here with gcc, for Debian 12's xdg-desktop-portal-wlr 0.7.0, which otherwise insists on
/// DMA-BUF), all on a private session bus. Every process writes to a log file in the desktop's
/// folder (none inherits the test's standard output) and is ended by its PID with SIGKILL in
/// ``terminate()``.
public final class WaylandDesktop: @unchecked Sendable {
    /// The variables that put a program (`reel`) on this desktop: `WAYLAND_DISPLAY`,
    /// `XDG_RUNTIME_DIR`, `XDG_SESSION_TYPE`, `DBUS_SESSION_BUS_ADDRESS`, `SWAYSOCK`, and an
    /// `XDG_STATE_HOME` of its own (where reel keeps the portal's restore token).
    public private(set) var environment: [String: String] = [:]
    /// The output's size.
    public let size: PixelSize
    /// The desktop's folder: logs, the run folder, the state folder.
    public let folder: TemporaryDirectory

    private let bus: SessionBus
    private let programs: LaunchedPrograms

    /// The throwaway user sway runs as.
    public static let user = "reelwl"

    /// Starts the desktop and waits until the portal is on the bus.
    ///
    /// - Throws: when a program is missing or does not come up within `timeout` seconds (the
    ///   error names the log to read).
    ///
    /// - Parameter background: the output's colour to begin with (`"#000000"`).
    public init(size: PixelSize = PixelSize(width: 640, height: 480), background: String = "#000000", timeout: Double = 20) throws {
        self.size = size
        folder = try TemporaryDirectory(prefix: "reel-wayland")
        programs = LaunchedPrograms(folder: folder.url)
        bus = try SessionBus()
        let run = folder.url.appendingPathComponent("run"), state = folder.url.appendingPathComponent("state")
        try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        try Self.ensureUser()
        // The run folder belongs to the compositor's user, as a login would make it; root
        // (everything else) can use it anyway.
        try Subprocess.run(["chown", "\(Self.user):", run.path, folder.url.path])
        try Subprocess.run(["chmod", "700", run.path])
        try Subprocess.run(["chmod", "755", folder.url.path])

        let sway = folder.url.appendingPathComponent("sway.conf")
        try """
        output HEADLESS-1 resolution \(size.width)x\(size.height) bg \(background) solid_color
        default_border none
        """.write(to: sway, atomically: true, encoding: .utf8)
        let xdpw = folder.url.appendingPathComponent("xdpw.config")
        try "[screencast]\nchooser_type=none\noutput_name=HEADLESS-1\nmax_fps=30\n".write(to: xdpw, atomically: true, encoding: .utf8)
        let shim = folder.url.appendingPathComponent("xdpw-shm-shim.so")
        let shimSource = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../scripts/wayland/xdpw-shm-shim.c").standardized
        let built = try Subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", shim.path, shimSource.path, "-ldl"])
        guard built.status == 0 else { throw Self.failure("gcc could not build the portal shim: \(built.stderr)") }

        var base: [String: String] = [
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": "/root",
            "XDG_RUNTIME_DIR": run.path,
            "XDG_CURRENT_DESKTOP": "sway",
            "XDG_SESSION_TYPE": "wayland",
            "DBUS_SESSION_BUS_ADDRESS": bus.address,
        ]
        let deadline = Date().addingTimeInterval(timeout)
        do {
            try launch("sway", ["/usr/bin/setpriv", "--reuid=\(Self.user)", "--regid=\(Self.user)", "--init-groups",
                                "env", "HOME=/home/\(Self.user)", "WLR_BACKENDS=headless", "WLR_RENDERER=pixman",
                                "WLR_LIBINPUT_NO_DEVICES=1", "sway", "-c", sway.path], environment: base)
            let (display, ipc) = try Self.waitFor("sway's sockets", until: deadline, log: log("sway")) { () -> (String, String)? in
                let names = (try? FileManager.default.contentsOfDirectory(atPath: run.path)) ?? []
                guard let display = names.first(where: { $0.hasPrefix("wayland-") && !$0.hasSuffix(".lock") }),
                      let ipc = names.first(where: { $0.hasPrefix("sway-ipc.") }) else { return nil }
                return (display, run.appendingPathComponent(ipc).path)
            }
            base["WAYLAND_DISPLAY"] = display
            base["SWAYSOCK"] = ipc
            try launch("pipewire", ["pipewire"], environment: base)
            _ = try Self.waitFor("PipeWire's socket", until: deadline, log: log("pipewire")) {
                FileManager.default.fileExists(atPath: run.appendingPathComponent("pipewire-0").path) ? true : nil
            }
            try launch("wireplumber", ["wireplumber"], environment: base)
            // PipeWire's PulseAudio server, as a desktop with PipeWire runs it for audio.
            base["PULSE_SERVER"] = "unix:" + run.appendingPathComponent("pulse/native").path
            try launch("pipewire-pulse", ["pipewire-pulse"], environment: base)
            var backend = base
            backend["LD_PRELOAD"] = shim.path
            try launch("xdg-desktop-portal-wlr", ["/usr/libexec/xdg-desktop-portal-wlr", "-l", "INFO", "-c", xdpw.path], environment: backend)
            try waitForName("org.freedesktop.impl.portal.desktop.wlr", until: deadline, log: log("xdg-desktop-portal-wlr"))
            // The portal keeps restore tokens in the permission store, which a desktop's bus
            // starts on demand; this bus starts nothing.
            try launch("xdg-permission-store", ["/usr/libexec/xdg-permission-store", "--replace"], environment: base)
            try waitForName("org.freedesktop.impl.portal.PermissionStore", until: deadline, log: log("xdg-permission-store"))
            try launch("xdg-desktop-portal", ["/usr/libexec/xdg-desktop-portal", "-v"], environment: base)
            try waitForName("org.freedesktop.portal.Desktop", until: deadline, log: log("xdg-desktop-portal"))
            _ = try Self.waitFor("pipewire-pulse's socket", until: deadline, log: log("pipewire-pulse")) {
                FileManager.default.fileExists(atPath: run.appendingPathComponent("pulse/native").path) ? true : nil
            }
        } catch {
            terminate()
            throw error
        }
        var environment = base
        environment["XDG_STATE_HOME"] = state.path
        self.environment = environment
    }

    deinit { terminate() }

    /// The log file of a program started here.
    public func log(_ name: String) -> URL { programs.log(name) }

    /// The PID of a program started here (`pipewire`, `xdg-desktop-portal-wlr`), if it runs.
    public func pid(of name: String) -> Int32? { programs.pid(of: name) }

    /// Paints the whole output one colour (`"#00ff00"`): sway restarts swaybg, and the screen
    /// shows one grey frame on the way.
    public func paint(_ colour: String) throws {
        let result = try Subprocess.run(["swaymsg", "-q", "output", "*", "bg", colour, "solid_color"], environment: environment)
        guard result.status == 0 else { throw Self.failure("swaymsg failed: \(result.stderr)") }
    }

    /// Kills one program started here with SIGKILL and waits for it.
    public func kill(_ name: String) { programs.kill(name) }

    /// Ends every program, newest first, by PID, and the bus. Safe to call twice.
    public func terminate() {
        programs.terminate()
        bus.terminate()
    }

    private func launch(_ name: String, _ arguments: [String], environment: [String: String]) throws {
        do {
            try programs.launch(name, arguments, environment: environment)
        } catch {
            throw Self.failure((error as NSError).localizedDescription)
        }
    }

    private func waitForName(_ name: String, until deadline: Date, log: URL) throws {
        let left = max(1, Int(deadline.timeIntervalSinceNow.rounded(.up)))
        let result = try Subprocess.run(["gdbus", "wait", "--session", "--timeout", "\(left)", name],
                                        environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        guard result.status == 0 else {
            throw Self.failure("\(name) did not come onto the bus (\(result.stderr.trimmingCharacters(in: .whitespacesAndNewlines))); see \(log.path)")
        }
    }

    private static func waitFor<T>(_ what: String, until deadline: Date, log: URL, _ check: () -> T?) throws -> T {
        while Date() < deadline {
            if let value = check() { return value }
            usleep(20_000)
        }
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        throw failure("no \(what) in time; \(log.lastPathComponent) says: \(text.suffix(800))")
    }

    private static func ensureUser() throws {
        if (try? Subprocess.run(["id", user]))?.status == 0 { return }
        let made = try Subprocess.run(["useradd", "-m", user])
        // Another test may have made it meanwhile.
        guard made.status == 0 || (try? Subprocess.run(["id", user]))?.status == 0 else {
            throw failure("cannot make the user \(user) for sway: \(made.stderr)")
        }
    }

    private static func failure(_ message: String) -> NSError {
        NSError(domain: "WaylandDesktop", code: 1, userInfo: [NSLocalizedDescriptionKey: message])
    }
}
