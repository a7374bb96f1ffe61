import Foundation
import Synchronization
import ReelCore

/// One track's input to an ``AssetWriter``, as `AVAssetWriterInput`: made with the track's
/// output settings, added to the writer before it starts, then fed frames or audio until
/// ``markAsFinished()``.
///
/// A video input takes frames of any pixel format and size and converts and scales them to its
/// settings' size on append (libswscale, as `AVAssetWriterInputPixelBufferAdaptor` does), laid
/// out by its ``scalingMode``. An audio input takes audio of any sample format, rate and
/// channel count, converted to its ``sourceFormat`` (libswresample) when that is 32-bit float,
/// as it is by default.
///
/// Appends are synchronous: a frame is encoded and its packets handed to the file before
/// ``append(_:)-(VideoFrame)`` returns, so the input is ready for more whenever its writer is writing. Inputs
/// of one writer may be fed from different threads or queues at once.
public final class AssetWriterInput: @unchecked Sendable {
    /// The kind of media an input takes, as `AVMediaType`.
    public enum MediaType: String, Sendable, Hashable, CustomStringConvertible {
        /// Video frames.
        case video
        /// Audio.
        case audio

        /// `video` or `audio`.
        public var description: String { rawValue }
    }

    /// How a frame of another shape is fitted into the track's size, as `AVVideoScalingModeKey`.
    public enum ScalingMode: Sendable, Hashable {
        /// Stretched to the track's size (the aspect ratio may change):
        /// `AVVideoScalingModeResize`.
        case resize
        /// Scaled whole, keeping its aspect ratio, black bars filling the rest:
        /// `AVVideoScalingModeResizeAspect`.
        case resizeAspect
        /// Scaled to cover the track, keeping its aspect ratio, the overhanging edges cut off:
        /// `AVVideoScalingModeResizeAspectFill`.
        case resizeAspectFill
    }

    /// The kind of media this input takes.
    public let mediaType: MediaType
    /// A video input's settings.
    public let videoSettings: VideoSettings?
    /// An audio input's settings.
    public let audioSettings: AudioSettings?
    /// The format of the audio an audio input takes.
    public let sourceFormat: AudioFormat?
    /// How a video input fits frames of another shape into its size (see ``ScalingMode``).
    public let scalingMode: ScalingMode

    /// The track a video input makes, or `nil`.
    let videoTrack: AssetWriter.VideoTrack?
    /// The track an audio input makes, or `nil`.
    let audioTrack: AssetWriter.AudioTrack?
    /// Why the input cannot be added to a writer, if it cannot.
    let problem: ReelError?
    /// Converts a video input's frames to its track's format and size.
    private let fitter: FrameFitter?
    /// Converts an audio input's audio of other formats to its ``sourceFormat``; made at the
    /// first such buffer, used only under the writer's lock.
    private var soundConverter: SoundConverter?

    private struct State {
        weak var writer: AssetWriter?
        var track: Int?
        var markedFinished = false
        var request: (queue: DispatchQueue, block: @Sendable () -> Void)?
        var appends = 0
        /// A call of the requesting block is on its way.
        var asking = false
        var realTime = false
        /// The source time the media appended so far reaches.
        var appendedUntil: MediaTime?
    }
    private let state = Mutex(State())

    /// A video input, as `AVAssetWriterInput(mediaType: .video, outputSettings:)`: frames are
    /// encoded by `outputSettings`, at its ``VideoSettings/size`` (which a video input needs,
    /// as `AVVideoWidthKey` and `AVVideoHeightKey`; made even), and fitted into it by
    /// `scalingMode`. A `mediaType` other than `.video` makes an input that no writer adds.
    public init(mediaType: MediaType, outputSettings: VideoSettings, scalingMode: ScalingMode = .resizeAspect) {
        self.mediaType = mediaType
        videoSettings = outputSettings
        audioSettings = nil
        sourceFormat = nil
        self.scalingMode = scalingMode
        audioTrack = nil
        if mediaType != .video {
            problem = ReelError(.invalidConfiguration, "an input of \(mediaType) was given video settings",
                                hint: "give an audio input AudioSettings")
        } else if let size = outputSettings.size, size.width >= 2, size.height >= 2 {
            problem = nil
        } else {
            problem = ReelError(.invalidConfiguration, "a video input needs a size of at least 2x2 in its settings",
                                hint: "set VideoSettings.size, the size the file's video will have")
        }
        if problem == nil, let size = outputSettings.size {
            let even = PixelSize(width: size.width & ~1, height: size.height & ~1)
            videoTrack = AssetWriter.VideoTrack(settings: outputSettings, inputFormat: .yuv420p, inputSize: even)
            fitter = FrameFitter(format: .yuv420p, size: even, mode: scalingMode)
        } else {
            videoTrack = nil
            fitter = nil
        }
    }

