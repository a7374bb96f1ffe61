import Foundation
import Testing
import Reel
import ReelTestSupport

/// `AVCaptureMovieFileOutput.stopRecording()`'s shape on a camera recorder: a take ends into its
/// file while the camera runs on, and the next `record()` begins a new take into a new file.
/// On a stepped manual clock, exactly; the burned-in frame counter says the camera never
/// restarted (the second file goes on counting where the camera was, not from zero).
@Suite struct CameraRecorderStopRecordingTests {
    func recorder(_ dir: TemporaryDirectory, _ clock: ManualClock) -> CameraRecorder {
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        let camera = TestPatternSource(size: PixelSize(width: 160, height: 120), frameRate: FrameRate(30), beeps: .never, name: "camera")
        let recorder = CameraRecorder(camera: camera, settings: settings, clock: clock)
        recorder.outputURL = dir.url.appendingPathComponent("one.mp4")
        return recorder
    }

    /// `value` once it has stopped changing, polled in real time; gives up after 20 s.
    func settled<T: Equatable>(_ value: () -> T) async throws -> T {
        var last = value(), same = 0
        let end = Date().addingTimeInterval(20)
        while same < 4 && Date() < end {
            try await Task.sleep(for: .milliseconds(100))
            let now = value()
            same = now == last ? same + 1 : 0
            last = now
        }
        return last
    }

    /// Runs `body` while the stepped clock moves on (the camera waits on it for each picture).
    func ticking<T>(_ clock: ManualClock, _ body: () async throws -> T) async rethrows -> T {
        let ticks = Task {
            while !Task.isCancelled {
                clock.advance(by: MediaTime(value: 1, timescale: 30))
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        defer { ticks.cancel() }
        return try await body()
    }

    func counters(_ url: URL) throws -> [Int64] {
        try MediaProbe.decodeLuma(url, width: 160, height: 120).map { $0.counter ?? -1 }
    }

    @Test func aTakeEndsIntoItsFileAndTheNextBeginsWhileTheCameraRunsOn() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock)
        let preview = recorder.previewFrames(.init(format: .rgba))
        await #expect { _ = try await recorder.stopRecording() } throws: { ($0 as? ReelError)?.code == .notRunning }
        try await recorder.start()
        var frames = preview.makeAsyncIterator()
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 1))
        _ = try await settled { recorder.recordedDuration }

        let first = try #require(try await recorder.stopRecording(), "the first take's file")
        #expect(first.url.path == dir.url.appendingPathComponent("one.mp4").path)
        #expect(abs(first.duration.seconds - 1) < 0.04, "\(first.duration.seconds) s")
        #expect(recorder.isRunning, "the camera runs on")
        #expect(!recorder.isRecording && !recorder.isPaused && recorder.canRecord)
        #expect(recorder.clips.count == 1, "the ended take's clips stay listed until the next take")
        #expect(try await recorder.stopRecording() == nil, "no take is going on")

        // Between takes the preview goes on: pictures the clock lets through now come.
        clock.advance(to: MediaTime(seconds: 1.5))
        var between = 0
        while let frame = await frames.next(), frame.presentationTime < MediaTime(seconds: 1.45) { between += 1 }
        #expect(between > 0, "preview frames flowed between the takes")

        // The next take's name is taken: said, and the camera runs on; another name records.
        #expect { try recorder.record() } throws: { ($0 as? ReelError)?.code == .fileExists }
        #expect(recorder.isRunning && recorder.canRecord)
        recorder.outputURL = dir.url.appendingPathComponent("two.mp4")
        try recorder.record()
        #expect(recorder.isRecording)
        #expect(recorder.clips.isEmpty && recorder.currentOutputURL?.lastPathComponent == "two.mp4", "a new take")
        clock.advance(to: MediaTime(seconds: 2.5))
        _ = try await settled { recorder.recordedDuration }
        #expect(abs(recorder.recordedDuration.seconds - 1) < 0.04, "the second take counts its own time: \(recorder.recordedDuration.seconds) s")
        let second = try #require(try await recorder.stopRecording())
        #expect(second.url.lastPathComponent == "two.mp4")
        #expect(abs(second.duration.seconds - 1) < 0.04, "\(second.duration.seconds) s")
        #expect(try await ticking(clock) { try await recorder.stop() } == nil, "the stop after the last take's end has nothing more")
        #expect(!recorder.isRunning)

        // Both files whole; the camera's counter went on between them (no restart).
        let one = try counters(first.url), two = try counters(second.url)
        #expect(one.count >= 29 && two.count >= 29, "\(one.count) and \(two.count) frames")
        #expect(one == Array((one.first ?? 0)...(one.last ?? -1)), "the first file's frames in a row: \(one)")
        #expect(two == Array((two.first ?? 0)...(two.last ?? -1)), "the second file's frames in a row: \(two)")
        // Half a second (15 pictures) passed between the takes.
        #expect((two.first ?? 0) >= (one.last ?? 0) + 10, "the second take begins where the running camera is: \(one.last ?? -1) then \(two.first ?? -1)")
        #expect(FileManager.default.fileExists(atPath: first.url.path))
    }

    /// A take that reached its limit ends at `stopRecording()` like any other, and the next
    /// `record()` begins a new one (before, only stopping the camera did).
    @Test func aTakeAtItsLimitEndsAndTheNextBegins() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock)
        try await recorder.startRecording(limit: 1)
        clock.advance(to: MediaTime(seconds: 1.5))
        _ = try await settled { recorder.hasReachedLimit }
        #expect(recorder.hasReachedLimit)
        #expect { try recorder.record() } throws: { error in
            let e = error as? ReelError
            return e?.code == .limitReached && e?.hint?.contains("stopRecording()") == true
        }
        let first = try #require(try await recorder.stopRecording())
        #expect(first.reachedLimit)
        #expect(!recorder.hasReachedLimit && recorder.canRecord)
        recorder.outputURL = dir.url.appendingPathComponent("two.mp4")
        try recorder.record()
        #expect(recorder.isRecording && recorder.progress < 0.5, "a new take: \(recorder.progress)")
        clock.advance(to: MediaTime(seconds: 2))
        _ = try await settled { recorder.recordedDuration }
        let second = try #require(try await recorder.stopRecording())
        #expect(second.url.lastPathComponent == "two.mp4" && FileManager.default.fileExists(atPath: first.url.path))
        #expect(abs(second.duration.seconds - 0.5) < 0.04, "\(second.duration.seconds) s")
        _ = try await ticking(clock) { try await recorder.stop() }
    }
}

