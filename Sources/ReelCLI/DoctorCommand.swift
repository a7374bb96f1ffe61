import Foundation
import Reel

/// `reel doctor`: checks the machine for what recording needs — the X display and MIT-SHM
/// (and a Wayland session's portal), the audio server and its default source and sink, the
/// cameras and whether this user may open them, the encoders in the linked FFmpeg, and the
/// videos folder — one line per check, each OK or the problem with its fix.
///
/// Exit status 1 exactly when one check is a problem: when recording the default sources
/// would fail (the screen at `$DISPLAY`, the default microphone and the default sink's monitor,
/// in H.264/AAC into the videos folder), or a device named with an option cannot be used.
struct DoctorCommand {
    /// Where the report goes.
    let console: Console
    /// The variables that say where the session's display, bus and videos folder are.
    let environment: [String: String]
    /// `--display`: the X display to check (default: `$DISPLAY`).
    var display: String?
    /// `--camera`: the cameras to check (default: every `/dev/video*`).
    var cameras: [String] = []
    /// `--mic`: the source to check (default: the default source).
    var microphone: String?
    /// `--app-audio`: the application or the sink to check (default: the default sink).
    var sink: String?
    /// `--json`: one JSON object instead of lines.
    var json = false

    /// The options `reel doctor` accepts (its help, man page and completions come from them).
    static let specs: [OptionSpec] = [
        OptionSpec("display", value: .required, placeholder: "DISPLAY", help: "check this X display, e.g. :1 (default: $DISPLAY)"),
        OptionSpec("camera", value: .required, repeatable: true, placeholder: "PATH", completion: .file,
                   help: "check this camera, e.g. /dev/video2, instead of every /dev/video*; repeat for several (one that cannot be used is a problem)"),
        OptionSpec("mic", value: .required, placeholder: "SOURCE", help: "check this audio source (default: the default source)"),
        OptionSpec("app-audio", value: .required, placeholder: "APP|SINK",
                   help: "check this application (whether it plays now) or this sink's monitor (default: the default sink's)"),
        OptionSpec("json", help: "print one JSON object: {\"checks\": [{name, status, detail, fix}], \"problems\", \"warnings\"}"),
        OptionSpec("help", short: "h", help: "show this help"),
    ]

    /// What `reel doctor --help` says before the options.
    static let help = """
    Usage: reel doctor [--display DISPLAY] [--camera PATH]... [--mic SOURCE] [--app-audio APP|SINK] [--json]

    Checks this machine for what recording needs, one line per check, each ok, a warning or a
    PROBLEM with its fix (what to install, which group to join, which variable to set):
      display        the X display ($DISPLAY) answers, and its screen size
      mit-shm        the X server shares memory with reel (else every frame is copied)
      composite      the X server has Composite (what --window records a window through)
      wayland        in a Wayland session: whether the ScreenCast portal, through which
                     --screen records it, is on the session bus
      audio-server   PulseAudio or PipeWire-Pulse answers (PULSE_SERVER), its name and version
      microphone     the default source (what --mic records)
      app-audio      the default sink and its monitor (what --app-audio records); with
                     --app-audio=APP, whether that application plays now (not playing is a
                     warning: a recording waits for it)
      app-audio-method
                     how one application's sound is recorded here: linked in PipeWire's
                     graph (PipeWire with pipewire-pulse), or routed through PulseAudio modules
      app-audio-routing
                     routing of application audio (--app-audio=APP) that a recording killed
                     together with its guard left behind: restored now, and said
      camera PATH    each /dev/video*: whether this user may open it, busy, a camera or not
      encoder …      H.264 (libx264), HEVC (libx265), VP9 (libvpx-vp9), AV1 (libaom-av1),
                     AAC and Opus (libopus) in the FFmpeg reel uses
      videos-folder  where reel record writes without -o: writable, and its free space

    Exit status: 1 when a check is a PROBLEM — recording the default sources would fail (the
    screen, the default microphone and the default sink's monitor, in H.264/AAC into the videos
    folder) or a device named here cannot be used; 0 otherwise, warnings included (no camera,
    no MIT-SHM, no HEVC); 2 for a usage error. The test pattern and tone need nothing.

    """

    /// Reads the options of `reel doctor`.
    init(_ parsed: ParsedArguments, console: Console, environment: [String: String]) throws {
        if let extra = parsed.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
        self.console = console
        self.environment = environment
        json = parsed.has("json")
        if let value = parsed.value("display") ?? nil {
            guard !value.isEmpty else { throw UsageError("--display needs a display name such as :0") }
            display = value
        }
        for value in parsed.all("camera") {
            guard let path = value, !path.isEmpty else { throw UsageError("--camera needs a device path such as /dev/video0") }
            guard !path.contains("://"), !path.lowercased().hasPrefix("test") else {
                throw UsageError("--camera \(path): reel doctor checks V4L2 cameras; give a device path such as /dev/video0")
            }
            cameras.append(path)
        }
        if let value = parsed.value("mic") ?? nil {
            guard !value.isEmpty else { throw UsageError("--mic needs a source name (reel devices lists them)") }
            microphone = value
        }
        if let value = parsed.value("app-audio") ?? nil {
            guard !value.isEmpty else { throw UsageError("--app-audio needs an application or a sink name (reel devices lists them)") }
            sink = value
        }
    }

