// DOCS-SNIPPET-BEGIN
import Foundation
import Reel

/// A NextLevel-style camera on Linux: the camera runs, each press of the record button adds a
/// clip, the last clip can be undone, and the clips merge into one file at the end.
final class PortedClipCamera: Sendable {
    let session = CaptureSession()
    let recorder: Recorder

    init(camera: any CameraSource, microphone: any CaptureSource, movie: URL) throws {
        var settings = Recorder.Settings(pauseMode: .clips)     // NextLevelSession: one file per clip
        settings.video.rateControl = .bitRate(6_000_000)        // videoConfiguration.bitRate
        recorder = Recorder(url: movie, settings: settings)
        recorder.pause(at: .zero)                               // camera on, not recording yet
        try session.addInput(camera)
        try session.addInput(microphone)
        try session.addOutput(recorder)
    }

    func start() async throws { try await session.start() }     // nextLevel.start()
    func record() throws { try recorder.record() }              // nextLevel.record()
    func pause() throws { try recorder.pause() }                // nextLevel.pause(): ends the clip
    var clips: [Clip] { recorder.recordingSession?.clips ?? [] }                      // session.clips
    var duration: MediaTime { recorder.recordingSession?.totalDuration ?? .zero }    // session.totalDuration
    func undo() throws { try recorder.recordingSession?.removeLastClip() }           // session.removeLastClip()

    /// nextLevel.stop() and session.mergeClips(usingPreset:): the clips merge into `movie`.
    func finish() async throws -> RecordingSummary {
        await session.stop()
        return try await recorder.result()
    }
}
// DOCS-SNIPPET-END
