import Foundation
import Observation
import Synchronization
import ReelFFmpeg

/// A capture output that publishes the newest frame to application code, converted to what
/// it asks for: the frame manager of a camera app, for a UI to draw or an analysis to run,
/// not for recording.
///
/// Add it to a session (all inputs, or those given to
/// ``CaptureSession/addOutput(_:connectedTo:)``) or to a ``Compositor`` (the composed picture),
/// then take frames as an `AsyncStream` (``frames(_:from:)``) or through an observable model
/// whose ``LiveFrameModel/frame`` a UI binds to (``model(_:from:)``). Consumers come and go at
/// any time, the session running or not, each with its own format, size and frame-rate cap.
///
/// Delivery keeps only the newest frame: a consumer that is slow, or asleep, gets the latest
/// frame when it next asks, never a backlog. Nothing upstream waits for it: capture threads
/// only leave the newest frame of each source and go on (also under a manual clock), and the
/// conversion runs on the output's own thread, so a recording beside it loses nothing.
///
/// ```swift
/// let live = LiveFrames()
/// try session.addOutput(live)
/// try await session.start()
/// for await frame in live.frames(.init(format: .bgra, size: PixelSize(width: 640, height: 360), maxFrameRate: 15)) {
///     draw(frame)   // the newest frame, 640x360 at most, at most 15 a second
/// }
/// ```
public final class LiveFrames: CaptureOutput {
    /// What a consumer asks for.
    public struct Settings: Sendable, Hashable {
        /// The pixel format of the frames.
        public var format: LiveFrame.Format
        /// The size to fit or fill; `nil` keeps the source's size (made even for ``LiveFrame/Format/nv12``,
        /// whose chroma is half size).
        public var size: PixelSize?
        /// How the picture is fitted into ``size``.
        public var scaling: LiveFrame.Scaling
        /// The most frames a second to deliver: frames are at least this rate's interval apart
        /// by their presentation times (less a quarter of it, for a camera's jitter); `nil`
        /// delivers every frame the consumer keeps up with.
        public var maxFrameRate: Double?

        /// Settings; each argument is the property of the same name. The defaults are BGRA at
        /// the source's size, every frame.
        public init(format: LiveFrame.Format = .bgra, size: PixelSize? = nil, scaling: LiveFrame.Scaling = .fit,
                    maxFrameRate: Double? = nil) {
            self.format = format
            self.size = size
            self.scaling = scaling
            self.maxFrameRate = maxFrameRate
        }
    }

    /// One consumer: its settings, its converter (used on the worker only) and where frames go.
    private final class Consumer: @unchecked Sendable {
        let settings: Settings
        let source: SourceID?
        let converter: LiveFrameConverter
        /// The presentation time of the last frame delivered.
        var lastTime: MediaTime?
        let deliver: @Sendable (LiveFrame) -> Void
        /// Ends a stream consumer (nil for a model).
        let end: (@Sendable () -> Void)?
        /// Whether a stream consumer ends when the session stops (else it waits for the next
        /// start: see `frames(_:from:endsAtStop:)`).
        let endsAtStop: Bool
        /// For a model, whether it is still there (it is held weakly).
        let isAlive: @Sendable () -> Bool

        init(settings: Settings, source: SourceID?, deliver: @escaping @Sendable (LiveFrame) -> Void,
             end: (@Sendable () -> Void)?, endsAtStop: Bool = true, isAlive: @escaping @Sendable () -> Bool) {
            self.settings = settings
            self.source = source
            converter = LiveFrameConverter(format: settings.format, size: settings.size, scaling: settings.scaling)
            self.deliver = deliver
            self.end = end
            self.endsAtStop = endsAtStop
            self.isAlive = isAlive
        }

        /// Held while a frame is handed over, so that once ``close()`` returns no frame reaches
        /// the consumer any more (recursive: an observer told of a frame may remove its model).
        private let gate = NSRecursiveLock()
        private var isOpen = true

        /// Hands `frame` over unless the consumer was closed.
        func offer(_ frame: LiveFrame) -> Bool {
            gate.lock()
            defer { gate.unlock() }
            guard isOpen else { return false }
            deliver(frame)
            return true
        }

        /// Stops handing frames over; waits for one being handed over now.
        func close() {
            gate.lock()
            isOpen = false
            gate.unlock()
        }

