// DOCS-SNIPPET-BEGIN
import Foundation
import Reel
import Synchronization

/// The ReplayKit screen recorder class on Linux: counts the screen's frames as they come,
/// keeps the last capture error, and records the screen, the microphone and what applications
/// play into a dated file in the videos folder.
final class PortedScreenCapture: Sendable {
    let screen: ScreenRecorder
    let videoFrames = Atomic<Int>(0)
    let lastError = Mutex<ReelError?>(nil)

    init(configuration: ScreenRecorder.Configuration = .init(capturesAppAudio: true)) {
        screen = ScreenRecorder(configuration: configuration)      // RPScreenRecorder.shared()
    }

    var isAvailable: Bool { screen.isAvailable }                    // isAvailable

    func start() async throws {                                     // startCapture(handler:completionHandler:)
        screen.isMicrophoneEnabled = true                           // isMicrophoneEnabled = true
        try await screen.startCapture { sample, kind, error in
            if let error { self.lastError.withLock { $0 = error }; return }
            if kind == .video { self.videoFrames.add(1, ordering: .relaxed) }
        }
    }

    func stop() async {                                             // stopCapture(handler:)
        await screen.stopCapture()
        print("stopped after \(videoFrames.load(ordering: .relaxed)) frames")
    }

    func record() async throws {                                    // startRecording(handler:)
        try await screen.startRecording()
    }

    var isRecording: Bool { screen.isRecording }                    // isRecording

    func finish() async throws -> URL {                             // stopRecording(withOutput:completionHandler:)
        try await screen.stopRecording().url
    }

    func discard() async throws {                                   // discardRecording(handler:)
        try await screen.discardRecording()
    }
}
// DOCS-SNIPPET-END
