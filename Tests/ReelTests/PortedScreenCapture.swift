// DOCS-SNIPPET-BEGIN
import Foundation
import Reel
import Synchronization

/// The ReplayKit app on Linux: counts the screen's frames as they come and records the screen,
/// the microphone and what applications play to a file.
final class PortedScreenCapture: Sendable {
    let screen = ScreenRecorder(configuration: .init(capturesMicrophone: true, capturesAppAudio: true))
    let videoFrames = Atomic<Int>(0)

    func start() async throws {                       // startCapture(handler:completionHandler:)
        try await screen.startCapture { sample, kind in
            if kind == .video { self.videoFrames.add(1, ordering: .relaxed) }
        }
    }

    func stop() async {                               // stopCapture(handler:)
        await screen.stopCapture()
        print("stopped after \(videoFrames.load(ordering: .relaxed)) frames")
    }

    func record(to url: URL) async throws {           // startRecording(handler:)
        try await screen.startRecording(to: url)
    }

    func finish() async throws -> RecordingSummary {  // stopRecording(withOutput:completionHandler:)
        try await screen.stopRecording()
    }
}
// DOCS-SNIPPET-END
