import Foundation
import Synchronization
import ReelFFmpeg

/// A capture output that records the session's video and audio into a file, in the spirit of
/// `AVCaptureMovieFileOutput`.
///
/// The recorder takes the session's first video source and every audio source. Each audio
/// source gets its own track (microphone and app audio apart) unless ``Settings/mixesAudio``
/// asks for one mixed track. Encoding runs on the recorder's own thread; under a real-time
/// clock a recorder that falls behind drops video frames (counted in progress events) rather
/// than letting memory grow.
///
/// ```swift
/// let session = CaptureSession()
/// try session.addInput(TestPatternSource())
/// try session.addInput(ToneSource())
/// let recorder = Recorder(url: URL(fileURLWithPath: "out.mp4"))
/// recorder.maxRecordedDuration = MediaTime(seconds: 5)
/// try session.addOutput(recorder)
/// try await session.start()
/// let summary = try await recorder.result()
/// await session.stop()
/// ```
public final class Recorder: CaptureOutput {
    /// How to record.
    public struct Settings: Sendable, Hashable {
        /// The container; `nil` takes it from the file name's extension (MP4 if none).
        public var container: Container?
        /// The video track's settings.
        public var video: VideoSettings
        /// The audio tracks' settings.
        public var audio: AudioSettings
        /// Mix every audio source into one track instead of one track each.
        public var mixesAudio: Bool
        /// Replace an existing file at the URL.
        public var overwrite: Bool
        /// How often a fragment is completed while recording MP4/MOV (what a crash can lose at most).
        public var fragmentInterval: MediaTime
        /// Stop once this much has been recorded.
        public var maxRecordedDuration: MediaTime?

        public init(container: Container? = nil, video: VideoSettings = VideoSettings(), audio: AudioSettings = AudioSettings(),
                    mixesAudio: Bool = false, overwrite: Bool = false,
                    fragmentInterval: MediaTime = MediaTime(value: 1, timescale: 1), maxRecordedDuration: MediaTime? = nil) {
            self.container = container
            self.video = video
            self.audio = audio
            self.mixesAudio = mixesAudio
            self.overwrite = overwrite
            self.fragmentInterval = fragmentInterval
            self.maxRecordedDuration = maxRecordedDuration
        }
    }

    /// The file being recorded.
    public let url: URL
    /// Recording events: started, progress, sources lost, finished or failed. One consumer;
    /// the stream ends after `finished` or `failed`. A recorder records once.
    public let events: AsyncStream<RecordingEvent>
    private let continuation: AsyncStream<RecordingEvent>.Continuation

    private enum Phase { case idle, recording, finished }
    private struct State {
        var settings: Settings
        var phase: Phase = .idle
        var queue: BoundedQueue<SourcedSample>?
        var worker: WorkerThread?
        var outcome: Result<RecordingSummary, ReelError>?
        var waiters: [CheckedContinuation<Result<RecordingSummary, ReelError>, Never>] = []
        var sourceNames: [SourceID: String] = [:]
        var videoSource: SourceID?
    }
    private let state: Mutex<State>
    private let dropped = Atomic<Int64>(0)

    /// Creates a recorder that will write `url` when its session starts.
    public init(url: URL, settings: Settings = Settings()) {
        self.url = url
        self.state = Mutex(State(settings: settings))
        (events, continuation) = AsyncStream.makeStream(of: RecordingEvent.self, bufferingPolicy: .bufferingNewest(512))
    }

    /// The recording settings. Changes take effect at the next start.
    public var settings: Settings {
        get { state.withLock { $0.settings } }
        set { state.withLock { $0.settings = newValue } }
    }

    /// The most time to record; the recording stops by itself, to within a frame, when it is
    /// reached. Counts recorded time, not wall time.
    public var maxRecordedDuration: MediaTime? {
        get { settings.maxRecordedDuration }
        set { state.withLock { $0.settings.maxRecordedDuration = newValue } }
    }

    /// Whether the recorder is recording.
    public var isRecording: Bool { state.withLock { $0.phase == .recording } }

