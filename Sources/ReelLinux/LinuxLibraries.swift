internal import CPulse
import ReelSystem

/// The versions of the Linux libraries reel runs with, found at run time.
public enum LinuxLibraries {
    /// libpulse's own version (`pa_get_library_version()`, e.g. `16.1.0`).
    public static var pulseAudio: String { pa_get_library_version().map { String(cString: $0) } ?? "unknown" }

    /// The XCB library file loaded (`libxcb.so.1.1.0`). XCB has no call that says its version
    /// (its protocol version belongs to the server), so this is the file's name, which carries
    /// the soname's version, not the package's; `nil` if none is loaded.
    public static var xcbFile: String? { LoadedLibraries.fileName(startingWith: "libxcb.so.") }
}
