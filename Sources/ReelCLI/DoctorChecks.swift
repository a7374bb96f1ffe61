import Foundation
import Reel

/// The rules of `reel doctor`: what each fact found on the machine means for recording, as
/// ``DoctorCheck``s. Pure functions of the facts (the command gathers them), so the rules —
/// above all which findings are problems, and so the exit status — are tested on their own.
enum DoctorChecks {
    // MARK: Display

    /// The `display` and `mit-shm` checks for what connecting to the X display gave.
    ///
    /// - Parameters:
    ///   - result: the diagnosis, or why the display could not be used.
    ///   - sockets: the displays with a socket on this machine (named in the fix).
    static func display(_ result: Result<DisplayDiagnosis, any Error>, sockets: [String]) -> [DoctorCheck] {
        switch result {
        case .failure(let error):
            let reel = (error as? ReelError).map { CommandLineHints.rephrased($0) }
            var fix = reel?.hint ?? "start an X server or set DISPLAY"
            if reel?.code == .sourceUnavailable {
                fix = sockets.isEmpty
                    ? "log in to an X11 desktop (or start one, e.g. Xvfb :1) and set DISPLAY to it"
                    : "set DISPLAY to a running X server (this machine has a socket for \(sockets.joined(separator: ", ")))"
            }
            return [DoctorCheck("display", .problem, "\(reel?.message ?? "\(error)"): reel record --screen cannot record", fix: fix)]
        case .success(let diagnosis):
            let name = diagnosis.name
            var checks = [DoctorCheck("display", .ok, "X display \(name), screen \(diagnosis.screenSize)")]
            switch diagnosis.sharedMemory {
            case .usable:
                checks.append(DoctorCheck("mit-shm", .ok, "shared memory (MIT-SHM) works: frames are read without copying"))
            case .notOffered:
                checks.append(DoctorCheck("mit-shm", .warning,
                                          "the X server at \(name) has no MIT-SHM extension: each frame is copied through its socket (more CPU; large screens may drop frames)",
                                          fix: "enable MIT-SHM in the X server (Xvfb and Xorg have it unless started with '-extension MIT-SHM')"))
            case .refused(let reason):
                checks.append(DoctorCheck("mit-shm", .warning,
                                          "the X server at \(name) offers MIT-SHM but cannot use this process's shared memory, so frames are copied (more CPU): \(reason)",
                                          fix: "run reel where the X server can see its memory: the same machine and IPC namespace (a container needs --ipc=host)"))
            }
            checks.append(diagnosis.composite
                ? DoctorCheck("composite", .ok, "the Composite extension is there: --window records a window's own picture")
                : DoctorCheck("composite", .warning,
                              "the X server at \(name) has no Composite extension: --window cannot record a window (--screen and --region still work)",
                              fix: "enable Composite in the X server (Xorg and Xvfb have it unless started with '-extension Composite')"))
            return checks
        }
    }

    // MARK: Wayland

    /// What asking the session bus for the ScreenCast portal gave.
    enum PortalAnswer: Sendable, Equatable {
        /// `org.freedesktop.portal.Desktop` has `org.freedesktop.portal.ScreenCast` at `version`.
        case screenCast(version: Int)
        /// The portal answered but has no ScreenCast interface (no backend offers it).
        case noScreenCast(String)
        /// No portal on the session bus.
        case noPortal(String)
        /// No session bus to ask.
        case noSessionBus(String)
        /// The bus could not be asked (no `dbus-send`).
        case cannotAsk(String)
    }

    /// Whether `environment` is a Wayland session: `WAYLAND_DISPLAY` is set or
    /// `XDG_SESSION_TYPE` is `wayland`.
    static func isWaylandSession(_ environment: [String: String]) -> Bool {
        !(environment["WAYLAND_DISPLAY"] ?? "").isEmpty || environment["XDG_SESSION_TYPE"]?.lowercased() == "wayland"
    }

