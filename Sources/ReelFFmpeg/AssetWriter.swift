import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

/// Writes encoded video and audio into a media file, in the spirit of `AVAssetWriter`.
///
/// Video frames are encoded with libavcodec (H.264 through libx264 by default) after
/// conversion by libswscale; audio is resampled by libswresample and encoded (AAC by default).
/// MP4 and MOV files are written fragmented while recording, so a file cut off by a crash
/// plays up to its last fragment, and finalised at ``finish()`` into a regular file with its
/// index at the front: in place where space was reserved for the index (no second copy of the
/// media data, see ``Finalisation``), else by copying. MKV files are written as they are.
///
/// One encode serves more than the file: the writer is a ``StreamEncoder`` with the file as its
/// first sink, a peer of any other; every packet that comes out of the encoders is an
/// ``EncodedPacket`` value, written into the file and handed to each sink added with
/// ``addSink(_:policy:)`` (a ``ReplayBuffer``, say), which shares its data without a copy.
///
/// The file's bytes are written by a thread of the writer's own, from a queue bounded by
/// ``Configuration/writeBufferSize``: a slow write holds up appending only once the queue is
/// full, and a write that fails (a full disk) fails the next append, or ``finish()``, with the
/// error it always did.
///
/// An asset writer is used from one thread at a time.
public final class AssetWriter: @unchecked Sendable {
    /// What the writer was asked to write.
    public let configuration: Configuration
    /// Where the file is being written: the configured URL, or, while replacing a file that
    /// exists, a name of its own beside it until the first packet is written.
    public var url: URL { file.url }
    /// The encoders, and the fan-out of their packets to the file and the other sinks.
    let encoder: StreamEncoder
    /// The file: the encoder's first sink.
    let file: MovieFileSink
    private var video: VideoEncoder? { encoder.video }
    private var audio: [AudioEncoder] { encoder.audio }
    private var lastVideoIndex: Int64 = -1
    private var videoFrames: Int64 = 0
    private var finished = false
    /// Lays each track's audio by its timestamps (gaps silent, overlaps left out).
    private var audioAligners: [AudioTrackAligner] = []
    /// A fault injected into finalising in place (tests); `nil` in production.
    var finaliseFault: MP4Finaliser.Fault? {
        get { file.finaliseFault }
        set { file.finaliseFault = newValue }
    }

    /// Checks what this build can write without opening anything.
    public static func validate(_ configuration: Configuration) throws {
        if let v = configuration.video {
            try v.settings.validate()
            if configuration.container.isAudioOnly {
                throw ReelError(.unsupportedFormat, ".\(configuration.container.fileExtension) files hold sound only, not video",
                                hint: "record the video into an .mp4, .mov or .mkv file, or record only audio sources")
            }
            guard configuration.container.canHold(v.settings.codec) else {
                throw ReelError(.unsupportedFormat, "\(configuration.container.rawValue) files cannot hold \(v.settings.codec.rawValue) video",
                                hint: LibraryHint.useMKVOrH264)
            }
            guard VideoEncoder.isAvailable(v.settings.codec) else {
                throw ReelError(.unsupportedFormat, "this FFmpeg has no \(v.settings.codec.rawValue) encoder", hint: LibraryHint.useH264)
            }
        }
        for a in configuration.audio {
            try a.settings.validate()
            guard configuration.container.canHold(a.settings.codec) else {
                throw ReelError(.unsupportedFormat, "\(configuration.container.rawValue) files cannot hold \(a.settings.codec.rawValue) audio",
                                hint: "use \(configuration.container.defaultAudioCodec.displayName) audio for .\(configuration.container.fileExtension) files")
            }
        }
        if configuration.video == nil && configuration.audio.isEmpty {
            throw ReelError(.invalidConfiguration, "nothing to record: no video and no audio track")
        }
    }

    /// Opens the file and the encoders. Throws `.fileExists` if the file exists and
    /// `overwrite` is off; nothing existing is touched then.
    public convenience init(configuration: Configuration) throws {
        try self.init(configuration: configuration, wrappingOutput: { $0 })
    }

