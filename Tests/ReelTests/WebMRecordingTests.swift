import Foundation
import Testing
import Reel
import ReelTestSupport

/// Recording into WebM with the library, on a manual clock: VP9 and Opus, every frame, sound
/// in step with the picture, a file that is finished (and one cut off recovers as WebM).
@Suite struct WebMRecordingTests {
    @Test func recordsVP9AndOpusInStep() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("v.webm")
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30)))
        try session.addInput(ToneSource())
        var settings = Recorder.Settings(video: VideoSettings(codec: .vp9), audio: AudioSettings(codec: .opus))
        settings.maxRecordedDuration = MediaTime(value: 3, timescale: 1)
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        #expect(summary.container == .webm)
        #expect(summary.frames == 90)

        let probe = try MediaProbe.probe(url)
        #expect(probe.formatName.contains("webm"), "\(probe.formatName)")
        #expect(probe.videoStreams.map(\.codec) == ["vp9"])
        #expect(probe.videoStreams.first?.frameCount == 90)
        #expect(probe.audioStreams.map(\.codec) == ["opus"])
        #expect(Recovery.isFinished(url))
        let frames = try MediaProbe.decodeLuma(url, width: 320, height: 240)
        #expect(frames.map(\.counter) == (0..<90).map { Int64($0) })
        let times = try MediaProbe.packetTimes(url)
        var flashes: [Double] = []
        for i in frames.indices where frames[i].isFlash && (i == 0 || !frames[i - 1].isFlash) { flashes.append(times[i]) }
        let beeps = MediaProbe.beepOnsets(try MediaProbe.decodeAudio(url))
        #expect(flashes.count == 3 && beeps.count == 3, "flashes \(flashes), beeps \(beeps)")
        for (flash, beep) in zip(flashes, beeps) {
            #expect(abs(flash - beep) < 0.040, "flash at \(flash) s, beep at \(beep) s")
        }
    }

    @Test func refusesWhatAWebMCannotHold() async throws {
        let dir = try TemporaryDirectory()
        for (video, audio) in [(VideoCodec.h264, AudioCodec.opus), (.vp9, .aac)] {
            let session = CaptureSession(clock: ManualClock())
            try session.addInput(TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30)))
            try session.addInput(ToneSource())
            let recorder = Recorder(url: dir.url.appendingPathComponent("v.webm"),
                                    settings: Recorder.Settings(video: VideoSettings(codec: video), audio: AudioSettings(codec: audio)))
            try session.addOutput(recorder)
            let error = await #expect(throws: ReelError.self) { try await session.start() }
            #expect(error?.code == .unsupportedFormat, "\(video) and \(audio): \(String(describing: error))")
            #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("v.webm").path))
        }
    }
}