    /// An audio input, as `AVAssetWriterInput(mediaType: .audio, outputSettings:sourceFormatHint:)`:
    /// audio of `sourceFormatHint` (by default 32-bit float samples at the settings' rate and
    /// channel count) is encoded by `outputSettings`. `title` is stored in the file
    /// ("Microphone"). A `mediaType` other than `.audio` makes an input that no writer adds.
    public init(mediaType: MediaType, outputSettings: AudioSettings, sourceFormatHint: AudioFormat? = nil, title: String? = nil) {
        self.mediaType = mediaType
        videoSettings = nil
        audioSettings = outputSettings
        let format = sourceFormatHint ?? AudioFormat(sampleFormat: .f32, sampleRate: outputSettings.sampleRate, channels: outputSettings.channels)
        sourceFormat = format
        scalingMode = .resizeAspect
        videoTrack = nil
        fitter = nil
        if mediaType != .audio {
            problem = ReelError(.invalidConfiguration, "an input of \(mediaType) was given audio settings",
                                hint: "give a video input VideoSettings")
            audioTrack = nil
        } else {
            problem = nil
            audioTrack = AssetWriter.AudioTrack(settings: outputSettings, inputFormat: format, title: title)
        }
    }

    /// The writer the input was added to.
    var writer: AssetWriter? { state.withLock { $0.writer } }

    /// The audio track number of an audio input, from the start of writing.
    var track: Int? {
        get { state.withLock { $0.track } }
        set { state.withLock { $0.track = newValue } }
    }

    /// Whether ``markAsFinished()`` was called (or the writer ended).
    var isMarkedFinished: Bool { state.withLock { $0.markedFinished } }

    /// `buffer` in the input's ``sourceFormat`` (under the writer's lock).
    ///
    /// - Throws: `.invalidConfiguration` for audio of another format when the source format is
    ///   16-bit; conversion errors.
    func fitted(_ buffer: AudioBuffer) throws -> AudioBuffer {
        guard let sourceFormat, buffer.format != sourceFormat else { return buffer }
        guard sourceFormat.sampleFormat == .f32 else {
            throw ReelError(.invalidConfiguration, "audio of \(buffer.format) cannot be converted to \(sourceFormat)",
                            hint: "append audio of the input's source format, or leave the source format hint out (32-bit float)")
        }
        let converter = soundConverter ?? SoundConverter(sampleRate: sourceFormat.sampleRate, channels: sourceFormat.channels)
        soundConverter = converter
        return try converter.convert(buffer)
    }

    /// Ties the input to `writer` (``AssetWriter/add(_:)``).
    func attach(to writer: AssetWriter) {
        state.withLock { $0.writer = writer }
    }

    /// Whether the input's media comes in real time (a capture), as
    /// `AVAssetWriterInput.expectsMediaDataInRealTime`: such an input is ready whenever its
    /// writer is writing. One that is not (`false`, the default: media read from a file or made
    /// by the app) waits while its media runs more than a second ahead of another input's, so
    /// that inputs fed as fast as they can be stay together in the file. Set it before appending.
    public var expectsMediaDataInRealTime: Bool {
        get { state.withLock { $0.realTime } }
        set { state.withLock { $0.realTime = newValue } }
    }

    /// The source time the media appended so far reaches.
    var appendedUntil: MediaTime? { state.withLock { $0.appendedUntil } }

    /// Notes that media up to source time `end` has been appended.
    func noteAppended(until end: MediaTime) {
        state.withLock { $0.appendedUntil = max($0.appendedUntil ?? end, end) }
    }

    /// Whether the input takes media now, as `AVAssetWriterInput.isReadyForMoreMediaData`: its
    /// writer is writing, the input has not been marked finished, and (unless
    /// ``expectsMediaDataInRealTime``) its media is not more than a second ahead of another
    /// input's. Appending while it is `false` is not an error (appends are synchronous); it is
    /// the signal to wait that `requestMediaDataWhenReady(on:using:)` follows.
    public var isReadyForMoreMediaData: Bool {
        let (writer, finished, realTime) = state.withLock { ($0.writer, $0.markedFinished, $0.realTime) }
        guard !finished, let writer else { return false }
        return writer.isReady(self, realTime: realTime)
    }

    /// Says that no more media comes to this input, as `AVAssetWriterInput.markAsFinished()`:
    /// an append after it fails the writer, and the other inputs no longer wait for it.
    /// ``AssetWriter/finishWriting()`` marks every input finished itself.
    public func markAsFinished() {
        finishedByWriter()
        writer?.wakeInputs(besides: self)
    }