    /// The `wayland` check: in a Wayland session, whether `--screen` can record it through
    /// the ScreenCast portal (ok), or what is missing (a problem: the default screen cannot be
    /// recorded), with what the portal answered; `nil` outside one.
    static func wayland(environment: [String: String], portal: PortalAnswer) -> DoctorCheck? {
        guard isWaylandSession(environment) else { return nil }
        let session = environment["WAYLAND_DISPLAY"].flatMap { $0.isEmpty ? nil : "WAYLAND_DISPLAY=\($0)" } ?? "XDG_SESSION_TYPE=wayland"
        let now = "Wayland session (\(session)): --screen records it through the ScreenCast portal and PipeWire"
        let x11 = "--screen=:0 records only XWayland's windows"
        let portalFix = "install xdg-desktop-portal and your desktop's backend (xdg-desktop-portal-gnome, -kde or -wlr) and PipeWire; meanwhile \(x11)"
        switch portal {
        case .screenCast(let version):
            return DoctorCheck("wayland", .ok, "\(now); the ScreenCast portal is on the session bus (version \(version)); it asks the first time which screen to share")
        case .noScreenCast(let why):
            return DoctorCheck("wayland", .problem, "\(now); the desktop portal offers no ScreenCast (\(why))", fix: portalFix)
        case .noPortal(let why):
            return DoctorCheck("wayland", .problem, "\(now); the ScreenCast portal (org.freedesktop.portal.Desktop) is not on the session bus (\(why))",
                               fix: portalFix)
        case .noSessionBus(let why):
            return DoctorCheck("wayland", .problem, "\(now); there is no D-Bus session bus to ask for the ScreenCast portal (\(why))",
                               fix: "run reel inside the desktop session (DBUS_SESSION_BUS_ADDRESS set); meanwhile \(x11)")
        case .cannotAsk(let why):
            return DoctorCheck("wayland", .warning, "\(now); the ScreenCast portal could not be asked for (\(why))",
                               fix: "apt-get install dbus-bin (dbus-send) to check the portal")
        }
    }

    // MARK: Audio

    /// What the audio server said: about itself, its sources and its sinks.
    struct AudioFacts: Sendable {
        /// Name, version and defaults.
        var server: AudioServerInfo
        /// Its sources (microphones and sink monitors).
        var sources: [AudioDevice]
        /// Its sinks.
        var sinks: [AudioDevice]
        /// The applications playing now.
        var applications: [PlayingStream] = []
        /// How one application's sound is recorded here: `nil` when that could not be found.
        var applicationAudio: ApplicationAudioWay?
    }

    /// How one application's sound is recorded on this machine (see `ApplicationAudioMethod`).
    enum ApplicationAudioWay: Sendable, Equatable {
        /// Linked in PipeWire's graph (at this daemon, `nil`: the usual one).
        case linking(remote: String?)
        /// Routed through PulseAudio modules, for this reason.
        case routing(reason: String)

        /// How it is said.
        var sentence: String {
            switch self {
            case .linking(let remote):
                "one application's sound (--app-audio=APP) is linked in PipeWire's graph\(remote.map { " (\($0))" } ?? ""): nothing is moved"
            case .routing(let reason):
                "one application's sound (--app-audio=APP) is routed through PulseAudio modules (\(reason))"
            }
        }
    }