/// The same in real time, on the test camera with a microphone and a preview output: two takes
/// in two files while the camera's pictures never stop reaching the app.
@Suite(.serialized, .tags(.realTime)) struct CameraRecorderStopRecordingRealTimeTests {
    @Test func twoTakesIntoTwoFilesWhileThePreviewRunsOn() async throws {
        let dir = try TemporaryDirectory()
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        let camera = TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30), beeps: .never, name: "camera")
        let recorder = CameraRecorder(camera: camera, microphone: ToneSource(), settings: settings)
        recorder.outputURL = dir.url.appendingPathComponent("first.mp4")
        let seen = Counter()
        recorder.addPreviewOutput(SampleHandlerOutput { sample, _ in if case .video = sample { seen.add() } })
        try await recorder.start()
        try recorder.record()
        try await Task.sleep(for: .milliseconds(1000))
        let first = try #require(try await recorder.stopRecording())
        let atEnd = seen.value
        try await Task.sleep(for: .milliseconds(600))
        #expect(seen.value > atEnd + 5, "the preview output kept getting pictures between takes: \(atEnd) then \(seen.value)")
        #expect(recorder.isRunning && !recorder.isRecording)

        recorder.outputURL = dir.url.appendingPathComponent("second.mp4")
        try recorder.record()
        try await Task.sleep(for: .milliseconds(800))
        let second = try #require(try await recorder.stopRecording())
        #expect(try await recorder.stop() == nil)

        for (summary, seconds) in [(first, 1.0), (second, 0.8)] {
            let probe = try MediaProbe.probe(summary.url)
            #expect(probe.videoStreams.count == 1 && probe.audioStreams.count == 1, "\(summary.url.lastPathComponent)")
            #expect(abs(probe.duration - summary.duration.seconds) < 0.1)
            #expect(summary.duration.seconds > seconds * 0.5 && summary.duration.seconds < seconds + 10, "\(summary.duration.seconds) s for \(seconds)")
            let counters = try MediaProbe.decodeLuma(summary.url, width: 320, height: 240).compactMap(\.counter)
            #expect(counters.count >= Int(seconds * 30 * 0.6), "\(counters.count) frames in \(summary.url.lastPathComponent)")
        }
        let one = try MediaProbe.decodeLuma(first.url, width: 320, height: 240).compactMap(\.counter)
        let two = try MediaProbe.decodeLuma(second.url, width: 320, height: 240).compactMap(\.counter)
        #expect((two.first ?? 0) > (one.last ?? .max), "the camera ran on between the files: \(one.last ?? -1) then \(two.first ?? -1)")
    }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        func add() { lock.withLock { count += 1 } }
        var value: Int { lock.withLock { count } }
    }
}

/// `startRecording(to:)` ported as `outputURL = url; record()`: the first take records into
/// the URL set after `start()` too, as the takes after `stopRecording()` do (before, it went
/// into the name read at `start()`, silently).
@Suite struct CameraRecorderFirstTakeURLTests {
    @Test func theFirstTakeRecordsIntoTheURLSetAfterStart() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let suite = CameraRecorderStopRecordingTests()
        let recorder = suite.recorder(dir, clock)   // outputURL one.mp4 at start()
        try await recorder.start()
        let two = dir.url.appendingPathComponent("two.mp4")
        recorder.outputURL = two
        try recorder.record()
        #expect(recorder.isRecording && recorder.currentOutputURL?.path == two.path)
        clock.advance(to: MediaTime(seconds: 1))
        _ = try await suite.settled { recorder.recordedDuration }
        let take = try #require(try await recorder.stopRecording())
        #expect(take.url.path == two.path, "the take went into \(take.url.path)")
        #expect(abs(take.duration.seconds - 1) < 0.04, "\(take.duration.seconds) s")
        _ = try await suite.ticking(clock) { try await recorder.stop() }
        #expect(try suite.counters(two).count >= 29)
        // The name read at start() is left as it was: no file, no clips folder.
        let left = try await suite.settled { (try? FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted()) ?? [] }
        #expect(left.contains("two.mp4") && !left.contains { $0.hasPrefix("one") }, "\(left)")
    }
}

extension CameraRecorder {
    /// With `limit` seconds as ``maxRecordedDuration``: starts, and records the first clip.
    func startRecording(limit: Double) async throws {
        maxRecordedDuration = MediaTime(seconds: limit)
        try await start()
        try record()
    }
}
