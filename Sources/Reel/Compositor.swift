import Foundation
import Synchronization
import ReelFFmpeg

/// A capture output that composes the session's video sources into one picture —
/// picture-in-picture, side by side or a grid — and hands the composed frames, with the
/// session's audio, to its own outputs (a ``Recorder``, a ``SampleHandlerOutput``…), as
/// Apple's multi-camera picture-in-picture sample does.
///
/// A composed frame is made for each frame of the *driving* source: the first source in
/// ``order`` that is live and delivers at least the output frame rate (otherwise the live
/// source with the highest rate). Swapping pictures does not change the driver (so no frame
/// slot is skipped); a driver that goes away, or goes quiet for three frame times while
/// another source delivers, hands over to the next. Every other source shows its newest frame, as the inset of
/// Apple's sample does. A source that is lost or interrupted leaves its area blank and stops
/// driving; the composition goes on with the others, and picks the source up when it is back.
/// When no video source is left, the composed stream reports itself lost.
///
/// ```swift
/// let compositor = Compositor(settings: .init(layout: .pictureInPicture(corner: .bottomRight, size: 0.25)))
/// try compositor.addOutput(Recorder(url: URL(fileURLWithPath: "pip.mp4")))
/// try session.addOutput(compositor)
/// ```
public final class Compositor: CaptureOutput {
    /// How to compose.
    public struct Settings: Sendable, Hashable {
        /// The composed picture's size; `nil` takes the size of the first source (rounded to even).
        public var size: PixelSize?
        /// The composed stream's frame rate.
        public var frameRate: FrameRate
        /// How the sources are arranged.
        public var layout: CompositionLayout
        /// The colour of areas no source covers.
        public var background: YUVColor

        /// Composition settings; every argument has the default a recording usually wants.
        public init(size: PixelSize? = nil, frameRate: FrameRate = FrameRate(30),
                    layout: CompositionLayout = .pictureInPicture(), background: YUVColor = .black) {
            self.size = size
            self.frameRate = frameRate
            self.layout = layout
            self.background = background
        }
    }

    /// The identity of the composed stream, as the compositor's outputs see it.
    public static let outputID = SourceID(1 << 20)

    private struct Job: Sendable {
        let source: SourceID
        let frame: VideoFrame
    }
    private struct State {
        var settings: Settings
        var outputs: [any CaptureOutput] = []
        var machine = CompositorStateMachine()
        var names: [SourceID: String] = [:]
        /// The newest frames of each source (a few: the newest at or before a composed
        /// frame's time is drawn); emptied while a source is out.
        var frames: [SourceID: [VideoFrame]] = [:]
        /// Which source drives, in what order they are drawn, whether the composed stream is out.
        var selection = CompositionDriver(sources: [], outputRate: FrameRate(30))
        var queue: Channel<Job>?
        var worker: OutputWorker<Job>?
        var realTime = true
        /// The time of the last composed frame (off real time, other sources wait to stay near it).
        var composedUpTo = MediaTime.zero
        /// Swaps scheduled on the timeline, applied by the first composed frame at or after them.
        var scheduledSwaps: [MediaTime] = []
    }
    private let state: Mutex<State>
    private let composed = Atomic<Int64>(0)
    private let dropped = Atomic<Int64>(0)
    /// The composed picture's filters (see Compositor+Filter.swift).
    let filterControl = VideoFilterControl()
    let filterFailure = Mutex<ReelError?>(nil)
    /// The composed picture's size and the size its filter makes of it (set when prepared).
    private let pictureSizes = Mutex<(input: PixelSize, output: PixelSize)?>(nil)
    private let continuation: AsyncStream<SessionEvent>.Continuation
    private let perSourceDrops = Mutex<[SourceID: Int64]>([:])
    /// Signalled when a frame arrives (off real time the worker waits for every source).
    private let arrived = NSCondition()

    /// What became of the composed picture's filter (its source is the composed stream's name):
    /// ``SessionEvent/sourceLost(source:error:)`` when it cannot be applied while composing
    /// (the composed pictures end there, never unfiltered),
    /// ``SessionEvent/filterFailed(source:filter:error:)`` when it holds its first pictures
    /// back (they are black), and
    /// ``SessionEvent/filterResized(source:filter:size:recorded:resizing:)`` when its pictures are not
    /// recorded at the size it makes. One consumer, as ``CaptureSession/events``.
    public let events: AsyncStream<SessionEvent>

