import Foundation
import Synchronization
import ReelFFmpeg

/// Something that happened in a capture session.
public enum SessionEvent: Sendable {
    /// A source dropped frames (it fell behind, or its consumers did).
    case droppedFrames(source: String, count: Int)
    /// A source's capture missed `duration` of sound while the machine was busy (see
    /// ``SourceEvent/missedAudio(at:duration:)``): silence is in its place; like dropped
    /// frames it is counted, and the source is not incomplete.
    case missedAudio(source: String, duration: MediaTime)
    /// A source failed or went away; the session goes on with the others.
    case sourceLost(source: String, error: ReelError)
    /// A source stopped delivering for a while and is trying to come back.
    case sourceInterrupted(source: String, error: ReelError)
    /// An interrupted source delivers again.
    case sourceResumed(source: String)
    /// A source came to its end (a file played out).
    case sourceEnded(source: String)
    /// A source has nothing of what it was asked to record to deliver (no chosen application
    /// plays); ``sourceResumed(source:)`` follows when something does.
    case sourceSilent(source: String, error: ReelError)
    /// Part of what a source was asked to record plays but is not recorded (see
    /// ``SourceEvent/incomplete(_:)``).
    case sourceIncomplete(source: String, error: ReelError)
    /// A source's start ended another program's recording, as `message` says (see
    /// ``SourceEvent/endedAnotherRecording(_:)``); the source records all it was asked to.
    case anotherRecordingEnded(source: String, message: String)
    /// A source's filter has no picture for some of the source's pictures: one that needs a
    /// few pictures before its first (`tblend`) holds those back, and they are recorded
    /// black, never unfiltered. Said once for each filter.
    ///
    /// A filter that cannot be applied to a source's pictures at all lets none of them
    /// through unfiltered (a filter may be what keeps part of a screen private): when it
    /// cannot filter the source's first pictures (a crop larger than they are), ``CaptureSession/start()``
    /// throws and nothing is recorded; when it can no longer (the pictures changed size, or a
    /// filter set while running does not fit them), the source's pictures end there, said as
    /// ``sourceLost(source:error:)`` with words that name the filter: outputs keep what was
    /// filtered, and a recording is incomplete. An audio filter that fails ends its source's
    /// sound the same way.
    case filterFailed(source: String, filter: String, error: ReelError)
    /// A source's filter makes pictures of `size`, and they are recorded at `recorded`, the
    /// size of the file, as `resizing` says: the even part of an odd size, scaled to a
    /// recorder's own size (``VideoSettings/size``), fitted into it with their aspect kept and
    /// black bars when their shape is another, or, for a filter set while the session runs,
    /// fitted into the size the session's outputs started with (a filter set before the start
    /// sets that size). Said once for each filter (and each size recorded).
    case filterResized(source: String, filter: String, size: PixelSize, recorded: PixelSize, resizing: FilterResizing)
    /// The person typing pressed Ctrl+Alt+K: the input's key captions
    /// (``PresenterOverlays/showsKeys``) are hidden, and what is typed is not drawn until
    /// ``keyCaptionsShown(source:)``. They see their screen, not the recording: tell them.
    case keyCaptionsHidden(source: String)
    /// Ctrl+Alt+K again: what is typed is drawn into the input's pictures again.
    case keyCaptionsShown(source: String)

    /// How a filter's pictures are made the size recorded
    /// (``SessionEvent/filterResized(source:filter:size:recorded:resizing:)``).
    public enum FilterResizing: String, Sendable, Hashable {
        /// An odd size is recorded as its even part (4:2:0 video needs an even width and
        /// height): the last column or row is left out.
        case evenPart
        /// Scaled to the recorder's size (``VideoSettings/size``), which has their shape.
        case scaled
        /// Scaled into the recorder's size (``VideoSettings/size``), whose shape is another,
        /// with their aspect kept: centred, black bars filling the rest (not stretched).
        case fitted
        /// A filter set while the session runs that makes another size: fitted into the size
        /// the session's outputs started with, their aspect kept (black bars where the shapes
        /// differ); a recorder of a size of its own then takes that picture to its size.
        case fittedToStartingSize
    }
}

