import Foundation
import Synchronization

/// The output a ``CameraRecorder``'s session records through: the current take's ``Recorder``
/// behind it, changed while capture runs. A running session takes no new output, so a take
/// that ends while the camera goes on (``CameraRecorder/stopRecording()``) leaves this output
/// in the session without a recorder, and the next take's recorder is prepared here as the
/// session prepared the first: with its sources, clock and time zero.
final class TakeOutput: CaptureOutput, @unchecked Sendable {
    private struct Preparation {
        var sources: [SourceDescriptor]
        var clock: any MediaClock
        var origin: MediaTime
    }
    private enum Phase {
        /// Before the session prepared its outputs.
        case waiting
        case running(Preparation)
        /// The session is stopping or stopped: no take begins.
        case finishing
    }
    private struct State {
        var phase = Phase.waiting
        var recorder: Recorder?
    }
    private let state: Mutex<State>

    /// An output that records into `recorder` once the session prepares it (`nil`: no take
    /// until one is attached).
    init(recording recorder: Recorder?) {
        state = Mutex(State(recorder: recorder))
    }

    /// Takes the current take's recorder out: it sees no more samples (finish it).
    func detach() -> Recorder? {
        state.withLock { s in
            defer { s.recorder = nil }
            return s.recorder
        }
    }

    /// Begins a take into `recorder`, prepared now (which makes its file). Throws what the
    /// recorder's preparation throws, or `.notRunning` when the session is not running; then
    /// nothing is recorded into it.
    func attach(_ recorder: Recorder) throws {
        let preparation = try state.withLock { s -> Preparation in
            guard case .running(let preparation) = s.phase else {
                throw ReelError(.notRunning, "the camera recorder is not running", hint: "call start() first")
            }
            guard s.recorder == nil else { throw ReelError(.alreadyRunning, "a take is being recorded") }
            return preparation
        }
        try recorder.prepare(sources: preparation.sources, clock: preparation.clock, origin: preparation.origin)
        let stopping = state.withLock { s -> Bool in
            guard case .running = s.phase else { return true }
            s.recorder = recorder
            return false
        }
        // The session began to stop while the recorder was prepared: it ends as it began.
        if stopping {
            recorder.sessionWillStop()
            Task { await recorder.finish() }
            throw ReelError(.notRunning, "the camera recorder stopped while the take began")
        }
    }

    func prepare(sources: [SourceDescriptor], clock: any MediaClock, origin: MediaTime) throws {
        let recorder = state.withLock { s in
            s.phase = .running(Preparation(sources: sources, clock: clock, origin: origin))
            return s.recorder
        }
        try recorder?.prepare(sources: sources, clock: clock, origin: origin)
    }

    func consume(_ sample: SourcedSample) {
        state.withLock { $0.recorder }?.consume(sample)
    }

    func sourceEvent(_ event: SourceEvent, from source: SourceID) {
        state.withLock { $0.recorder }?.sourceEvent(event, from: source)
    }

    func sessionWillStop() {
        state.withLock { s in
            s.phase = .finishing
            return s.recorder
        }?.sessionWillStop()
    }

    func cancelStart() {
        state.withLock { $0.recorder }?.cancelStart()
    }

    func finish() async {
        let recorder = state.withLock { s in
            s.phase = .finishing
            return s.recorder
        }
        await recorder?.finish()
    }
}