    /// Runs every check, prints them and returns the exit status.
    func run() -> Int32 {
        let checks = gather()
        let problems = checks.filter { $0.status == .problem }.count
        let warnings = checks.filter { $0.status == .warning }.count
        if json {
            console.out(ProgressRenderer.json(["checks": checks.map(\.jsonObject), "problems": problems, "warnings": warnings]))
        } else {
            let width = checks.map(\.name.count).max() ?? 0
            for check in checks { console.out(check.line(nameWidth: width)) }
            let warned = warnings == 0 ? "" : " (\(warnings) warning\(warnings == 1 ? "" : "s"))"
            if problems == 0 {
                console.out("No problems: recording the screen and sound should work here\(warned).")
            } else {
                console.out("\(problems) problem\(problems == 1 ? "" : "s"): recording would fail until \(problems == 1 ? "it is" : "they are") fixed\(warned).")
            }
        }
        return DoctorCheck.exitStatus(checks)
    }

    /// Every check, in the order they are printed.
    func gather() -> [DoctorCheck] {
        var checks: [DoctorCheck] = []
        let displayName = display ?? environment["DISPLAY"].flatMap { $0.isEmpty ? nil : $0 }
        checks += DoctorChecks.display(Result { try X11ScreenSource.diagnoseDisplay(displayName) },
                                       sockets: X11ScreenSource.availableDisplays())
        if DoctorChecks.isWaylandSession(environment),
           let wayland = DoctorChecks.wayland(environment: environment, portal: PortalProbe.ask(environment: environment)) {
            checks.append(wayland)
        }
        checks += DoctorChecks.audio(Result {
            let server = try PulseAudioDevices.serverInfo()
            let devices = try PulseAudioDevices.list()
            return DoctorChecks.AudioFacts(server: server, sources: devices.sources, sinks: devices.sinks,
                                           applications: (try? PulseAudioDevices.applications()) ?? [],
                                           applicationAudio: ApplicationAudioGuard.way(environment: environment))
        }, microphone: microphone, sink: sink, pulseServer: environment["PULSE_SERVER"])
        checks.append(ApplicationAudioGuard.doctorCheck(environment: environment))
        checks += Self.cameraChecks(named: cameras, driver: SystemV4L2Driver())
        checks += DoctorChecks.encoders(hasEncoder: EncoderAvailability.hasEncoder(named:))
        checks.append(DoctorChecks.videosFolder(Self.folderFacts(OutputLocation.videosDirectory(environment: environment))))
        return checks
    }

    /// The checks of the cameras `named` (with `--camera`), or of every video device node
    /// `driver` has when none are named.
    static func cameraChecks(named: [String], driver: any V4L2Driver) -> [DoctorCheck] {
        if !named.isEmpty {
            return named.map { path in
                var status = V4L2Devices.authorizationStatus(forCamera: path, driver: driver)
                // Something is there that would not open as a camera (a folder, a file): say why.
                if status == .absent && driver.exists(path) { status = .authorized }
                let description = status == .authorized ? Result { try V4L2Devices.describe(path, driver: driver) } : nil
                return DoctorChecks.camera(path, status: status, description: description, named: true)
            }
        }
        let list = V4L2Devices.list(driver: driver)
        var found: [(path: String, description: Result<V4L2Device, any Error>)] =
            (list.cameras + list.otherDevices).map { ($0.path, .success($0)) }
        found += list.unavailable.map { ($0.path, .failure($0.error)) }
        guard !found.isEmpty else { return [DoctorChecks.noCameras] }
        let order = driver.devicePaths()
        return found.sorted { (order.firstIndex(of: $0.path) ?? 0) < (order.firstIndex(of: $1.path) ?? 0) }.map { entry in
            DoctorChecks.camera(entry.path, status: V4L2Devices.authorizationStatus(forCamera: entry.path, driver: driver),
                                description: entry.description, named: false)
        }
    }

    /// What is at the videos folder's path, whether this user may write there (or create it),
    /// and the free space on its disk.
    static func folderFacts(_ url: URL) -> DoctorChecks.FolderFacts {
        func freeBytes(_ path: String) -> Int64? {
            FreeSpace.of(URL(fileURLWithPath: path))?.available
        }
        var info = stat()
        if stat(url.path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                return .init(url: url, kind: .notAFolder, writable: false, freeBytes: nil, existingParent: nil)
            }
            return .init(url: url, kind: .folder, writable: access(url.path, W_OK | X_OK) == 0, freeBytes: freeBytes(url.path),
                         existingParent: nil)
        }
        var parent = url.deletingLastPathComponent()
        while parent.path != "/" && stat(parent.path, &info) != 0 { parent = parent.deletingLastPathComponent() }
        let isFolder = stat(parent.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
        return .init(url: url, kind: .missing, writable: isFolder && access(parent.path, W_OK | X_OK) == 0,
                     freeBytes: freeBytes(parent.path), existingParent: parent)
    }
}
