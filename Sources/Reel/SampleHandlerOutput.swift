import Foundation
import Synchronization

/// A capture output that hands every sample, with its kind, to application code: the way
/// ReplayKit's capture handler and `AVCaptureVideoDataOutput` deliver sample buffers.
///
/// The handler runs on the output's own thread, never on a capture thread, so a slow handler
/// cannot stall capture: under a real-time clock, samples it cannot keep up with are dropped
/// and counted (``droppedSamples``).
public final class SampleHandlerOutput: CaptureOutput {
    /// Receives each sample and its kind (video, app audio, microphone, other audio).
    public typealias Handler = @Sendable (Sample, SampleKind) -> Void

    private let handler: Handler
    private let capacity: Int
    private struct State {
        var queue: BoundedQueue<SourcedSample>?
        var worker: WorkerThread?
    }
    private let state = Mutex(State())
    private let dropped = Atomic<Int64>(0)

    /// Creates an output that calls `handler` for every sample; at most `capacity` samples wait.
    public init(capacity: Int = 64, handler: @escaping Handler) {
        self.handler = handler
        self.capacity = capacity
    }

    /// Samples dropped because the handler fell behind.
    public var droppedSamples: Int64 { dropped.load(ordering: .relaxed) }

    public func prepare(sources: [SourceDescriptor], clock: any MediaClock, origin: MediaTime) throws {
        try state.withLock { state in
            guard state.worker == nil else { throw ReelError(.alreadyRunning, "the sample handler output is already running") }
            let queue = BoundedQueue<SourcedSample>(capacity: capacity, policy: clock.isRealTime ? .dropNewest : .block)
            let handler = self.handler
            state.queue = queue
            state.worker = WorkerThread(name: "reel.samples") { _ in
                while let sample = queue.pop() { handler(sample.sample, sample.kind) }
            }
        }
    }

    public func consume(_ sample: SourcedSample) {
        guard let queue = state.withLock({ $0.queue }) else { return }
        if !queue.push(sample) { dropped.add(1, ordering: .relaxed) }
    }

    public func sourceEvent(_ event: SourceEvent, from source: SourceID) {}

    public func finish() async {
        let (queue, worker) = state.withLock { state in
            let taken = (state.queue, state.worker)
            state.queue = nil
            state.worker = nil
            return taken
        }
        queue?.close()
        guard let worker else { return }
        await CaptureSession.offload { worker.join() }
    }
}
