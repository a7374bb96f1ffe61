import Foundation

/// A step of the video encoder's speed while recording: to a faster preset when it fell behind
/// (frames piled up waiting for it), back to a slower one when it had kept up for a while, or
/// a step that was wanted and refused.
///
/// Reported as ``RecordingEvent/encoderSpeedChanged(_:)`` and listed in
/// ``RecordingSummary/encoderSpeedChanges``. ``Recorder/Settings/adaptsEncoderSpeed`` turns
/// adapting off.
public struct EncoderSpeedChange: Sendable, Hashable, CustomStringConvertible {
    /// Why the speed was to change.
    public enum Reason: String, Sendable, Hashable {
        /// Frames piled up waiting for the encoder: step to a faster preset.
        case overloaded
        /// The encoder has kept up for a while: step back toward the preset asked for.
        case recovered
    }

    /// Recorded time (pauses taken out) at the step.
    public var time: MediaTime
    /// Why the step.
    public var reason: Reason
    /// The preset before the step.
    public var fromPreset: String
    /// The preset after the step (if it was taken).
    public var toPreset: String
    /// Video frames waiting for the encoder when the step was decided.
    public var framesWaiting: Int
    /// Why the step was not taken (the encoder keeps ``fromPreset`` and the recorder drops
    /// frames as it would without adapting); `nil` once it was.
    public var refusal: String?

    /// Creates a step; each argument is the property of the same name.
    public init(time: MediaTime, reason: Reason, fromPreset: String, toPreset: String, framesWaiting: Int, refusal: String? = nil) {
        self.time = time
        self.reason = reason
        self.fromPreset = fromPreset
        self.toPreset = toPreset
        self.framesWaiting = framesWaiting
        self.refusal = refusal
    }

    /// Whether the encoder now runs at ``toPreset``.
    public var isTaken: Bool { refusal == nil }

    /// "encoder overloaded at 00:12: preset veryfast → superfast", or with the refusal.
    public var description: String {
        let seconds = Int(time.seconds.rounded(.down))
        let at = String(format: "%02d:%02d", seconds / 60, seconds % 60)
        if let refusal {
            return "encoder \(reason.rawValue) at \(at): preset kept at \(fromPreset), not \(toPreset) (\(refusal))"
        }
        return "encoder \(reason.rawValue) at \(at): preset \(fromPreset) → \(toPreset)"
    }
}