    /// Creates a compositor.
    public init(settings: Settings = Settings()) {
        state = Mutex(State(settings: settings))
        (events, continuation) = AsyncStream.makeStream(of: SessionEvent.self, bufferingPolicy: .bufferingNewest(64))
    }

    deinit { continuation.finish() }

    /// Adds an output that receives the composed video (as source ``outputID``) and the
    /// session's audio. Outputs are added before the session starts.
    public func addOutput(_ output: any CaptureOutput) throws {
        try state.withLock { s in
            guard s.machine.isConfigurable else {
                throw ReelError(.cannotAddOutput, "cannot add an output to a running compositor", hint: "stop the session first")
            }
            guard !s.outputs.contains(where: { $0 === output }) else {
                throw ReelError(.cannotAddOutput, "the output is already an output of this compositor")
            }
            s.outputs.append(output)
        }
    }

    /// The compositor's outputs.
    public var outputs: [any CaptureOutput] { state.withLock { $0.outputs } }

    /// How the composed picture is named in words (a filter's refusal or failure).
    static func pictureName(_ layout: CompositionLayout) -> String { "composed (\(layout))" }

    /// The layout; may change while recording (from the next frame on).
    public var layout: CompositionLayout {
        get { state.withLock { $0.settings.layout } }
        set { state.withLock { $0.settings.layout = newValue } }
    }

    /// The video sources in drawing order: in picture-in-picture the first is the large picture.
    public var order: [SourceID] { state.withLock { $0.selection.order } }

    /// The names of the composed sources, by identity.
    public var sourceNames: [SourceID: String] { state.withLock { $0.names } }

    /// Swaps the first two sources (in picture-in-picture: the large and the small picture).
    public func swap() {
        state.withLock { s in
            guard s.selection.order.count >= 2 else { return }
            s.selection.order.swapAt(0, 1)
        }
    }

    /// Schedules a swap at `time` on the session timeline: the first composed frame at or
    /// after it shows the sources swapped (for scripted recordings and tests).
    public func swap(at time: MediaTime) {
        state.withLock { s in
            s.scheduledSwaps.append(time)
            s.scheduledSwaps.sort()
        }
    }

    /// Makes `source` the first (large) picture, keeping the others in their order.
    public func bringToFront(_ source: SourceID) {
        state.withLock { s in
            guard let i = s.selection.order.firstIndex(of: source) else { return }
            s.selection.order.insert(s.selection.order.remove(at: i), at: 0)
        }
    }

    /// Composed frames made so far.
    public var composedFrames: Int64 { composed.load(ordering: .relaxed) }

    /// Composed frames dropped because the compositor or its outputs fell behind.
    public var droppedFrames: Int64 { dropped.load(ordering: .relaxed) }

    /// Frames each source dropped, as its events reported them.
    public var droppedFramesBySource: [SourceID: Int64] { perSourceDrops.withLock { $0 } }

    // MARK: CaptureOutput

    public func prepare(sources: [SourceDescriptor], clock: any MediaClock, origin: MediaTime) throws {
        let (initial, outputs) = try state.withLock { s -> (Settings, [any CaptureOutput]) in
            try s.machine.prepare()
            return (s.settings, s.outputs)
        }
        do {
            try start(sources: sources, clock: clock, origin: origin, settings: initial, outputs: outputs)
        } catch {
            state.withLock { $0.machine.preparationFailed() }
            throw error
        }
    }

