import Foundation
import Testing
import Reel
import ReelTestSupport

/// The four seed apps, ported (the porting article shows them), run against the test camera and
/// tone and real Xvfb and PulseAudio servers: what each app does on iOS, it does here.
@Suite(.serialized, .tags(.realTime)) struct PortedAppsTests {
    static func eventually(_ seconds: Double = 15, _ condition: () -> Bool) async throws -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while !condition() && Date() < end { try await Task.sleep(for: .milliseconds(50)) }
        return condition()
    }

    @Test func theClipCameraRecordsUndoesAndMergesClips() async throws {
        let dir = try TemporaryDirectory()
        let movie = dir.url.appendingPathComponent("clips.mp4")
        let app = PortedClipCamera(camera: TestPatternSource(size: PixelSize(width: 320, height: 240)), microphone: ToneSource(),
                                   movie: movie, window: false)
        app.camera.settings.video.preset = "ultrafast"
        try await app.start()
        try await Task.sleep(for: .milliseconds(300))
        #expect(app.clips.isEmpty && app.progress == 0, "the camera runs; nothing is recorded before the first press")
        app.recordButtonTapped()                        // record
        try await Task.sleep(for: .milliseconds(800))
        app.recordButtonTapped()                        // pause: the first clip
        #expect(try await Self.eventually { app.clips.count == 1 })
        app.recordButtonTapped()                        // the second clip
        try await Task.sleep(for: .milliseconds(500))
        app.recordButtonTapped()
        #expect(try await Self.eventually { app.clips.count == 2 })
        #expect(app.progress > 0 && app.progress < 0.2, "\(app.progress) of 15 s")
        #expect(try await Self.eventually { abs(app.ring.withLock { $0 } - app.progress) < 0.01 }, "the delegate's progress is the recorder's")
        try app.undo()                                  // the second clip goes
        #expect(app.clips.count == 1)
        let summary = try #require(try await app.finish())
        #expect(summary.clipCount == 1)
        #expect(summary.duration.seconds > 0.5 && summary.duration.seconds < 1.2, "\(summary.duration.seconds) s")
        #expect(try MediaProbe.probe(movie).audioStreams.count == 1)
        #expect(try await Self.eventually { app.told.withLock { $0.contains("merged 1 clips") } }, "\(app.told.withLock { $0 })")
        let told = app.told.withLock { $0 }
        #expect(Array(told.prefix(3)) == ["clip 0 started", "clip of \(app.clips.first?.frameCount ?? 0) frames", "clip 1 started"])
    }

    @Test func theClipCameraStopsAtItsLimitAndSaysSo() async throws {
        let dir = try TemporaryDirectory()
        let app = PortedClipCamera(camera: TestPatternSource(size: PixelSize(width: 320, height: 240)), microphone: ToneSource(),
                                   movie: dir.url.appendingPathComponent("full.mp4"), window: false)
        app.camera.settings.video.preset = "ultrafast"
        app.camera.maxRecordedDuration = MediaTime(seconds: 1)
        try await app.start()
        app.recordButtonTapped()
        #expect(try await Self.eventually { app.told.withLock { $0.contains("limit") } })
        #expect(app.camera.hasReachedLimit && !app.camera.isRecording && app.progress == 1)
        app.recordButtonTapped()                        // nothing: the take is full
        let summary = try #require(try await app.finish())
        #expect(try await Self.eventually { app.told.withLock { $0.contains("merged 1 clips") } })
        #expect(summary.reachedLimit && abs(summary.duration.seconds - 1) < 0.05)
    }

    @Test func theScreenRecorderClassCapturesRecordsAndDiscards() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let pulse = try PulseServer()
        let dir = try TemporaryDirectory()
        let app = PortedScreenCapture(configuration: .init(display: xvfb.display, capturesAppAudio: true, audioServer: pulse.server))
        #expect(app.isAvailable)
        app.screen.outputDirectory = dir.url
        try await app.start()
        try await app.record()
        #expect(app.isRecording)
        try await Task.sleep(for: .seconds(1))
        let url = try await app.finish()
        #expect(url.deletingLastPathComponent().path == dir.url.path && url.lastPathComponent.hasPrefix("Reel "))
        let probe = try MediaProbe.probe(url)
        #expect(probe.audioStreams.map(\.title) == ["App audio", "Microphone"])
        try await app.record()
        try await Task.sleep(for: .milliseconds(500))
        try await app.discard()
        #expect(!app.isRecording)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path) == [url.lastPathComponent], "the discarded one is gone")
        await app.stop()
        #expect(app.videoFrames.load(ordering: .relaxed) > 10)
        #expect(app.lastError.withLock { $0 } == nil)
    }

    @Test func theMultiCameraRecorderComposesTheScreenAndCamerasAndMirrorsTheFrontOne() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 360))
        let dir = try TemporaryDirectory()
        let front = TestPatternSource(size: PixelSize(width: 320, height: 240), beeps: .never, background: .blue, name: "front")
        let back = TestPatternSource(size: PixelSize(width: 320, height: 240), beeps: .never, background: .green, name: "back")
        let app = try PortedMultiCamera(screen: X11ScreenSource(display: xvfb.display), cameras: [(front, .front), (back, .unspecified)],
                                        microphone: ToneSource(), movie: dir.url.appendingPathComponent("all.mp4"), folder: dir.url)
        try await app.start()
        try await Task.sleep(for: .seconds(1.5))
        let summary = try await app.stop()
        #expect(summary.videoSize == PixelSize(width: 1280, height: 720))
        #expect(summary.frames > 20)
        for (name, mirrored) in [("camera-1.mp4", true), ("camera-2.mp4", false)] {
            let rgb = try #require(try MediaProbe.decodeRGB(dir.url.appendingPathComponent(name), width: 320, height: 240, maxFrames: 1).first)
            let topRight = RGBColor.average(of: rgb, width: 320, x: 316, y: 3, radius: 1)
            let topLeft = RGBColor.average(of: rgb, width: 320, x: 3, y: 3, radius: 1)
            let white = mirrored ? topRight : topLeft
            #expect(white.red > 200 && white.green > 200 && white.blue > 200, "\(name): the white corner cell \(mirrored ? "mirrored to the right" : "on the left")")
        }
    }

    @Test func theCameraAppShowsFilteredLiveFramesAndItsErrors() async throws {
        let app = PortedCameraApp(camera: .testPattern(.blue), window: false)
        await app.start()
        #expect(app.error == nil)
        #expect(try await Self.eventually { app.frame != nil })
        let plain = try #require(app.frame).pixel(x: 320, y: 250)
        #expect(Int(plain[0]) > Int(plain[2]) + 60, "blue, unfiltered: \(plain)")   // BGRA: blue first
        app.toggles.mono = true
        #expect(try await Self.eventually {
            guard let p = app.frame?.pixel(x: 320, y: 250) else { return false }
            return abs(Int(p[0]) - Int(p[2])) <= 6
        }, "grey once mono is on: \(app.frame?.pixel(x: 320, y: 250) ?? [])")
        await app.stop()

        let broken = PortedCameraApp(camera: .url(URL(string: "rtsp://127.0.0.1:1/none")!), window: false)
        await broken.start()
        #expect(broken.error?.code == .sourceUnavailable, "\(broken.error?.description ?? "no error")")
    }

    /// The AVAssetWriter camera app: each press of the record button writes a file of the
    /// camera's frames (the pattern's burned-in counter, every frame once, in order, at its
    /// time) and the microphone's sound; two presses, two files, one after the other.
    @Test func theWriterCameraRecordsFramesAndSoundWithTheRecordButton() async throws {
        let dir = try TemporaryDirectory()
        let size = PixelSize(width: 320, height: 240)
        let app = try PortedWriterCamera(camera: TestPatternSource(size: size, beeps: .never), microphone: ToneSource(),
                                         size: size, window: false)
        try await app.start()
        try await Task.sleep(for: .milliseconds(300))
        var lastCounter: Int64 = -1
        for (name, seconds) in [("first.mp4", 1.2), ("second.mp4", 0.8)] {
            let url = dir.url.appendingPathComponent(name)
            #expect(await app.recordButtonTapped(url: url) == nil, "the press starts a recording")
            #expect(app.isRecording)
            try await Task.sleep(for: .seconds(seconds))
            let writer = try #require(await app.recordButtonTapped(url: url))
            #expect(!app.isRecording)
            #expect(writer.status == .completed, "\(name): \(String(describing: writer.error))")

            let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter)
            let times = try MediaProbe.frameTimes(url)
            let first = try #require(counters.first ?? nil)
            #expect(counters.count > 10, "\(name): \(counters.count) frames")
            #expect(counters.allSatisfy { $0 != nil }, "\(name): every frame shows its counter")
            #expect(zip(counters, counters.dropFirst()).allSatisfy { ($0 ?? 0) < ($1 ?? 0) }, "\(name): in order, none twice")
            #expect(first > lastCounter, "\(name) starts after the file before ended")
            // The session starts at the first sample, sound or picture, and the first frame is
            // drawn from the file's start: the others are at their times from the second's.
            let second = (counter: counters.dropFirst().first.flatMap { $0 } ?? 0, time: times.dropFirst().first ?? 0)
            for (counter, time) in zip(counters, times).dropFirst() {
                let wanted = second.time + Double((counter ?? 0) - second.counter) / 30
                #expect(abs(time - wanted) < 0.02, "\(name): frame \(String(describing: counter)) at \(time) s, not \(wanted) s")
            }
            lastCounter = counters.last.flatMap { $0 } ?? lastCounter
            let sound = try MediaProbe.decodeAudio(url)
            let videoSeconds = (times.max() ?? 0)
            #expect(abs(Double(sound.count) / 48_000 - videoSeconds) < 0.15, "\(name): \(Double(sound.count) / 48_000) s of sound for \(videoSeconds) s of video")
            #expect(ToneAnalysis.rms(of: sound) > 0.05, "\(name): the tone")
        }
        await app.stopRunning()
    }
}