    /// The `audio-server`, `microphone` and `app-audio` checks.
    ///
    /// - Parameters:
    ///   - result: what the server said, or why it could not be asked.
    ///   - microphone: the source named with `--mic` (`nil`: the default source).
    ///   - sink: the sink named with `--app-audio` (`nil`: the default sink).
    ///   - pulseServer: `PULSE_SERVER` if set: then a server that does not answer is that
    ///     variable's doing, not a server that is not running.
    static func audio(_ result: Result<AudioFacts, any Error>, microphone: String?, sink: String?,
                      pulseServer: String? = nil) -> [DoctorCheck] {
        let facts: AudioFacts
        switch result {
        case .failure(let error):
            let reel = (error as? ReelError).map { CommandLineHints.rephrased($0) }
            if let pulseServer, !pulseServer.isEmpty {
                return [DoctorCheck("audio-server", .problem,
                                    "no PulseAudio server answers at PULSE_SERVER=\(pulseServer) (\(reel?.message ?? "\(error)")): reel record --mic and --app-audio cannot record",
                                    fix: "point PULSE_SERVER at a running server, or unset it to use this session's")]
            }
            return [DoctorCheck("audio-server", .problem,
                                "\(reel?.message ?? "\(error)"): reel record --mic and --app-audio cannot record",
                                fix: reel?.hint ?? "start PulseAudio or PipeWire's pipewire-pulse, or point PULSE_SERVER at a running server")]
        case .success(let found):
            facts = found
        }
        var checks = [DoctorCheck("audio-server", .ok, "\(facts.server.name) \(facts.server.version)")]
        let listHint = "reel devices lists the sources and sinks"

        if let name = microphone ?? facts.server.defaultSource {
            let what = microphone == nil ? "default source" : "source"
            if let device = facts.sources.first(where: { $0.name == name }) {
                if device.isMonitor && microphone == nil {
                    checks.append(DoctorCheck("microphone", .warning,
                                              "the default source '\(name)' is a sink's monitor, not a microphone: --mic records what plays",
                                              fix: "choose a microphone: pactl set-default-source NAME, or reel record --mic=NAME (\(listHint))"))
                } else {
                    checks.append(DoctorCheck("microphone", .ok, "\(what) '\(name)' (\(device.description))"))
                }
            } else {
                checks.append(DoctorCheck("microphone", .problem, "the server has no \(what) '\(name)': --mic cannot record",
                                          fix: microphone == nil ? "set a default: pactl set-default-source NAME (\(listHint))" : listHint))
            }
        } else {
            checks.append(DoctorCheck("microphone", .problem, "the server has no default source: --mic has nothing to record",
                                      fix: "plug in or enable a microphone, or set one: pactl set-default-source NAME (\(listHint))"))
        }

        if let name = sink, !ApplicationAudioGuard.namesSink(name, sinks: facts.sinks.map(\.name)) {
            checks.append(application(name, facts: facts))
        } else if let name = sink ?? facts.server.defaultSink {
            let what = sink == nil ? "default sink" : "sink"
            let monitor = name.hasSuffix(".monitor") ? name : "\(name).monitor"
            if facts.sources.contains(where: { $0.name == monitor }) {
                checks.append(DoctorCheck("app-audio", .ok, "\(what) '\(name)', its monitor '\(monitor)' records what applications play"))
            } else {
                checks.append(DoctorCheck("app-audio", .problem, "the server has no source '\(monitor)' (the monitor of the \(what)): --app-audio cannot record",
                                          fix: sink == nil ? "set a default sink: pactl set-default-sink NAME (\(listHint))" : listHint))
            }
        } else {
            checks.append(DoctorCheck("app-audio", .problem, "the server has no default sink: --app-audio has nothing to record",
                                      fix: "enable an output device, or set one: pactl set-default-sink NAME (\(listHint))"))
        }
        if let way = facts.applicationAudio { checks.append(DoctorCheck("app-audio-method", .ok, way.sentence)) }
        return checks
    }

    /// The `app-audio` check of `--app-audio=APP` naming an application (no sink has that
    /// name), as `reel record --app-audio=APP` takes it: fine when it plays now; when it does
    /// not, a recording waits for it (and is incomplete if it never plays), which is a warning.
    private static func application(_ name: String, facts: AudioFacts) -> DoctorCheck {
        let playing = facts.applications.filter { !$0.isModuleStream && $0.isPlayed(by: name) }
        guard playing.isEmpty else {
            let streams = playing.map { "'\($0.label)' on '\($0.sinkName)'" }.joined(separator: ", ")
            return DoctorCheck("app-audio", .ok, "application '\(name)' plays now (\(streams)): reel record --app-audio=\(name) records its sound")
        }
        return DoctorCheck("app-audio", .warning,
                           "no application '\(name)' is playing now, and no sink has that name: reel record --app-audio=\(name) records its sound once it starts (a recording in which it never plays is incomplete, exit status 3)",
                           fix: "check the name: reel devices lists the applications playing (name, program, pid) and the sinks")
    }

