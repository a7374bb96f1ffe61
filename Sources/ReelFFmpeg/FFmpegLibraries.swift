internal import CFFmpeg
import ReelSystem

/// The FFmpeg libraries reel runs with, as they report themselves at run time (which may differ
/// from the headers reel was built against), and the x264 behind libavcodec's H.264 encoder.
public enum FFmpegLibraries {
    /// One library's name and version (`libavcodec`, `59.37.100`).
    public struct Version: Sendable, Hashable {
        /// The library's name.
        public var name: String
        /// `MAJOR.MINOR.MICRO`.
        public var version: String
    }

    /// The FFmpeg release the libraries come from (`av_version_info()`, e.g. `5.1.6-0+deb12u1`).
    public static var release: String { String(cString: av_version_info()) }

    /// libavcodec, libavformat, libavutil, libswscale and libswresample at run time.
    public static var libraries: [Version] {
        [("libavcodec", avcodec_version()), ("libavformat", avformat_version()), ("libavutil", avutil_version()),
         ("libswscale", swscale_version()), ("libswresample", swresample_version())].map { name, packed in
            Version(name: name, version: "\(packed >> 16).\((packed >> 8) & 0xff).\(packed & 0xff)")
        }
    }

    /// The x264 build number behind libavcodec's `libx264` encoder, or `nil` when libavcodec has
    /// no such encoder. x264 has no version call that reel could reach without linking it; its
    /// soname is its build number (`libx264.so.164`: build 164), so the number is read from
    /// the file libavcodec loaded.
    public static var x264Build: X264Build? {
        // The loaded file first: a libavcodec that loads libx264 has the encoder, and finding
        // the encoder by name walks every codec libavcodec has, which made 1.3 MiB of its pages
        // resident for `reel --version` alone (bench/RESULTS.md, "Memory"). The walk is left for
        // a libavcodec that loads no libx264 (none, or x264 linked into it statically).
        if let file = LoadedLibraries.fileName(startingWith: "libx264.so.") {
            return X264Build(build: Int(file.dropFirst("libx264.so.".count).prefix { $0.isNumber }), file: file)
        }
        guard avcodec_find_encoder_by_name("libx264") != nil else { return nil }
        return X264Build(build: nil, file: nil)
    }

    /// What is known of the x264 behind libavcodec.
    public struct X264Build: Sendable, Hashable {
        /// The build number (`X264_BUILD`), when the library file was found.
        public var build: Int?
        /// The library file loaded (`libx264.so.164`), if found.
        public var file: String?
    }
}
