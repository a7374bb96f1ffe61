import Foundation
import Synchronization
import ReelFFmpeg

/// How many video frames wait for the encoder as it takes the next one: the signal that
/// ``EncoderSpeedAdapter`` judges. A seam: the recorder's own count of the frames in its queue
/// (``QueuedVideoFrames``), or a simulated slow encoder in tests (``SimulatedSlowEncoder``).
package protocol VideoBacklogGauge: AnyObject, Sendable {
    /// Called on the recorder's thread as it takes the video frame of session time `time` to
    /// encode it at `preset`; returns the frames still waiting behind it.
    func framesWaiting(takingFrameAt time: MediaTime, preset: String) -> Int
}

/// The video frames in the recorder's queue: counted in as the source's frames are queued and
/// out as the recorder takes them. Each holds one of its source's pooled buffers (a screen
/// source has five), so a count that stays up is a pool about to run dry, and frames lost.
package final class QueuedVideoFrames: VideoBacklogGauge {
    private let count = Atomic<Int>(0)

    package init() {}

    /// A frame of the recorded video source went into the queue.
    package func queued() { count.add(1, ordering: .relaxed) }
    /// The recorder took a frame of the recorded video source out of the queue.
    package func taken() { count.subtract(1, ordering: .relaxed) }
    /// Starts counting again (a new recording).
    package func reset() { count.store(0, ordering: .relaxed) }

    package func framesWaiting(takingFrameAt time: MediaTime, preset: String) -> Int {
        max(0, count.load(ordering: .relaxed))
    }
}

/// A slow encoder, simulated on the frames' own times so tests need no wall clock: each frame
/// costs the time given for the preset it is encoded at, and a frame that arrives while the
/// simulated encoder is still busy waits (the backlog is how many frame durations it waits).
/// With a cost over the frame duration the backlog grows, as it would under a real clock.
package final class SimulatedSlowEncoder: VideoBacklogGauge, @unchecked Sendable {
    private let lock = NSLock()
    private let frameDuration: MediaTime
    private let costs: [String: MediaTime]
    private var busyUntil: MediaTime?
    /// The presets the frames were taken at, in order (what a test checks the steps against).
    package private(set) var presets: [String] = []

    /// A simulated encoder taking `costs[preset]` per frame (zero for a preset not given) at
    /// frames `frameDuration` apart.
    package init(frameDuration: MediaTime, costs: [String: MediaTime]) {
        self.frameDuration = frameDuration
        self.costs = costs
    }

    package func framesWaiting(takingFrameAt time: MediaTime, preset: String) -> Int {
        lock.lock(); defer { lock.unlock() }
        presets.append(preset)
        let start = max(busyUntil ?? time, time)
        busyUntil = start + (costs[preset] ?? .zero)
        let waited = (start - time).seconds / frameDuration.seconds
        return Int((waited + 1e-9).rounded(.down))
    }
}

/// The recorder's side of adapting the encoder's speed: takes the backlog as each video frame
/// is taken, asks the ``EncoderSpeedAdapter`` and has the pipeline step the preset. Used only
/// on the recorder's thread.
final class EncoderSpeedControl: @unchecked Sendable {
    private var adapter: EncoderSpeedAdapter
    private let gauge: any VideoBacklogGauge
    private let adapts: Bool
    private let queued: QueuedVideoFrames
    /// Every step so far, for the summary.
    private(set) var changes: [EncoderSpeedChange] = []

    /// `adapts`: whether to step at all (the frames are counted either way).
    init(preset: String, adapts: Bool, gauge: (any VideoBacklogGauge)?, queued: QueuedVideoFrames) {
        adapter = EncoderSpeedAdapter(preset: preset)
        self.adapts = adapts
        self.queued = queued
        self.gauge = gauge ?? queued
    }

    /// The recorder took video frame `frame` of its recorded source out of its queue, to be
    /// handled next; returns the step taken (or refused) before it, if any.
    func takeFrame(_ frame: VideoFrame, pipeline: RecorderPipeline) throws -> EncoderSpeedChange? {
        queued.taken()
        guard adapts, !adapter.isStopped else { return nil }
        let waiting = gauge.framesWaiting(takingFrameAt: frame.presentationTime, preset: adapter.preset)
        let now = pipeline.recordedDuration
        guard let step = adapter.observe(backlog: waiting, at: now) else { return nil }
        var change = EncoderSpeedChange(time: now, reason: step.faster ? .overloaded : .recovered, fromPreset: step.from,
                                        toPreset: step.to, framesWaiting: step.backlog)
        switch try pipeline.changeVideoPreset(to: step.to) {
        case .changed:
            adapter.stepTaken(step, at: now)
        case .deferred:
            return nil
        case .refused(let why):
            adapter.stepRefused()
            change.refusal = why
        }
        changes.append(change)
        return change
    }
}
