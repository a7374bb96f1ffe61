import Foundation
import Testing
import Synchronization
import Reel
import ReelTestSupport

/// What a ReplayKit screen-recorder class calls, on real Xvfb and PulseAudio servers:
/// `isAvailable`, `isMicrophoneEnabled`, `startRecording()` without a file, a capture handler
/// told of errors, `discardRecording()`.
@Suite(.tags(.realTime)) struct ScreenRecorderReplayKitTests {
    func fastSettings() -> Recorder.Settings {
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        return settings
    }

    @Test func isAvailableAsksTheDisplay() throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 320, height: 240))
        #expect(ScreenRecorder(configuration: .init(display: xvfb.display)).isAvailable)
        let nowhere = ScreenRecorder(configuration: .init(display: XvfbServer.unusedDisplay()))
        #expect(!nowhere.isAvailable)
        #expect(nowhere.unavailability?.code == .sourceUnavailable)
    }

    @Test func aRecordingWithoutAFileGoesToADatedFileAndTheMicrophoneWhenEnabled() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let pulse = try PulseServer()
        let dir = try TemporaryDirectory()
        let screen = ScreenRecorder(configuration: .init(display: xvfb.display, audioServer: pulse.server))
        #expect(!screen.isMicrophoneEnabled)
        screen.isMicrophoneEnabled = true
        screen.outputDirectory = dir.url.appendingPathComponent("Videos")
        try await screen.startRecording(settings: fastSettings())
        #expect(screen.isRecording)
        try await Task.sleep(for: .seconds(1))
        let summary = try await screen.stopRecording()
        #expect(!screen.isRecording)
        #expect(summary.url.deletingLastPathComponent().lastPathComponent == "Videos")
        #expect(summary.url.lastPathComponent.hasPrefix("Reel ") && summary.url.pathExtension == "mp4", "\(summary.url.lastPathComponent)")
        #expect(summary.audioTracks == ["Microphone"])
        #expect(try MediaProbe.probe(summary.url).audioStreams.count == 1)

        // The next recording takes a name of its own (numbered within the same second).
        try await screen.startRecording(settings: fastSettings())
        try await Task.sleep(for: .milliseconds(300))
        let second = try await screen.stopRecording()
        #expect(second.url != summary.url)
        #expect(FileManager.default.fileExists(atPath: summary.url.path))
    }

    @Test func twoRecordersStartedTogetherTakeANameEachAndAFailedStartLeavesNone() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let dir = try TemporaryDirectory()
        let screens = (0..<2).map { _ in ScreenRecorder(configuration: .init(display: xvfb.display)) }
        for screen in screens { screen.outputDirectory = dir.url }
        async let a = screens[0].startRecording(settings: fastSettings())
        async let b = screens[1].startRecording(settings: fastSettings())
        _ = try await (a, b)
        try await Task.sleep(for: .milliseconds(500))
        let first = try await screens[0].stopRecording()
        let second = try await screens[1].stopRecording()
        #expect(first.url != second.url)
        for summary in [first, second] { #expect((try MediaProbe.probe(summary.url).videoStreams.first?.frameCount ?? 0) > 0, "\(summary.url.lastPathComponent)") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).count == 2)

        // A start that fails gives its dated name back.
        let nowhere = ScreenRecorder(configuration: .init(display: ":4999"))
        nowhere.outputDirectory = dir.url
        await #expect(throws: ReelError.self) { try await nowhere.startRecording(settings: fastSettings()) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).count == 2)
    }

    @Test func theCaptureHandlerIsToldOfALostScreen() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let screen = ScreenRecorder(configuration: .init(display: xvfb.display))
        let told = Mutex<(frames: Int, errors: [(SampleKind, ReelError)])>((0, []))
        try await screen.startCapture { (sample: Sample?, kind: SampleKind, error: ReelError?) in
            told.withLock { t in
                if sample != nil { t.frames += 1 }
                if let error { t.errors.append((kind, error)) }
            }
        }
        try await Task.sleep(for: .milliseconds(300))
        xvfb.terminate()
        let end = Date().addingTimeInterval(10)
        while told.withLock({ $0.errors.isEmpty }) && Date() < end { try await Task.sleep(for: .milliseconds(50)) }
        let (frames, errors) = told.withLock { ($0.frames, $0.errors) }
        #expect(frames > 0)
        #expect(errors.count == 1, "\(errors.map(\.1.message))")
        #expect(errors.first?.0 == .video)
        #expect(errors.first?.1.code == .sourceUnavailable, "\(errors.first?.1.description ?? "")")
        await screen.stopCapture()
    }

    @Test func discardingARecordingRemovesItsFile() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let dir = try TemporaryDirectory()
        let screen = ScreenRecorder(configuration: .init(display: xvfb.display))
        let url = dir.url.appendingPathComponent("discarded.mp4")
        try await screen.startRecording(to: url, settings: fastSettings())
        try await Task.sleep(for: .milliseconds(600))
        try await screen.discardRecording()
        #expect(!screen.isRecording)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).isEmpty)
        try await screen.discardRecording()   // nothing being recorded: nothing happens
    }

    /// Capture and a recording started at once (two session changes in flight): the later
    /// one's session took the place of the earlier one's, which ran on unseen, its handler
    /// called after both were stopped. They now take turns; once both stop, nothing runs.
    @Test func captureAndARecordingStartedTogetherLeaveNoSessionRunning() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let dir = try TemporaryDirectory()
        let painting = try Self.keepPainting(xvfb)
        defer { painting.cancel() }
        for round in 0..<3 {
            let screen = ScreenRecorder(configuration: .init(display: xvfb.display))
            let delivered = Mutex(0)
            async let capture: Void = screen.startCapture { (_: Sample, _: SampleKind) in delivered.withLock { $0 += 1 } }
            async let recording = screen.startRecording(to: dir.url.appendingPathComponent("r\(round).mp4"), settings: fastSettings())
            _ = try await (capture, recording)
            try await Task.sleep(for: .milliseconds(400))
            let summary = try await screen.stopRecording()
            #expect(summary.frames > 0)
            try await Task.sleep(for: .milliseconds(300))
            #expect(delivered.withLock { $0 } > 0, "capture goes on after the recording stops")
            await screen.stopCapture()
            #expect(!screen.isActive)
            let stopped = delivered.withLock { $0 }
            try await Task.sleep(for: .milliseconds(600))
            #expect(delivered.withLock { $0 } == stopped, "round \(round): a session ran on after capture and recording stopped")
        }
    }

    /// Capture started and stopped while a recording runs: the handler gets samples only in
    /// between, and the recording runs on, one file, uncut (starting capture rebuilt the
    /// session, which ended the recording and failed: "this recorder has already recorded").
    @Test func captureComesAndGoesWhileARecordingRunsOn() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let dir = try TemporaryDirectory()
        let painting = try Self.keepPainting(xvfb)
        defer { painting.cancel() }
        let screen = ScreenRecorder(configuration: .init(display: xvfb.display))
        let started = Date()
        try await screen.startRecording(to: dir.url.appendingPathComponent("uncut.mp4"), settings: fastSettings())
        try await Task.sleep(for: .milliseconds(300))
        let delivered = Mutex(0)
        try await screen.startCapture { (_: Sample, _: SampleKind) in delivered.withLock { $0 += 1 } }
        try await Task.sleep(for: .milliseconds(500))
        #expect(delivered.withLock { $0 } > 0)
        await screen.stopCapture()
        let stopped = delivered.withLock { $0 }
        try await Task.sleep(for: .milliseconds(500))
        #expect(delivered.withLock { $0 } == stopped, "samples after capture stopped")
        #expect(screen.isRecording && screen.isActive)
        let summary = try await screen.stopRecording()
        let ran = Date().timeIntervalSince(started)
        #expect(summary.duration.seconds > ran - 0.6, "recorded \(summary.duration.seconds) s of \(ran) s")
        #expect(!screen.isActive)
    }

    /// Paints the whole screen a new colour every 30 ms (a session that runs delivers pictures).
    static func keepPainting(_ xvfb: XvfbServer) throws -> Task<Void, Never> {
        let painter = try ScreenPainter(display: xvfb.display)
        return Task.detached {
            var shade: UInt8 = 0
            while !Task.isCancelled {
                shade &+= 37
                painter.fill(rect: PixelRect(x: 0, y: 0, width: 320, height: 240), red: shade, green: 255 &- shade, blue: 90)
                try? await Task.sleep(for: .milliseconds(30))
            }
        }
    }
}
