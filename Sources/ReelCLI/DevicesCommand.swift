import Foundation
import Reel

/// `reel devices`: the screens (X displays and their sizes), the cameras (V4L2 devices with
/// their formats, sizes and frame rates) and the audio sources and sinks.
struct DevicesCommand {
    let console: Console
    let json: Bool
    var environment: [String: String] = ProcessInfo.processInfo.environment

    static let specs: [OptionSpec] = [
        OptionSpec("json", help: "print the list as JSON"),
        OptionSpec("help", short: "h", help: "show this help"),
    ]

    static let help = """
    Usage: reel devices [--json]

    Lists what Reel can record: X11 screens with their sizes, cameras (/dev/video*) with the
    formats, sizes and frame rates they offer, the windows of $DISPLAY (--window), PulseAudio
    sources (microphones and the monitors of sinks), sinks (whose audio --app-audio records) and
    the applications playing now (whose sound --app-audio=APP records).

    """

    /// What a plain `--screen` records in this session, and why.
    static func screenInUse(_ environment: [String: String]) -> String {
        switch ScreenLocation.session(environment: environment) {
        case .wayland:
            let why = (environment["WAYLAND_DISPLAY"] ?? "").isEmpty ? "XDG_SESSION_TYPE=wayland" : "WAYLAND_DISPLAY=\(environment["WAYLAND_DISPLAY"]!)"
            return "the Wayland desktop (\(why)), through the desktop portal and PipeWire; the portal asks the first time which screen, and the choice is kept in \(ScreenCastTokenStore(environment: environment).url.path) (--screen-choose asks again)"
        case .x11:
            let display = environment["DISPLAY"].flatMap { $0.isEmpty ? nil : $0 }
            return display.map { "X11 display \($0) (DISPLAY); --screen=wayland records a Wayland desktop through its portal" }
                ?? "X11 $DISPLAY, which is not set; --screen=:N names a display, --screen=wayland a Wayland desktop"
        }
    }

    static func screenInUseJSON(_ environment: [String: String]) -> [String: Any] {
        switch ScreenLocation.session(environment: environment) {
        case .wayland: return ["kind": "wayland"]
        case .x11: return ["kind": "x11", "display": environment["DISPLAY"] ?? ""]
        }
    }

    func run() -> Int32 {
        var screens: [[String: Any]] = []
        var screenLines: [String] = []
        let displays = X11ScreenSource.availableDisplays()
        for name in displays {
            do {
                let info = try X11ScreenSource.describeDisplay(name)
                for screen in info.screens {
                    let label = info.screens.count > 1 ? "\(name).\(screen.index)" : name
                    screenLines.append("  \(label)  \(screen.size)  depth \(screen.depth)")
                    screens.append(["display": label, "width": screen.size.width, "height": screen.size.height])
                }
            } catch {
                screenLines.append("  \(name)  (not reachable: \(error))")
            }
        }
        var sourceLines: [String] = [], sinkLines: [String] = []
        var sources: [[String: Any]] = [], sinks: [[String: Any]] = []
        var audioProblem: String?
        do {
            let list = try PulseAudioDevices.list()
            for device in list.sources {
                sourceLines.append("  \(device.isDefault ? "*" : " ") \(device.name)  \(device.description)\(device.isMonitor ? " (monitor)" : "")  \(device.sampleRate) Hz \(device.channels) ch")
                sources.append(["name": device.name, "description": device.description, "monitor": device.isMonitor, "default": device.isDefault,
                                "sampleRate": device.sampleRate, "channels": device.channels])
            }
            for device in list.sinks {
                sinkLines.append("  \(device.isDefault ? "*" : " ") \(device.name)  \(device.description)  \(device.sampleRate) Hz \(device.channels) ch")
                sinks.append(["name": device.name, "description": device.description, "default": device.isDefault,
                              "sampleRate": device.sampleRate, "channels": device.channels])
            }
        } catch {
            audioProblem = "\(error)"
        }
        let playing = audioProblem == nil ? Self.applications() : (lines: [], json: [])
        let cameraList = V4L2Devices.list()
        let windows = Self.windowListing(environment)
        if json {
            var object: [String: Any] = ["screenInUse": Self.screenInUseJSON(environment), "screens": screens, "cameras": Self.cameraJSON(cameraList),
                                         "audioSources": sources, "audioSinks": sinks, "applications": playing.json]
            if let audioProblem { object["audioError"] = audioProblem }
            object["windows"] = windows.json
            console.out(ProgressRenderer.json(object))
            return 0
        }
        console.out("--screen records: \(Self.screenInUse(environment))")
        console.out("Screens (--screen=DISPLAY):")
        console.out(screenLines.isEmpty ? "  none: no X server is running (start one, e.g. Xvfb :1, or set DISPLAY)" : screenLines.joined(separator: "\n"))
        console.out(windows.title)
        console.out(windows.lines.joined(separator: "\n"))
        console.out("Cameras (--camera=PATH):")
        console.out(Self.cameraLines(cameraList).joined(separator: "\n"))
        console.out("Audio sources (--mic=NAME; * marks the default):")
        if let audioProblem {
            console.out("  none: \(audioProblem)")
        } else {
            console.out(sourceLines.isEmpty ? "  none" : sourceLines.joined(separator: "\n"))
            console.out("Audio sinks (--app-audio=NAME records what plays on them):")
            console.out(sinkLines.isEmpty ? "  none" : sinkLines.joined(separator: "\n"))
            console.out("Applications playing (--app-audio=NAME|PROGRAM|PID, --app-audio-except=…):")
            console.out(playing.lines.isEmpty ? "  none" : playing.lines.joined(separator: "\n"))
        }
        return 0
    }

