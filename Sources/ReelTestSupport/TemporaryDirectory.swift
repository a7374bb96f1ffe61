import Foundation

/// A fresh folder under the system's temporary directory, removed when the value goes away
/// unless `keep()` was called (failing tests keep their files to look at).
public final class TemporaryDirectory: @unchecked Sendable {
    public let url: URL
    private var kept = false

    public init(prefix: String = "reel-test") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// Keeps the folder on disk.
    public func keep() { kept = true }

    deinit {
        if !kept { try? FileManager.default.removeItem(at: url) }
    }
}