    /// Prepares the outputs and starts the worker (outside the lock).
    private func start(sources: [SourceDescriptor], clock: any MediaClock, origin: MediaTime,
                       settings initial: Settings, outputs: [any CaptureOutput]) throws {
        var settings = initial
        try settings.layout.validate()
        let video = sources.filter { $0.kind == .video }
        guard let first = video.first else {
            throw ReelError(.cannotAddOutput, "the compositor has no video source to compose", hint: "add a camera or a screen")
        }
        if settings.size == nil, case .video(let size, _, _) = first.format {
            settings.size = PixelSize(width: max(16, size.width & ~1), height: max(16, size.height & ~1))
        }
        let size = settings.size ?? PixelSize(width: 1280, height: 720)
        settings.size = size
        guard size.width >= 16, size.height >= 16, size.width % 2 == 0, size.height % 2 == 0,
              size.width <= 16384, size.height <= 16384 else {
            throw ReelError(.invalidConfiguration, "a composed size of \(size) is not usable", hint: "use even sizes such as 1280x720")
        }
        // The outputs see the composed picture at the size its filter makes of it. A filter
        // that cannot be applied to it fails the start, before any output makes a file: the
        // composed picture is never let through unfiltered.
        let name = Self.pictureName(settings.layout)
        let filters = filterControl.filters
        let filtered = try filters.checkedOutputSize(for: size, format: .yuv420p, of: name,
                                                     so: CaptureSession.nothingRecorded)
        pictureSizes.withLock { $0 = (size, filtered) }
        // Asked on full-colour pictures: libavfilter rounds a crop of the composed (4:2:0)
        // picture to even itself, which is said too (see CaptureSession.sizeAsked).
        // The size said is the one the recorders record at (see CaptureSession.recordings).
        let asked = CaptureSession.sizeAsked(by: filters, of: size)
        if asked != size {
            let filter = filters.map(\.description).joined(separator: ",")
            for (recorded, resizing) in CaptureSession.recordings(ofFilterMade: asked, made: filtered,
                                                                  recorders: CaptureSession.recorderSizes(among: outputs)) {
                continuation.yield(.filterResized(source: name, filter: filter, size: asked, recorded: recorded, resizing: resizing))
            }
        }
        var picture = SourceDescriptor(id: Self.outputID, name: name, kind: .video,
                                       format: .video(size: filtered, pixelFormat: .yuv420p, frameRate: settings.frameRate))
        picture.sizeMadeByFilter = filtered != size
        let downstream = [picture] + sources.filter { $0.kind.isAudio }
        var prepared: [any CaptureOutput] = []
        do {
            for output in outputs {
                try output.prepare(sources: downstream, clock: clock, origin: origin)
                prepared.append(output)
            }
        } catch {
            // Outputs that were prepared must not wait for samples that will never come.
            let done = prepared
            Task { for output in done { await output.finish() } }
            throw error
        }
        let queue = Channel<Job>(capacity: 4, policy: clock.isRealTime ? .dropNewest : .block)
        let pool = FramePool(format: .yuv420p, size: size, capacity: 6)
        composed.store(0, ordering: .relaxed)
        dropped.store(0, ordering: .relaxed)
        perSourceDrops.withLock { $0 = [:] }
        state.withLock { s in
            s.settings.size = size
            s.machine.prepared()
            s.names = Dictionary(uniqueKeysWithValues: video.map { ($0.id, $0.name) })
            s.frames = [:]
            s.selection = CompositionDriver(sources: video.map { d in
                if case .video(_, _, let rate) = d.format { return (d.id, rate.framesPerSecond) }
                return (d.id, 30)
            }, outputRate: settings.frameRate)
            s.composedUpTo = .zero
            s.queue = queue
            s.realTime = clock.isRealTime
        }
        let worker = OutputWorker(name: "reel.compositor", channel: queue) { [self] queue in
            run(queue: queue, pool: pool, outputs: outputs, realTime: clock.isRealTime)
        }
        state.withLock { $0.worker = worker }
    }

    public func consume(_ sample: SourcedSample) {
        switch sample.sample {
        case .audio:
            for output in state.withLock({ $0.outputs }) { output.consume(sample) }
        case .video(let frame):
            if !state.withLock({ $0.realTime }) { holdBack(frame, from: sample.source) }
            let (queue, drives) = state.withLock { s -> (Channel<Job>?, Bool) in
                guard s.selection.contains(sample.source) else { return (nil, false) }
                var held = s.frames[sample.source, default: []]
                held.append(frame)
                if held.count > 3 { held.removeFirst(held.count - 3) }
                s.frames[sample.source] = held
                return (s.queue, s.selection.frameArrived(from: sample.source, at: frame.presentationTime))
            }
            arrived.lock(); arrived.broadcast(); arrived.unlock()
            if drives, let queue, queue.send(Job(source: sample.source, frame: frame)) != .queued { dropped.add(1, ordering: .relaxed) }
        }
    }

