/// An error from Reel: what happened, the underlying system or FFmpeg error if any, and what
/// to do about it.
public struct ReelError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure, for code that reacts to it.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A source (display, audio server, camera, file) cannot be opened or has gone.
        public static let sourceUnavailable = Code(rawValue: "sourceUnavailable")
        /// The user lacks the permission to open a device or a file.
        public static let permissionDenied = Code(rawValue: "permissionDenied")
        /// A device is in use by another program, or a file is (a recording being written).
        public static let busy = Code(rawValue: "busy")
        /// Something was started that is already running.
        public static let alreadyRunning = Code(rawValue: "alreadyRunning")
        /// Something was stopped or used that is not running.
        public static let notRunning = Code(rawValue: "notRunning")
        /// The session cannot take this input.
        public static let cannotAddInput = Code(rawValue: "cannotAddInput")
        /// The session cannot take this output.
        public static let cannotAddOutput = Code(rawValue: "cannotAddOutput")
        /// A codec, container or pixel format this build cannot handle.
        public static let unsupportedFormat = Code(rawValue: "unsupportedFormat")
        /// Settings that contradict each other or make no sense.
        public static let invalidConfiguration = Code(rawValue: "invalidConfiguration")
        /// The disk is full or below the minimum free space.
        public static let insufficientStorage = Code(rawValue: "insufficientStorage")
        /// A stop came before any sample was recorded.
        public static let nothingRecorded = Code(rawValue: "nothingRecorded")
        /// Clips that cannot be joined without re-encoding.
        public static let incompatibleClips = Code(rawValue: "incompatibleClips")
        /// The output file exists and overwriting was not asked for.
        public static let fileExists = Code(rawValue: "fileExists")
        /// Reading or writing a file failed.
        public static let ioFailure = Code(rawValue: "ioFailure")
        /// An encoder or muxer failed.
        public static let encodingFailed = Code(rawValue: "encodingFailed")
        /// A file that is not a media file Reel can read, or is damaged.
        public static let invalidMedia = Code(rawValue: "invalidMedia")
    }

    /// The kind of failure.
    public var code: Code
    /// What happened, in one sentence.
    public var message: String
    /// What to do about it, if Reel knows.
    public var hint: String?
    /// The `errno` value behind the failure, if any.
    public var errno: Int32?
    /// The FFmpeg `AVERROR` value behind the failure, if any.
    public var averror: Int32?

    /// Creates an error.
    public init(_ code: Code, _ message: String, hint: String? = nil, errno: Int32? = nil, averror: Int32? = nil) {
        self.code = code
        self.message = message
        self.hint = hint
        self.errno = errno
        self.averror = averror
    }

    /// The message followed by the hint.
    public var description: String {
        if let hint { return "\(message) (\(hint))" }
        return message
    }
}
