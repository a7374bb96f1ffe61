import Foundation

extension Recorder {
    /// The user's videos folder, where recordings go by default: `XDG_VIDEOS_DIR` from the
    /// environment, else from `user-dirs.dirs`, else `~/Videos`.
    public static func defaultOutputDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        let home = environment["HOME"].map { URL(fileURLWithPath: $0) } ?? FileManager.default.homeDirectoryForCurrentUser
        if let value = environment["XDG_VIDEOS_DIR"], !value.isEmpty {
            let expanded = value.replacingOccurrences(of: "$HOME", with: home.path)
            if expanded.hasPrefix("/") { return URL(fileURLWithPath: expanded, isDirectory: true) }
        }
        let configHome = environment["XDG_CONFIG_HOME"].map { URL(fileURLWithPath: $0) } ?? home.appendingPathComponent(".config")
        if let text = try? String(contentsOf: configHome.appendingPathComponent("user-dirs.dirs"), encoding: .utf8) {
            for line in text.split(separator: "\n") where line.hasPrefix("XDG_VIDEOS_DIR=") {
                var value = String(line.dropFirst("XDG_VIDEOS_DIR=".count)).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                value = value.replacingOccurrences(of: "$HOME", with: home.path)
                if value.hasPrefix("/") && value != home.path { return URL(fileURLWithPath: value) }
            }
        }
        return home.appendingPathComponent("Videos")
    }

    /// A dated file name such as `Reel 2026-11-29 at 14.05.09.mp4`, in local time.
    public static func datedFileName(container: Container, date: Date = Date()) -> String {
        var t = time_t(date.timeIntervalSince1970)
        var parts = tm()
        localtime_r(&t, &parts)
        let stamp = String(format: "%04d-%02d-%02d at %02d.%02d.%02d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                           Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
        return "Reel \(stamp).\(container.fileExtension)"
    }
}
