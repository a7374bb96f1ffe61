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

    @Test func aFastRecordingStopsNearTheMinimumFreeSpace() async throws {
        let disk = try SmallDisk(size: "24M")
        let url = disk.url.appendingPathComponent("fast.mp4")
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        settings.video.rateControl = .crf(0)       // lossless: megabytes per recorded second
        settings.minimumFreeSpace = 12_000_000
        let recorder = Recorder(url: url, settings: settings)
        recorder.maxRecordedDuration = MediaTime(seconds: 60)
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(NoiseSource(size: PixelSize(width: 640, height: 360)))
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        #expect(summary.ending == .lowDiskSpace)
        let free = Self.freeBytes(disk.url)
        let perSecond = Double(summary.bytes) / max(summary.duration.seconds, 0.001)
        #expect(perSecond > 1_500_000, "the test needs a recording of megabytes a second: \(Int(perSecond)) B/s")
        #expect(free >= 12_000_000 - 1_000_000, "stopped with \(free) bytes free, the minimum 12000000, \(Int(perSecond)) B/s")
        #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == Int(summary.frames), "finalised, every frame in it")
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
