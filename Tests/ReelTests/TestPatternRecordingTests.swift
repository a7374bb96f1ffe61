import Foundation
import Testing
import Reel
import ReelTestSupport

/// Recordings of the synthetic camera and tone on a manual clock, faster than real time.
@Suite struct TestPatternRecordingTests {
    let size = PixelSize(width: 320, height: 240)

    func record(seconds: Int, fps: Int32 = 30, container: Container = .mp4, mixes: Bool = false,
                extraAudio: Bool = false) async throws -> (URL, RecordingSummary) {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("pattern.\(container.fileExtension)")
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: size, frameRate: FrameRate(fps)))
        try session.addInput(ToneSource())
        if extraAudio { try session.addInput(ToneSource(toneFrequency: 660, kind: .micAudio)) }
        var settings = Recorder.Settings(container: container, mixesAudio: mixes)
        settings.video.frameRate = FrameRate(fps)
        settings.video.preset = "ultrafast"
        settings.maxRecordedDuration = MediaTime(value: Int64(seconds), timescale: 1)
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        dir.keep()
        return (url, summary)
    }

    @Test func countsEveryFrameOnceAndStopsAtTheLimit() async throws {
        let (url, summary) = try await record(seconds: 4)
        #expect(summary.frames == 120)
        #expect(summary.reachedLimit)
        let probe = try MediaProbe.probe(url)
        let video = try #require(probe.videoStreams.first)
        #expect(video.codec == "h264")
        #expect(video.width == 320 && video.height == 240)
        #expect(video.frameCount == 120)
        #expect(abs((video.duration ?? 0) - 4.0) <= 1.0 / 30)
        #expect(abs(probe.duration - 4.0) <= 1.0 / 30 + 0.025)  // AAC frames end on 1024-sample boundaries
        let frames = try MediaProbe.decodeLuma(url, width: 320, height: 240)
        let counters = frames.map(\.counter)
        #expect(counters.count == 120)
        #expect(counters == (0..<120).map { Int64($0) }, "every frame once, in order")
        let audio = try #require(probe.audioStreams.first)
        #expect(audio.codec == "aac")
        #expect(audio.sampleRate == 48_000 && audio.channels == 2)
    }

    @Test func beepsAndFlashesStayInSync() async throws {
        let (url, _) = try await record(seconds: 5)
        let frames = try MediaProbe.decodeLuma(url, width: 320, height: 240)
        let times = try MediaProbe.packetTimes(url)
        #expect(frames.count == times.count)
        var flashOnsets: [Double] = []
        for i in frames.indices where frames[i].isFlash && (i == 0 || !frames[i - 1].isFlash) {
            flashOnsets.append(times[i])
        }
        let beeps = MediaProbe.beepOnsets(try MediaProbe.decodeAudio(url))
        #expect(flashOnsets.count == 5)
        #expect(beeps.count == 5)
        for (flash, beep) in zip(flashOnsets, beeps) {
            #expect(abs(flash - beep) < 0.040, "flash at \(flash) s, beep at \(beep) s")
        }
    }

    @Test(arguments: [Container.mkv, .mov])
    func writesOtherContainers(_ container: Container) async throws {
        let (url, summary) = try await record(seconds: 2, container: container)
        #expect(summary.frames == 60)
        let probe = try MediaProbe.probe(url)
        #expect(probe.videoStreams.first?.frameCount == 60)
        #expect(probe.audioStreams.count == 1)
        #expect(abs(probe.duration - 2.0) < 0.06)
    }

    @Test func separateAndMixedAudioTracks() async throws {
        let (separate, s1) = try await record(seconds: 2, extraAudio: true)
        #expect(s1.audioTracks.count == 2)
        let p1 = try MediaProbe.probe(separate)
        #expect(p1.audioStreams.count == 2)
        #expect(p1.audioStreams.map(\.title) == ["tone 440 Hz", "Microphone"])
        let mic = try MediaProbe.decodeAudio(separate, track: 1)
        #expect(ToneAnalysis.dominantFrequency(of: Array(mic[4800..<14400]), sampleRate: 48_000, candidates: [440, 660, 1000]) == 660)

        let (mixed, s2) = try await record(seconds: 2, mixes: true, extraAudio: true)
        #expect(s2.audioTracks == ["Mix"])
        let p2 = try MediaProbe.probe(mixed)
        #expect(p2.audioStreams.count == 1)
        let mix = Array(try MediaProbe.decodeAudio(mixed)[4800..<14400])
        #expect(ToneAnalysis.power(of: mix, sampleRate: 48_000, frequency: 440) > 0.001)
        #expect(ToneAnalysis.power(of: mix, sampleRate: 48_000, frequency: 660) > 0.001)
    }
}