    /// Video frames dropped so far.
    public var droppedFrames: Int64 { dropped.load(ordering: .relaxed) }

    // MARK: CaptureOutput

    public func prepare(sources: [SourceDescriptor], clock: any MediaClock) throws {
        try state.withLock { state in
            guard state.phase == .idle else {
                throw ReelError(state.phase == .recording ? .alreadyRunning : .cannotAddOutput,
                                state.phase == .recording ? "the recorder is already recording" : "this recorder has already recorded its file",
                                hint: state.phase == .recording ? nil : "make a new Recorder for the next recording")
            }
            let settings = state.settings
            let pipeline = try RecorderPipeline(url: url, settings: settings, sources: sources)
            let queue = BoundedQueue<SourcedSample>(capacity: 512, policy: clock.isRealTime ? .dropNewest : .block)
            state.queue = queue
            state.phase = .recording
            state.outcome = nil
            state.videoSource = pipeline.videoSource
            state.sourceNames = Dictionary(uniqueKeysWithValues: sources.map { ($0.id, $0.name) })
            dropped.store(0, ordering: .relaxed)
            continuation.yield(.started(url))
            state.worker = WorkerThread(name: "reel.recorder") { [self] _ in
                run(pipeline: pipeline, queue: queue)
            }
        }
    }

    public func consume(_ sample: SourcedSample) {
        guard let queue = state.withLock({ $0.queue }) else { return }
        if !queue.push(sample), case .video = sample.sample {
            dropped.add(1, ordering: .relaxed)
        }
    }

    public func sourceEvent(_ event: SourceEvent, from source: SourceID) {
        switch event {
        case .droppedFrames(let n):
            if state.withLock({ $0.videoSource == source }) { dropped.add(Int64(n), ordering: .relaxed) }
        case .lost(let error):
            let name = state.withLock { $0.sourceNames[source] } ?? "source \(source)"
            continuation.yield(.sourceLost(name: name, error: error))
        case .ended:
            break
        }
    }

    public func finish() async {
        let queue = state.withLock { $0.queue }
        queue?.close()
        _ = await outcome()
    }

    /// Waits until the recording has finished (stopped by its session or by reaching its
    /// limit) and returns what it holds, or throws why it failed.
    public func result() async throws -> RecordingSummary {
        try await outcome().get()
    }

    private func outcome() async -> Result<RecordingSummary, ReelError> {
        await withCheckedContinuation { waiter in
            let ready: Result<RecordingSummary, ReelError>?? = state.withLock { state in
                if let outcome = state.outcome { return .some(outcome) }
                if state.phase == .idle { return .some(nil) }
                state.waiters.append(waiter)
                return .none
            }
            switch ready {
            case .some(.some(let outcome)): waiter.resume(returning: outcome)
            case .some(.none): waiter.resume(returning: .failure(ReelError(.notRunning, "the recorder was never started")))
            case .none: break
            }
        }
    }

    // MARK: The worker

    private func run(pipeline: RecorderPipeline, queue: BoundedQueue<SourcedSample>) {
        let result: Result<RecordingSummary, ReelError>
        do {
            var nextProgress = MediaTime(value: 1, timescale: 2)
            while let sample = queue.pop() {
                let done = try pipeline.handle(sample)
                if pipeline.recordedDuration >= nextProgress {
                    nextProgress = pipeline.recordedDuration + MediaTime(value: 1, timescale: 2)
                    continuation.yield(.progress(pipeline.progress(dropped: droppedFrames)))
                }
                if done { break }
            }
            queue.close()
            result = .success(try pipeline.finish(dropped: droppedFrames))
        } catch let error as ReelError {
            queue.close()
            pipeline.abandon()
            result = .failure(error)
        } catch {
            queue.close()
            pipeline.abandon()
            result = .failure(ReelError(.encodingFailed, "\(error)"))
        }
        // Drain anything left so source buffers return to their pools.
        while queue.pop() != nil {}
        switch result {
        case .success(let summary):
            continuation.yield(.progress(RecordingProgress(duration: summary.duration, maxDuration: pipeline.limit,
                                                           bytes: summary.bytes, frames: summary.frames,
                                                           droppedFrames: summary.droppedFrames)))
            continuation.yield(.finished(summary))
        case .failure(let error):
            continuation.yield(.failed(error))
        }
        continuation.finish()
        let waiters = state.withLock { state in
            state.outcome = result
            state.phase = .finished
            state.queue = nil
            let w = state.waiters
            state.waiters = []
            return w
        }
        for waiter in waiters { waiter.resume(returning: result) }
    }
}

