import Foundation
import ReelCore

/// Where the ScreenCast portal's restore token is kept between recordings, so that the second
/// recording does not show the portal's dialog again: `$XDG_STATE_HOME/reel/screencast-restore-token`
/// (`~/.local/state/reel/…` when `XDG_STATE_HOME` is unset or not absolute). Deleting the file
/// resets the remembered choice.
package struct ScreenCastTokenStore: Sendable {
    /// The file holding the token.
    package let url: URL

    /// The store of the user whose environment is `environment`.
    package init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let state: String
        if let given = environment["XDG_STATE_HOME"], given.hasPrefix("/") {
            state = given
        } else {
            let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
            state = home + "/.local/state"
        }
        url = URL(fileURLWithPath: state).appendingPathComponent("reel").appendingPathComponent("screencast-restore-token")
    }

    /// The kept token, or `nil`. Portals make restore tokens as UUIDs and refuse a session
    /// whose token is anything else, so a file holding something else (edited by hand, or
    /// damaged) is passed over: the portal asks again, and the new token replaces it.
    package func load() -> String? {
        guard let data = try? Data(contentsOf: url) else { return nil }
        let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return UUID(uuidString: token) == nil ? nil : token
    }

    /// Keeps `token` (replacing the file whole, so a crash leaves the old or the new one).
    ///
    /// - Throws: `.ioFailure` when the folder cannot be made or written.
    package func save(_ token: String) throws(ReelError) {
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            try Data((token + "\n").utf8).write(to: url, options: .atomic)
            // The token stands for the user's screen-sharing consent: theirs to read only.
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
        } catch {
            throw ReelError(.ioFailure, "cannot keep the screen-sharing choice in \(url.path): \(error.localizedDescription)",
                            hint: "the next recording will ask again; check that the folder is writable")
        }
    }

    /// Forgets the kept token.
    package func forget() {
        try? FileManager.default.removeItem(at: url)
    }
}
