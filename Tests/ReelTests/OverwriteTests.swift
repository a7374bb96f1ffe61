import Foundation
import Synchronization
import Testing
import Reel
import ReelTestSupport

/// Writing a recording never replaces a file it did not make.
@Suite struct OverwriteTests {
    /// Copying a file to finalise it goes through a name of its own, never one a file has.
    @Test func finalisingByCopyingLeavesOtherFilesAlone() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("short.mp4")
        let bystander = dir.url.appendingPathComponent(".short.finalising.mp4")
        try Data("not Reel's".utf8).write(to: bystander)
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240)))
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        // Stopped after half a second: far smaller than the space kept for an hour's index, so
        // it is finalised by copying.
        for await event in recorder.events { if case .progress = event { break } }
        await session.stop()
        let summary = try await recorder.result()
        #expect(try Data(contentsOf: bystander) == Data("not Reel's".utf8))
        #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == Int(summary.frames))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted() == [".short.finalising.mp4", "short.mp4"])
    }
}