    /// The writer has ended: no more media, nothing more asked for.
    func finishedByWriter() {
        state.withLock {
            $0.markedFinished = true
            $0.request = nil
        }
    }

    /// Appends a frame at its own ``VideoFrame/presentationTime`` (a source time: see
    /// ``AssetWriter/startSession(atSourceTime:)``), as `AVAssetWriterInput.append(_:)`.
    /// As ``append(_:withPresentationTime:)``.
    @discardableResult
    public func append(_ frame: VideoFrame) -> Bool {
        append(frame, withPresentationTime: frame.presentationTime)
    }

    /// Appends a frame of any format and size at source time `time`, as
    /// `AVAssetWriterInputPixelBufferAdaptor.append(_:withPresentationTime:)`: converted and
    /// scaled into the track's size (by ``scalingMode``), placed on the track's frame grid
    /// (a frame in the slot of the one before, or before the session's start, is left out).
    ///
    /// Returns `false` when the frame was not taken: check the writer's
    /// ``AssetWriter/status`` and ``AssetWriter/error``. An append to an audio input, before
    /// the writer started writing or its session started, or after ``markAsFinished()``, fails
    /// the writer (`AVAssetWriter` raises an exception), as does an error encoding or writing.
    @discardableResult
    public func append(_ frame: VideoFrame, withPresentationTime time: MediaTime) -> Bool {
        guard let writer else { return false }
        guard let fitter else {
            writer.fail(ReelError(.invalidConfiguration, "a video frame was appended to an input of \(mediaType)",
                                  hint: "append frames to the video input"))
            return false
        }
        state.withLock { $0.appends += 1 }
        return writer.append(frame, at: time, from: self, fitter: fitter)
    }

    /// Appends audio at its ``AudioBuffer/presentationTime`` (a source time), as
    /// `AVAssetWriterInput.append(_:)` with an audio sample buffer: a gap before it is silent,
    /// an overlap with the audio before is left out. Audio of another format than the input's
    /// ``sourceFormat`` is converted to it (when that is 32-bit float, the default).
    ///
    /// Returns `false` when the audio was not taken: check the writer's
    /// ``AssetWriter/status`` and ``AssetWriter/error``. Audio of another format for a 16-bit
    /// source format, an append to a video input, before the writer started writing or its
    /// session started, or after ``markAsFinished()`` fails the writer, as does an error
    /// encoding or writing.
    @discardableResult
    public func append(_ buffer: AudioBuffer) -> Bool {
        guard let writer else { return false }
        guard mediaType == .audio else {
            writer.fail(ReelError(.invalidConfiguration, "audio was appended to an input of \(mediaType)",
                                  hint: "append audio to an audio input"))
            return false
        }
        state.withLock { $0.appends += 1 }
        return writer.append(buffer, from: self)
    }

    /// Has `block` called on `queue` whenever the input is ready for more media, as
    /// `AVAssetWriterInput.requestMediaDataWhenReady(on:using:)`: from the start of writing (at
    /// once if it has started) until the input is marked finished or the writer ends. The block
    /// appends while ``isReadyForMoreMediaData`` and calls ``markAsFinished()`` when it has no
    /// more; it is called again after it returns (a little later if it appended nothing). A
    /// second call replaces the block.
    public func requestMediaDataWhenReady(on queue: DispatchQueue, using block: @escaping @Sendable () -> Void) {
        let finished = state.withLock {
            if !$0.markedFinished { $0.request = (queue, block) }
            return $0.markedFinished
        }
        if !finished { askForMedia() }
    }

    /// Calls the requesting block (5 ms `later`), if there is one and the input is ready, and
    /// again after it returns; one call at a time (a call made while one is on its way does
    /// nothing).
    func askForMedia(later: Bool = false) {
        guard isReadyForMoreMediaData else { return }
        let request: (queue: DispatchQueue, block: @Sendable () -> Void)? = state.withLock {
            guard !$0.asking, let request = $0.request else { return nil }
            $0.asking = true
            return request
        }
        guard let request else { return }
        let work: @Sendable () -> Void = { [weak self] in
            guard let self else { return }
            let before = self.state.withLock { $0.appends }
            if self.isReadyForMoreMediaData, let current = self.state.withLock({ $0.request }) { current.block() }
            let appended = self.state.withLock { $0.asking = false; return $0.appends != before }
            self.askForMedia(later: !appended)
        }
        if later {
            request.queue.asyncAfter(deadline: .now() + .milliseconds(5), execute: work)
        } else {
            request.queue.async(execute: work)
        }
    }
}
