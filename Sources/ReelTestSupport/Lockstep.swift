import Foundation
import ReelCore

/// Keeps sources on a manual clock within `slack` of each other, the way a real-time clock
/// does. On a manual clock each source runs as fast as its thread is given time: on a busy
/// machine a tone runs seconds ahead of a test pattern held back by its encoder, and a test of
/// where the tracks end measures the machine. Paced, a source whose next sample lies more than
/// `slack` ahead of where another has reached waits (at most `patience` of real time, so that a
/// test never hangs on it) until that one catches up or stops.
///
/// ```swift
/// let step = Lockstep()
/// try session.addInput(step.pace(TestPatternSource(size: size)))
/// try session.addInput(step.pace(ToneSource()))
/// ```
public final class Lockstep: @unchecked Sendable {
    private let condition = NSCondition()
    private let slack: MediaTime
    private let patience: TimeInterval
    /// Where each paced source has delivered up to (the end of its last sample), while it runs.
    private var reached: [Int: MediaTime] = [:]
    private var members = 0
    /// A wait ran out of patience: no more pacing.
    private var gaveUp = false

    public init(slack: MediaTime = MediaTime(value: 1, timescale: 100), patience: TimeInterval = 2) {
        self.slack = slack
        self.patience = patience
    }

    /// `source`, delivering in step with the others paced here.
    public func pace(_ source: any CaptureSource) -> any CaptureSource {
        condition.lock(); defer { condition.unlock() }
        members += 1
        return PacedSource(inner: source, member: members, step: self)
    }

    fileprivate func started(_ member: Int) {
        condition.lock(); defer { condition.unlock() }
        reached[member] = .zero
        condition.broadcast()
    }

    fileprivate func stopped(_ member: Int) {
        condition.lock(); defer { condition.unlock() }
        reached[member] = nil
        condition.broadcast()
    }

    /// Notes that `member` has delivered everything before `time` (it is about to deliver a
    /// sample there), then waits until every other running member has reached `time - slack`.
    /// The member furthest behind never waits, so they cannot wait on each other; should one
    /// wait out its patience all the same, the pacing ends (a slow test, never a stuck one).
    fileprivate func wait(_ member: Int, before time: MediaTime) {
        let deadline = Date().addingTimeInterval(patience)
        condition.lock(); defer { condition.unlock() }
        guard !gaveUp else { return }
        if let previous = reached[member], previous < time { reached[member] = time }
        condition.broadcast()
        while reached.contains(where: { $0.key != member && $0.value < time - slack }) {
            guard condition.wait(until: deadline) else {
                gaveUp = true
                condition.broadcast()
                return
            }
        }
    }

    fileprivate func delivered(_ member: Int, upTo time: MediaTime) {
        condition.lock(); defer { condition.unlock() }
        guard let previous = reached[member], previous < time else { return }
        reached[member] = time
        condition.broadcast()
    }
}

/// A source that delivers through a ``Lockstep``.
private final class PacedSource: CaptureSource, @unchecked Sendable {
    let inner: any CaptureSource
    let member: Int
    let step: Lockstep

    init(inner: any CaptureSource, member: Int, step: Lockstep) {
        self.inner = inner
        self.member = member
        self.step = step
    }

    var name: String { inner.name }
    var kind: SampleKind { inner.kind }
    func prepare() throws -> SourceFormat { try inner.prepare() }

    func start(_ context: SourceContext) throws {
        let step = step, member = member
        step.started(member)
        let paced = SourceContext(id: context.id, clock: context.clock, origin: context.origin, deliver: { sample in
            step.wait(member, before: sample.presentationTime)
            context.deliver(sample)
            switch sample {
            case .video(let frame): step.delivered(member, upTo: frame.presentationTime)
            case .audio(let buffer): step.delivered(member, upTo: buffer.endTime)
            }
        }, report: context.report)
        do { try inner.start(paced) } catch {
            step.stopped(member)
            throw error
        }
    }

    func stop() {
        step.stopped(member)
        inner.stop()
    }
}
