import Foundation
import Reel
import ReelPreview

// The library examples the README used to show, now shown by the articles of
// Sources/Reel/Reel.docc (each between DOCS-SNIPPET-BEGIN and DOCS-SNIPPET-END, so DocsTests
// checks they are shown word for word); ReadmeTests runs them.

// DOCS-SNIPPET-BEGIN
/// Records the screen, what applications play and the microphone until `stop` returns.
func recordScreen(to url: URL, until stop: () async -> Void) async throws -> RecordingSummary {
    let screen = ScreenRecorder(configuration: .init(capturesMicrophone: true, capturesAppAudio: true))
    try await screen.startRecording(to: url)
    await stop()
    return try await screen.stopRecording()
}
// DOCS-SNIPPET-END

// DOCS-SNIPPET-BEGIN
/// Records two cameras as picture-in-picture into `url`, and each camera on its own into
/// `folder`, for `seconds`; swap the pictures with `compositor.swap()` while it runs.
func recordTwoCameras(_ main: CameraLocation, _ inset: CameraLocation, to url: URL, eachInto folder: URL,
                      seconds: Double) async throws -> RecordingSummary {
    let session = CaptureSession()
    let cameras = [try Cameras.source(for: main), try Cameras.source(for: inset)]
    for camera in cameras { try session.addInput(camera) }

    let compositor = Compositor(settings: .init(layout: .pictureInPicture(corner: .bottomRight, size: 0.25)))
    let recorder = Recorder(url: url)
    recorder.maxRecordedDuration = MediaTime(seconds: seconds)
    try compositor.addOutput(recorder)
    try session.addOutput(compositor)
    for (i, camera) in cameras.enumerated() {
        let own = Recorder(url: folder.appendingPathComponent("camera-\(i + 1).mp4"))
        try session.addOutput(own, connectedTo: [camera])
    }

    try await session.start()
    let summary = try await recorder.result()
    await session.stop()
    return summary
}
// DOCS-SNIPPET-END

// DOCS-SNIPPET-BEGIN
/// Keeps the last `seconds` of the test camera and tone in memory, writing nothing, and saves
/// them to `url` once `moment` returns: the replay buffer of game recorders.
func saveTheLastSeconds(_ seconds: Double, to url: URL, when moment: () async -> Void) async throws -> ReplaySummary {
    let session = CaptureSession()
    try session.addInput(TestPatternSource(size: PixelSize(width: 1280, height: 720), frameRate: FrameRate(30)))
    try session.addInput(ToneSource())

    // The recorder's one encode feeds the buffer; Recorder(url:replayBuffer:) records a file too.
    let buffer = try ReplayBuffer(duration: MediaTime(seconds: seconds), maxBytes: 200_000_000)
    let recorder = Recorder(replayBuffer: buffer)
    try session.addOutput(recorder)

    try await session.start()
    await moment()
    let saved = try await buffer.save(to: url)   // recording goes on while it saves
    await session.stop()
    return saved
}
// DOCS-SNIPPET-END

// DOCS-SNIPPET-BEGIN
/// A camera app's recorder: shows `camera` in a window (when `window` is true) with a filter,
/// records two clips with a pause between them and merges them into `url`. Its `progress`
/// (observable, 0…1 toward `maxRecordedDuration`) is what a record button's ring shows.
func recordTwoClips(of camera: CameraLocation, to url: URL, window: Bool) async throws -> RecordingSummary? {
    let recorder = CameraRecorder(camera: try Cameras.source(for: camera), microphone: ToneSource())
    recorder.outputURL = url
    recorder.maxRecordedDuration = MediaTime(seconds: 30)
    recorder.filter = .look(.comic)                 // or try VideoFilter(graph: "eq=contrast=1.3")
    if window { recorder.addPreviewOutput(PreviewWindow()) }

    try await recorder.start()                      // capture and the window run; nothing is recorded
    try recorder.record()
    try await Task.sleep(for: .seconds(1))
    try recorder.pause()                            // the first clip ends
    try recorder.resumeRecording()
    try await Task.sleep(for: .seconds(1))
    print("\(Int(recorder.progress * 100))% of the limit, \(recorder.clips.count) clip done")
    return try await recorder.stop()                // the clips merged into url
}
// DOCS-SNIPPET-END

// DOCS-SNIPPET-BEGIN
/// Records the test camera into `url` for `seconds` while `show` gets its newest frame as
/// 640x360 RGBA, at most 15 a second: a slow `show` misses frames, the recording none.
func recordWhileWatching(to url: URL, seconds: Double,
                         show: @escaping @Sendable (LiveFrame) async -> Void) async throws -> RecordingSummary {
    let session = CaptureSession()
    try session.addInput(TestPatternSource(size: PixelSize(width: 1280, height: 720), frameRate: FrameRate(30)))
    let recorder = Recorder(url: url)
    recorder.maxRecordedDuration = MediaTime(seconds: seconds)
    try session.addOutput(recorder)
    let live = LiveFrames()                     // or a Compositor's output, for the composed picture
    try session.addOutput(live)

    let frames = live.frames(.init(format: .rgba, size: PixelSize(width: 640, height: 360), maxFrameRate: 15))
    let viewer = Task { for await frame in frames { await show(frame) } }   // ends when the session stops
    try await session.start()
    let summary = try await recorder.result()
    await session.stop()
    await viewer.value
    return summary
}
// DOCS-SNIPPET-END
