import Foundation
import Testing
@testable import Reel
import ReelTestSupport

/// The test pattern with some of its frames lost before they reach the recorder (a camera or
/// a recorder that fell behind): the frames numbered in `lost` never come.
final class LossyVideoSource: CaptureSource {
    let name = "lossy camera"
    var kind: SampleKind { .video }
    let lost: Set<Int64>
    private let pattern = TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30))

    init(lost: Set<Int64>) { self.lost = lost }

    func prepare() throws -> SourceFormat { try pattern.prepare() }

    func start(_ context: SourceContext) throws {
        let lost = self.lost
        try pattern.start(SourceContext(id: context.id, clock: context.clock, origin: context.origin, deliver: { sample in
            if case .video(let frame) = sample, lost.contains(frame.sequenceNumber) { return }
            context.deliver(sample)
        }, report: context.report))
    }

    func stop() { pattern.stop() }
}

/// An encoder said to be behind (frames waiting) exactly at the given frames of the session, so
/// that the recorder steps its speed there.
final class ScriptedBacklog: VideoBacklogGauge, @unchecked Sendable {
    let busyFrames: Set<Int64>
    init(busyFrames: Set<Int64>) { self.busyFrames = busyFrames }
    func framesWaiting(takingFrameAt time: MediaTime, preset: String) -> Int {
        busyFrames.contains(FrameRate(30).frameIndex(at: time, rounding: .nearest)) ? 5 : 0
    }
}

/// Clips whose last frames, and the next clip's first, were lost (a recorder under load), with
/// and without a step of the encoder's speed in the clip: each clip's file begins with its own
/// keyframe, decoding no earlier than the clip's lead, and the clips merge by copy into a file
/// with every frame recorded once. Before, the pause's padding went right after the last
/// frame that came, so the next clip decoded that many frames before its zero: its file began
/// with a packet timed before it (ffprobe: discarded) and the merge refused to copy it.
@Suite struct ClipLostFramesTests {
    /// Session frames 0–44 (clip 1), 60–72 (clip 2: 69–72 lost) and from 90 (clip 3: 90 lost)
    /// up to 3 s recorded; the speed steps at `stepAt` (a session frame), if given.
    @Test(arguments: [nil, 62, 67] as [Int64?])
    func clipsAfterLostFramesBeginOnTheirOwnKeyframe(stepAt: Int64?) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("lossy.mp4")
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(LossyVideoSource(lost: [69, 70, 71, 72, 90]))
        try session.addInput(ToneSource())
        var settings = Recorder.Settings(pauseMode: .clips)
        settings.video.preset = "veryfast"
        settings.video.frameRate = FrameRate(30)
        settings.keepsClips = true
        let recorder = Recorder(url: url, settings: settings)
        recorder.backlogGauge = ScriptedBacklog(busyFrames: stepAt.map { Set([$0 - 2, $0 - 1, $0]) } ?? [])
        recorder.pause(at: MediaTime(seconds: 1.5))
        recorder.record(at: MediaTime(seconds: 2))
        recorder.pause(at: MediaTime(value: 73, timescale: 30))
        recorder.record(at: MediaTime(seconds: 3))
        recorder.maxRecordedDuration = MediaTime(seconds: 3)
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        #expect(summary.encoderSpeedChanges.count == (stepAt == nil ? 0 : 1))

        let clips = try #require(recorder.recordingSession).clips
        #expect(clips.count == 3)
        for clip in clips {
            let packets = try Subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts,dts,flags",
                                              "-of", "csv=p=0", clip.url.path]).output.split(separator: "\n")
            let fields = packets.map { $0.split(separator: ",") }
            #expect(fields.first?.last?.hasPrefix("K") == true, "\(clip.url.lastPathComponent) begins with its keyframe: \(packets.prefix(3))")
            #expect(fields.allSatisfy { !($0.last?.contains("D") ?? false) }, "\(clip.url.lastPathComponent): no packet before its first frame: \(packets.prefix(3))")
            #expect(fields.allSatisfy { ($0.first.flatMap { Int($0) } ?? -1) >= 0 }, "\(clip.url.lastPathComponent): \(packets.prefix(3))")
            let dts = fields.compactMap { $0.count > 1 ? Int($0[1]) : nil }
            // Within x264's lead at veryfast (its B-frame delay: two frames of 512 ticks) before
            // the clip's zero, which lies a frame before clip 3's first frame (the one lost);
            // before, clip 3 began decoding seven frames before its first.
            #expect((dts.first ?? .min) >= -1536, "\(clip.url.lastPathComponent) decodes from its lead: \(packets.prefix(3))")
        }
        // Merged by copy: every frame that came, once, in order.
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter)
        let expected = Array(0..<45) + Array(60..<69) + Array(91..<122)
        #expect(counters == expected.map { Optional(Int64($0)) }, "\(counters)")
    }
}
