// README-EXAMPLE-BEGIN
import Foundation
import Reel

/// Records the built-in test camera and tone for `seconds` into `url`.
func recordTestPattern(to url: URL, seconds: Double) async throws -> RecordingSummary {
    let session = CaptureSession()
    try session.addInput(TestPatternSource(size: PixelSize(width: 1280, height: 720), frameRate: FrameRate(30)))
    try session.addInput(ToneSource())

    let recorder = Recorder(url: url)
    recorder.maxRecordedDuration = MediaTime(seconds: seconds)
    try session.addOutput(recorder)

    try await session.start()
    let events = Task {
        for await event in recorder.events {
            if case .progress(let p) = event { print("\(p.duration) recorded, \(p.frames) frames") }
        }
    }
    let summary = try await recorder.result()   // returns once `seconds` are recorded
    await session.stop()
    await events.value
    return summary
}
// README-EXAMPLE-END
