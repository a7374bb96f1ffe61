import Foundation
import ReelCore

extension ApplicationAudioSource {
    /// Runs as the guard process: waits until standard input closes (the recorder ended or
    /// died), then restores the routing from `stateFile` if the recorder did not (the file is
    /// still there), and removes it. Ignores the terminal's signals, so that Ctrl-C on the
    /// recorder does not end the guard before it has done its work.
    ///
    /// - Returns: what was restored, for the guard to say; empty when nothing was left.
    public static func runGuard(stateFile: String) -> [String] {
        _ = setsid()
        for signalNumber in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE] { signal(signalNumber, SIG_IGN) }
        var byte: UInt8 = 0
        while true {
            let count = read(0, &byte, 1)
            if count == 0 || (count < 0 && errno != EINTR) { break }
        }
        let url = URL(fileURLWithPath: stateFile)
        guard let route = ApplicationAudioRouter.read(url) else { return [] }
        return [restore(route, from: url, routing: SystemPulseAudioRouting(), who: "reel process \(route.recorderPID) ended").said]
    }

    /// Restores the routing that recordings which ended without putting it back left behind
    /// (their process and their guard are gone): from their state files in
    /// `$XDG_RUNTIME_DIR/reel`, each on the server its file names, and, on the server this
    /// process reaches, every `reel-app-<pid>…` sink and module whose process is gone, also with
    /// no state file (streams on a relay go back to the sink it played into, streams on a
    /// recorded sink to the default sink).
    ///
    /// A state file is removed only once its server shows nothing of its routing any more.
    /// Without `scanningServer` only state files are looked at: no connection is made to the
    /// audio server unless one of them names it (a recording that uses no sound of the server
    /// has no reason to touch it, or to make libpulse write its files in the user's home).
    ///
    /// - Returns: a sentence for each recording whose routing was restored, or could not be.
    public static func restoreLeftovers(environment: [String: String] = ProcessInfo.processInfo.environment,
                                        scanningServer: Bool = true) -> [String] {
        restoreLeftovers(environment: environment, routing: SystemPulseAudioRouting(), scanningServer: scanningServer)
    }

    package static func restoreLeftovers(environment: [String: String], routing: any PulseAudioRoutingServer,
                                         scanningServer: Bool = true) -> [String] {
        let directory = ApplicationAudioRouter.stateDirectory(environment: environment)
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        var done: [String] = []
        // Tags a live recording or guard owns, or whose file could not be restored: not touched below.
        var spared: Set<String> = []
        for file in files.sorted() where file.hasPrefix("app-audio-") && file.hasSuffix(".json") {
            let url = directory.appendingPathComponent(file)
            guard let route = ApplicationAudioRouter.read(url) else { continue }
            if isAlive(route.recorderPID) || route.guardPID.map(isAlive) == true {
                spared.insert(route.tag)
                continue
            }
            let (said, restored) = restore(route, from: url, routing: routing, who: "reel process \(route.recorderPID) died")
            if !restored { spared.insert(route.tag) }
            done.append(said)
        }
        // No state file (another XDG_RUNTIME_DIR, a file lost): what the server itself shows.
        guard scanningServer, let connection = try? routing.connect(server: environment["PULSE_SERVER"], clientName: "Reel routing restore"),
              let routes = try? ApplicationAudioRouter.routesOnServer(connection) else { return done }
        for route in routes where !spared.contains(route.tag) && !isAlive(route.recorderPID) {
            let (streams, modules) = ApplicationAudioRouter.restore(route, on: connection)
            let left = (try? remainsAfterUnloading(route, on: connection)) ?? []
            let server = connection.serverName.map { " on \($0)" } ?? ""
            var sentence = "reel process \(route.recorderPID) ended without restoring its application-audio routing (\(route.tag)…\(server), no state file found): moved \(streams) stream(s) back to their sinks and unloaded \(modules) module(s)"
            if !left.isEmpty { sentence += "; still left: " + left.joined(separator: ", ") }
            done.append(sentence)
        }
        return done
    }

    /// Restores `route` on the server it names; removes `url` only when that server shows none
    /// of it afterwards, or is gone (a socket that is no longer there: its modules went with it).
    private static func restore(_ route: ApplicationAudioRoute, from url: URL, routing: any PulseAudioRoutingServer,
                                who: String) -> (said: String, restored: Bool) {
        let named = route.server.map { " \($0)" } ?? ""
        let connection: any PulseAudioRoutingConnection
        do {
            connection = try routing.connect(server: route.server, clientName: "Reel routing restore")
        } catch {
            if let socket = route.server.map({ $0.hasPrefix("unix:") ? String($0.dropFirst(5)) : $0 }), socket.hasPrefix("/"),
               !FileManager.default.fileExists(atPath: socket) {
                try? FileManager.default.removeItem(at: url)
                return ("\(who) without restoring its application-audio routing; the audio server\(named) is gone, so nothing was left", true)
            }
            return ("\(who) without restoring its application-audio routing, and its audio server\(named) cannot be reached now (\(error.message)); \(url.path) is kept so that a later run that reaches it restores it", false)
        }
        let (streams, modules) = ApplicationAudioRouter.restore(route, on: connection)
        let left: [String]
        do {
            left = try remainsAfterUnloading(route, on: connection)
        } catch {
            return ("\(who) without restoring its application-audio routing: moved \(streams) stream(s) back and unloaded \(modules) module(s), but the audio server\(named) could not be asked what is left (\(error.message)); \(url.path) is kept", false)
        }
        guard left.isEmpty else {
            return ("\(who) without restoring its application-audio routing: moved \(streams) stream(s) back and unloaded \(modules) module(s), but \(left.joined(separator: ", ")) could not be put back on the audio server\(named); \(url.path) is kept", false)
        }
        try? FileManager.default.removeItem(at: url)
        return ("\(who) without restoring its application-audio routing: moved \(streams) stream(s) back to their sinks and unloaded \(modules) module(s)", true)
    }

    /// What of `route` is still on the server, asked again for up to a second while anything
    /// is: a server may answer an unload before the module is gone (said "could not be put
    /// back" of routing that had been).
    private static func remainsAfterUnloading(_ route: ApplicationAudioRoute, on connection: any PulseAudioRoutingConnection) throws(ReelError) -> [String] {
        var left = try ApplicationAudioRouter.remains(of: route, on: connection)
        for _ in 0..<10 where !left.isEmpty {
            usleep(100_000)
            left = try ApplicationAudioRouter.remains(of: route, on: connection)
        }
        return left
    }

    /// Whether `pid` is a running process (not a zombie).
    package static func isAlive(_ pid: Int32) -> Bool {
        guard pid > 0, kill(pid, 0) == 0 || errno == EPERM else { return false }
        guard let stat = ProcessAncestry.stat(pid) else { return true }
        return stat.state != "Z"
    }
}
