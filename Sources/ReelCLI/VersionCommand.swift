import Foundation
internal import CReelBuild
import Reel

/// `reel --version` (and `reel version`): reel's version and commit, stamped into the build by
/// scripts/install and scripts/package, and the versions of the libraries it runs with, found
/// at run time.
enum VersionCommand {
    /// The version stamped into this build (`git describe`), or `0.0.0-dev` for a plain build.
    static var version: String { String(cString: reel_build_version()) }

    /// The commit stamped into this build, or `unknown commit` for a plain build.
    static var commit: String { String(cString: reel_build_commit()) }

    /// What the build was compiled against that has no run-time version call (`xcb 1.15`), or
    /// empty for a plain build.
    static var builtWith: String { String(cString: reel_build_built_with()) }

    /// The report, one line per part.
    static func report() -> String {
        var lines = ["reel \(version) (\(commit == "unknown commit" ? commit : "commit \(commit)"))"]
        lines.append("FFmpeg \(FFmpegLibraries.release): "
                     + FFmpegLibraries.libraries.map { "\($0.name) \($0.version)" }.joined(separator: ", "))
        if let x264 = FFmpegLibraries.x264Build {
            if let build = x264.build, let file = x264.file {
                lines.append("x264: build \(build) (\(file), behind libavcodec's libx264 encoder)")
            } else {
                lines.append("x264: libavcodec has the libx264 encoder; its library file was not found in /proc/self/maps")
            }
        } else {
            lines.append("x264: not available (libavcodec has no libx264 encoder)")
        }
        let xcbBuild = builtWith.isEmpty ? "" : "; built against \(builtWith)"
        lines.append("XCB: \(LinuxLibraries.xcbFile ?? "libxcb") (XCB has no version call: the library file loaded\(xcbBuild))")
        lines.append("libpulse: \(LinuxLibraries.pulseAudio)")
        return lines.joined(separator: "\n")
    }
}