    // MARK: Cameras

    /// The check of the camera at `path`.
    ///
    /// - Parameters:
    ///   - status: whether this user may open it.
    ///   - description: what the camera said about itself, when it could be opened.
    ///   - named: whether the user named it (`--camera`): then a camera that cannot be used is
    ///     a problem, not a warning.
    static func camera(_ path: String, status: AuthorizationStatus, description: Result<V4L2Device, any Error>?,
                       named: Bool) -> DoctorCheck {
        let name = "camera \(path)"
        let failing: DoctorCheck.Status = named ? .problem : .warning
        switch status {
        case .absent:
            return DoctorCheck(name, failing, "there is no \(path)", fix: "check the path; reel devices lists the cameras")
        case .denied(let hint):
            return DoctorCheck(name, failing, "this user may not open \(path)", fix: hint)
        case .busy:
            return DoctorCheck(name, failing, "\(path) is in use by another program",
                               fix: "close the other program (fuser \(path) shows which) and try again")
        case .authorized:
            break
        }
        switch description {
        case .success(let device) where device.isCamera:
            let formats = device.formats.map(\.fourCC.description).joined(separator: ", ")
            return DoctorCheck(name, .ok, "\(device.card) (\(device.driver)): \(formats.isEmpty ? "no formats" : formats)")
        case .success(let device):
            // A UVC camera's metadata node or a codec: not a camera, nothing wrong.
            return DoctorCheck(name, named ? .problem : .ok, "\(device.card) is not a video capture device (\(device.capabilities)); not used",
                               fix: named ? "choose a camera node; reel devices lists them" : nil)
        case .failure(let error):
            let reel = (error as? ReelError).map { CommandLineHints.rephrased($0) }
            return DoctorCheck(name, failing, reel?.message ?? "\(error)",
                               fix: reel?.hint ?? "give a camera's device node (/dev/videoN); reel devices lists the cameras")
        case nil:
            return DoctorCheck(name, .ok, "\(path) can be opened")
        }
    }

    /// The check for a machine with no video devices at all (and none named).
    static let noCameras = DoctorCheck("cameras", .warning, "no cameras (no /dev/video* devices): --camera has nothing to record",
                                       fix: "plug one in, or pass it through to the VM or container; the screen and --camera=test need none")

    // MARK: Encoders

    /// The `encoder …` checks: one per codec Reel records, with the libavcodec encoder it uses.
    /// H.264 and AAC are the defaults, so their absence is a problem; the rest are warnings.
    ///
    /// - Parameter hasEncoder: whether libavcodec has the encoder of that name.
    static func encoders(hasEncoder: (String) -> Bool) -> [DoctorCheck] {
        var checks: [DoctorCheck] = []
        let labels: [VideoCodec: String] = [.h264: "H.264", .hevc: "HEVC", .vp9: "VP9", .av1: "AV1"]
        for codec in VideoCodec.allCases {
            let names = EncoderAvailability.encoderNames(for: codec)
            let label = labels[codec] ?? codec.rawValue
            if let found = names.first(where: hasEncoder) {
                checks.append(DoctorCheck("encoder \(codec.rawValue)", .ok, "\(label) through \(found)"))
                continue
            }
            var detail = "this FFmpeg has no \(names.joined(separator: " or ")) encoder: --codec \(codec.rawValue) cannot record"
            if codec == .av1, let other = ["libsvtav1", "librav1e"].first(where: hasEncoder) {
                detail += " (it has \(other), which Reel does not use)"
            }
            let fix = "use a libavcodec built with \(names.joined(separator: " or ")) (Debian 12's libavcodec59 has it)"
            checks.append(DoctorCheck("encoder \(codec.rawValue)", codec == .h264 ? .problem : .warning,
                                      detail + (codec == .h264 ? ", and H.264 is the default" : ""), fix: fix))
        }
        for codec in AudioCodec.allCases {
            let name = EncoderAvailability.encoderName(for: codec)
            let label = codec.displayName
            if hasEncoder(name) {
                let through = name == codec.rawValue ? "FFmpeg's own \(name) encoder" : name
                checks.append(DoctorCheck("encoder \(codec.rawValue)", .ok, "\(label) through \(through)"))
            } else {
                checks.append(DoctorCheck("encoder \(codec.rawValue)", codec == .aac ? .problem : .warning,
                                          "this FFmpeg has no \(name) encoder: --audio-codec \(codec.rawValue) cannot record" + (codec == .aac ? ", and AAC is the default" : ""),
                                          fix: "use a libavcodec built with \(name) (Debian 12's libavcodec59 has it)"))
            }
        }
        return checks
    }

