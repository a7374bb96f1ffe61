import Foundation
import Synchronization
import Testing
import Reel
import ReelTestSupport

/// A sample handler beside a recording, in real time: however slow the handler, or however
/// long it keeps its frames, the recording keeps every frame and the handler counts what it lost.
@Suite(.serialized, .tags(.realTime)) struct SampleHandlerOutputTests {
    static let size = PixelSize(width: 320, height: 240)

    final class Tally: Sendable {
        let frames = Mutex<[VideoFrame]>([])
        let handled = Atomic<Int64>(0)
        let audio = Atomic<Int64>(0)
    }

    /// Records three seconds of the test pattern and tone beside `handler`; returns the
    /// summary and the recording's burned-in counters.
    func recordBeside(_ output: SampleHandlerOutput) async throws -> (RecordingSummary, [Int64?]) {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("beside.mp4")
        let session = CaptureSession()
        try session.addInput(TestPatternSource(size: Self.size, frameRate: FrameRate(30)))
        try session.addInput(ToneSource())
        try session.addOutput(output)
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        settings.maxRecordedDuration = MediaTime(seconds: 3)
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        let counters = try MediaProbe.decodeLuma(url, width: Self.size.width, height: Self.size.height).map(\.counter)
        return (summary, counters)
    }

    /// The recording holds every frame of the 3 s, or on a loaded machine all but a few it
    /// reports as dropped (a handler that held the recording up would cost half of them).
    func expectEveryFrame(_ summary: RecordingSummary, _ counters: [Int64?], _ what: String) {
        #expect(summary.droppedFrames <= 2, "\(what): the recording lost \(summary.droppedFrames) frames")
        #expect(counters.allSatisfy { $0 != nil }, "\(what): every frame readable")
        EveryFrame.expect(counters.compactMap { $0 }, of: 90, summary: summary, "\(what)")
    }

    /// The porting stranger's `AVCaptureVideoDataOutput` delegate: 60 ms per frame, at 30 fps.
    @Test func aSlowHandlerLosesItsOwnLateFramesNotTheRecordings() async throws {
        let tally = Tally()
        let output = SampleHandlerOutput { sample, _ in
            switch sample {
            case .video:
                usleep(60_000)
                tally.handled.add(1, ordering: .relaxed)
            case .audio:
                tally.audio.add(1, ordering: .relaxed)
            }
        }
        let (summary, counters) = try await recordBeside(output)
        expectEveryFrame(summary, counters, "beside a slow handler")
        let handled = tally.handled.load(ordering: .relaxed)
        #expect(handled > 0)
        #expect(output.droppedSamples >= 10, "the handler's late frames are said: \(output.droppedSamples) dropped, \(handled) handled")
        #expect(tally.audio.load(ordering: .relaxed) > 0, "audio still reaches the handler")
    }

    /// A handler that keeps every frame it is given (an app collecting them) runs out of its
    /// own frames, not the camera's.
    @Test func aHandlerThatKeepsItsFramesCostsTheRecordingNothing() async throws {
        let tally = Tally()
        let output = SampleHandlerOutput { sample, _ in
            guard case .video(let frame) = sample else { return }
            tally.frames.withLock { $0.append(frame) }
        }
        let (summary, counters) = try await recordBeside(output)
        expectEveryFrame(summary, counters, "beside a handler keeping its frames")
        let kept = tally.frames.withLock { $0.count }
        #expect(kept >= 1)
        #expect(output.droppedSamples >= 30, "the frames the handler could not get are said: \(output.droppedSamples)")
    }
}