/// A capture session: inputs (screens, cameras, microphones, synthetic sources) whose samples
/// are stamped on one clock and delivered to outputs (recorders, sample handlers), in the
/// spirit of `AVCaptureSession`.
///
/// Add inputs and outputs while the session is stopped, then `start()`. Each source runs on
/// its own thread and hands its samples straight to every output; outputs queue them (bounded)
/// and do their work on their own threads.
public final class CaptureSession: Sendable {
    struct Entry: Sendable {
        let id: SourceID
        let source: any CaptureSource
        /// What the outputs see of the source's pictures: turn, mirror, filters.
        let connection: CaptureConnection
        var filter: VideoFilterControl { connection.filters }
    }
    private struct Connected: Sendable {
        let output: any CaptureOutput
        /// The inputs the output sees; `nil`: all of them.
        let inputs: [ObjectIdentifier]?
        func sees(_ source: any CaptureSource) -> Bool { inputs?.contains(ObjectIdentifier(source)) ?? true }
    }
    private struct State: Sendable {
        var machine = SessionStateMachine()
        var inputs: [Entry] = []
        var connected: [Connected] = []
        var nextID = 0
        var running: [Entry] = []
        /// `stop()` calls that came while starting: resumed once the start has stopped what it
        /// started (or failed).
        var stopWaiters: [CheckedContinuation<StopDecision, Never>] = []
    }
    private let state = Mutex(State())
    /// The clock every sample is stamped on.
    public let clock: any MediaClock
    /// Session events; one consumer.
    public let events: AsyncStream<SessionEvent>
    let continuation: AsyncStream<SessionEvent>.Continuation

    /// Creates a session on `clock` (the host's monotonic clock unless a test injects another).
    public init(clock: any MediaClock = HostClock()) {
        self.clock = clock
        (events, continuation) = AsyncStream.makeStream(of: SessionEvent.self, bufferingPolicy: .bufferingNewest(256))
    }

    /// The inputs, in the order they were added.
    public var inputs: [any CaptureSource] { state.withLock { $0.inputs.map(\.source) } }
    /// The outputs, in the order they were added.
    public var outputs: [any CaptureOutput] { state.withLock { $0.connected.map(\.output) } }
    /// Whether the session is running.
    public var isRunning: Bool { state.withLock { $0.machine.isRunning } }
    /// Where the session's lifecycle is (for tests that drive it through its edges).
    package var lifecycle: SessionStateMachine.State { state.withLock { $0.machine.state } }

    /// The identity the session gave `input` (what its samples, events and ``LiveFrame``s
    /// carry as their source), or `nil` if it is not an input of this session.
    public func sourceID(of input: any CaptureSource) -> SourceID? {
        state.withLock { s in s.inputs.first { $0.source === input }?.id }
    }

    /// Whether `input` can be added now.
    public func canAddInput(_ input: any CaptureSource) -> Bool {
        state.withLock { s in s.machine.isConfigurable && !s.inputs.contains { $0.source === input } }
    }

    /// Adds an input. Throws `.cannotAddInput` while running or if it is already there.
    public func addInput(_ input: any CaptureSource) throws {
        try state.withLock { s in
            guard s.machine.isConfigurable else {
                throw ReelError(.cannotAddInput, "cannot add \(input.name) while the session runs", hint: "stop the session first")
            }
            guard !s.inputs.contains(where: { $0.source === input }) else {
                throw ReelError(.cannotAddInput, "\(input.name) is already an input of this session")
            }
            s.inputs.append(Entry(id: SourceID(s.nextID), source: input, connection: CaptureConnection(input: input)))
            s.nextID += 1
        }
    }

    /// Removes an input (while stopped).
    public func removeInput(_ input: any CaptureSource) {
        state.withLock { s in
            guard s.machine.isConfigurable else { return }
            s.inputs.removeAll { $0.source === input }
            // Connections to the input go with it; an output left with none goes too.
            s.connected = s.connected.compactMap { c in
                guard let ids = c.inputs else { return c }
                let left = ids.filter { $0 != ObjectIdentifier(input) }
                return left.isEmpty ? nil : Connected(output: c.output, inputs: left)
            }
        }
    }

    /// The connection of `input` to the outputs (`AVCaptureOutput.connection(with:)`): its
    /// pictures' turn, mirroring and filter chain; `nil` if it is not an input of this session.
    public func connection(for input: any CaptureSource) -> CaptureConnection? {
        state.withLock { $0.inputs.first { $0.source === input }?.connection }
    }

    /// The connections of the inputs, in the order the inputs were added.
    public var connections: [CaptureConnection] { state.withLock { $0.inputs.map(\.connection) } }

