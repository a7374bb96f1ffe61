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
        /// The recording has reached its most recorded time (`maxRecordedDuration`): nothing more
        /// can be recorded into it.
        public static let limitReached = Code(rawValue: "limitReached")
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

// MARK: Matching by code

extension ReelError.Code {
    /// Matches an error by its code, so that a `catch` or a `switch` can name the kind of
    /// failure the way `catch RPRecordingErrorCode.…` does with ReplayKit:
    ///
    /// ```swift
    /// do { try recorder.pause() }
    /// catch ReelError.notRunning { /* not recording */ }
    /// ```
    public static func ~= (code: ReelError.Code, error: any Error) -> Bool {
        (error as? ReelError)?.code == code
    }

    /// Matches a ``ReelError`` by its code in a `switch`.
    public static func ~= (code: ReelError.Code, error: ReelError) -> Bool {
        error.code == code
    }
}

extension ReelError {
    /// ``Code/sourceUnavailable``, to match in a `catch`: a source (display, audio server, camera, file) cannot be opened or has gone.
    public static var sourceUnavailable: Code { .sourceUnavailable }
    /// ``Code/permissionDenied``, to match in a `catch`: the user lacks the permission to open a device or a file.
    public static var permissionDenied: Code { .permissionDenied }
    /// ``Code/busy``, to match in a `catch`: a device is in use by another program, or a file is (a recording being written).
    public static var busy: Code { .busy }
    /// ``Code/alreadyRunning``, to match in a `catch`: something was started that is already running.
    public static var alreadyRunning: Code { .alreadyRunning }
    /// ``Code/notRunning``, to match in a `catch`: something was stopped or used that is not running.
    public static var notRunning: Code { .notRunning }
    /// ``Code/cannotAddInput``, to match in a `catch`: the session cannot take this input.
    public static var cannotAddInput: Code { .cannotAddInput }
    /// ``Code/cannotAddOutput``, to match in a `catch`: the session cannot take this output.
    public static var cannotAddOutput: Code { .cannotAddOutput }
    /// ``Code/unsupportedFormat``, to match in a `catch`: a codec, container or pixel format this build cannot handle.
    public static var unsupportedFormat: Code { .unsupportedFormat }
    /// ``Code/invalidConfiguration``, to match in a `catch`: settings that contradict each other or make no sense.
    public static var invalidConfiguration: Code { .invalidConfiguration }
    /// ``Code/insufficientStorage``, to match in a `catch`: the disk is full or below the minimum free space.
    public static var insufficientStorage: Code { .insufficientStorage }
    /// ``Code/nothingRecorded``, to match in a `catch`: a stop came before any sample was recorded.
    public static var nothingRecorded: Code { .nothingRecorded }
    /// ``Code/limitReached``, to match in a `catch`: the recording has reached its most recorded time.
    public static var limitReached: Code { .limitReached }
    /// ``Code/incompatibleClips``, to match in a `catch`: clips that cannot be joined without re-encoding.
    public static var incompatibleClips: Code { .incompatibleClips }
    /// ``Code/fileExists``, to match in a `catch`: the output file exists and overwriting was not asked for.
    public static var fileExists: Code { .fileExists }
    /// ``Code/ioFailure``, to match in a `catch`: reading or writing a file failed.
    public static var ioFailure: Code { .ioFailure }
    /// ``Code/encodingFailed``, to match in a `catch`: an encoder or muxer failed.
    public static var encodingFailed: Code { .encodingFailed }
    /// ``Code/invalidMedia``, to match in a `catch`: a file that is not a media file Reel can read, or is damaged.
    public static var invalidMedia: Code { .invalidMedia }
}
