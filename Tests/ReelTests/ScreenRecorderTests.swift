import Foundation
import Testing
import Synchronization
import Reel
import ReelTestSupport

/// The ReplayKit-style screen recorder against real Xvfb and PulseAudio servers: tones fed
/// into the app-audio sink and the microphone come out on their own tracks at their frequencies.
@Suite(.tags(.realTime)) struct ScreenRecorderTests {
    @Test func recordsScreenAppAudioAndMicrophoneAndHandsOutEverySampleKind() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let pulse = try PulseServer()
        let counts = Mutex<[SampleKind: Int]>([:])
        let screen = ScreenRecorder(configuration: .init(display: xvfb.display, capturesMicrophone: true,
                                                         capturesAppAudio: true, audioServer: pulse.server))
        try await screen.startCapture { _, kind in counts.withLock { $0[kind, default: 0] += 1 } }
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("screen-audio.mp4")
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        // Tones long enough to outlast a slow start; stopped when the test ends.
        let app = try pulse.playTone(frequency: 440, seconds: 30, amplitude: 0.5)
        let mic = try pulse.feedMicrophone(frequency: 880, seconds: 30, amplitude: 0.5)
        defer { app.stop(); mic.stop() }
        try await screen.startRecording(to: url, settings: settings)
        try await Task.sleep(for: .seconds(2.5))
        let summary = try await screen.stopRecording()
        await screen.stopCapture()

        let seen = counts.withLock { $0 }
        #expect((seen[.video] ?? 0) > 30)
        #expect((seen[.appAudio] ?? 0) > 50)
        #expect((seen[.micAudio] ?? 0) > 50)
        #expect(summary.audioTracks == ["App audio", "Microphone"])

        let probe = try MediaProbe.probe(url)
        #expect(probe.videoStreams.first?.width == 640)
        #expect(probe.audioStreams.count == 2)
        #expect(probe.audioStreams.map(\.title) == ["App audio", "Microphone"])
        let duration = try #require(probe.videoStreams.first?.duration)
        for audio in probe.audioStreams { #expect(abs((audio.duration ?? 0) - duration) < 0.1) }
        for (track, frequency) in [(0, 440.0), (1, 880.0)] {
            let samples = try MediaProbe.decodeAudio(url, track: track)
            let middle = Array(samples[(samples.count / 3)..<(2 * samples.count / 3)])
            #expect(ToneAnalysis.dominantFrequency(of: middle, sampleRate: 48_000, candidates: [440, 880, 1000]) == frequency,
                    "track \(track)")
            #expect(ToneAnalysis.meanPower(of: middle, sampleRate: 48_000, frequency: frequency) > 0.02, "track \(track) is loud enough")
        }
    }

    @Test func appAudioOfOneApplicationHasOnlyItsTone() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let pulse = try PulseServer()
        let a = try pulse.playTone(frequency: 440, seconds: 30, amplitude: 0.4, applicationName: "A")
        let b = try pulse.playTone(frequency: 1000, seconds: 30, amplitude: 0.4, applicationName: "B")
        defer { a.stop(); b.stop() }
        var configuration = ScreenRecorder.Configuration(display: xvfb.display, capturesAppAudio: true, audioServer: pulse.server)
        configuration.appAudioApplications = .only(["a"])
        let screen = ScreenRecorder(configuration: configuration)
        try await screen.startCapture { _, _ in }
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("one-app.mp4")
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        try await screen.startRecording(to: url, settings: settings)
        try await Task.sleep(for: .seconds(2))
        _ = try await screen.stopRecording()
        await screen.stopCapture()
        let samples = try MediaProbe.decodeAudio(url)
        let middle = Array(samples[(samples.count / 3)..<(2 * samples.count / 3)])
        let a440 = ToneAnalysis.meanPower(of: middle, sampleRate: 48_000, frequency: 440)
        #expect(a440 > 0.02)
        #expect(ToneAnalysis.meanPower(of: middle, sampleRate: 48_000, frequency: 1000) < a440 / 1000)
        // Put back: B never moved, A is on the sink again.
        let streams = try Subprocess.run(["pactl", "list", "short", "sink-inputs"], environment: pulse.environment).output
        #expect(!streams.isEmpty)
        let modules = try Subprocess.run(["pactl", "list", "short", "modules"], environment: pulse.environment).output
        #expect(!modules.contains("reel-app-"), "\(modules)")
    }

    @Test func captureOnlyReportsALostScreen() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let screen = ScreenRecorder(configuration: .init(display: xvfb.display))
        try await screen.startCapture { _, _ in }
        try await Task.sleep(for: .milliseconds(300))
        xvfb.terminate()
        let lost = Task { () -> String? in
            for await event in screen.events { if case .sourceLost(let name, _) = event { return name } }
            return nil
        }
        let watchdog = Task { try await Task.sleep(for: .seconds(10)); lost.cancel() }
        let name = await lost.value
        watchdog.cancel()
        #expect(name != nil, "the lost X server is reported, not silent")
        await screen.stopCapture()
    }

    @Test func startingTwiceIsRefused() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let screen = ScreenRecorder(configuration: .init(display: xvfb.display))
        try await screen.startCapture { _, _ in }
        await #expect(throws: ReelError.self) { try await screen.startCapture { _, _ in } }
        await screen.stopCapture()
        #expect(!screen.isActive)
        await #expect(throws: ReelError.self) { _ = try await screen.stopRecording() }
    }
}

extension ScreenRecorderTests {
    @Test func recordsTheFocusedWindowAndKeepsItWhenARecordingIsAdded() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let painter = try ScreenPainter(display: xvfb.display)
        let first = painter.openWindow(title: "First", rect: PixelRect(x: 0, y: 0, width: 200, height: 100), red: 255, green: 0, blue: 0)
        let second = painter.openWindow(title: "Second", rect: PixelRect(x: 300, y: 0, width: 120, height: 80), red: 0, green: 0, blue: 255)
        painter.focus(window: first)
        var configuration = ScreenRecorder.Configuration(display: xvfb.display, capturesCursor: false)
        configuration.window = .focused
        let screen = ScreenRecorder(configuration: configuration)
        let sizes = Mutex<Set<String>>([])
        try await screen.startCapture { sample, _ in
            if case .video(let frame) = sample { _ = sizes.withLock { $0.insert("\(frame.size)") } }
        }
        // The focus moves on before the recording is added (which restarts the session).
        painter.focus(window: second)
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("window.mp4")
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        try await screen.startRecording(to: url, settings: settings)
        try await Task.sleep(for: .seconds(1))
        _ = try await screen.stopRecording()
        await screen.stopCapture()
        #expect(sizes.withLock { $0 } == ["200x100"], "only the first window's frames")
        let video = try #require(try MediaProbe.probe(url).videoStreams.first)
        #expect(video.width == 200 && video.height == 100)
        let frame = try #require(try MediaProbe.decodeRGB(url, width: 200, height: 100, maxFrames: 1).first)
        #expect(RGBColor.average(of: frame, width: 200, x: 100, y: 50).name(in: RGBColor.primaries) == "red")
    }
}
