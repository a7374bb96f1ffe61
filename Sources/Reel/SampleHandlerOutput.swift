import Foundation
import Synchronization

/// A capture output that hands every sample, with its kind, to application code: the way
/// ReplayKit's capture handler and `AVCaptureVideoDataOutput` deliver sample buffers.
///
/// The handler runs on the output's own thread, never on a capture thread, so a slow handler
/// cannot stall capture, and it costs nothing to the recordings and other outputs beside it:
/// under a real-time clock it loses its own late samples, counted in ``droppedSamples``.
///
/// - Late video frames are discarded, as `alwaysDiscardsLateVideoFrames` does on Apple's
///   platforms: while one video frame of a source waits for the handler, later frames of that
///   source are dropped, so the handler gets a frame at most one behind.
/// - The frame the handler gets is the output's own copy, not the source's buffer: a handler
///   that is slow, or keeps frames after it returns, never leaves the camera or screen short of
///   buffers. The output has three frames per source; while the handler holds all three, further
///   frames are dropped (and counted).
/// - Audio waits in the queue, up to `capacity` samples in all.
public final class SampleHandlerOutput: CaptureOutput {
    /// Receives each sample and its kind (video, app audio, microphone, other audio).
    public typealias Handler = @Sendable (Sample, SampleKind) -> Void

    /// The copies of one source's frames the handler may hold at once.
    static let framesPerSource = 3

    private let handler: Handler
    private let capacity: Int
    /// Whether samples are wanted now: while not, they are let go at once (no copy, no queue).
    private let wanted: @Sendable () -> Bool
    private struct State {
        var worker: OutputWorker<SourcedSample>?
        var realTime = true
        /// Video frames of each source waiting in the queue (at most one under a real-time clock).
        var waitingFrames: [SourceID: Int] = [:]
    }
    private let state = Mutex(State())
    private let dropped = Atomic<Int64>(0)

    /// Creates an output that calls `handler` for every sample; at most `capacity` samples
    /// wait, of them at most one video frame per source.
    public init(capacity: Int = 64, handler: @escaping Handler) {
        self.handler = handler
        self.capacity = capacity
        self.wanted = { true }
    }

    /// An output that calls `handler` for the samples that come while `wanted()` says so: an
    /// output that stays in a session while its handler comes and goes.
    package init(capacity: Int = 64, wanted: @escaping @Sendable () -> Bool, handler: @escaping Handler) {
        self.handler = handler
        self.capacity = capacity
        self.wanted = wanted
    }

    /// Samples the handler did not get because it fell behind: late video frames discarded,
    /// samples that found the queue full, and frames that came while the handler still held
    /// all of its copies.
    public var droppedSamples: Int64 { dropped.load(ordering: .relaxed) }

    public func prepare(sources: [SourceDescriptor], clock: any MediaClock, origin: MediaTime) throws {
        try state.withLock { state in
            guard state.worker == nil else { throw ReelError(.alreadyRunning, "the sample handler output is already running") }
            let realTime = clock.isRealTime
            state.realTime = realTime
            state.waitingFrames = [:]
            state.worker = OutputWorker(name: "reel.samples", channel: Channel<SourcedSample>(capacity: capacity, policy: realTime ? .dropNewest : .block)) {
                [self] queue in run(queue: queue, realTime: realTime)
            }
        }
    }

    public func consume(_ sample: SourcedSample) {
        guard wanted() else { return }
        let isVideo: Bool
        if case .video = sample.sample { isVideo = true } else { isVideo = false }
        let (worker, late) = state.withLock { state -> (OutputWorker<SourcedSample>?, Bool) in
            guard let worker = state.worker else { return (nil, false) }
            guard isVideo else { return (worker, false) }
            if state.realTime && state.waitingFrames[sample.source, default: 0] >= 1 { return (nil, true) }
            state.waitingFrames[sample.source, default: 0] += 1
            return (worker, false)
        }
        if late { dropped.add(1, ordering: .relaxed); return }
        guard let worker, !worker.send(sample) else { return }
        dropped.add(1, ordering: .relaxed)
        if isVideo { frameLeftQueue(from: sample.source) }
    }

    private func frameLeftQueue(from source: SourceID) {
        state.withLock { $0.waitingFrames[source, default: 1] -= 1 }
    }

    public func sourceEvent(_ event: SourceEvent, from source: SourceID) {}

    public func finish() async {
        let worker = state.withLock { state in
            defer { state.worker = nil }
            return state.worker
        }
        guard let worker else { return }
        await CaptureSession.offload { worker.finish() }
    }

    /// The worker: hands each sample to the handler, a video frame as the output's own copy.
    private func run(queue: Channel<SourcedSample>, realTime: Bool) {
        var pools: [SourceID: FramePool] = [:]
        while let delivery = next(from: queue, pools: &pools, realTime: realTime) {
            guard let sample = delivery.sample else { continue }
            handler(sample, delivery.kind)
        }
    }

    /// The next sample for the handler (`nil` for a frame dropped), with the source's frame
    /// released before the handler runs; `nil` once the queue is closed and empty.
    private func next(from queue: Channel<SourcedSample>, pools: inout [SourceID: FramePool],
                      realTime: Bool) -> (sample: Sample?, kind: SampleKind)? {
        guard let queued = queue.receive() else { return nil }
        guard case .video(let frame) = queued.sample else { return (queued.sample, queued.kind) }
        frameLeftQueue(from: queued.source)
        let pool: FramePool
        if let existing = pools[queued.source], existing.format == frame.format, existing.size == frame.size {
            pool = existing
        } else {
            pool = FramePool(format: frame.format, size: frame.size, capacity: Self.framesPerSource)
            pools[queued.source] = pool
        }
        guard let copy = frame.copied(into: pool, waiting: !realTime) else {
            dropped.add(1, ordering: .relaxed)
            return (nil, queued.kind)
        }
        return (.video(copy), queued.kind)
    }
}