    /// Filters `input`'s pictures with `filter` alone (`nil`: no filter) before any output sees
    /// them, so the recording, live frames and a preview all show the filtered picture (a
    /// chain: ``CaptureConnection/videoFilters``).
    ///
    /// Can be called while the session runs: the change lands on the next picture, or, with
    /// `time` (on the session's ``clock``), on the first picture at or after it. No picture is
    /// lost to a change. A filter never lets a picture through unfiltered: one that cannot be
    /// applied to the source's pictures (a crop larger than they are) makes ``start()`` throw,
    /// and one that no longer fits them while the session runs ends the source's pictures,
    /// said as ``SessionEvent/sourceLost(source:error:)`` (see
    /// ``SessionEvent/filterFailed(source:filter:error:)``). A filter set while the session
    /// runs is first tried on the source's pictures of the moment, and refused if it cannot
    /// apply to them, so that a mistyped crop does not end a recording's pictures.
    ///
    /// - Throws: ``ReelError/Code/invalidConfiguration`` if `input` is not an input of the
    ///   session, does not deliver pictures, or its pictures cannot go through `filter` (the
    ///   filter is then the one before).
    public func setVideoFilter(_ filter: VideoFilter?, for input: any CaptureSource, at time: MediaTime? = nil) throws {
        guard let entry = state.withLock({ $0.inputs.first { $0.source === input } }) else {
            throw ReelError(.invalidConfiguration, "\(input.name) is not an input of this session", hint: "add it with addInput first")
        }
        guard input.kind == .video else {
            throw ReelError(.invalidConfiguration, "\(input.name) has no pictures to filter")
        }
        try entry.filter.setCheckedFilters(filter.map { [$0] } ?? [], at: time, of: input.name)
    }

    /// The filter `input`'s pictures go through now (the first of a chain); `nil` if none (or
    /// not an input).
    public func videoFilter(for input: any CaptureSource) -> VideoFilter? {
        state.withLock { $0.inputs.first { $0.source === input } }?.filter.filter
    }

    /// Whether `output` can be added now.
    public func canAddOutput(_ output: any CaptureOutput) -> Bool {
        state.withLock { s in s.machine.isConfigurable && !s.connected.contains { $0.output === output } }
    }

    /// Adds an output that sees every input. Throws `.cannotAddOutput` while running or if
    /// it is already there.
    public func addOutput(_ output: any CaptureOutput) throws {
        try addOutput(output, inputs: nil)
    }

    /// Adds an output that sees only `inputs` (which must be inputs of the session), the way
    /// an `AVCaptureConnection` ties a port to an output: to record one camera on its own
    /// beside a composition of all of them, say.
    public func addOutput(_ output: any CaptureOutput, connectedTo inputs: [any CaptureSource]) throws {
        try addOutput(output, inputs: inputs)
    }

    private func addOutput(_ output: any CaptureOutput, inputs: [any CaptureSource]?) throws {
        try state.withLock { s in
            guard s.machine.isConfigurable else {
                throw ReelError(.cannotAddOutput, "cannot add an output while the session runs", hint: "stop the session first")
            }
            guard !s.connected.contains(where: { $0.output === output }) else {
                throw ReelError(.cannotAddOutput, "the output is already in this session")
            }
            if let inputs {
                guard !inputs.isEmpty else { throw ReelError(.cannotAddOutput, "an output must be connected to at least one input") }
                for input in inputs where !s.inputs.contains(where: { $0.source === input }) {
                    throw ReelError(.cannotAddOutput, "\(input.name) is not an input of this session", hint: "add it with addInput first")
                }
            }
            s.connected.append(Connected(output: output, inputs: inputs.map { $0.map { ObjectIdentifier($0) } }))
        }
    }

    /// Removes an output (while stopped).
    public func removeOutput(_ output: any CaptureOutput) {
        state.withLock { s in
            guard s.machine.isConfigurable else { return }
            s.connected.removeAll { $0.output === output }
        }
    }

