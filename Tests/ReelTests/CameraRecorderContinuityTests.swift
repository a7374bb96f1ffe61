import Foundation
import Synchronization
import Testing
import Reel
import ReelTestSupport

/// A ported camera app's view drawn from ``CameraRecorder/previewFrames(_:)``, in real time: the
/// pictures flow while a take records, between takes and after the last, as an
/// `AVCaptureVideoDataOutput`'s do (port2 P3: the stream stood still for the whole first take);
/// and a take's summary says the length its file has (port2 P7: 1.0 s said, 0.867 s in the file).
@Suite(.serialized, .tags(.realTime)) struct CameraRecorderContinuityTests {
    /// The presentation times a consumer of a live frames stream saw.
    final class Times: Sendable {
        private let times = Mutex<[MediaTime]>([])
        func add(_ time: MediaTime) { times.withLock { $0.append(time) } }
        var all: [MediaTime] { times.withLock { $0 } }
        /// The longest step between two pictures after `from`, in seconds, and where it ended.
        func longestGap(after from: MediaTime) -> (seconds: Double, endingAt: Double) {
            let seen = all.filter { $0 >= from }
            var longest = (0.0, 0.0)
            for (a, b) in zip(seen, seen.dropFirst()) where (b - a).seconds > longest.0 { longest = ((b - a).seconds, b.seconds) }
            return longest
        }
    }

    @Test func previewFramesFlowWhileTakesRecordAndBetweenThem() async throws {
        let dir = try TemporaryDirectory()
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        let camera = TestPatternSource(size: PixelSize(width: 640, height: 360), frameRate: FrameRate(30), beeps: .never, name: "camera")
        let recorder = CameraRecorder(camera: camera, microphone: ToneSource(), settings: settings)
        try await recorder.start()
        let times = Times()
        // As the ported app's view does: a task on the main actor reading the stream, the newest
        // picture each time (one off it never saw a gap).
        let watcher = Task { @MainActor in
            for await frame in recorder.previewFrames(.init(format: .bgra, size: PixelSize(width: 320, height: 180))) {
                times.add(frame.presentationTime)
            }
        }
        try await Task.sleep(for: .milliseconds(700))
        // startRecording(to:) as ported: the URL set just before record().
        recorder.outputURL = dir.url.appendingPathComponent("movie1.mp4")
        try recorder.record()
        try await Task.sleep(for: .milliseconds(2500))
        let first = try #require(try await recorder.stopRecording())
        try await Task.sleep(for: .milliseconds(700))
        recorder.outputURL = dir.url.appendingPathComponent("movie2.mp4")
        try recorder.record()
        try await Task.sleep(for: .milliseconds(1500))
        try recorder.pause()
        try await Task.sleep(for: .milliseconds(500))
        try recorder.record()
        try await Task.sleep(for: .milliseconds(1000))
        let second = try #require(try await recorder.stopRecording())
        try await Task.sleep(for: .milliseconds(700))
        _ = try await recorder.stop()
        // The stream outlives the stop (it goes on at the next start): the app lets it go.
        watcher.cancel()
        _ = await watcher.value

        let seen = times.all
        let gap = times.longestGap(after: seen.first ?? .zero)
        // At 30 pictures a second a stream that stood still for a second has stopped; a loaded
        // machine delays a picture by a few frames, not by a whole take.
        #expect(gap.seconds < 1, "the preview stood still for \(gap.seconds) s, until \(gap.endingAt) s (\(seen.count) pictures)")
        #expect(seen.count > 60, "\(seen.count) pictures in about 8 s")

        // The summaries say what the files hold (within a frame).
        for summary in [first, second] {
            let probe = try MediaProbe.probe(summary.url)
            let frames = try MediaProbe.decodeLuma(summary.url, width: 640, height: 360).count
            #expect(abs(probe.duration - summary.duration.seconds) <= 1.0 / 30 + 0.001,
                    "\(summary.url.lastPathComponent): the summary says \(summary.duration.seconds) s, the file lasts \(probe.duration) s")
            #expect(Int64(frames) == summary.frames, "\(summary.url.lastPathComponent): \(summary.frames) frames said, \(frames) decoded")
        }
    }
}
