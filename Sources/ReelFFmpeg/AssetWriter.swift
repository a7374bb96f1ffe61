import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

/// Writes encoded video and audio into a media file, in the shape of `AVAssetWriter`.
///
/// Two ways to use it. As `AVAssetWriter`: make it for a file
/// (``init(outputURL:fileType:overwrite:)``), add an ``AssetWriterInput`` per track
/// (``canAdd(_:)``, ``add(_:)``), ``startWriting()``, ``startSession(atSourceTime:)``, append
/// from each input (directly, or from ``AssetWriterInput/requestMediaDataWhenReady(on:using:)``),
/// ``AssetWriterInput/markAsFinished()`` and ``finishWriting()``; ``status`` and ``error`` say
/// how it went. Inputs take frames of any format and size and are safe to feed from several
/// queues at once. Or, all in one configuration: ``init(configuration:)`` opens the file at once
/// and ``appendVideo(_:at:)``, ``appendAudio(_:track:)`` and ``finish()`` are used from one
/// thread at a time.
///
/// Video frames are encoded with libavcodec (H.264 through libx264 by default) after
/// conversion by libswscale; audio is resampled by libswresample and encoded (AAC by default).
/// MP4 and MOV files are written fragmented while recording, so a file cut off by a crash
/// plays up to its last fragment, and finalised at the finish into a regular file with its
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
/// full, and a write that fails (a full disk) fails the next append, or the finish, with the
/// error it always did.
///
/// A file that exists is never written over unless asked (`overwrite`); nothing the writer
/// wrote is deleted, also when it fails or is cancelled (the file then keeps what reached the
/// disk, which plays).
public final class AssetWriter: @unchecked Sendable {
    /// The encoder and its file, from the start of writing.
    struct Opened {
        /// The encoders, and the fan-out of their packets to the file and the other sinks.
        let encoder: StreamEncoder
        /// The file: the encoder's first sink.
        let file: MovieFileSink
    }

    /// What the writer was asked to write. For a writer made with
    /// ``init(outputURL:fileType:overwrite:)`` the tracks are its inputs', known from
    /// ``startWriting()`` on.
    public internal(set) var configuration: Configuration
    /// Where the file is being written: the configured URL, or, while replacing a file that
    /// exists, a name of its own beside it until the first packet is written.
    public var url: URL { opened?.file.url ?? configuration.url }
    /// The encoder and file once writing has started.
    var opened: Opened?
    /// The encoders, once writing has started.
    package var encoder: StreamEncoder? { opened?.encoder }
    /// Makes the file's output what the writes go through (tests hold or fail writes there).
    let wrappingOutput: (any FileOutput) -> any FileOutput
    /// Serialises the writer's state and its appends, for inputs fed from several queues.
    let lock = NSRecursiveLock()
    /// Where the writer is in its life (see ``status``) and its session.
    var lifecycle: AssetWriterLifecycle
    /// Why the writer failed (see ``error``).
    var failure: (any Error)?
    /// The inputs added (``add(_:)``), in order.
    var addedInputs: [AssetWriterInput] = []
    /// What ``finishWriting()`` wrote.
    var finishedSummary: Summary?
    private var lastVideoIndex: Int64 = -1
    private var videoFrames: Int64 = 0
    /// Lays each track's audio by its timestamps (gaps silent, overlaps left out).
    private var audioAligners: [AudioTrackAligner] = []
    /// A fault injected into finalising in place (tests); `nil` in production.
    var finaliseFault: MP4Finaliser.Fault? {
        get { opened?.file.finaliseFault }
        set { opened?.file.finaliseFault = newValue }
    }
    /// Where a recording deleted with its folder is copied (tests set their own).
    var rescueFolders: [URL] {
        get { opened?.file.rescueFolders ?? [] }
        set { opened?.file.rescueFolders = newValue }
    }
    /// Runs right before the file is finalised (tests: to move it then); `nil` in production.
    var beforeFinalising: (() -> Void)? {
        get { opened?.file.beforeFinalising }
        set { opened?.file.beforeFinalising = newValue }
    }
    /// Runs once a compact copy of the file is complete, right before it takes the file's
    /// place (tests: to move the file then); `nil` in production.
    var beforePlacingACopy: (() -> Void)? {
        get { opened?.file.beforePlacingACopy }
        set { opened?.file.beforePlacingACopy = newValue }
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
                                hint: configuration.container == .webm ? "use the VP9 or AV1 video codec for WebM, or record into MKV" : LibraryHint.useMKVOrH264)
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

    /// Opens the file and the encoders: the writer is ``Status/writing`` at once. Throws
    /// `.fileExists` if the file exists and `overwrite` is off; nothing existing is touched then.
    public convenience init(configuration: Configuration) throws {
        try self.init(configuration: configuration, wrappingOutput: { $0 })
    }

