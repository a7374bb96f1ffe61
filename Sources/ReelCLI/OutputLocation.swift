import Foundation
import Reel

/// Where a recording goes when no `-o` is given: the user's videos folder (XDG `VIDEOS`
/// directory, else `~/Videos`) with a dated name.
public enum OutputLocation {
    /// The user's videos folder.
    public static func videosDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        let home = environment["HOME"].map { URL(fileURLWithPath: $0) } ?? FileManager.default.homeDirectoryForCurrentUser
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

    /// A dated file name such as `Reel 2026-11-29 at 14.05.09.mp4`.
    public static func datedName(container: Container, date: Date = Date()) -> String {
        var t = time_t(date.timeIntervalSince1970)
        var parts = tm()
        localtime_r(&t, &parts)
        let stamp = String(format: "%04d-%02d-%02d at %02d.%02d.%02d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                           Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
        return "Reel \(stamp).\(container.fileExtension)"
    }

    /// Checks that `url`'s folder exists and can be written, and that `url` does not exist
    /// unless `overwrite`; throws a `ReelError` saying what is wrong.
    public static func check(_ url: URL, overwrite: Bool) throws {
        let folder = url.deletingLastPathComponent()
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ReelError(.ioFailure, "the folder \(folder.path) does not exist", hint: "create it or choose another with -o")
        }
        guard access(folder.path, W_OK) == 0 else {
            throw ReelError(.permissionDenied, "cannot write to the folder \(folder.path)", hint: "choose another with -o")
        }
        if FileManager.default.fileExists(atPath: url.path) {
            if !overwrite {
                throw ReelError(.fileExists, "\(url.path) already exists", hint: "choose another name or pass --overwrite")
            }
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDir), isDir.boolValue {
                throw ReelError(.fileExists, "\(url.path) is a folder", hint: "give a file name with -o")
            }
        }
    }
}
