import Foundation
import Reel

/// `reel devices`: the screens (X displays and their sizes) and the audio sources and sinks.
struct DevicesCommand {
    let console: Console
    let json: Bool

    static let specs: [OptionSpec] = [
        OptionSpec("json", help: "print the list as JSON"),
        OptionSpec("help", short: "h", help: "show this help"),
    ]

    static let help = """
    Usage: reel devices [--json]

    Lists what Reel can record: X11 screens with their sizes, PulseAudio sources (microphones
    and the monitors of sinks) and sinks (whose audio --app-audio records).

    """

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
                sources.append(["name": device.name, "description": device.description, "monitor": device.isMonitor, "default": device.isDefault])
            }
            for device in list.sinks {
                sinkLines.append("  \(device.isDefault ? "*" : " ") \(device.name)  \(device.description)  \(device.sampleRate) Hz \(device.channels) ch")
                sinks.append(["name": device.name, "description": device.description, "default": device.isDefault])
            }
        } catch {
            audioProblem = "\(error)"
        }
        if json {
            var object: [String: Any] = ["screens": screens, "audioSources": sources, "audioSinks": sinks]
            if let audioProblem { object["audioError"] = audioProblem }
            console.out(ProgressRenderer.json(object))
            return 0
        }
        console.out("Screens (--screen=DISPLAY):")
        console.out(screenLines.isEmpty ? "  none: no X server is running (start one, e.g. Xvfb :1, or set DISPLAY)" : screenLines.joined(separator: "\n"))
        console.out("Audio sources (--mic=NAME; * marks the default):")
        if let audioProblem {
            console.out("  none: \(audioProblem)")
        } else {
            console.out(sourceLines.isEmpty ? "  none" : sourceLines.joined(separator: "\n"))
            console.out("Audio sinks (--app-audio=NAME records what plays on them):")
            console.out(sinkLines.isEmpty ? "  none" : sinkLines.joined(separator: "\n"))
        }
        return 0
    }
}