    /// As ``init(configuration:)``, the file's writes going through what `wrappingOutput`
    /// makes of the file's output (tests hold or fail writes there); used only with a
    /// ``Configuration/writeBufferSize`` above 0.
    package convenience init(configuration: Configuration, wrappingOutput: @escaping (any FileOutput) -> any FileOutput) throws {
        self.init(pending: configuration, needsSession: false, wrappingOutput: wrappingOutput)
        try open()
    }

    /// A writer that opens nothing until ``startWriting()``.
    init(pending configuration: Configuration, needsSession: Bool, wrappingOutput: @escaping (any FileOutput) -> any FileOutput) {
        FFmpeg.silenceLibraryLogging()
        self.configuration = configuration
        lifecycle = AssetWriterLifecycle(needsSession: needsSession)
        self.wrappingOutput = wrappingOutput
    }

    /// Opens the encoders and the file for ``configuration``: the writer is writing.
    func open() throws {
        try Self.validate(configuration)
        let encoder = try StreamEncoder(video: configuration.video, audio: configuration.audio,
                                        alignsTrackStarts: configuration.container.isISOBaseMedia)
        let file = try MovieFileSink(configuration: configuration, wrappingOutput: wrappingOutput)
        do {
            try encoder.addSink(file, policy: .required)
        } catch {
            file.discard()  // our own new file, nothing recorded (a file it was to replace is untouched)
            throw error
        }
        audioAligners = configuration.audio.map { AudioTrackAligner(format: $0.inputFormat) }
        opened = Opened(encoder: encoder, file: file)
        lifecycle.opened()
    }

    /// The encoder and file, or why there are none: not started, or finished.
    private func writing() throws -> Opened {
        if lifecycle.status == .failed, let failure { throw failure }
        guard let opened else {
            throw ReelError(.notRunning, "the writer has not started writing", hint: "call startWriting() first")
        }
        return opened
    }

    /// The streams of encoded packets this writer makes: its video track's first (if any),
    /// then its audio tracks' in order.
    ///
    /// - Throws: `.notRunning` before writing has started.
    public var streams: [EncodedStream] {
        get throws { try writing().encoder.streams }
    }

    /// Adds a sink that takes every packet the encoders make, as the file does: the same
    /// encode serves both (a ``ReplayBuffer`` beside the recording, say). The sink learns of
    /// the ``streams`` at once and is finished with the writer. Packets that a size limit keeps
    /// out of the file still reach the sink. `policy` says what its end does to the writer
    /// (a ``SinkPolicy/required`` sink's failure fails the next append).
    ///
    /// - Throws: `.alreadyRunning` once video or audio has been appended (the sink would miss
    ///   the start of the streams, their first keyframe); `.notRunning` before writing has
    ///   started or after the finish; what the sink's ``PacketSink/add(_:)`` throws.
    public func addSink(_ sink: any PacketSink, policy: SinkPolicy = .required) throws {
        try lock.withLock {
            guard lifecycle.isActive else { throw ReelError(.alreadyRunning, "the writer has finished") }
            try writing().encoder.addSink(sink, policy: policy)
        }
    }

    /// The frame rate of the video track.
    public var frameRate: FrameRate? { configuration.video?.settings.frameRate }

    /// The size the video is encoded at (the asked-for size, made even for 4:2:0); `nil`
    /// before writing has started.
    public var videoSize: PixelSize? { opened?.encoder.videoSize }

    /// Sets the source time that becomes the file's zero, as `AVAssetWriter`'s
    /// `startSession(atSourceTime:)` does: from then on the times of appended frames and audio
    /// are source times, and what lies before `time` is left out (audio cut at `time`). A writer
    /// made with ``init(configuration:)`` starts at zero without a call; one made with
    /// ``init(outputURL:fileType:overwrite:)`` needs it, after ``startWriting()`` and before
    /// the first append.
    ///
    /// A call before ``startWriting()``, a second call, or one after something was appended
    /// fails the writer (``status`` ``Status/failed``, ``error`` says which), where
    /// `AVAssetWriter` raises an exception; what was written is kept.
    public func startSession(atSourceTime time: MediaTime) {
        lock.withLock {
            if let error = lifecycle.startSession(at: time).error { fail(error) }
        }
    }

