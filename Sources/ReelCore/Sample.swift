/// What a sample carries, in the spirit of ReplayKit's `RPSampleBufferType`.
public enum SampleKind: String, Sendable, Hashable {
    /// Video frames (a screen or a camera).
    case video
    /// The audio that applications play (a sink's monitor), ReplayKit's `.audioApp`.
    case appAudio
    /// The microphone, ReplayKit's `.audioMic`.
    case micAudio
    /// Any other audio, e.g. the synthetic tone.
    case audio

    /// Whether the kind is audio.
    public var isAudio: Bool { self != .video }
}

/// Identifies one source within a session.
public struct SourceID: Sendable, Hashable, CustomStringConvertible {
    /// The number the session gave the source.
    public let rawValue: Int
    /// Creates an identity from its number.
    public init(_ rawValue: Int) { self.rawValue = rawValue }
    public var description: String { "#\(rawValue)" }
}

/// One sample delivered by a source: a video frame or a run of audio, stamped on the session
/// clock.
public enum Sample: Sendable {
    /// A video frame.
    case video(VideoFrame)
    /// A run of audio frames.
    case audio(AudioBuffer)

    /// The presentation time of the sample's start.
    public var presentationTime: MediaTime {
        switch self {
        case .video(let frame): return frame.presentationTime
        case .audio(let buffer): return buffer.presentationTime
        }
    }
}

/// A sample with the source it came from and its kind, as outputs receive it.
public struct SourcedSample: Sendable {
    /// The source that delivered the sample.
    public let source: SourceID
    /// What the source delivers.
    public let kind: SampleKind
    /// The sample.
    public let sample: Sample

    /// Creates a sample with its source.
    public init(source: SourceID, kind: SampleKind, sample: Sample) {
        self.source = source
        self.kind = kind
        self.sample = sample
    }
}
