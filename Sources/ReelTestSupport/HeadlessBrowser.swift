import Foundation

/// Plays a video in headless Chromium, as a user's browser would: a page served from a
/// folder loads it, plays it to its end, and reports each event back to the web server (a
/// request the server logs), since a dumped page would not wait for playback.
public enum HeadlessBrowser {
    /// How the playback ended: `ended` or `error`, the picture's size, the duration the browser
    /// saw and where playback reached (seconds).
    public struct Playback: Sendable {
        public var event: String
        public var size: String
        public var duration: Double?
        public var reached: Double?
        /// Every report, in order.
        public var reports: [String]
    }

    /// Serves `site` over HTTP on the loopback, plays `source` (a path inside it: a file or an
    /// HLS playlist) muted in Chromium, and waits (up to 90 s) for its end or an error;
    /// `work` holds the browser's profile and the server's log.
    public static func play(_ source: String, servedFrom site: URL, work: URL) throws -> Playback {
        guard let browser = Subprocess.which("chromium") else {
            throw NSError(domain: "HeadlessBrowser", code: 1, userInfo: [NSLocalizedDescriptionKey: "chromium is installed by scripts/install-deps"])
        }
        let page = """
            <!doctype html><video id="v" muted autoplay playsinline></video><script>
            const v = document.getElementById('v');
            const tell = s => fetch('/report?' + encodeURIComponent(s));
            ['loadedmetadata', 'ended', 'error'].forEach(e => v.addEventListener(e, () =>
              tell(e + ' ' + v.videoWidth + 'x' + v.videoHeight + ' ' + (v.duration || 0).toFixed(2) + ' ' + v.currentTime.toFixed(2) + ' ' + (v.error ? v.error.message : ''))));
            v.src = '\(source)';
            v.play().catch(e => tell('error ' + e));
            </script>
            """
        try page.write(to: site.appendingPathComponent("play.html"), atomically: true, encoding: .utf8)
        let log = work.appendingPathComponent("server.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let server = Process()
        server.executableURL = URL(fileURLWithPath: Subprocess.which("python3") ?? "/usr/bin/python3")
        server.arguments = ["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", site.path]
        server.standardOutput = try FileHandle(forWritingTo: log)
        server.standardError = server.standardOutput
        try server.run()
        // SIGKILL: the test runner's children may inherit SIGTERM ignored.
        defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
        func logged() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        func waitFor(_ found: () -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(90)
            while !found() && Date() < deadline { usleep(100_000) }
            return found()
        }
        guard waitFor({ logged().contains(" port ") }),
              let port = logged().split(separator: " ").drop(while: { $0 != "port" }).dropFirst().first.flatMap({ Int($0) }) else {
            throw NSError(domain: "HeadlessBrowser", code: 2, userInfo: [NSLocalizedDescriptionKey: "the web server did not start: \(logged())"])
        }
        let chromium = Process()
        chromium.executableURL = URL(fileURLWithPath: browser)
        // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        chromium.arguments = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--autoplay-policy=no-user-gesture-required",
                              "--user-data-dir=\(work.appendingPathComponent("profile").path)", "http://127.0.0.1:\(port)/play.html"]
        chromium.standardOutput = FileHandle.nullDevice
        chromium.standardError = FileHandle.nullDevice
        try chromium.run()
        defer { if chromium.isRunning { kill(chromium.processIdentifier, SIGKILL) }; chromium.waitUntilExit() }
        let reports = { logged().split(separator: "\n").compactMap { line -> String? in
            guard let range = line.range(of: "GET /report?") else { return nil }
            return String(line[range.upperBound...].prefix { $0 != " " }).removingPercentEncoding
        } }
        _ = waitFor { reports().contains { $0.hasPrefix("ended") || $0.hasPrefix("error") } }
        let all = reports()
        let end = all.first { $0.hasPrefix("ended") || $0.hasPrefix("error") } ?? "timeout"
        let parts = end.split(separator: " ").map(String.init)
        return Playback(event: parts.first ?? "timeout", size: parts.count > 1 ? parts[1] : "",
                        duration: parts.count > 2 ? Double(parts[2]) : nil, reached: parts.count > 3 ? Double(parts[3]) : nil,
                        reports: all)
    }
}