    /// Ends the session at source time `time`, as `AVAssetWriter`'s `endSession(atSourceTime:)`:
    /// the file's presentation, and so its duration, ends there. Media appended afterwards at or
    /// past `time` is left out as media before the session's start is (``appendVideo(_:at:)``
    /// returns `false`; an input's append is no error; audio is cut at `time`). Media
    /// appended before the call that lies past `time` is hidden as `AVAssetWriter` hides it: the
    /// edit list of an MP4/MOV finalised in place (the default) ends at `time`, so players and
    /// decoders present nothing after it. A file finalised by copying (no room kept for its
    /// index: see ``Configuration/indexReservation``), written without fragments, or an MKV
    /// keeps and shows such media; end the session before appending past its end there. A
    /// `time` past the last media appended ends the file with its media instead. Without a call
    /// the file ends with its last sample.
    ///
    /// A call before ``startWriting()`` or (for a writer made with
    /// ``init(outputURL:fileType:overwrite:)``) before ``startSession(atSourceTime:)``, a second
    /// call, or a `time` before the session's start fails the writer (``status``
    /// ``Status/failed``, ``error`` says which), where `AVAssetWriter` raises an exception; what
    /// was written is kept. After the writer has ended it does nothing.
    public func endSession(atSourceTime time: MediaTime) {
        lock.withLock {
            if let error = lifecycle.endSession(at: time).error { fail(error) }
        }
    }

    /// The source time that is the file's zero (see ``startSession(atSourceTime:)``).
    public var sessionStart: MediaTime { lock.withLock { lifecycle.start } }

    /// The source time the session ended at (see ``endSession(atSourceTime:)``), if it has.
    public var sessionEnd: MediaTime? { lock.withLock { lifecycle.end } }

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
    ///   then, and frames that fit can still follow; an ``AssetWriterInput`` converts frames
    ///   instead); `.notRunning` before writing has started; encoding and writing errors.
    @discardableResult
    public func appendVideo(_ frame: VideoFrame, at time: MediaTime) throws -> Bool {
        try lock.withLock {
            let opened = try writing()
            guard let video = opened.encoder.video, let rate = frameRate else {
                throw ReelError(.invalidConfiguration, "this writer has no video track")
            }
            try video.checkFits(frame)
            try admit(.video)
            if let end = lifecycle.end, time >= end { return false }
            let index = rate.frameIndex(at: time - lifecycle.start, rounding: .nearest)
            guard index >= 0, index > lastVideoIndex else { return false }
            lastVideoIndex = index
            videoFrames += 1
            try opened.file.advisingRecoveryWhenFull(encoder: opened.encoder) { try opened.encoder.encodeVideo(frame, index: index) }
            return true
        }
    }

    /// Encodes audio for track `track` at its ``AudioBuffer/presentationTime`` (a source time:
    /// it lands at that time less the session's start, see ``startSession(atSourceTime:)``).
    /// A buffer that starts later than the track's audio so far reaches leaves a gap, filled
    /// with silence; one that starts earlier overlaps, and the overlapping samples are left
    /// out (so is audio before the session's start). Differences of up to 20 ms are taken as
    /// jitter: the samples then follow on from the ones before.
    ///
    /// - Throws: `.invalidConfiguration` when there is no such track, or when `buffer` is not of
    ///   the track's ``AudioTrack/inputFormat`` (nothing is written then); `.notRunning` before
    ///   writing has started; encoding and writing errors.
    public func appendAudio(_ buffer: AudioBuffer, track: Int) throws {
        try lock.withLock {
            let opened = try writing()
            let audio = opened.encoder.audio
            guard audio.indices.contains(track) else { throw ReelError(.invalidConfiguration, "no audio track \(track)") }
            try audio[track].checkFits(buffer)
            try admit(.audio)
            var placed = buffer
            if let end = lifecycle.end {
                // Cut at the session's end: the samples from there on are left out.
                guard buffer.presentationTime < end else { return }
                let kept = Int(((end - buffer.presentationTime).seconds * Double(buffer.format.sampleRate)).rounded())
                if kept < buffer.frameCount { placed = buffer.slice(frames: 0..<kept) }
            }
            placed.presentationTime = placed.presentationTime - lifecycle.start
            for piece in try audioAligners[track].place(placed) {
                try opened.file.advisingRecoveryWhenFull(encoder: opened.encoder) { try opened.encoder.appendAudio(piece, track: track) }
            }
        }
    }

    /// Whether `media` may be appended directly now; throws the misuse's error, or that the
    /// writer has ended.
    private func admit(_ media: AssetWriterInput.MediaType) throws {
        switch lifecycle.appending(media) {
        case .proceed: return
        case .fail(let error): throw error
        case .ignore: throw ReelError(.notRunning, "the writer has finished", hint: "make a new writer for more media")
        }
    }

    /// Whether the file reached its ``Configuration/maximumFileSize``: appends are refused from then on.
    public var isFull: Bool { opened?.file.isFull ?? false }

    /// Bytes written so far (some may still wait for the disk: see
    /// ``Configuration/writeBufferSize``).
    public var bytesWritten: Int64 { opened?.file.bytesWritten ?? 0 }

    /// The queue of bytes waiting for the disk, if the file is written by a thread of its own.
    package var writeQueue: FileWriteQueue? { opened?.file.writeQueue }

