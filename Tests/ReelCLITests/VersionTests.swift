import Foundation
import Testing
import ReelTestSupport

/// `reel --version`: reel's version and commit, and the library versions found at run time,
/// checked against what the system's own tools say about the same libraries.
@Suite struct VersionTests {
    /// `reel --version`'s lines.
    private func versionLines() throws -> [String] {
        let result = try ReelBinary.run(["--version"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty)
        return result.output.split(separator: "\n").map(String.init)
    }

    @Test func firstLineNamesTheVersionAndCommit() throws {
        let first = try versionLines().first ?? ""
        // A plain build says "0.0.0-dev (unknown commit)"; one by scripts/build-release the
        // `git describe` version and the full commit (scripts/test-package checks that one).
        #expect(first.wholeMatch(of: /reel [0-9][0-9A-Za-z.+~-]* \((commit [0-9a-f]{40}|unknown commit)\)/) != nil, "\(first)")
    }

    @Test func ffmpegLibrariesAsFFprobeSeesThemAtRunTime() throws {
        let lines = try versionLines()
        let ffmpeg = try #require(lines.first { $0.hasPrefix("FFmpeg ") })
        // ffprobe -version: "libavcodec     59. 37.100 / 59. 37.100", the second the run-time one.
        let probe = try Subprocess.run(["ffprobe", "-version"]).output
        for library in ["libavcodec", "libavformat", "libavutil", "libswscale", "libswresample"] {
            let match = try #require(probe.firstMatch(of: Regex("\(library) +[0-9. ]+/ *([0-9]+)\\. *([0-9]+)\\.([0-9]+)")),
                                     "ffprobe -version has no \(library)")
            let parts = (1...3).map { match.output[$0].substring.map { String(Int($0)!) } ?? "" }
            #expect(ffmpeg.contains("\(library) \(parts.joined(separator: "."))"), "\(ffmpeg)")
        }
    }

    @Test func x264XCBAndLibpulseAsTheSystemHasThem() throws {
        let lines = try versionLines()
        // The x264 build is the number of the libx264.so.N the dynamic linker knows.
        let cache = try Subprocess.run(["/sbin/ldconfig", "-p"]).output
        let x264 = try #require(cache.firstMatch(of: #/libx264\.so\.([0-9]+) /#)).1
        #expect(lines.contains { $0.hasPrefix("x264: build \(x264) (libx264.so.\(x264),") }, "\(lines)")
        // XCB: the file libxcb.so.1 resolves to.
        let xcbLink = try #require(cache.firstMatch(of: #/libxcb\.so\.1 \([^)]*\) => (\S+)/#)).1
        let xcbFile = URL(fileURLWithPath: String(xcbLink)).resolvingSymlinksInPath().lastPathComponent
        #expect(lines.contains { $0.hasPrefix("XCB: \(xcbFile) (") }, "\(lines)")
        // libpulse: what pactl says it is linked with.
        let pactl = try Subprocess.run(["pactl", "--version"]).output
        let pulse = try #require(pactl.firstMatch(of: /Linked with libpulse ([0-9.]+)/)).1
        #expect(lines.contains("libpulse: \(pulse)"), "\(lines)")
    }

    @Test func versionCommandIsTheSame() throws {
        let option = try ReelBinary.run(["--version"])
        let command = try ReelBinary.run(["version"])
        #expect(command.status == 0 && command.output == option.output)
        let extra = try ReelBinary.run(["--version", "now"])
        #expect(extra.status == 2)
        #expect(extra.stderr.hasPrefix("reel: unexpected argument 'now' (reel --version takes none)\n"))
    }
}
