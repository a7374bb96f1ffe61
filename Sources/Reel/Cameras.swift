import Foundation

/// Where a camera is, as a user names it: `test` (or `test:red`), `/dev/video0`, an
/// `rtsp://` or `http(s)://` URL, or a video file.
public enum CameraLocation: Sendable, Hashable, CustomStringConvertible {
    /// The synthetic test camera, with an optional solid colour under its counter strip.
    case testPattern(YUVColor?)
    /// A V4L2 device node.
    case device(String)
    /// A network camera.
    case url(URL)
    /// A video file played as a camera.
    case file(URL)

    /// The colours `test:NAME` knows.
    public static let testColours: [String: YUVColor] = [
        "red": .red, "green": .green, "blue": .blue, "black": .black,
        "white": YUVColor(red: 255, green: 255, blue: 255), "yellow": YUVColor(red: 255, green: 255, blue: 0),
        "magenta": YUVColor(red: 255, green: 0, blue: 255), "cyan": YUVColor(red: 0, green: 255, blue: 255),
    ]

    /// Reads a camera's name. `nil` or an empty text is the default camera, `/dev/video0`.
    public init(parsing text: String?) throws {
        guard let text, !text.isEmpty else { self = .device("/dev/video0"); return }
        let lower = text.lowercased()
        if lower == "test" {
            self = .testPattern(nil)
        } else if lower.hasPrefix("test:") {
            let name = String(lower.dropFirst(5))
            guard let colour = Self.testColours[name] else {
                throw ReelError(.invalidConfiguration, "unknown test camera colour '\(name)'",
                                hint: "use one of \(Self.testColours.keys.sorted().joined(separator: ", "))")
            }
            self = .testPattern(colour)
        } else if lower.hasPrefix("rtsp://") || lower.hasPrefix("rtsps://") || lower.hasPrefix("http://") || lower.hasPrefix("https://") {
            guard let url = URL(string: text), url.host != nil else {
                throw ReelError(.invalidConfiguration, "'\(text)' is not a camera URL", hint: "e.g. rtsp://192.168.1.20:554/stream or http://host:8080/video.mjpg")
            }
            self = .url(url)
        } else if let scheme = lower.range(of: "://") {
            throw ReelError(.unsupportedFormat, "cameras at \(lower[..<scheme.lowerBound]):// addresses are not supported",
                            hint: "use rtsp://, http:// or https://")
        } else if text.hasPrefix("/dev/") {
            self = .device(text)
        } else {
            self = .file(URL(fileURLWithPath: text))
        }
    }

    /// Whether this is the synthetic test camera.
    public var isTestPattern: Bool {
        if case .testPattern = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .testPattern(let colour):
            guard let colour else { return "test camera" }
            return "test camera (\(Self.testColours.first { $0.value == colour }?.key ?? colour.description))"
        case .device(let path): return path
        case .url(let url): return url.absoluteString
        case .file(let url): return url.path
        }
    }
}

/// Makes camera sources from their locations, and tells whether a camera may be used.
public enum Cameras {
    /// A camera source for `location`, asking for `size` and `frameRate` where the camera
    /// lets the caller choose (a device picks its closest mode and says so; a network camera
    /// or a file is scaled to `size` if given).
    ///
    /// A device is opened when the session starts; only its absence is said here, as
    /// `AVCaptureDeviceInput(device:)` says it. Ask ``authorizationStatus(for:)`` first to tell
    /// a camera in use or forbidden before the session starts.
    ///
    /// - Throws: `.sourceUnavailable` when there is nothing at a device's path.
    public static func source(for location: CameraLocation, size: PixelSize? = nil,
                              frameRate: FrameRate = FrameRate(30)) throws -> any CameraSource {
        switch location {
        case .testPattern(let colour):
            return TestPatternSource(size: size ?? PixelSize(width: 1280, height: 720), frameRate: frameRate,
                                     background: colour, name: location.description)
        case .device(let path):
            guard FileManager.default.fileExists(atPath: path) else {
                throw ReelError(.sourceUnavailable, "there is no camera at \(path)", hint: LibraryHint.listCameras)
            }
            return V4L2CameraSource(path: path, size: size ?? PixelSize(width: 1280, height: 720), frameRate: frameRate,
                                    decoderFactory: MJPEGDecoder.factory)
        case .url(let url):
            return URLCameraSource(url: url, size: size)
        case .file(let url):
            return FileCameraSource(url: url, size: size)
        }
    }

    /// Whether this process may use the camera at `location`, in the spirit of
    /// `AVCaptureDevice.authorizationStatus(for:)`: devices are checked for existence,
    /// permission and other users; network cameras and files are reported authorized (they
    /// are checked when opened).
    public static func authorizationStatus(for location: CameraLocation) -> AuthorizationStatus {
        switch location {
        case .device(let path): return V4L2CameraSource.authorizationStatus(forCamera: path)
        case .file(let url): return FileManager.default.fileExists(atPath: url.path) ? .authorized : .absent
        case .testPattern, .url: return .authorized
        }
    }
}