    /// The packets written so far.
    public var packetsWritten: Int64 { opened?.file.packetsWritten ?? 0 }

    /// The bytes of encoded video and audio written so far (what the file holds without its
    /// container's boxes and index, and without the space kept for the index).
    public var mediaBytes: Int64 { opened?.file.mediaBytes ?? 0 }

    /// An estimate of the finished file's size: what is written, the packets held back for the
    /// limit, and the frames the video encoder still holds (in its lookahead), each as big as
    /// the latest frames between keyframes. The limit itself is kept exactly as packets come
    /// out (a group that does not fit is refused whole).
    public var projectedFileSize: Int64 {
        guard let opened else { return 0 }
        return opened.file.projectedFileSize(framesInEncoder: opened.encoder.framesInEncoder)
    }

    /// The latest video packets' average size, keyframes left out: about what the next frame
    /// will add (0 until a frame other than a keyframe has come out).
    public var typicalFrameBytes: Int64 { opened?.file.typicalFrameBytes ?? 0 }

    /// Video frames appended so far.
    public var videoFrameCount: Int64 { videoFrames }

    /// Drains the encoders, writes the trailer and, for MP4/MOV recorded fragmented, rewrites
    /// the file as a regular one with its index at the front: as ``finishWriting()``, on the
    /// calling thread, with what was written.
    ///
    /// - Throws: `.notRunning` before writing has started (which fails the writer, as
    ///   ``finishWriting()`` does) and after the finish (a second call); what the encoders and
    ///   the file throw (the writer has then failed).
    public func finish() throws -> Summary {
        try lock.withLock {
            switch lifecycle.finishing() {
            case .proceed: break
            case .ignore:
                if lifecycle.status == .failed, let failure { throw failure }
                throw ReelError(.notRunning, "the writer has already finished")
            case .fail(let error):
                fail(error)
                throw error
            }
            let opened = try writing()
            for input in addedInputs { input.finishedByWriter() }
            do {
                if let end = lifecycle.end { opened.file.presentationEnd = end - lifecycle.start }
                let summary = try opened.file.finishRecording(drainingInto: opened.encoder)
                finishedSummary = summary
                lifecycle.completed()
                return summary
            } catch {
                _ = lifecycle.fail()
                failure = error
                throw error
            }
        }
    }

    /// Stops without draining or finalising: the file keeps what reached the disk (for MP4/MOV
    /// the complete fragments), which plays.
    @available(*, deprecated, renamed: "cancelWriting()")
    public func abandon() { cancelWriting() }

    /// Stops without draining or finalising, as `AVAssetWriter`'s `cancelWriting()`: the file
    /// keeps what reached the disk (for MP4/MOV the complete fragments), which plays — unlike
    /// `AVAssetWriter`, the file is not deleted. ``status`` is ``Status/cancelled``. Does nothing
    /// once the writer has finished or failed.
    public func cancelWriting() {
        lock.withLock {
            guard lifecycle.cancel() else { return }
            for input in addedInputs { input.finishedByWriter() }
            // The sinks keep what they took (a replay buffer can still be saved).
            opened?.encoder.abandon()
        }
    }

    /// At a pause of the recording: the encoders give out every frame they hold and the file
    /// writes what it took to the disk, so that a kill during the pause loses nothing appended
    /// before it (see ``StreamEncoder/pause()``). The stream goes on at the next append.
    package func pause() throws {
        try lock.withLock {
            guard lifecycle.isActive, let opened else { return }
            try opened.file.advisingRecoveryWhenFull(encoder: opened.encoder) { try opened.encoder.pause() }
        }
    }

    /// Video frames in the file so far.
    package var videoFramesWritten: Int64 { opened?.file.videoFramesMuxed ?? 0 }

    /// Gives up a file that holds nothing worth keeping (a video recording without a picture:
    /// stopped before its first frame, or under a size limit its first frame did not fit):
    /// the sinks keep what they took, the new file goes, and a file it was to replace stays.
    /// Returns `false`, doing nothing, once the new file has taken that file's name (it is all
    /// there is then) or the writer has finished.
    package func discardWithoutPicture() -> Bool {
        lock.withLock {
            guard lifecycle.isActive, let opened, opened.file.discardWithoutPicture() else { return false }
            _ = lifecycle.cancel()
            opened.encoder.abandon()
            return true
        }
    }

    /// Abandons a writer that has taken nothing yet and removes its new file (a header only):
    /// for a start that fails after the writer was made (a sink that cannot connect, say). A
    /// writer that has written packets is only abandoned: its file stays.
    package func discard() {
        lock.withLock {
            guard lifecycle.isActive else { return }
            opened?.file.discard()
            cancelWriting()
        }
    }
}
