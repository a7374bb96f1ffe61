import Foundation

/// A tmpfs of a given size mounted on a fresh folder (tests run as root): a disk that fills.
/// Unmounted when released.
public final class SmallDisk: @unchecked Sendable {
    private let folder: TemporaryDirectory
    /// Where it is mounted.
    public var url: URL { folder.url }

    /// Mounts a tmpfs of `size` (`600k`, `2M`, as mount takes it); throws if mounting fails.
    public init(size: String) throws {
        folder = try TemporaryDirectory(prefix: "reel-smallfs")
        let mounted = try Subprocess.run(["mount", "-t", "tmpfs", "-o", "size=\(size)", "tmpfs", folder.url.path])
        guard mounted.status == 0 else {
            throw NSError(domain: "SmallDisk", code: Int(mounted.status),
                          userInfo: [NSLocalizedDescriptionKey: "mounting a \(size) tmpfs (as root) failed: \(mounted.stderr)"])
        }
    }

    deinit {
        _ = try? Subprocess.run(["umount", folder.url.path])
    }
}
