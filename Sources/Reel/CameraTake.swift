import Foundation

/// Where a ``CameraRecorder``'s take is, as a value whose transitions say what to do.
///
/// stopped → (start) paused ⇄ recording → (limit) limitReached → (a clip removed) paused, or failed; any of those →
/// (stopRecording) betweenTakes → (record: a new take) paused; any → (stop) stopped. The recorder keeps one behind its lock and calls the record button's transitions
/// (``record()``, ``pause()``) before it asks its ``Recorder``, so that a take at its limit or
/// failed says so instead of the recorder's "not recording".
struct CameraTake: Sendable, Equatable {
    enum Phase: Sendable, Equatable {
        /// No take: before ``CameraRecorder/start()`` or after ``CameraRecorder/stop()``.
        case stopped
        /// Capture runs, no clip is being recorded.
        case paused
        /// A clip is being recorded.
        case recording
        /// The take reached its most recorded time and ended; capture runs on.
        case limitReached
        /// The take's recording failed; capture runs on.
        case failed(ReelError)
        /// Capture runs without a take: the last has ended (``CameraRecorder/stopRecording()``),
        /// or ``CameraRecorder/start()`` found ``CameraRecorder/outputURL`` taken; the next
        /// begins at ``CameraRecorder/record()``.
        case betweenTakes
    }

    private(set) var phase: Phase = .stopped

    var isRecording: Bool { phase == .recording }
    var isPaused: Bool { phase == .paused }
    var hasReachedLimit: Bool { phase == .limitReached }

    /// Whether ``record()`` would start a clip.
    var canRecord: Bool { phase == .paused || phase == .betweenTakes }

    /// A take began (capture runs, nothing recorded yet).
    mutating func started() { phase = .paused }

    /// Capture started without a take (its file was taken): the first begins at ``record()``.
    mutating func startedBetweenTakes() { phase = .betweenTakes }

    /// The record button: throws what stands in the way, else the take records.
    mutating func record() throws {
        try checkTakeGoesOn(doing: "record")
        phase = .recording
    }

    /// The pause button: throws what stands in the way, else the clip ends.
    mutating func pause() throws {
        try checkTakeGoesOn(doing: "pause")
        if phase == .recording { phase = .paused }
    }

    private func checkTakeGoesOn(doing what: String) throws {
        switch phase {
        case .stopped:
            throw ReelError(.notRunning, "cannot \(what): the camera recorder is not running", hint: "call start() first")
        case .limitReached:
            throw ReelError(.limitReached, "cannot \(what): the take has reached its limit (maxRecordedDuration)",
                            hint: "stopRecording() ends the take while capture goes on, and record() then begins a new one; or raise maxRecordedDuration before the take")
        case .failed(let error):
            throw ReelError(error.code, "cannot \(what): the take failed: \(error.message)",
                            hint: error.hint ?? "stopRecording(), then record() a new take")
        case .paused, .recording, .betweenTakes:
            break
        }
    }

    /// The take's recorded time is `recorded`: returns whether that reaches `limit` now (the
    /// take ends; once).
    mutating func recorded(_ recorded: MediaTime, limit: MediaTime?) -> Bool {
        guard let limit, recorded >= limit, phase == .recording || phase == .paused else { return false }
        phase = .limitReached
        return true
    }

    /// Clips were removed from a take at its limit, which now holds `recorded` of `limit`:
    /// returns whether that reopens it (the time was handed back; ``record()`` goes on).
    mutating func reopened(recorded: MediaTime, limit: MediaTime?) -> Bool {
        guard phase == .limitReached, let limit, recorded < limit else { return false }
        phase = .paused
        return true
    }

    /// The recorder finished by itself at its limit: returns whether the take ends now (it had
    /// not been seen reaching it).
    mutating func finishedAtLimit() -> Bool {
        guard phase == .recording || phase == .paused else { return false }
        phase = .limitReached
        return true
    }

    /// The recorder failed: returns whether that ends the take (else the take had ended
    /// already: stopped, or between takes).
    @discardableResult
    mutating func failed(_ error: ReelError) -> Bool {
        guard phase != .stopped, phase != .betweenTakes else { return false }
        phase = .failed(error)
        return true
    }

    /// The take ended while capture goes on.
    mutating func ended() {
        guard phase != .stopped else { return }
        phase = .betweenTakes
    }

    /// The take was stopped.
    mutating func stopped() { phase = .stopped }
}
