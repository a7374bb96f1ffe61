import Foundation
import Reel

/// How `reel record` records application audio: the source for `--app-audio=APP` and
/// `--app-audio-except=APP`, with `reel` itself as the guard that restores the routing if the
/// recording dies, and the restoring of what an earlier recording left behind.
enum ApplicationAudioGuard {
    /// The hidden command that runs the guard: `reel __app-audio-guard STATEFILE`.
    static let command = "__app-audio-guard"

    /// The application-audio source the options ask for, or `nil` when they ask for none (or
    /// `--app-audio=SINK` names a sink, recorded as before). `windowProcess`: with `--window
    /// --app-audio`, the process that shows the window, whose application's sound is recorded.
    static func source(_ options: RecordOptions, windowProcess: Int32? = nil, console: Console,
                       environment: [String: String]) throws -> (any CaptureSource)? {
        let selection: ApplicationAudioSource.Selection
        if let windowProcess {
            selection = .processTree(windowProcess)
            let what = ProcessAncestry.commandName(windowProcess).map { " (\($0))" } ?? ""
            console.err("reel: recording the sound of the window's application: process \(windowProcess)\(what) and the processes it started")
        } else if !options.appAudioExcept.isEmpty {
            selection = .allExcept(options.appAudioExcept)
        } else if !options.appAudioApplications.isEmpty {
            if options.appAudioApplications.count == 1, let name = options.appAudioApplications.first,
               names(aSink: name, server: environment["PULSE_SERVER"]) {
                noteAlsoPlaying(name, server: environment["PULSE_SERVER"], console: console)
                return nil
            }
            selection = .only(options.appAudioApplications)
        } else {
            return nil
        }
        return ApplicationAudioSource(selection, guardCommand: guardCommand(), notices: { console.err("reel: \($0)") })
    }

    /// Restores what recordings that died with their guards left behind, saying so.
    /// The audio server itself is looked at only when `scanningServer` (a recording of
    /// application audio, which a leftover would leave silent); state files always.
    static func restoreLeftovers(console: Console, environment: [String: String], scanningServer: Bool) {
        for line in ApplicationAudioSource.restoreLeftovers(environment: environment, scanningServer: scanningServer) {
            console.err("reel: \(line)")
        }
    }

    /// The `app-audio-routing` check of `reel doctor`: restores what recordings of application
    /// audio that died with their guards left routed, and says so.
    static func doctorCheck(environment: [String: String]) -> DoctorCheck {
        let restored = ApplicationAudioSource.restoreLeftovers(environment: environment)
        if restored.isEmpty {
            return DoctorCheck("app-audio-routing", .ok, "no application's sound is left routed by an earlier recording")
        }
        if restored.contains(where: { $0.contains(" is kept") || $0.contains("still left:") }) {
            return DoctorCheck("app-audio-routing", .warning, "not all restored: " + restored.joined(separator: "; "),
                               fix: "run reel doctor again where that audio server can be reached (its PULSE_SERVER), or check it with 'pactl list short modules'")
        }
        return DoctorCheck("app-audio-routing", .warning, "restored now: " + restored.joined(separator: "; "),
                           fix: "nothing more to do; this happens when reel and its guard are both killed while recording application audio")
    }

    /// Whether `name` is a sink (or a source's monitor, or a special name like `@DEFAULT_SINK@`)
    /// rather than an application. When the server cannot be asked, it is an application: the
    /// source then says what is wrong with the server.
    private static func names(aSink name: String, server: String?) -> Bool {
        if namesSink(name, sinks: []) { return true }
        guard let devices = try? PulseAudioDevices.list(server: server) else { return false }
        return namesSink(name, sinks: devices.sinks.map(\.name))
    }

    /// Whether `--app-audio=name` names a sink rather than an application: one of `sinks`, a
    /// source's monitor (`….monitor`) or a special name (`@DEFAULT_SINK@`).
    static func namesSink(_ name: String, sinks: [String]) -> Bool {
        name.hasPrefix("@") || name.hasSuffix(".monitor") || sinks.contains(name)
    }

    /// How one application's sound is recorded here, or `nil` when the audio server cannot be
    /// asked.
    static func way(environment: [String: String]) -> DoctorChecks.ApplicationAudioWay? {
        let found = try? ApplicationAudioMethod.find(server: nil, routing: SystemPulseAudioRouting(), graph: SystemPipeWireGraph(),
                                                     environment: environment, notices: { _ in })
        switch found {
        case .linking(let remote, _, _): return .linking(remote: remote)
        case .routing(let reason): return .routing(reason: reason)
        case nil: return nil
        }
    }

    /// Says so when the sink `name` is also the name of an application playing now: the sink
    /// is recorded, and the application can be chosen by its process id.
    private static func noteAlsoPlaying(_ name: String, server: String?, console: Console) {
        guard !name.hasPrefix("@"), !name.hasSuffix(".monitor"),
              let playing = try? PulseAudioDevices.applications(server: server) else { return }
        let pids = Set(playing.filter { $0.isPlayed(by: name) && !$0.isModuleStream }.compactMap(\.processID)).sorted()
        guard !pids.isEmpty || playing.contains(where: { $0.isPlayed(by: name) && !$0.isModuleStream }) else { return }
        let other = pids.isEmpty ? "name it by its process id (reel devices lists it)"
            : pids.map { "--app-audio=\($0)" }.joined(separator: " or ")
        console.err("reel: note: '\(name)' names both a sink and an application playing now; recording the sink '\(name)' "
            + "(what everything played into it); to record the application's sound instead, use \(other)")
    }

    /// This program, run as the guard.
    private static func guardCommand() -> [String]? {
        guard let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return nil }
        return [path, command]
    }
}