    /// As ``init(configuration:)``, the file's writes going through what `wrappingOutput`
    /// makes of the file's output (tests hold or fail writes there); used only with a
    /// ``Configuration/writeBufferSize`` above 0.
    package init(configuration: Configuration, wrappingOutput: @escaping (any FileOutput) -> any FileOutput) throws {
        FFmpeg.silenceLibraryLogging()
        try Self.validate(configuration)
        self.configuration = configuration
        encoder = try StreamEncoder(video: configuration.video, audio: configuration.audio,
                                    alignsTrackStarts: configuration.container.isISOBaseMedia)
        audioAligners = configuration.audio.map { AudioTrackAligner(format: $0.inputFormat) }
        file = try MovieFileSink(configuration: configuration, wrappingOutput: wrappingOutput)
        do {
            try encoder.addSink(file, policy: .required)
        } catch {
            file.discard()  // our own new file, nothing recorded (a file it was to replace is untouched)
            throw error
        }
    }

    /// The streams of encoded packets this writer makes: its video track's first (if any),
    /// then its audio tracks' in order.
    public var streams: [EncodedStream] {
        get throws { try encoder.streams }
    }

    /// Adds a sink that takes every packet the encoders make, as the file does: the same
    /// encode serves both (a ``ReplayBuffer`` beside the recording, say). The sink learns of
    /// the ``streams`` at once and is finished with the writer. Packets that a size limit keeps
    /// out of the file still reach the sink. `policy` says what its end does to the writer
    /// (a ``SinkPolicy/required`` sink's failure fails the next append).
    ///
    /// - Throws: `.alreadyRunning` once video or audio has been appended (the sink would miss
    ///   the start of the streams, their first keyframe); what the sink's ``PacketSink/add(_:)``
    ///   throws.
    public func addSink(_ sink: any PacketSink, policy: SinkPolicy = .required) throws {
        guard !finished else { throw ReelError(.alreadyRunning, "the writer has finished") }
        try encoder.addSink(sink, policy: policy)
    }

    /// The frame rate of the video track.
    public var frameRate: FrameRate? { configuration.video?.settings.frameRate }

    /// The size the video is encoded at (the asked-for size, made even for 4:2:0).
    public var videoSize: PixelSize? { video?.outputSize }

    /// Sets the source time that becomes the file's zero, as `AVAssetWriter`'s
    /// `startSession(atSourceTime:)` does: from then on the times of appended frames and audio
    /// (``appendVideo(_:at:)``, ``appendVideo(_:)``, ``appendAudio(_:track:)``) are source
    /// times, and what lies before `time` is left out (audio cut at `time`). Without a call the
    /// session starts at zero.
    ///
    /// - Throws: `.alreadyRunning` once the session has started (a second call) or anything has
    ///   been appended.
    public func startSession(atSourceTime time: MediaTime) throws {
        guard !sessionStarted, !appendedAnything else {
            throw ReelError(.alreadyRunning, "the writer's session has started already",
                            hint: "start the session once, before appending anything")
        }
        sessionStarted = true
        sessionStart = time
    }

    /// The source time that is the file's zero (see ``startSession(atSourceTime:)``).
    public private(set) var sessionStart: MediaTime = .zero
    private var sessionStarted = false
    private var appendedAnything = false

    /// Encodes a frame at its own ``VideoFrame/presentationTime`` (a source time: see
    /// ``startSession(atSourceTime:)``). As ``appendVideo(_:at:)``.
    @discardableResult
    public func appendVideo(_ frame: VideoFrame) throws -> Bool {
        try appendVideo(frame, at: frame.presentationTime)
    }

    /// Encodes a frame at source time `time`, which lands at `time` less the session's start
    /// (``startSession(atSourceTime:)``; zero if never called) in the file. Frames are placed
    /// on the frame grid of the track's rate; a frame that lands in the same slot as the
    /// previous one, or before the session's start, is skipped and `false` returned.
    ///
    /// - Throws: `.invalidConfiguration` when there is no video track, or when `frame` is not of
    ///   the track's ``VideoTrack/inputFormat`` and ``VideoTrack/inputSize`` (nothing is written
    ///   then, and frames that fit can still follow); encoding and writing errors.
    @discardableResult
    public func appendVideo(_ frame: VideoFrame, at time: MediaTime) throws -> Bool {
        guard let video, let rate = frameRate else { throw ReelError(.invalidConfiguration, "this writer has no video track") }
        try video.checkFits(frame)
        appendedAnything = true
        let index = rate.frameIndex(at: time - sessionStart, rounding: .nearest)
        guard index >= 0, index > lastVideoIndex else { return false }
        lastVideoIndex = index
        videoFrames += 1
        try file.advisingRecoveryWhenFull { try encoder.encodeVideo(frame, index: index) }
        return true
    }