    /// Opens every source and output and starts capturing. Throws the first source's or
    /// output's error; then nothing is left running. A filter of a source that cannot be
    /// applied to its pictures or sound (a crop larger than the pictures) is such an error:
    /// nothing is recorded rather than the pictures unfiltered. A ``stop()`` that comes while starting
    /// (Ctrl-C while a network camera connects) is not lost: the start gives up at its next
    /// step, or stops what it started, and returns without an error; the session is stopped.
    public func start() async throws {
        let (inputs, connected) = try state.withLock { s -> ([Entry], [Connected]) in
            _ = try s.machine.start()
            return (s.inputs, s.connected)
        }
        var startedSources: [Entry] = []
        var preparedOutputs: [any CaptureOutput] = []
        do {
            guard !inputs.isEmpty else {
                throw ReelError(.invalidConfiguration, "the session has no inputs", hint: "add a screen, camera, microphone or test source")
            }
            // Opening devices blocks; keep it off the caller's executor. A stop meanwhile
            // interrupts the opening under way (see stop()) and skips the ones after it; what
            // failed because of it is no error.
            let isCancelled: @Sendable () -> Bool = { [self] in self.state.withLock { $0.machine.isStartCancelled } }
            var descriptors: [SourceDescriptor] = []
            var pictureSizes: [SourceID: PictureSizes] = [:]
            do {
                let opened = try await Self.offload {
                    var opened: [(SourceDescriptor, PictureSizes?)] = []
                    for (index, entry) in inputs.enumerated() where !isCancelled() {
                        let format = try entry.source.prepare()
                        entry.connection.prepareSound(format)
                        // What the outputs get: the source's pictures as its connection turns
                        // them, at the size its filters make of them.
                        let turn = entry.connection.orientation.started()
                        let turned = OrientationControl.format(format, orientation: turn.orientation, mirrored: turn.mirrored)
                        let filtered: SourceFormat, sizes: PictureSizes?
                        do {
                            // A filter that cannot be applied to the source's pictures (or sound)
                            // fails the start: its pictures are never let through unfiltered.
                            // What prepare opened is let go, as a stop while opening does.
                            (filtered, sizes) = try Self.filtered(turned, through: entry.filter.filters, of: entry.source.name)
                            // A change before its first picture is checked on these.
                            if case let .video(size, pixelFormat, _) = turned { entry.filter.expectPictures(size: size, format: pixelFormat) }
                            try Self.checkSound(format, through: entry.connection.sound.withLock { $0.filters }, of: entry.source.name)
                        } catch {
                            for prepared in inputs[...index] { prepared.source.stop() }
                            throw error
                        }
                        var descriptor = SourceDescriptor(id: entry.id, name: entry.source.name, kind: entry.source.kind, format: filtered)
                        descriptor.sizeMadeByFilter = sizes.map { $0.input != $0.output } ?? false
                        opened.append((descriptor, sizes))
                    }
                    return opened
                }
                descriptors = opened.map(\.0)
                for (descriptor, sizes) in opened { pictureSizes[descriptor.id] = sizes }
            } catch where isCancelled() {}
            if isCancelled() {
                // Stopped while the sources opened: what prepare opened is let go; nothing else began.
                await Self.offload { for entry in inputs { entry.source.stop(); entry.connection.orientation.stopped(); entry.filter.forgetPictures() } }
            } else {
                let origin = clock.now()
                // An output's prepare blocks too (a file made, encoders opened, a stream's server
                // connected for up to seconds): on a thread of its own, never on the caller's
                // executor, so that other tasks of the app go on meanwhile.
                let prepared = PreparedOutputs()
                do {
                    let clock = self.clock
                    try await Self.offload { [descriptors] in
                        for c in connected where !isCancelled() {
                            let seen = zip(inputs, descriptors).filter { c.sees($0.0.source) }.map(\.1)
                            if let waiting = c.output as? HeldSoundOutput {
                                let heard = inputs.filter { c.sees($0.source) }.map(\.connection)
                                waiting.setHeldSoundDrain { for connection in heard { connection.drainSound(ended: false) } }
                                waiting.setSoundLead(heard.map(\.audioOffset).reduce(.zero) { max($0, $1) })
                            }
                            try c.output.prepare(sources: seen, clock: clock, origin: origin)
                            prepared.append(c.output)
                        }
                    }
                    preparedOutputs = prepared.outputs
                } catch {
                    preparedOutputs = prepared.outputs
                    for output in preparedOutputs { await output.finish() }
                    preparedOutputs = []
                    // An output given up by a stop (a stream still connecting) is no error.
                    if !isCancelled() { throw error }
                }
                if isCancelled() {
                    for output in preparedOutputs { await output.finish() }
                    preparedOutputs = []
                    await Self.offload { for entry in inputs { entry.source.stop(); entry.connection.orientation.stopped(); entry.filter.forgetPictures() } }
                } else {
                    do {
                        for entry in inputs {
                            let receivers = connected.filter { $0.sees(entry.source) }.map(\.output)
                            let recorders = receivers.compactMap { $0 as? Recorder }
                            let (continuation, name) = (self.continuation, entry.source.name)
                            let presenter = try entry.connection.startPresenter(clock: clock, origin: origin, recorders: recorders) { hidden in
                                continuation.yield(hidden ? .keyCaptionsHidden(source: name) : .keyCaptionsShown(source: name))
                            }
                            try entry.source.start(context(for: entry, outputs: receivers, origin: origin, presenter: presenter,
                                                           sizes: pictureSizes[entry.id]))
                            startedSources.append(entry)
                        }
                    } catch {
                        let toStop = startedSources
                        for entry in inputs { entry.connection.stopPresenter() }
                        await Self.offload { for entry in toStop { entry.source.stop() } }
                        for output in connected.map(\.output) { await output.finish() }
                        throw error
                    }
                }
            }
        } catch {
            for entry in inputs { entry.connection.orientation.stopped(); entry.filter.forgetPictures() }
            let reelError = error as? ReelError ?? ReelError(.sourceUnavailable, "\(error)")
            let waiters = state.withLock { s in
                s.machine.fail(reelError)
                defer { s.stopWaiters = [] }
                return s.stopWaiters
            }
            for waiter in waiters { waiter.resume(returning: StopDecision(action: .none)) }
            throw reelError
        }
        let action = state.withLock { s in
            s.running = startedSources
            return s.machine.started()
        }
        guard action == .stop else { return }
        // A stop came while starting: it waits for this.
        await stopEverything(running: startedSources, outputs: preparedOutputs)
    }

