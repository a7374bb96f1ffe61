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
    /// The file being recorded; `/dev/null` for a recorder that only keeps a replay buffer
    /// (``init(replayBuffer:settings:)``: it writes no file).
    public let url: URL
    /// The replay buffer the recorder's encoders feed, if any: the same packets as the file,
    /// from one encode (see ``ReplayBuffer``).
    ///
    /// Pausing takes the paused time out of the buffer as it does out of the file: the buffer
    /// holds recorded time only, so a save right after a resume holds what came before the
    /// pause, joined to what came after it, and a save while paused ends at the pause.
    public let replayBuffer: ReplayBuffer?
    /// The other sinks the recorder's encoders feed beside its file and replay buffer, in order:
    /// ``LiveStream``s, or an application's own ``PacketSink``. A live stream's events
    /// (``RecordingEvent/streamInterrupted(name:error:)``, ``RecordingEvent/streamResumed(name:)``)
    /// and statistics (``RecordingProgress/streams``) come with the recorder's.
    public let sinks: [any PacketSink & Sendable]
    /// Whether the recorder writes a file (false when it only feeds a replay buffer or sinks).
    public let writesFile: Bool
    /// Recording events: started, progress, sources lost, finished or failed. One consumer;
    /// the stream ends after `finished` or `failed`. A recorder records once.
    public let events: AsyncStream<RecordingEvent>
    let continuation: AsyncStream<RecordingEvent>.Continuation

    struct State {
        var settings: Settings
        /// The lifecycle, pause requests and sources gone: decided here, acted on outside the lock.
        var machine = RecorderStateMachine()
        var queue: Channel<RecorderInput>?
        var worker: OutputWorker<RecorderInput>?
        var outcome: Result<RecordingSummary, ReelError>?
        var waiters: [CheckedContinuation<Result<RecordingSummary, ReelError>, Never>] = []
        var sourceNames: [SourceID: String] = [:]
        var videoSource: SourceID?
        var clock: (any MediaClock)?
        var origin = MediaTime.zero
        var session: RecordingSession?
        /// What the finished recording holds, for linked frame logs; `nil` if it failed.
        var recordedFrames: RecordedFrames?
        /// Called once the recording has ended (frame logs waiting to rewrite their rows).
        var endHandlers: [@Sendable (RecordedFrames?) -> Void] = []
        /// What the sources did not record, at the session times it happened.
        var shortfalls = SourceShortfalls()
        /// The session time of each source's latest sample (see `Recorder+LimitWatch.swift`).
        var latestSample: [SourceID: MediaTime] = [:]
        /// Whether the maximum duration passed on the clock before the sources delivered it.
        var limitPassedOnClock = false
        /// Has the inputs' audio filters give out what they hold, and how much later than the
        /// pictures their sound is moved at most (see ``HeldSoundOutput``).
        var drainHeldSound: (@Sendable () -> Void)?, soundLead = MediaTime.zero
        /// Chapter markers not yet placed on the recording's timeline (see `Recorder+Markers.swift`).
        var markers = PendingMarkers()
        /// What reads the disk's free space instead of the disk (tests: see `FreeSpaceWatch.swift`).
        var freeSpaceReader: FreeSpaceWatch.Reader?
        /// The file recorded into until the stop, for a file made then (a GIF).
        var intermediate: URL?
        /// The file at the name before the start (one the recording replaces), and the
        /// recording's own file once made (see `Recorder+Abort.swift`).
        var earlierFile: FileIdentity?
        var recordingFile: FileIdentity?
        /// The gate of the recording file's finalise, for an abort to give it up.
        var finaliseGate: FinaliseGate?
        /// Given up and let go (``Recorder/release()``): the worker ends without finishing.
        var released = false
        /// Aborted before it was prepared (``Recorder/abort()`` said nothing was recorded):
        /// ``Recorder/prepare(sources:clock:origin:)`` makes no file then (one made after the
        /// abort's words was left, header only, at the name).
        var abortedBeforePreparing = false
        /// Aborted while ``Recorder/prepare(sources:clock:origin:)`` made the file and the
        /// encoders: the preparation gives its file up instead of recording (the abort waits
        /// for it, see ``preparation``, and then tidies the file as any abandoned one).
        var abortedWhilePreparing = false
        /// Entered while the recorder prepares, for an abort to wait until the file is made
        /// (or not) before it looks at the disk.
        var preparation: DispatchGroup?
        /// The recorded source's newest frame number seen, and what was learnt of its lost
        /// frames (its queue refused them, the source said it skipped them), for the worker
        /// to put the gaps down to (see ``FrameDropLedger``).
        var lastVideoSequence: Int64?
        var dropLedger = FrameDropLedger()
        /// When each source's missed sound was last said (see ``AudioMissNotices``).
        var audioMisses = AudioMissNotices()
        /// Recorders that pause and resume with this one (see ``Recorder/addPauseFollower(_:)``).
        var pauseFollowers: [Recorder] = []
    }
    let state: Mutex<State>
    let dropped = Atomic<Int64>(0)
    /// Whether ``State/dropLedger`` holds something for the worker (checked without the lock).
    let dropsNoted = Atomic<Bool>(false)
    /// Where the recording is, for the sources' losses counted while it records: 0 before its
    /// first sample, 1 recording, 2 ended.
    let recordingWindow = Atomic<Int>(0)
    /// The losses each source said while the recording recorded.
    let sourceDrops = Mutex<[SourceID: FrameDrops]>([:])
    private let newestProgress = Mutex<RecordingProgress?>(nil)

    /// What the newest ``RecordingEvent/progress(_:)`` said (duration, bytes, frames…), `nil`
    /// before the first: for a view that polls rather than reads ``events``.
    public var progress: RecordingProgress? { newestProgress.withLock { $0 } }

    /// Says `progress` in ``events`` and keeps it for ``progress``.
    func report(_ progress: RecordingProgress) {
        newestProgress.withLock { $0 = progress }
        continuation.yield(.progress(progress))
    }
    /// The spans of session time whose audio the full queue refused, by source (contiguous
    /// refusals merge, so the list stays short): the summary counts those inside the recording.
    let refusedAudio = Mutex<[SourceID: [(start: MediaTime, end: MediaTime)]]>([:])
    /// Pause/resume requests waiting for the worker; checked without the lock on every sample.
    let pendingControls = Atomic<Int>(0)
    /// Chapter markers waiting for the worker (see `Recorder+Controls.swift`).
    let markersWaiting = Atomic<Int>(0)
    /// The recorded source's video frames in the queue: the encoder's backlog.
    private let queuedVideo = QueuedVideoFrames()
    private let injectedBacklog = Mutex<(any VideoBacklogGauge)?>(nil)

    /// What the encoder's speed adapts to instead of the frames in the recorder's queue (tests:
    /// a ``SimulatedSlowEncoder``); with one, it adapts under any clock. Set before the start.
    package var backlogGauge: (any VideoBacklogGauge)? {
        get { injectedBacklog.withLock { $0 } }
        set { injectedBacklog.withLock { $0 = newValue } }
    }

    /// Creates a recorder that will write `url` when its session starts and, if given, feed
    /// `replayBuffer` from the same encoders (one encode for both, in either ``PauseMode``: clip
    /// mode cuts the one encode into clips, and the buffer holds the recorded time across them).
    ///
    /// `sinks` take the same packets too (live streams, say: see ``sinks``). Sinks are added when
    /// the session starts, after the file is created: a live stream that cannot connect then
    /// makes the start fail, and the new file is removed.
    public convenience init(url: URL, settings: Settings = Settings(), replayBuffer: ReplayBuffer? = nil,
                            sinks: [any PacketSink & Sendable] = []) {
        self.init(url: url, settings: settings, replayBuffer: replayBuffer, sinks: sinks, writesFile: true)
    }

    /// Creates a recorder that writes no file and only feeds `sinks` (live streams, say) with the
    /// session's encoded video and audio. As for ``init(replayBuffer:settings:)``, the file
    /// options do not apply, and a ``Settings/maxFileSize`` or the clip ``PauseMode`` makes the
    /// start fail with `.invalidConfiguration`; its ``url`` is `/dev/null`.
    public convenience init(sinks: [any PacketSink & Sendable], settings: Settings = Settings()) {
        self.init(url: URL(fileURLWithPath: "/dev/null"), settings: settings, replayBuffer: nil, sinks: sinks, writesFile: false)
    }

    /// Creates a recorder that writes no file and only keeps `replayBuffer` filled with the
    /// session's encoded video and audio: nothing reaches the disk until
    /// ``ReplayBuffer/save(to:container:overwrite:)`` is called. The settings' file options
    /// (container, overwrite, fragments, free space) do not apply; a ``Settings/maxFileSize``
    /// or the clip ``PauseMode`` makes the start fail with `.invalidConfiguration`. Its
    /// ``url`` is `/dev/null`, and its summary counts the frames encoded and no bytes.
    public convenience init(replayBuffer: ReplayBuffer, settings: Settings = Settings()) {
        self.init(url: URL(fileURLWithPath: "/dev/null"), settings: settings, replayBuffer: replayBuffer, sinks: [],
                  writesFile: false)
    }

    private init(url: URL, settings: Settings, replayBuffer: ReplayBuffer?, sinks: [any PacketSink & Sendable], writesFile: Bool) {
        self.url = url
        self.replayBuffer = replayBuffer
        self.sinks = sinks
        self.writesFile = writesFile
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

    /// Whether the recorder is recording (paused or not).
    public var isRecording: Bool { state.withLock { $0.machine.isRecording } }

    /// Whether the recording is paused: at once after ``pause()``, and from its time on after
    /// ``pause(at:)``. False when not recording.
    public var isPaused: Bool {
        state.withLock { s in
            guard let clock = s.clock else { return false }
            return s.machine.isPaused(at: clock.now() - s.origin)
        }
    }

    /// The clips of this recording (clip mode keeps one file per clip here); `nil` before it starts.
    public var recordingSession: RecordingSession? { state.withLock { $0.session } }

    // MARK: CaptureOutput

    public func prepare(sources: [SourceDescriptor], clock: any MediaClock, origin: MediaTime) throws {
        // The file at the name now is one the recording replaces, for an abort from now on
        // (see `Recorder+Abort.swift`).
        let earlier = earlierFileAtTheName()
        let (settings, soundLead, freeSpaceReader) = try state.withLock { state in
            guard !state.abortedBeforePreparing else {
                throw ReelError(.notRunning, "the recording was aborted before it started: nothing was recorded")
            }
            try state.machine.prepare()
            state.earlierFile = earlier
            let preparation = DispatchGroup()
            preparation.enter()
            state.preparation = preparation
            return (state.settings, state.soundLead, state.freeSpaceReader)
        }
        // An abort waiting for the preparation goes on once it has ended, however it ends.
        defer { state.withLock { $0.preparation?.leave(); $0.preparation = nil } }
        // Outside the lock: this creates the file and opens the encoders.
        let session = RecordingSession(folder: settings.clipsFolder ?? RecordingSession.defaultFolder(for: url))
        let pipeline: RecorderPipeline
        let continuation = self.continuation
        for stream in sinks.compactMap({ $0 as? LiveStream }) {
            stream.setEventHandler { event in
                switch event {
                case .interrupted(let name, let error): continuation.yield(.streamInterrupted(name: name, error: error))
                case .resumed(let name): continuation.yield(.streamResumed(name: name))
                case .failed(let name, let error): continuation.yield(.streamFailed(name: name, error: error))
                }
            }
        }
        do {
            try prepareFile()
            let fed: [any PacketSink] = (replayBuffer.map { [$0] } ?? []) + sinks
            pipeline = try RecorderPipeline(url: url, settings: settings, sources: sources, session: session,
                                            sinks: fed, writesFile: writesFile, soundLead: soundLead, freeSpaceReader: freeSpaceReader)
        } catch {
            let failure = error as? ReelError ?? ReelError(.encodingFailed, "\(error)")
            let waiters = state.withLock { state in
                state.machine.preparationFailed()
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(returning: .failure(failure)) }
            throw error
        }
        if let aborted = givenUpByAnAbort(pipeline, session: session) { throw aborted }
        pipeline.writer.encoder.onSinkDropped = { if let event = Self.sinkDropped($0, error: $1) { continuation.yield(event) } }
        session.setMergeProgressHandler { continuation.yield(.merging($0)) }
        session.setFolderChangeHandler { continuation.yield(.clipsFolderChanged($0)) }
        pipeline.onConverting = { continuation.yield(.converting($0)) }
        pipeline.onClipStarted = { continuation.yield(.clipStarted(index: $0)) }
        pipeline.onClipFinished = { continuation.yield(.clipFinished($0)) }
        pipeline.takeControls = { [unowned self] in self.takeControls() }
        pipeline.takeMarkers = { [unowned self] upTo in self.takeMarkers(upTo: upTo) }
        pipeline.markerPlaced = { continuation.yield(.markerAdded($0)) }
        pipeline.controlApplied = { [unowned self, unowned pipeline] paused, at in
            continuation.yield(paused ? .paused(recorded: at) : .resumed(recorded: at))
            self.report(pipeline.progress(droppedAudio: self.droppedAudio))
        }
        let queue = Channel<RecorderInput>(capacity: 512, policy: clock.isRealTime ? .dropNewest : .block)
        // A clip finished on its own thread while the recorder's waits for samples (paused,
        // or a stepped clock): woken to say so. Sent only to an empty queue, which never
        // blocks; a queue that holds samples is read soon anyway.
        pipeline.clipFiles?.clipFinishedAside = { [weak queue] in
            guard let queue, queue.pendingCount == 0 else { return }
            _ = queue.send(.clipsFinished)
        }
        queuedVideo.reset()
        let gauge = backlogGauge
        let speed = EncoderSpeedControl(preset: pipeline.plan.video?.settings.effectivePreset ?? settings.video.effectivePreset,
                                        adapts: settings.adaptsEncoderSpeed && pipeline.plan.video != nil && (gauge != nil || clock.isRealTime),
                                        gauge: gauge, queued: queuedVideo)
        dropped.store(0, ordering: .relaxed)
        refusedAudio.withLock { $0 = [:] }
        dropsNoted.store(false, ordering: .relaxed)
        recordingWindow.store(0, ordering: .relaxed)
        sourceDrops.withLock { $0 = [:] }
        state.withLock { state in
            state.lastVideoSequence = nil
            state.dropLedger = FrameDropLedger()
            state.machine.prepared(sources: Set(sources.map(\.id)), videoSource: pipeline.plan.videoSource)
            state.queue = queue
            state.outcome = nil
            state.clock = clock
            state.origin = origin
            state.session = session
            state.intermediate = pipeline.intermediate
            state.finaliseGate = pipeline.writer.movie?.finaliseGate
            state.videoSource = pipeline.plan.videoSource
            state.sourceNames = Dictionary(uniqueKeysWithValues: sources.map { ($0.id, $0.name) })
        }
        noteRecordingFile()
        continuation.yield(.started(url))
        // Encoders opened on this thread (a clip's sound) count in the preparing task's census (tests).
        let census = EncoderCensus.current
        let worker = OutputWorker(name: "reel.recorder", channel: queue) { [self] queue in
            EncoderCensus.$current.withValue(census) { run(pipeline: pipeline, queue: queue, speed: speed) }
        }
        state.withLock { $0.worker = worker }
        if let limit = settings.maxRecordedDuration, clock.isRealTime { watchLimit(limit, clock: clock) }
    }

    public func consume(_ sample: SourcedSample) {
        guard let (queue, videoSource) = state.withLock({ s in
            s.latestSample[sample.source] = sample.sample.presentationTime
            if case .video(let frame) = sample.sample, sample.source == s.videoSource { s.lastVideoSequence = frame.sequenceNumber }
            return s.queue.map { ($0, s.videoSource) }
        }) else { return }
        switch sample.sample {
        case .video(let frame):
            if queue.policy == .block, sample.source == videoSource { videoArrived(at: frame.presentationTime) }
            // Under a real-time clock video keeps out of the last half of the queue, so that a
            // recorder that falls behind (a slow disk) drops frames, which the file's timing
            // absorbs, long before it must drop audio. A refused frame shows as a gap in its
            // source's frame numbers and is counted when the next frame is written.
            if queue.policy == .dropNewest && Int64(queue.pendingCount) >= queue.bound / 2 {
                if sample.source == videoSource { noteRefused(frame) }
                return
            }
            // Counted before it can be taken, so the count never goes below the queue's.
            if sample.source == videoSource { queuedVideo.queued() }
            if queue.send(.sample(sample)) != .queued, sample.source == videoSource {
                queuedVideo.taken()
                if !queue.isClosed { noteRefused(frame) }
            }
        case .audio(let buffer):
            if queue.policy == .block { waitForVideo(upTo: buffer.presentationTime) }
            if queue.send(.sample(sample)) != .queued, !queue.isClosed {
                noteMissingAudio(from: sample.source, start: buffer.presentationTime, end: buffer.endTime)
            }
        }
    }

    // Off real time every source runs as fast as it can, and audio, cheap to make, would run
    // seconds ahead of the video: a recording stopped by its size would end with seconds of
    // sound and no picture. So there audio waits while it is more than a second ahead of the
    // latest frame (as under a real clock), until the video has gone, stalls for 5 s of wall
    // time, or the session stops.
    private let videoClock = NSCondition()
    nonisolated(unsafe) private var latestVideo: MediaTime?
    nonisolated(unsafe) private var audioWaits = true

    private func videoArrived(at time: MediaTime) {
        videoClock.lock()
        latestVideo = max(latestVideo ?? time, time)
        videoClock.broadcast()
        videoClock.unlock()
    }

    private func waitForVideo(upTo time: MediaTime) {
        videoClock.lock()
        defer { videoClock.unlock() }
        let deadline = Date().addingTimeInterval(5)
        while audioWaits, let latest = latestVideo, time > latest + MediaTime(value: 1, timescale: 1) {
            if !videoClock.wait(until: deadline) { audioWaits = false }
        }
    }

    func stopAudioWaiting() {
        videoClock.lock()
        audioWaits = false
        videoClock.broadcast()
        videoClock.unlock()
    }

    public func sessionWillStop() { stopAudioWaiting() }

    public func finish() async {
        stopAudioWaiting()
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
                if state.machine.phase == .idle { return .some(nil) }
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
}