/// The recorder's per-recording state, used only on the recorder's thread.
final class RecorderPipeline: @unchecked Sendable {
    let writer: AssetWriter
    let videoSource: SourceID?
    let limit: MediaTime?
    private let settings: Recorder.Settings
    private let audioInputs: [SourceID: Int]
    private var aligners: [AudioTrackAligner]
    private var mixer: AudioMixer?
    private let trackTitles: [String]
    private var zero: MediaTime?
    private var pendingAudio: [SourcedSample] = []
    private var pendingAudioDuration = MediaTime.zero
    private var videoDone = false
    private var lastVideoTime: MediaTime?
    private var videoSize: PixelSize?
    private var wroteSomething = false
    private let limitSamples: Int64?

    init(url: URL, settings: Recorder.Settings, sources: [SourceDescriptor]) throws {
        self.settings = settings
        self.limit = settings.maxRecordedDuration
        if let limit, limit <= .zero {
            throw ReelError(.invalidConfiguration, "the maximum duration must be positive")
        }
        var videoTrack: AssetWriter.VideoTrack?
        var video: SourceID?
        for source in sources where source.kind == .video {
            if case .video(let size, let pixelFormat, _) = source.format {
                videoTrack = AssetWriter.VideoTrack(settings: settings.video, inputFormat: pixelFormat, inputSize: size)
                video = source.id
                videoSize = settings.video.size ?? size
                break
            }
        }
        videoSource = video
        var inputs: [SourceID: Int] = [:]
        var formats: [AudioFormat] = []
        var titles: [String] = []
        for source in sources where source.kind.isAudio {
            guard case .audio(let format) = source.format else { continue }
            inputs[source.id] = formats.count
            formats.append(format)
            switch source.kind {
            case .micAudio: titles.append("Microphone")
            case .appAudio: titles.append("App audio")
            default: titles.append(source.name)
            }
        }
        audioInputs = inputs
        aligners = formats.map { AudioTrackAligner(format: $0) }
        var audioTracks: [AssetWriter.AudioTrack]
        if settings.mixesAudio && formats.count > 1 {
            guard Set(formats.map(\.sampleRate)).count == 1 else {
                throw ReelError(.invalidConfiguration, "cannot mix audio sources of different sample rates")
            }
            let mixFormat = AudioFormat(sampleFormat: .f32, sampleRate: formats[0].sampleRate, channels: settings.audio.channels)
            mixer = AudioMixer(inputs: formats.count, format: mixFormat)
            audioTracks = [AssetWriter.AudioTrack(settings: settings.audio, inputFormat: mixFormat, title: "Mix")]
            titles = ["Mix"]
        } else {
            audioTracks = zip(formats, titles).map { AssetWriter.AudioTrack(settings: settings.audio, inputFormat: $0, title: $1) }
        }
        trackTitles = titles
        if let limit, let first = formats.first {
            limitSamples = limit.convertedValue(to: Int32(first.sampleRate), rounding: .down)
        } else {
            limitSamples = nil
        }
        if videoTrack == nil && audioTracks.isEmpty {
            throw ReelError(.cannotAddOutput, "the recorder has nothing to record", hint: "add a video or audio input first")
        }
        writer = try AssetWriter(configuration: .init(url: url, container: settings.container, video: videoTrack, audio: audioTracks,
                                                      fragmentInterval: settings.fragmentInterval, overwrite: settings.overwrite))
    }