    /// Stops every source, then lets every output finish (a recorder finalises its file).
    /// Stopping a session that is not running does nothing; stopping one that is starting
    /// waits until the start has stopped what it started; stopping one that is stopping waits
    /// until every output has finished (so that, when any `stop()` returns, files are complete).
    public func stop() async {
        let decision: StopDecision = await withCheckedContinuation { waiter in
            let decided = state.withLock { s -> (StopDecision?, [Entry], [any CaptureOutput]) in
                let action = s.machine.stop()
                if action == .waitForStart {
                    s.stopWaiters.append(waiter)
                    return (nil, s.inputs, s.connected.map(\.output))
                }
                if action == .waitForStop {
                    // Another stop is finishing the outputs: return when the files are complete.
                    s.stopWaiters.append(waiter)
                    return (nil, [], [])
                }
                return (StopDecision(action: action, running: s.running, outputs: s.connected.map(\.output)), [], [])
            }
            if let decision = decided.0 {
                waiter.resume(returning: decision)
            } else {
                // The start is under way: a source still opening (a network camera connecting)
                // or an output still preparing (a stream connecting) is told to give up, so that
                // the start ends now rather than at its timeout. Whatever it started is stopped
                // by the start itself.
                let (_, starting, outputs) = decided
                for output in outputs { output.cancelStart() }
                Task.detached { for entry in starting { entry.source.stop() } }
            }
        }
        guard decision.action == .stop else { return }
        await stopEverything(running: decision.running, outputs: decision.outputs)
    }

    /// What `stop()` decided under the lock, to act on outside it.
    private struct StopDecision: Sendable {
        var action: SessionStateMachine.Action
        var running: [Entry] = []
        var outputs: [any CaptureOutput] = []
    }

    /// Stops `running` sources and finishes `outputs`, then marks the session stopped and lets
    /// any `stop()` waiting for a start return.
    private func stopEverything(running: [Entry], outputs: [any CaptureOutput]) async {
        for output in outputs { output.sessionWillStop() }
        await Self.offload {
            for entry in running { entry.source.stop() }
            // The end of each input's sound: what its filters held back to look ahead reaches
            // the outputs before they finish.
            for entry in running { entry.connection.drainSound(ended: true) }
        }
        for entry in running { entry.connection.stopPresenter() }
        for output in outputs { await output.finish() }
        for entry in running {
            entry.connection.orientation.stopped()
            // A filter set while stopped is checked at the next start, on its pictures.
            entry.filter.forgetPictures()
        }
        let waiters = state.withLock { s in
            s.running = []
            s.machine.stopped()
            defer { s.stopWaiters = [] }
            return s.stopWaiters
        }
        for waiter in waiters { waiter.resume(returning: StopDecision(action: .none)) }
    }

    /// The outputs prepared so far, written by the thread that prepares them and read once it
    /// is done.
    private final class PreparedOutputs: Sendable {
        private let list = Mutex<[any CaptureOutput]>([])
        var outputs: [any CaptureOutput] { list.withLock { $0 } }
        func append(_ output: any CaptureOutput) { list.withLock { $0.append(output) } }
    }

    /// Runs `work` on a thread of its own and returns what it returns. The census of encoders
    /// the calling task counts into (tests) goes along: an output opens its encoders there.
    static func offload<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        let census = EncoderCensus.current
        return try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try EncoderCensus.$current.withValue(census) { try work() } }) }.start()
        }
    }

    static func offload(_ work: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { continuation in
            Thread { work(); continuation.resume() }.start()
        }
    }
}
