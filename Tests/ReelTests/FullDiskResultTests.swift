import Foundation
import Testing
import Reel
import ReelTestSupport

/// A recording whose disk fills faster than the room kept ahead of its file can take (lossless
/// noisy pictures: the fragment or cluster being filled is larger than the room) ends for a
/// library user as `reel record`'s does: ``Recorder/result()`` gives a summary of a recording
/// the disk stopped (`.lowDiskSpace`, not whole, the file's shortfall saying what could not be
/// written), its file finalised in place with what reached the disk. It threw an
/// `.insufficientStorage` error whose words alone said the file was kept and played (an MP4),
/// or that it was left to recover (an MKV).
@Suite(.serialized) struct FullDiskResultTests {
    @Test(arguments: ["mp4", "mkv"])
    func aFastFillIsAStopForTheDiskNotAFailure(_ ext: String) async throws {
        let disk = try SmallDisk(size: "8M")
        let session = CaptureSession(clock: ManualClock())
        let camera = TestPatternSource(size: PixelSize(width: 1280, height: 720), frameRate: FrameRate(30))
        try session.addInput(camera)
        try session.addInput(ToneSource())
        try #require(session.connection(for: camera)).videoFilters = [try VideoFilter(graph: "noise=alls=2:allf=t")]
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        settings.video.rateControl = .crf(0)
        settings.minimumFreeSpace = nil
        settings.maxRecordedDuration = MediaTime(seconds: 60)
        let url = disk.url.appendingPathComponent("fast.\(ext)")
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        #expect(summary.ending == .lowDiskSpace && !summary.isWhole, "\(summary.ending)")
        #expect(Recovery.isFinished(url))
        // The summary says what the file holds.
        let frames = try MediaProbe.packetTimes(url).count, kept = try MediaProbe.probe(url).duration
        #expect(summary.frames > 5 && frames == Int(summary.frames), "\(frames) frames of \(summary.frames)")
        #expect(abs(kept - summary.duration.seconds) < 0.05, "\(kept) s of \(summary.duration.seconds) s")
        #expect(summary.shortfalls.allSatisfy { $0.error.code == .insufficientStorage && $0.source == url.lastPathComponent }, "\(summary.shortfalls)")
    }
}