    public func sourceEvent(_ event: SourceEvent, from source: SourceID) {
        let (isVideo, outputs, change) = state.withLock { s -> (Bool, [any CaptureOutput], SourceEvent?) in
            guard s.selection.contains(source) else { return (false, s.outputs, nil) }
            let presence: CompositionDriver.Presence
            switch event {
            case .lost, .ended: presence = .gone
            case .interrupted: presence = .interrupted
            case .resumed: presence = .live
            case .droppedFrames: return (true, s.outputs, nil)
            // Sound that is silent, incomplete or lost is the recorder's to count, as it comes.
            case .silent, .incomplete, .droppedAudio, .missedAudio, .endedAnotherRecording: return (false, s.outputs, nil)
            }
            if presence != .live { s.frames[source] = [] }
            // What the composed stream itself went through.
            guard let outage = s.selection.source(source, became: presence) else { return (true, s.outputs, nil) }
            let error = ReelError(.sourceUnavailable, "every composed video source has gone")
            switch outage {
            case .none: return (true, s.outputs, .resumed)
            case .interrupted: return (true, s.outputs, .interrupted(error))
            case .lost: return (true, s.outputs, .lost(error))
            }
        }
        guard isVideo else {
            for output in outputs { output.sourceEvent(event, from: source) }
            return
        }
        if case .droppedFrames(let n, _) = event {
            perSourceDrops.withLock { $0[source, default: 0] += Int64(n) }
            // The recorders count each source's losses while they record (see ``RecordingSummary/frameDropsBySource``).
            for output in outputs { output.sourceEvent(event, from: source) }
        }
        if let change { for output in outputs { output.sourceEvent(change, from: Self.outputID) } }
    }

    public func sessionWillStop() {
        let outputs = state.withLock { s in s.machine.sessionWillStop(); return s.outputs }
        arrived.lock(); arrived.broadcast(); arrived.unlock()
        for output in outputs { output.sessionWillStop() }
    }

    public func cancelStart() {
        for output in outputs { output.cancelStart() }
    }

    public func finish() async {
        let (queue, worker, outputs) = state.withLock { s in (s.queue, s.worker, s.outputs) }
        queue?.close()
        if let worker { await CaptureSession.offload { worker.finish() } }
        for output in outputs { await output.finish() }
        filterControl.forgetPictures()
        state.withLock { s in
            s.machine.finished()
            s.queue = nil
            s.worker = nil
            s.frames = [:]
        }
    }

    // MARK: The worker

    /// Off real time, keeps a source that does not drive from running more than a few frames
    /// ahead of composition (a virtual clock lets each source run as fast as it can), so that
    /// it can take over driving without a gap. Bounded, should composition stall.
    private func holdBack(_ frame: VideoFrame, from source: SourceID) {
        let deadline = Date(timeIntervalSinceNow: 2)
        arrived.lock(); defer { arrived.unlock() }
        while Date() < deadline {
            let ahead = state.withLock { s in
                s.machine.waitsForSources && s.selection.driver != source
                    && frame.presentationTime > s.composedUpTo + s.settings.frameRate.frameDuration * 3
            }
            if !ahead { return }
            _ = arrived.wait(until: min(deadline, Date(timeIntervalSinceNow: 0.05)))
        }
    }

    /// Waits until every live source that keeps up with the output rate has a frame at or
    /// after `time`, for at most `timeout` seconds.
    private func waitForSources(upTo time: MediaTime, timeout: Double) {
        let deadline = Date(timeIntervalSinceNow: timeout)
        arrived.lock(); defer { arrived.unlock() }
        while Date() < deadline {
            let ready = state.withLock { s in !s.machine.waitsForSources || s.selection.hasFrames(upTo: time) }
            if ready { return }
            _ = arrived.wait(until: min(deadline, Date(timeIntervalSinceNow: 0.05)))
        }
    }

