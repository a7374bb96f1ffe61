// DOCS-SNIPPET-BEGIN
import Foundation
import Reel
import ReelPreview
import Synchronization

/// The NextLevel clip recorder on Linux: the camera shows in a window with a record button;
/// each press records a clip until the next press, the ring (the window's progress bar) fills
/// toward the limit, the last clip can be undone (also at the limit, which opens the take
/// again), and the clips become one movie when the app stops.
final class PortedClipCamera: CameraRecorderDelegate, Sendable {
    let camera: CameraRecorder
    let preview: PreviewWindow?
    let told = Mutex<[String]>([])                               // what the delegate heard
    let ring = Mutex(0.0)                                        // the progress ring, 0…1

    init(camera source: any CameraSource, microphone: any CaptureSource, movie: URL, window: Bool) {
        var settings = Recorder.Settings()
        settings.video.rateControl = .bitRate(6_000_000)         // videoConfiguration.bitRate
        camera = CameraRecorder(camera: source, microphone: microphone, settings: settings)
        camera.outputURL = movie
        camera.maxRecordedDuration = MediaTime(seconds: 15)      // videoConfiguration.maximumCaptureDuration
        preview = window ? PreviewWindow(settings: .init(title: "Clips", showsRecordButton: true, showsStatus: true)) : nil
        camera.delegate = self                                   // nextLevel.delegate = self
        if let preview {
            camera.addPreviewOutput(preview)                     // nextLevel.previewLayer
            preview.onKey = { [weak self] key in if key == .record { self?.recordButtonTapped() } }
            preview.showStatus(of: camera)                       // the progress ring, followed
        }
    }

    func start() async throws { try await camera.start() }      // try nextLevel.start()

    /// The record button: record while not recording, else pause (which ends the clip).
    func recordButtonTapped() {
        do {
            if camera.isRecording {
                try camera.pause()                               // nextLevel.pause()
            } else if camera.canRecord {
                try camera.record()                              // nextLevel.record()
            }
        } catch {
            preview?.message = "\(error)"
        }
    }

    func undo() throws { try camera.removeLastClip() }          // session.removeLastClip()
    var clips: [Clip] { camera.clips }                           // session.clips
    var progress: Double { camera.progress }                     // totalDuration / maximumCaptureDuration

    /// nextLevel.stop() and session.mergeClips(usingPreset:): the clips in one movie.
    func finish() async throws -> RecordingSummary? { try await camera.stop() }

    // NextLevelDelegate
    func cameraRecorder(_ recorder: CameraRecorder, didStartClipAt index: Int) {        // didStartClipInSession
        told.withLock { $0.append("clip \(index) started") }
    }
    func cameraRecorder(_ recorder: CameraRecorder, didComplete clip: Clip) {           // didCompleteClip
        told.withLock { $0.append("clip of \(clip.frameCount) frames") }
    }
    func cameraRecorder(_ recorder: CameraRecorder, didUpdateProgress progress: Double, recorded: MediaTime) {
        ring.withLock { $0 = progress }          // didAppendVideoSampleBuffer: totalDuration / maximumCaptureDuration
    }
    func cameraRecorderDidReachLimit(_ recorder: CameraRecorder) {                      // didCompleteSession
        told.withLock { $0.append("limit") }
        preview?.message = "Full: 15 seconds recorded"
    }
    func cameraRecorder(_ recorder: CameraRecorder, didFinishMerging summary: RecordingSummary) {
        told.withLock { $0.append("merged \(summary.clipCount) clips") }               // mergeClips' completion
    }
    func cameraRecorder(_ recorder: CameraRecorder, didFailWith error: ReelError) {
        preview?.message = error.description                                           // the error view
    }
}
// DOCS-SNIPPET-END
