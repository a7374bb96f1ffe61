import Foundation
import Testing
import Reel
import ReelTestSupport

/// A recording stopped because the disk is nearly full stops near the minimum asked for: the
/// free space is checked every quarter megabyte written as well as every second. Checked only
/// once a recorded second, a recording faster than real time (or a busy screen) wrote
/// megabytes past it (`--min-free 6M` stopped at 2.1 MB free).
@Suite struct MinimumFreeSpaceTests {
    static func freeBytes(_ url: URL) -> Int64 {
        var info = statvfs()
        guard statvfs(url.path, &info) == 0 else { return -1 }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// Records lossless noise (and a tone, if asked) into `url` on a manual clock, faster than
    /// real time, keeping `minimum` bytes free, for at most a minute; `prepare` sets up the
    /// recorder before its session starts.
    static func recordNoise(into url: URL, keepingFree minimum: Int64, tone: Bool = false, limit: MediaTime? = MediaTime(seconds: 60),
                            prepare: (Recorder) -> Void = { _ in }) async throws -> RecordingSummary {
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        settings.video.rateControl = .crf(0)       // lossless: megabytes per recorded second
        settings.minimumFreeSpace = minimum
        let recorder = Recorder(url: url, settings: settings)
        recorder.maxRecordedDuration = limit
        prepare(recorder)
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(NoiseSource(size: PixelSize(width: 640, height: 360)))
        if tone { try session.addInput(ToneSource()) }
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        return summary
    }

    @Test func aFastRecordingStopsNearTheMinimumFreeSpace() async throws {
        let disk = try SmallDisk(size: "24M")
        let url = disk.url.appendingPathComponent("fast.mp4")
        let summary = try await Self.recordNoise(into: url, keepingFree: 12_000_000)
        #expect(summary.ending == .lowDiskSpace)
        let free = Self.freeBytes(disk.url)
        let perSecond = Double(summary.bytes) / max(summary.duration.seconds, 0.001)
        #expect(perSecond > 1_500_000, "the test needs a recording of megabytes a second: \(Int(perSecond)) B/s")
        #expect(free >= 12_000_000 - 1_000_000, "stopped with \(free) bytes free, the minimum 12000000, \(Int(perSecond)) B/s")
        #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == Int(summary.frames), "finalised, every frame in it")
    }

    /// The file's index reservation (about 3 MB without a limit, reel's own space in its own file) is not
    /// counted as used: with 1 MB more free than the minimum, the recording records until its
    /// media takes that megabyte. It stopped before its first frame, blaming the sources
    /// ("nothing was recorded: check that the sources deliver samples"; s6 N3). And a minimum
    /// that leaves no room at all says so, not that the sources gave nothing.
    @Test func theFilesOwnReservationIsNotCountedAsUsed() async throws {
        let disk = try SmallDisk(size: "20M")
        let roomy = disk.url.appendingPathComponent("roomy.mp4")
        let summary = try await Self.recordNoise(into: roomy, keepingFree: Self.freeBytes(disk.url) - 1_000_000, limit: nil)
        #expect(summary.ending == .lowDiskSpace)
        #expect(summary.frames >= 2 && summary.bytes > 3_000_000, "\(summary.frames) frames, \(summary.bytes) bytes")
        try FileManager.default.removeItem(at: roomy)
        do {
            let tight = try await Self.recordNoise(into: disk.url.appendingPathComponent("tight.mp4"), keepingFree: Self.freeBytes(disk.url) - 10_000, limit: nil)
            #expect(tight.ending == .lowDiskSpace)
        } catch let error as ReelError {
            #expect(error.code == .insufficientStorage && error.message.contains("came down to the minimum of free space"), "\(error)")
            #expect(!error.description.contains("sources"), "\(error)")
        }
    }

    /// Sound comes faster than the pictures it is recorded with (noise costs the encoder more
    /// than a tone): stopped by the disk, the file's sound and pictures end together, within a
    /// frame. Before, the sound held for pictures that never came was written out past the
    /// video's end (0.4 s in one run).
    @Test func aStopForDiskSpaceEndsSoundAndPicturesTogether() async throws {
        let disk = try SmallDisk(size: "16M")
        let url = disk.url.appendingPathComponent("together.mp4")
        let summary = try await Self.recordNoise(into: url, keepingFree: 8_000_000, tone: true)
        #expect(summary.ending == .lowDiskSpace)
        let probed = try MediaProbe.probe(url)
        let video = try #require(probed.videoStreams.first?.duration)
        let audio = try #require(probed.audioStreams.first?.duration)
        #expect(abs(audio - video) <= 1.0 / 30 + 0.001, "audio \(audio) s, video \(video) s")
    }
}

/// The test pattern's timing with noise for pictures: what no encoder can make small.
final class NoiseSource: CameraSource, @unchecked Sendable {
    let inner: TestPatternSource
    let pool: PixelBufferPool
    private var random = SeededRandom(seed: 7)
    var name: String { "noise" }
    var kind: SampleKind { .video }
    var zoom: ZoomControl { inner.zoom }

    init(size: PixelSize) throws {
        inner = TestPatternSource(size: size)
        pool = try PixelBufferPool(format: .yuv420p, size: size, capacity: 8)
    }

    func prepare() throws -> SourceFormat { try inner.prepare() }

    func start(_ context: SourceContext) throws {
        try inner.start(SourceContext(id: context.id, clock: context.clock, origin: context.origin, deliver: { [self] sample in
            guard case .video(let frame) = sample,
                  let noise = try? pool.makeFrame(presentationTime: frame.presentationTime, sequenceNumber: frame.sequenceNumber, draw: { _, bytes, _ in
                      for i in 0..<bytes.count { bytes[i] = UInt8(truncatingIfNeeded: random.next()) }
                  }) else { return context.deliver(sample) }
            context.deliver(.video(noise))
        }, report: context.report))
    }

    func stop() { inner.stop() }
}
