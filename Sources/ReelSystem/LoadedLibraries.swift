import Foundation

/// The shared libraries mapped into this process, as the kernel lists them in
/// `/proc/self/maps`: for libraries that have no call which says their version (XCB) or that
/// reel reaches only through another library (libx264, loaded by libavcodec), the file that
/// was actually loaded is the honest answer.
package enum LoadedLibraries {
    /// The paths of every file mapped into this process, without repeats, in map order;
    /// empty where `/proc` is not mounted.
    package static func paths() -> [String] {
        guard let handle = FileHandle(forReadingAtPath: "/proc/self/maps"),
              let data = try? handle.readToEnd() else { return [] }
        try? handle.close()
        var seen = Set<String>()
        var paths: [String] = []
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            // address perms offset dev inode path: the path starts at the first '/'.
            guard let slash = line.firstIndex(of: "/") else { continue }
            let path = String(line[slash...])
            if seen.insert(path).inserted { paths.append(path) }
        }
        return paths
    }

    /// The file name of the loaded library whose name starts with `prefix` (`libxcb.so.`),
    /// e.g. `libxcb.so.1.1.0`, or `nil` when none is loaded.
    package static func fileName(startingWith prefix: String) -> String? {
        paths().lazy.map { ($0 as NSString).lastPathComponent }.first { $0.hasPrefix(prefix) }
    }
}