    /// The top-level windows of `$DISPLAY` (what `--window` chooses from): a heading, a line
    /// each (id, title, class, size; `*` marks the focused one) and the JSON values.
    static func windowListing(_ environment: [String: String]) -> (title: String, lines: [String], json: [[String: Any]]) {
        if case .wayland = ScreenLocation.session(environment: environment) {
            return ("Windows (--window):", ["  in this Wayland session the desktop portal's dialog chooses the window (--window)"], [])
        }
        guard let display = environment["DISPLAY"], !display.isEmpty else {
            return ("Windows (--window=ID|NAME):", ["  none: --window records X11 windows, and DISPLAY is not set"], [])
        }
        do {
            let list = try X11WindowSource.listWindows(display: display)
            let title = "Windows of \(list.display) (--window=ID|NAME; * marks the focused one):"
            guard !list.windows.isEmpty else { return (title, ["  none"], []) }
            let lines = list.windows.map { "  \($0.id == list.focused ? "*" : " ") \($0.summary)" }
            let json: [[String: Any]] = list.windows.map {
                var window: [String: Any] = ["id": $0.hexID, "title": $0.title, "class": $0.className, "instance": $0.instanceName,
                                             "width": $0.frame.width, "height": $0.frame.height, "x": $0.frame.x, "y": $0.frame.y,
                                             "shown": $0.isMapped, "focused": $0.id == list.focused]
                if let pid = $0.processID { window["pid"] = Int(pid) }
                if let program = $0.program { window["program"] = program }
                return window
            }
            return (title, lines, json)
        } catch {
            return ("Windows (--window=ID|NAME):", ["  none: \(error)"], [])
        }
    }

    /// The streams applications play now: name, program, process and sink, as text and JSON.
    static func applications() -> (lines: [String], json: [[String: Any]]) {
        guard let streams = try? PulseAudioDevices.applications() else { return ([], []) }
        let lines = streams.map { stream in
            "  \(stream.applicationName.isEmpty ? "(unnamed)" : stream.applicationName)  program \(stream.binary.isEmpty ? "?" : stream.binary)  pid \(stream.processID.map(String.init) ?? "?")  on \(stream.sinkName)"
        }
        let json: [[String: Any]] = streams.map { stream in
            ["name": stream.applicationName, "binary": stream.binary, "pid": stream.processID.map { Int($0) } ?? NSNull(),
             "sink": stream.sinkName, "stream": Int(stream.index)]
        }
        return (lines, json)
    }

    /// The cameras as text: each with its name, driver and bus, then one line per format with
    /// its sizes grouped by the frame rates they share.
    static func cameraLines(_ list: V4L2DeviceList) -> [String] {
        var lines: [String] = []
        for camera in list.cameras {
            lines.append("  \(camera.path)  \(camera.card)  (\(camera.driver), \(camera.bus))")
            for format in camera.formats {
                let capturable = V4L2Device.canCapture(format.fourCC, decodableFormats: [.mjpeg])
                lines.append("    \(format.fourCC) \(format.description)\(capturable ? "" : " (Reel cannot record this format)")")
                var groups: [(sizes: [String], rates: String)] = []
                for size in format.frameSizes {
                    let rates = size.frameRates.description
                    if let last = groups.last, last.rates == rates {
                        groups[groups.count - 1].sizes.append(size.description)
                    } else {
                        groups.append(([size.description], rates))
                    }
                }
                for group in groups {
                    lines.append("      \(group.sizes.joined(separator: " ")) @ \(group.rates)")
                }
            }
        }
        for device in list.otherDevices {
            lines.append("  \(device.path)  \(device.card)  (not a camera: \(device.capabilities))")
        }
        for device in list.unavailable {
            lines.append("  \(device.path)  unavailable: \(device.error)")
        }
        if lines.isEmpty {
            lines.append("  none: no cameras (no /dev/video* devices on this machine; plug one in, or pass it through to the VM or container)")
        } else if list.cameras.isEmpty {
            lines.append("  no cameras Reel can record")
        }
        return lines
    }

    /// The cameras as JSON values.
    static func cameraJSON(_ list: V4L2DeviceList) -> [[String: Any]] {
        var result: [[String: Any]] = list.cameras.map { camera in
            ["path": camera.path, "name": camera.card, "driver": camera.driver, "bus": camera.bus,
             "formats": camera.formats.map { format -> [String: Any] in
                 ["fourcc": format.fourCC.description, "description": format.description, "compressed": format.isCompressed,
                  "sizes": format.frameSizes.map { ["size": $0.description, "frameRates": $0.frameRates.description] }]
             }]
        }
        for device in list.unavailable {
            result.append(["path": device.path, "error": device.error.description])
        }
        return result
    }
}