        /// Whether a frame at `time` comes at least a frame interval of the cap after the last
        /// one delivered (less a quarter, for a source's jitter).
        func takesFrame(at time: MediaTime) -> Bool {
            if let rate = settings.maxFrameRate, rate > 0, let lastTime, (time - lastTime).seconds < 0.75 / rate { return false }
            lastTime = time
            return true
        }
    }

    private struct State {
        var consumers: [ObjectIdentifier: Consumer] = [:]
        /// The newest frame of each source not yet converted.
        var pending: [SourceID: VideoFrame] = [:]
        var worker: WorkerThread?
        var stopping = false
        var sources: [SourceDescriptor] = []
    }
    private let state = Mutex(State())
    private let wake = NSCondition()
    private let delivered = Atomic<Int64>(0)
    private let replaced = Counter()

    /// Creates an output with no consumers yet.
    public init() {}

    /// Frames converted and delivered so far, over all consumers.
    public var deliveredFrames: Int64 { delivered.load(ordering: .relaxed) }

    /// Frames that a newer frame replaced before a consumer took them (before they were
    /// converted, or while waiting in a stream): what newest-only delivery left out because
    /// the consumers were slower than the source.
    public var replacedFrames: Int64 { replaced.count }

    /// A count shared with the consumers' closures.
    private final class Counter: Sendable {
        private let value = Atomic<Int64>(0)
        func increment() { value.add(1, ordering: .relaxed) }
        var count: Int64 { value.load(ordering: .relaxed) }
    }

    /// The video sources this output sees, known once the session has started.
    public var sources: [SourceDescriptor] { state.withLock { $0.sources } }

    /// How many consumers (streams and models) are taking frames now.
    public var consumerCount: Int { state.withLock { $0.consumers.count } }

    /// A stream of the newest frames, converted as `settings` say, of `source` only if given
    /// (else of every video source the output sees). It buffers one frame, the newest: a
    /// consumer that wakes after a while gets the latest frame, not the ones it slept through.
    /// The consumer goes when the stream does (its loop's task ends or is cancelled, and
    /// nothing holds the stream); the stream ends when the session stops.
    public func frames(_ settings: Settings = Settings(), from source: SourceID? = nil) -> AsyncStream<LiveFrame> {
        frames(settings, from: source, endsAtStop: true)
    }

