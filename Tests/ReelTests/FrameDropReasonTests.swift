import Foundation
import Testing
@testable import Reel
import ReelTestSupport

/// The test pattern with frames lost before the recorder: those in `said` are reported, with
/// `reason`, just before the frame after them comes (as a source that skips slots says it);
/// those in `unsaid` are lost without a word.
final class ReportingLossySource: CaptureSource {
    let name = "reporting camera"
    var kind: SampleKind { .video }
    let said: Set<Int64>, unsaid: Set<Int64>, reason: FrameDropReason
    private let pattern = TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30))

    init(said: Set<Int64>, reason: FrameDropReason, unsaid: Set<Int64>) {
        self.said = said
        self.reason = reason
        self.unsaid = unsaid
    }

    func prepare() throws -> SourceFormat { try pattern.prepare() }

    func start(_ context: SourceContext) throws {
        let said = self.said, unsaid = self.unsaid, reason = self.reason
        try pattern.start(SourceContext(id: context.id, clock: context.clock, origin: context.origin, deliver: { sample in
            guard case .video(let frame) = sample else { return context.deliver(sample) }
            let n = frame.sequenceNumber
            if said.contains(n) || unsaid.contains(n) { return }
            let before = (0..<n).reversed().prefix { said.contains($0) || unsaid.contains($0) }.filter { said.contains($0) }.count
            if before > 0 { context.report(.droppedFrames(before, reason: reason)) }
            context.deliver(sample)
        }, report: context.report))
    }

    func stop() { pattern.stop() }
}

/// Lost frames are counted with why from the source to the summary and the events (s2 F3:
/// 60 of 150 frames dropped and nothing said why), on a manual clock.
@Suite struct FrameDropReasonTests {
    @Test func theReasonsReachTheSummaryAndTheEvents() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("lossy.mp4")
        let session = CaptureSession(clock: ManualClock())
        // 10–15 said lost for the encoder; 30–59 (a second) lost without a word: a stall.
        try session.addInput(ReportingLossySource(said: Set(10...15), reason: .encoderBehind, unsaid: Set(30...59)))
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        let recorder = Recorder(url: url, settings: settings)
        recorder.maxRecordedDuration = MediaTime(seconds: 3)
        let notices = Task {
            var said: [FrameDropNotice] = []
            for await event in recorder.events { if case .framesDropped(let notice) = event { said.append(notice) } }
            return said
        }
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        #expect(summary.droppedFrames == 36)
        #expect(summary.frameDrops[.encoderBehind] == 6 && summary.frameDrops[.stalled] == 30 && summary.frameDrops.total == 36,
                "\(summary.frameDrops)")
        let said = await notices.value
        #expect(said.map(\.reason) == [.encoderBehind, .stalled] && said.map(\.count) == [6, 30], "\(said)")
        // The file holds the frames that came, each once.
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).compactMap(\.counter)
        #expect(counters == (Array(0..<10) + Array(16..<30) + Array(60..<90)).map { Int64($0) }, "\(counters)")
    }
}
