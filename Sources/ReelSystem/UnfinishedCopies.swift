#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import Synchronization

/// The hidden files this process is writing that are only copies (of a recording that stays
/// where it is, or of clips that stay until the merge is placed): a recovery's or a merge's
/// output under its temporary name (see ``FilePlacement/temporaryURL(beside:purpose:pathExtension:)``).
/// A command ended by a signal while writing one removes it (``removeAll()``), so that an
/// interrupted `reel recover` on a nearly full disk does not leave a copy as large as the
/// recording in a hidden file, and nothing recorded goes with it. A file holding what was
/// recorded (a recording's own file, a GIF's intermediate) is never tracked here.
package enum UnfinishedCopies {
    private static let files = Mutex<(next: Int, urls: [Int: URL])>((0, [:]))

    /// One copy being written, until ``done()``.
    package final class Tracked: Sendable {
        private let key: Int
        fileprivate init(key: Int) { self.key = key }

        /// The copy was placed, removed, or failed: no longer one to remove.
        package func done() {
            _ = UnfinishedCopies.files.withLock { $0.urls.removeValue(forKey: key) }
        }
    }

    /// Tracks `url`, a copy about to be written under a temporary name, until the returned
    /// value's ``Tracked/done()``.
    package static func track(_ url: URL) -> Tracked {
        files.withLock { s in
            s.next += 1
            s.urls[s.next] = url
            return Tracked(key: s.next)
        }
    }

    /// Removes every tracked copy that is there (the process is ending part way) and returns
    /// those removed; each stays tracked no more.
    package static func removeAll() -> [URL] {
        let urls = files.withLock { s in
            defer { s.urls = [:] }
            return s.urls.sorted { $0.key < $1.key }.map(\.value)
        }
        return urls.filter { unlink($0.path) == 0 }
    }
}