    /// ``frames(_:from:)``; unless `endsAtStop`, the stream outlives the session's stop: it
    /// waits, and goes on with the frames of the next session this output is prepared for (a
    /// camera recorder's next start), until its consumer lets it go or `endStreams()`.
    package func frames(_ settings: Settings, from source: SourceID?, endsAtStop: Bool) -> AsyncStream<LiveFrame> {
        let (stream, continuation) = AsyncStream.makeStream(of: LiveFrame.self, bufferingPolicy: .bufferingNewest(1))
        let replaced = self.replaced
        let consumer = Consumer(settings: settings, source: source, deliver: { frame in
            // The frame the consumer has not taken yet goes: newest only.
            if case .dropped = continuation.yield(frame) { replaced.increment() }
        }, end: { continuation.finish() }, endsAtStop: endsAtStop, isAlive: { true })
        let key = ObjectIdentifier(consumer)
        state.withLock { $0.consumers[key] = consumer }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.consumers.removeValue(forKey: key) }
        }
        return stream
    }

    /// A model whose ``LiveFrameModel/frame`` is the newest frame, converted as `settings`
    /// say, of `source` only if given: for a UI to bind to. It takes frames until
    /// ``remove(_:)`` or until nothing holds it any more, across stops and starts.
    public func model(_ settings: Settings = Settings(), from source: SourceID? = nil) -> LiveFrameModel {
        let model = LiveFrameModel(settings: settings, source: source)
        let box = WeakModel(model)
        let consumer = Consumer(settings: settings, source: source, deliver: { box.model?.publish($0) }, end: nil,
                                isAlive: { box.model != nil })
        state.withLock { $0.consumers[ObjectIdentifier(model)] = consumer }
        return model
    }

    /// Stops delivering frames to `model` (it keeps its last frame).
    public func remove(_ model: LiveFrameModel) {
        // Closed, not only forgotten: the worker may hold it already, with a frame on the way.
        state.withLock { $0.consumers.removeValue(forKey: ObjectIdentifier(model)) }?.close()
    }

    private final class WeakModel: @unchecked Sendable {
        weak var model: LiveFrameModel?
        init(_ model: LiveFrameModel) { self.model = model }
    }

    // MARK: CaptureOutput

    public func prepare(sources: [SourceDescriptor], clock: any MediaClock, origin: MediaTime) throws {
        try state.withLock { s in
            guard s.worker == nil else { throw ReelError(.alreadyRunning, "the live frames output is already running") }
            s.sources = sources.filter { $0.kind == .video }
            s.pending = [:]
            s.stopping = false
            // Consumers that outlived a stop: the new session's times start again.
            for consumer in s.consumers.values { consumer.lastTime = nil }
            s.worker = WorkerThread(name: "reel.live") { [self] _ in run() }
        }
    }

    public func consume(_ sample: SourcedSample) {
        guard case .video(let frame) = sample.sample else { return }
        let (taken, wasReplaced) = state.withLock { s -> (Bool, Bool) in
            guard s.worker != nil, !s.consumers.isEmpty else { return (false, false) }
            let old = s.pending.updateValue(frame, forKey: sample.source)
            return (true, old != nil)
        }
        guard taken else { return }
        if wasReplaced { replaced.increment() }
        wakeWorker()
    }

    private func wakeWorker() {
        wake.lock()
        wake.broadcast()
        wake.unlock()
    }

    public func sourceEvent(_ event: SourceEvent, from source: SourceID) {}

    public func finish() async {
        let (worker, ended) = state.withLock { s -> (WorkerThread?, [Consumer]) in
            s.stopping = true
            let streams = s.consumers.filter { $0.value.end != nil && $0.value.endsAtStop }
            for key in streams.keys { s.consumers.removeValue(forKey: key) }
            defer { s.worker = nil }
            return (s.worker, Array(streams.values))
        }
        wakeWorker()
        if let worker { await CaptureSession.offload { worker.join() } }
        state.withLock { $0.pending = [:] }
        for consumer in ended { consumer.end?() }
    }

    /// Ends every stream, those that outlive a stop too (their owner goes away).
    package func endStreams() {
        let streams = state.withLock { s -> [Consumer] in
            let streams = s.consumers.filter { $0.value.end != nil }
            for key in streams.keys { s.consumers.removeValue(forKey: key) }
            return Array(streams.values)
        }
        for consumer in streams {
            consumer.close()
            consumer.end?()
        }
    }

    /// The worker: converts the newest frame of each source for each consumer that wants it.
    private func run() {
        while true {
            wake.lock()
            while state.withLock({ $0.pending.isEmpty && !$0.stopping }) { wake.wait() }
            wake.unlock()
            let (frames, consumers, stop) = state.withLock { s -> ([(SourceID, VideoFrame)], [Consumer], Bool) in
                s.consumers = s.consumers.filter { $0.value.isAlive() }
                defer { s.pending = [:] }
                return (s.pending.sorted { $0.key.rawValue < $1.key.rawValue }, Array(s.consumers.values), s.stopping)
            }
            if stop { return }
            for (source, frame) in frames {
                for consumer in consumers where consumer.source == nil || consumer.source == source {
                    guard consumer.takesFrame(at: frame.presentationTime) else { continue }
                    // A frame that cannot be converted is left out; the next may fit (a source
                    // that changed size).
                    guard let live = try? consumer.converter.convert(frame, source: source) else { continue }
                    if consumer.offer(live) { delivered.add(1, ordering: .relaxed) }
                }
            }
        }
    }
}

/// The newest live frame, for a UI to bind to: an `Observable` whose ``frame`` changes with
/// each frame delivered (made by ``LiveFrames/model(_:from:)``).
///
/// It is updated from the output's thread; observers are told through the Observation
/// framework (`withObservationTracking`, SwiftUI), which a UI hops to its main thread from.
public final class LiveFrameModel: Observable, Sendable {
    /// What the model asked for.
    public let settings: LiveFrames.Settings
    /// The source it shows, if one was named.
    public let source: SourceID?
    private let registrar = ObservationRegistrar()
    private let newest = Mutex<LiveFrame?>(nil)
    private let count = Atomic<Int64>(0)

    init(settings: LiveFrames.Settings, source: SourceID?) {
        self.settings = settings
        self.source = source
    }

    /// The newest frame; `nil` until the first.
    public var frame: LiveFrame? {
        registrar.access(self, keyPath: \.frame)
        return newest.withLock { $0 }
    }

    /// Frames the model has been given so far.
    public var frameCount: Int64 { count.load(ordering: .relaxed) }

    func publish(_ frame: LiveFrame) {
        registrar.withMutation(of: self, keyPath: \.frame) {
            newest.withLock { $0 = frame }
        }
        count.add(1, ordering: .relaxed)
    }
}
