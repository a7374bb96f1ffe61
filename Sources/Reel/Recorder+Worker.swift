import Foundation
import Synchronization
import ReelFFmpeg

/// What the recorder's thread takes from its queue.
enum RecorderInput: Sendable {
    case sample(SourcedSample)
    /// A clip's file was finished on its own thread (see `ClipFileSink`): said now.
    case clipsFinished
}

/// The recorder's thread: takes the samples from the queue, hands them to the pipeline, says
/// progress and drops, and at the end finishes (or abandons) the recording and tells the waiters.
extension Recorder {
    /// Calls `handler` with the frames the recording holds once it has ended (at once if it
    /// has; with `nil` if it failed or never started).
    package func whenEnded(_ handler: @escaping @Sendable (RecordedFrames?) -> Void) {
        let ended = state.withLock { s -> RecordedFrames?? in
            if s.machine.isRecording { s.endHandlers.append(handler); return .none }
            return .some(s.recordedFrames)
        }
        if case .some(let frames) = ended { handler(frames) }
    }

    func run(pipeline: RecorderPipeline, queue: Channel<RecorderInput>, speed: EncoderSpeedControl) {
        let result: Result<RecordingSummary, ReelError>
        /// What the recording's summary says beside what its pipeline ended with.
        func completing(_ ended: RecordingSummary) -> RecordingSummary {
            var summary = ended
            // Only what falls inside the recording (the session runs on while the recorder
            // catches up after its limit).
            summary.droppedAudio = refusedAudio.withLock { spans in
                spans.values.joined().reduce(MediaTime.zero) { $0 + pipeline.recordedLength(from: $1.start, to: $1.end) }
            }
            summary.streams = pipeline.liveStreams.map(\.statistics)
            summary.encoderSpeedChanges = speed.changes
            summary.frameDropsBySource = sourceDrops.withLock { $0 }
            let shortfalls = state.withLock { $0.shortfalls }
            summary.shortfalls = shortfalls.summary { pipeline.recordedLength(from: .zero, to: $0) }
            summary.endedRecordings = shortfalls.ended
            // What the full disk kept the file from holding: the recording's own shortfall.
            if let lost = pipeline.keptByFullDisk?.lost {
                summary.shortfalls.append(SourceShortfall(source: summary.url.lastPathComponent, kind: .incomplete, error: lost, at: summary.duration))
            }
            return summary
        }
        do {
            // The first as soon as something is recorded (a reader learns that recording has
            // begun), then about twice a second.
            var nextProgress = MediaTime.zero
            var notices = FrameDropNotices()
            var dropsSeen: Int64 = 0  // counted, when the notices were last looked at
            var stoppedByFullDisk = false
            while let input = queue.receive() {
                try pipeline.clipFiles?.deliverFinishedClips()
                guard case .sample(let sample) = input else { continue }
                handOverDrops(to: pipeline)
                if case .video(let frame) = sample.sample, sample.source == pipeline.plan.videoSource,
                   let change = try speed.takeFrame(frame, pipeline: pipeline) {
                    continuation.yield(.encoderSpeedChanged(change))
                }
                let done: Bool
                do { done = try pipeline.handle(sample) } catch where pipeline.keptByFullDisk != nil {
                    // The disk filled, and the file was finalised with what reached it: the
                    // recording ends there, for the disk (below), not as a failure.
                    stoppedByFullDisk = true
                    break
                }
                dropped.store(pipeline.droppedFrames, ordering: .relaxed)
                // Said as they are lost (a queue that refuses frames until the end leaves its gap
                // to be counted then), counted once their gap is.
                if pipeline.droppedFrames != dropsSeen || pipeline.machine.holdsNotedDrops {
                    let soFar = pipeline.machine.dropsSoFar
                    dropsSeen = pipeline.droppedFrames
                    for notice in notices.notices(for: soFar, at: pipeline.recordedDuration) {
                        continuation.yield(.framesDropped(notice))
                    }
                }
                if pipeline.recordedDuration > .zero && recordingWindow.load(ordering: .relaxed) == 0 {
                    recordingWindow.store(1, ordering: .relaxed)
                }
                let clipsRemoved = pipeline.takeClipsRemoved()
                if pipeline.recordedDuration >= nextProgress && pipeline.recordedDuration > .zero {
                    nextProgress = pipeline.recordedDuration + MediaTime(value: 1, timescale: 2)
                    report(pipeline.progress(droppedAudio: self.droppedAudio))
                } else if clipsRemoved {
                    report(pipeline.progress(droppedAudio: self.droppedAudio))
                }
                if done { break }
            }
            queue.close()
            recordingWindow.store(2, ordering: .relaxed)
            stopAudioWaiting()
            if state.withLock({ $0.released }) { throw Self.released }
            handOverEnd(to: pipeline)
            var summary: RecordingSummary
            if let kept = stoppedByFullDisk ? pipeline.keptByFullDisk : nil {
                summary = pipeline.endedByFullDisk(kept)
            } else {
                do { summary = try pipeline.finish() } catch {
                    // The disk filled as the recording stopped, and the file was finalised so.
                    guard let kept = pipeline.keptByFullDisk else { throw error }
                    summary = pipeline.endedByFullDisk(kept)
                }
            }
            result = .success(completing(summary))
        } catch {
            queue.close()
            stopAudioWaiting()
            var failure = error as? ReelError ?? ReelError(.encodingFailed, "\(error)")
            if !state.withLock({ $0.released }), let ended = pipeline.endedClipsByFullDisk(failure) {
                // Clip mode, the clips' disk full: the recording ends as one the disk stopped,
                // the clips keeping it, as a single file's does (see `endedClipsByFullDisk`).
                result = .success(completing(ended))
            } else {
                if let folder = pipeline.abandon(), !(failure.hint ?? "").contains(LibraryHint.mergeTheClips(folder.path)) {
                    // Clip mode: the file is made only by the merge at the end, so the recording
                    // is the folder (a writer's hint names only its own clip).
                    let clips = "what was recorded is in the clips in \(folder.path); \(LibraryHint.mergeTheClips(folder.path))"
                    if failure.code == .insufficientStorage {
                        failure.hint = "free some disk space; \(clips)"
                    } else {
                        failure.hint = failure.hint.map { "\($0); \(clips)" } ?? clips
                    }
                }
                result = .failure(failure)
            }
        }
        // Drain anything left so source buffers return to their pools.
        while queue.receive() != nil {}
        switch result {
        case .success(let summary):
            report(RecordingProgress(duration: summary.duration, maxDuration: pipeline.limit,
                                     bytes: summary.bytes, frames: summary.frames,
                                     droppedFrames: summary.droppedFrames, clipCount: summary.clipCount,
                                     droppedAudio: summary.droppedAudio,
                                     streams: pipeline.liveStreams.map(\.statistics)))
            continuation.yield(.finished(summary))
        case .failure(let error):
            continuation.yield(.failed(error))
        }
        let frames: RecordedFrames? = if case .success = result { pipeline.recordedFrames } else { nil }
        let handlers = state.withLock { state in
            state.recordedFrames = frames
            state.machine.finished()
            defer { state.endHandlers = [] }
            return state.endHandlers
        }
        // Before the result is known, so that a frame log is complete when it is.
        for handler in handlers { handler(frames) }
        continuation.finish()
        let waiters = state.withLock { state in
            state.outcome = result
            state.queue = nil
            let w = state.waiters
            state.waiters = []
            return w
        }
        for waiter in waiters { waiter.resume(returning: result) }
    }
}