    /// Recorded time so far (the video's, else the first audio track's).
    var recordedDuration: MediaTime {
        if videoSource != nil, let rate = writer.frameRate {
            return lastVideoTime.map { $0 + rate.frameDuration } ?? .zero
        }
        return aligners.first?.nextTime ?? .zero
    }

    func progress(dropped: Int64) -> RecordingProgress {
        RecordingProgress(duration: recordedDuration, maxDuration: limit, bytes: writer.bytesWritten,
                          frames: writer.videoFrameCount, droppedFrames: dropped)
    }

    /// Handles one sample; returns true once the limit has been reached on every track.
    func handle(_ sample: SourcedSample) throws -> Bool {
        switch sample.sample {
        case .video(let frame):
            guard sample.source == videoSource, !videoDone else { return false }
            if zero == nil {
                zero = frame.presentationTime
                let held = pendingAudio
                pendingAudio = []
                for audio in held { _ = try handle(audio) }
            }
            let time = frame.presentationTime - zero!
            if let limit, let rate = writer.frameRate, rate.frameIndex(at: time, rounding: .nearest) >= rate.frameIndex(at: limit, rounding: .nearest) {
                videoDone = true
            } else if try writer.appendVideo(frame, at: time) {
                lastVideoTime = time
                wroteSomething = true
            }
        case .audio(let buffer):
            guard let input = audioInputs[sample.source] else { return false }
            if zero == nil {
                if videoSource != nil && pendingAudioDuration < MediaTime(value: 3, timescale: 1) {
                    pendingAudio.append(sample)
                    pendingAudioDuration += buffer.duration
                    return false
                }
                zero = .zero
            }
            var relative = buffer
            relative.presentationTime = buffer.presentationTime - zero!
            for piece in aligners[input].place(relative, limit: limitSamples) {
                wroteSomething = true
                if mixer != nil {
                    if let mixed = mixer!.add(piece, input: input) { try writer.appendAudio(mixed, track: 0) }
                } else {
                    try writer.appendAudio(piece, track: input)
                }
            }
        }
        return isComplete
    }

    private var isComplete: Bool {
        guard limit != nil else { return false }
        let videoComplete = videoSource == nil || videoDone
        let audioComplete = limitSamples.map { l in aligners.allSatisfy { $0.nextSample >= l } } ?? true
        return videoComplete && audioComplete
    }

    func finish(dropped: Int64) throws -> RecordingSummary {
        if zero == nil, !pendingAudio.isEmpty {
            zero = .zero
            let held = pendingAudio
            pendingAudio = []
            for audio in held { _ = try handle(audio) }
        }
        guard wroteSomething else {
            writer.abandon()
            try? FileManager.default.removeItem(at: writer.configuration.url)
            throw ReelError(.nothingRecorded, "nothing was recorded", hint: "check that the sources deliver samples")
        }
        // Bring every audio track to the end of the recording so all tracks end together.
        let end = limit.map { min($0, recordedDuration) } ?? recordedDuration
        if mixer == nil, videoSource != nil {
            for i in aligners.indices {
                let target = end.convertedValue(to: Int32(aligners[i].format.sampleRate), rounding: .down)
                if aligners[i].nextSample < target {
                    let gap = AudioBuffer.silence(format: aligners[i].format, frameCount: Int(target - aligners[i].nextSample),
                                                  at: aligners[i].nextTime)
                    for piece in aligners[i].place(gap) { try writer.appendAudio(piece, track: i) }
                }
            }
        }
        if mixer != nil, let rest = mixer!.flush() { try writer.appendAudio(rest, track: 0) }
        let summary = try writer.finish()
        return RecordingSummary(url: summary.url, duration: videoSource != nil ? recordedDuration : summary.duration,
                                frames: summary.videoFrames, droppedFrames: dropped, bytes: summary.bytes,
                                videoSize: videoSize, video: videoSource != nil ? settings.video : nil,
                                audioTracks: trackTitles, audio: trackTitles.isEmpty ? nil : settings.audio,
                                container: writer.configuration.container, reachedLimit: limit != nil && isComplete)
    }

    func abandon() { writer.abandon() }
}