    private func run(queue: Channel<Job>, pool: FramePool, outputs: [any CaptureOutput], realTime: Bool) {
        var scalers: [SourceID: FrameScaler] = [:]
        var lastIndex = Int64.min
        let name = Self.pictureName(layout)
        let continuation = self.continuation
        let recorders = CaptureSession.recorderSizes(among: outputs)
        // A filter that fails ends the composed pictures, as a source lost: the outputs finish
        // with what was filtered.
        let filter = FilterStage(control: filterControl, realTime: realTime, sizes: pictureSizes.withLock { $0 },
                                 source: name, failed: { [weak self] _, error in
            self?.filterFailure.withLock { $0 = error }
            for output in outputs { output.sourceEvent(.lost(error), from: Self.outputID) }
            continuation.yield(.sourceLost(source: name, error: error))
        }, heldBack: { filter, error in
            continuation.yield(.filterFailed(source: name, filter: filter.description, error: error))
        }, resized: { filter, size, fitted in
            for recorded in CaptureSession.sizesRecorded(by: recorders, ofPicturesAt: fitted) {
                continuation.yield(.filterResized(source: name, filter: filter.description, size: size, recorded: recorded,
                                                  resizing: .fittedToStartingSize))
            }
        })
        while let job = queue.receive() {
            let driving = job.frame
            let rate = state.withLock { $0.settings.frameRate }
            let index = rate.frameIndex(at: driving.presentationTime, rounding: .nearest)
            guard index > lastIndex else { continue }
            // A few slots left empty while the driver handed over are made from the frames held.
            let first = lastIndex != Int64.min && index - lastIndex <= 4 ? lastIndex + 1 : index
            for slot in first...index {
                let pts = rate.time(ofFrame: slot)
                // Every live source has its frame for this moment before it is drawn: off real
                // time always (so that composing is exact and repeatable; bounded, should one
                // stall), in real time for up to half a frame (a frame of the same instant from
                // another camera may come a moment after the driving one; a quarter of a frame
                // earlier counts as the same instant).
                if realTime {
                    waitForSources(upTo: driving.presentationTime - MediaTime(value: Int64(rate.per), timescale: rate.frames * 4),
                                   timeout: rate.frameDuration.seconds / 2)
                } else {
                    waitForSources(upTo: pts, timeout: 2)
                }
                guard let canvas = realTime ? pool.makeFrame(presentationTime: pts, sequenceNumber: slot)
                                            : pool.makeFrameWaiting(presentationTime: pts, sequenceNumber: slot) else {
                    // Every canvas is still held by the outputs: they are behind.
                    dropped.add(1, ordering: .relaxed)
                    for output in outputs { output.sourceEvent(.droppedFrames(1, reason: .encoderBehind), from: Self.outputID) }
                    continue
                }
                lastIndex = slot
                var picture = canvas
                picture.captureTime = slot == index ? driving.captureTime : nil
                // Other sources show their newest frame up to the driving frame's time (a quarter
                // of a frame later still counts as the same instant: cameras start apart).
                let reference = (slot == index ? driving.presentationTime : pts)
                    + MediaTime(value: Int64(rate.per), timescale: rate.frames * 4)
                compose(into: picture, at: pts, upTo: reference, driving: slot == index ? job : nil, scalers: &scalers)
                composed.add(1, ordering: .relaxed)
                if !realTime {
                    state.withLock { $0.composedUpTo = pts }
                    arrived.lock(); arrived.broadcast(); arrived.unlock()
                }
                // Without a free buffer for the filtered picture, the picture is dropped (never
                // sent unfiltered); once the filter failed, no composed picture is sent.
                guard let filtered = filter.apply(to: picture) else {
                    if !filter.hasFailed {
                        dropped.add(1, ordering: .relaxed)
                        for output in outputs { output.sourceEvent(.droppedFrames(1, reason: .encoderBehind), from: Self.outputID) }
                    }
                    continue
                }
                let sample = SourcedSample(source: Self.outputID, kind: .video, sample: .video(filtered))
                for output in outputs { output.consume(sample) }
            }
        }
    }

    /// Draws the picture of time `pts`: each live source's newest frame at or before
    /// `reference` (the driving frame for its own source), in its place in the layout.
    private func compose(into picture: VideoFrame, at pts: MediaTime, upTo reference: MediaTime, driving job: Job?,
                         scalers: inout [SourceID: FrameScaler]) {
        let (settings, order, held) = state.withLock { s -> (Settings, [SourceID], [SourceID: VideoFrame]) in
            while let first = s.scheduledSwaps.first, first <= pts {
                s.scheduledSwaps.removeFirst()
                if s.selection.order.count >= 2 { s.selection.order.swapAt(0, 1) }
            }
            var chosen: [SourceID: VideoFrame] = [:]
            for id in s.selection.order {
                guard s.selection.presence(of: id) == .live, let held = s.frames[id], !held.isEmpty else { continue }
                chosen[id] = held.last { $0.presentationTime <= reference } ?? held.first
            }
            return (s.settings, s.selection.order, chosen)
        }
        var frames = held
        if let job { frames[job.source] = job.frame }
        // Every source keeps its place in the layout even while another is missing.
        let canvas = picture.size
        let rects = settings.layout.rects(for: order.map { id in frames[id]?.size ?? canvas }, canvas: canvas)
        let placed = zip(order, rects).filter { frames[$0.0] != nil }
        let full = PixelRect(x: 0, y: 0, width: canvas.width, height: canvas.height)
        if placed.first?.1 != full { picture.fill(with: settings.background) }
        for (id, rect) in placed {
            guard let frame = frames[id] else { continue }
            let scaler = scalers[id] ?? FrameScaler()
            scalers[id] = scaler
            do { try scaler.draw(frame, into: picture, at: rect) } catch { picture.fill(rect, with: settings.background) }
        }
    }
}