    /// Encodes audio for track `track` at its ``AudioBuffer/presentationTime`` (a source time:
    /// it lands at that time less the session's start, see ``startSession(atSourceTime:)``).
    /// A buffer that starts later than the track's audio so far reaches leaves a gap, filled
    /// with silence; one that starts earlier overlaps, and the overlapping samples are left
    /// out (so is audio before the session's start). Differences of up to 20 ms are taken as
    /// jitter: the samples then follow on from the ones before.
    ///
    /// - Throws: `.invalidConfiguration` when there is no such track, or when `buffer` is not of
    ///   the track's ``AudioTrack/inputFormat`` (nothing is written then); encoding and writing
    ///   errors.
    public func appendAudio(_ buffer: AudioBuffer, track: Int) throws {
        guard audio.indices.contains(track) else { throw ReelError(.invalidConfiguration, "no audio track \(track)") }
        try audio[track].checkFits(buffer)
        appendedAnything = true
        var placed = buffer
        placed.presentationTime = buffer.presentationTime - sessionStart
        for piece in try audioAligners[track].place(placed) {
            try file.advisingRecoveryWhenFull { try encoder.appendAudio(piece, track: track) }
        }
    }

    /// Whether the file reached its ``Configuration/maximumFileSize``: appends are refused from then on.
    public var isFull: Bool { file.isFull }

    /// Bytes written so far (some may still wait for the disk: see
    /// ``Configuration/writeBufferSize``).
    public var bytesWritten: Int64 { file.bytesWritten }

    /// The queue of bytes waiting for the disk, if the file is written by a thread of its own.
    package var writeQueue: FileWriteQueue? { file.writeQueue }

    /// The packets written so far.
    public var packetsWritten: Int64 { file.packetsWritten }

    /// The bytes of encoded video and audio written so far (what the file holds without its
    /// container's boxes and index, and without the space kept for the index).
    public var mediaBytes: Int64 { file.mediaBytes }

    /// An estimate of the finished file's size: what is written, the packets held back for the
    /// limit, and the frames the video encoder still holds (in its lookahead), each as big as
    /// the latest frames between keyframes. The limit itself is kept exactly as packets come
    /// out (a group that does not fit is refused whole).
    public var projectedFileSize: Int64 { file.projectedFileSize(framesInEncoder: encoder.framesInEncoder) }

    /// The latest video packets' average size, keyframes left out: about what the next frame
    /// will add (0 until a frame other than a keyframe has come out).
    public var typicalFrameBytes: Int64 { file.typicalFrameBytes }

    /// Video frames appended so far.
    public var videoFrameCount: Int64 { videoFrames }

    /// Drains the encoders, writes the trailer and, for MP4/MOV recorded fragmented, rewrites
    /// the file as a regular one with its index at the front.
    public func finish() throws -> Summary {
        guard !finished else { throw ReelError(.notRunning, "the writer has already finished") }
        finished = true
        return try file.finishRecording(drainingInto: encoder)
    }

    /// Stops without draining or finalising: the file keeps what reached the disk (for MP4/MOV
    /// the complete fragments), which plays.
    public func abandon() {
        guard !finished else { return }
        finished = true
        // The sinks keep what they took (a replay buffer can still be saved).
        encoder.abandon()
    }

    /// At a pause of the recording: the encoders give out every frame they hold and the file
    /// writes what it took to the disk, so that a kill during the pause loses nothing appended
    /// before it (see ``StreamEncoder/pause()``). The stream goes on at the next append.
    package func pause() throws {
        guard !finished else { return }
        try file.advisingRecoveryWhenFull { try encoder.pause() }
    }

    /// Video frames in the file so far.
    package var videoFramesWritten: Int64 { file.videoFramesMuxed }

    /// Gives up a file that holds nothing worth keeping (a video recording without a picture:
    /// stopped before its first frame, or under a size limit its first frame did not fit):
    /// the sinks keep what they took, the new file goes, and a file it was to replace stays.
    /// Returns `false`, doing nothing, once the new file has taken that file's name (it is all
    /// there is then) or the writer has finished.
    package func discardWithoutPicture() -> Bool {
        guard !finished, file.discardWithoutPicture() else { return false }
        finished = true
        encoder.abandon()
        return true
    }

    /// Abandons a writer that has taken nothing yet and removes its new file (a header only):
    /// for a start that fails after the writer was made (a sink that cannot connect, say). A
    /// writer that has written packets is only abandoned: its file stays.
    package func discard() {
        guard !finished else { return }
        file.discard()
        abandon()
    }
}