    // MARK: Videos folder

    /// What the videos folder is on this machine.
    struct FolderFacts: Sendable, Equatable {
        /// The folder `reel record` writes into without `-o`.
        var url: URL
        /// What is at its path: nothing, a folder, or something else.
        var kind: Kind
        /// Whether this user may create files in it (or, when it is missing, create it).
        var writable: Bool
        /// The free space on its disk (or its nearest existing parent's), if known.
        var freeBytes: Int64?
        /// The nearest existing parent, when the folder itself is missing.
        var existingParent: URL?

        /// What is at the folder's path.
        enum Kind: Sendable, Equatable { case folder, missing, notAFolder }
    }

    /// The free space below which `reel record` stops (its `--min-free` default).
    static let minimumFree: Int64 = 100_000_000
    /// The free space below which the doctor warns: a few minutes of 1080p.
    static let lowFree: Int64 = 1_000_000_000

    /// The `videos-folder` check.
    static func videosFolder(_ facts: FolderFacts) -> DoctorCheck {
        let path = facts.url.path
        let other = "set XDG_VIDEOS_DIR to a folder you can write, or record with -o FILE"
        switch facts.kind {
        case .notAFolder:
            return DoctorCheck("videos-folder", .problem, "\(path) is not a folder: reel record without -o cannot write there", fix: other)
        case .missing where !facts.writable:
            let parent = facts.existingParent?.path ?? "its parent"
            return DoctorCheck("videos-folder", .problem, "\(path) does not exist and cannot be created (\(parent) is not writable)",
                               fix: "create it (mkdir -p \(Shell.quoted(path))) as a user who may, or \(other)")
        case .folder where !facts.writable:
            return DoctorCheck("videos-folder", .problem, "cannot write to \(path): reel record without -o cannot write there",
                               fix: "make it yours (sudo chown $USER \(Shell.quoted(path))), or \(other)")
        default:
            break
        }
        let missing = facts.kind == .missing ? " (it does not exist yet: reel record creates it)" : ""
        guard let free = facts.freeBytes else {
            return DoctorCheck("videos-folder", .ok, "\(path)\(missing); free space unknown")
        }
        if free < minimumFree {
            return DoctorCheck("videos-folder", .problem,
                               "only \(Format.bytes(free)) free for \(path)\(missing): reel record stops below \(Format.bytes(minimumFree)) (--min-free)",
                               fix: "free some space, or record to another disk with -o")
        }
        if free < lowFree {
            return DoctorCheck("videos-folder", .warning, "only \(Format.bytes(free)) free for \(path)\(missing): a few minutes of recording",
                               fix: "free some space, or record to another disk with -o")
        }
        return DoctorCheck("videos-folder", .ok, "\(path)\(missing): \(Format.bytes(free)) free")
    }
}
