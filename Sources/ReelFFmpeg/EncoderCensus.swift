import Synchronization

/// Counts the encoders opened while it is the task's current census (tests): how many video
/// and audio encoders one recording costs, whatever else runs in parallel.
package final class EncoderCensus: Sendable {
    /// The census encoders opened in the current task report to, if any.
    @TaskLocal package static var current: EncoderCensus?

    private let counts = Mutex<(video: Int, audio: Int)>((0, 0))

    package init() {}

    /// Video encoders opened so far.
    package var videoEncoders: Int { counts.withLock { $0.video } }
    /// Audio encoders opened so far.
    package var audioEncoders: Int { counts.withLock { $0.audio } }

    /// Notes an opened encoder with the current census, if any.
    static func noteOpened(video: Bool) {
        current?.counts.withLock { if video { $0.video += 1 } else { $0.audio += 1 } }
    }
}
