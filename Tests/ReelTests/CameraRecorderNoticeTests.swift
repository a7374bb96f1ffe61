import Foundation
import Observation
import Synchronization
import Testing
import Reel
import ReelTestSupport

/// A camera that is interrupted at picture `interruptAt` and delivers again from `resumeAt`
/// (a network camera that dropped and came back): the test pattern's pictures, each said.
final class InterruptedCamera: CameraSource, @unchecked Sendable {
    let name = "camera"
    var kind: SampleKind { .video }
    let zoom = ZoomControl()
    private let pattern = TestPatternSource(size: PixelSize(width: 160, height: 120), frameRate: FrameRate(30), beeps: .never, name: "camera")
    let interruptAt: Int64, resumeAt: Int64

    init(interruptAt: Int64, resumeAt: Int64) {
        self.interruptAt = interruptAt
        self.resumeAt = resumeAt
    }

    func prepare() throws -> SourceFormat { try pattern.prepare() }

    func start(_ context: SourceContext) throws {
        let (interruptAt, resumeAt) = (self.interruptAt, self.resumeAt)
        try pattern.start(SourceContext(id: context.id, clock: context.clock, origin: context.origin, deliver: { sample in
            guard case .video(let frame) = sample else { return context.deliver(sample) }
            if frame.sequenceNumber == interruptAt { context.report(.interrupted(ReelError(.sourceUnavailable, "the camera stopped sending"))) }
            if frame.sequenceNumber == resumeAt { context.report(.resumed) }
            if frame.sequenceNumber < interruptAt || frame.sequenceNumber >= resumeAt { context.deliver(sample) }
        }, report: context.report))
    }

    func stop() { pattern.stop() }
}

/// What befalls a take besides its clips reaches a camera app (issue 28: a `CameraRecorder`
/// passed on only clips, progress, the limit, the merge and failures, so an app was told
/// nothing when its clips folder was deleted and clips were lost, or its camera dropped).
@Suite struct CameraRecorderNoticeTests {
    /// Collects what a delegate is told, as the events' names.
    final class Told: CameraRecorderDelegate, Sendable {
        let calls = Mutex<[String]>([])
        func cameraRecorder(_ recorder: CameraRecorder, clipsFolderDidChange change: ClipsFolderChange) {
            calls.withLock { $0.append("clipsFolderDidChange") }
        }
        func cameraRecorder(_ recorder: CameraRecorder, sourceWasInterrupted name: String, error: ReelError) {
            calls.withLock { $0.append("sourceWasInterrupted \(name)") }
        }
        func cameraRecorder(_ recorder: CameraRecorder, sourceInterruptionEnded name: String) {
            calls.withLock { $0.append("sourceInterruptionEnded \(name)") }
        }
        func cameraRecorder(_ recorder: CameraRecorder, didFailWith error: ReelError) {
            calls.withLock { $0.append("didFailWith \(error.code)") }
        }
    }

    /// A camera recorder of `camera` (the test pattern by default) into `take.mp4`, telling `told`.
    func recorder(_ dir: TemporaryDirectory, _ clock: ManualClock,
                  camera: any CameraSource = TestPatternSource(size: PixelSize(width: 160, height: 120), frameRate: FrameRate(30), beeps: .never, name: "camera"),
                  telling told: Told? = nil) -> CameraRecorder {
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        let recorder = CameraRecorder(camera: camera, settings: settings, clock: clock)
        recorder.outputURL = dir.url.appendingPathComponent("take.mp4")
        recorder.delegate = told
        return recorder
    }

    /// Moves the stepped clock on (the camera waits on it for each picture) until `event` comes.
    func next(_ events: inout AsyncStream<CameraRecorder.Event>.Iterator, _ clock: ManualClock, seen: inout [CameraRecorder.Event],
              until matches: (CameraRecorder.Event) -> Bool) async {
        let ticking = Task {
            while !Task.isCancelled {
                clock.advance(by: MediaTime(value: 1, timescale: 30))
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        defer { ticking.cancel() }
        while let event = await events.next() {
            seen.append(event)
            if matches(event) { return }
        }
    }

    @Test func aDeletedClipsFolderIsSaidWithTheClipsItLost() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let told = Told()
        let recorder = recorder(dir, clock, telling: told)
        var events = recorder.events.makeAsyncIterator()
        var seen: [CameraRecorder.Event] = []
        try await recorder.start()
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 1))
        await next(&events, clock, seen: &seen) { if case .progress(let recorded, _) = $0 { recorded.seconds >= 0.9 } else { false } }
        try recorder.pause()
        await next(&events, clock, seen: &seen) { if case .clipCompleted = $0 { true } else { false } }
        let folder = dir.url.appendingPathComponent("take.clips", isDirectory: true)
        let clip1 = folder.appendingPathComponent("clip-001.mp4")
        #expect(FileManager.default.fileExists(atPath: clip1.path))
        try FileManager.default.removeItem(at: folder)          // rm -rf between two clips
        try recorder.record()
        await next(&events, clock, seen: &seen) { if case .clipsFolderChanged = $0 { true } else { false } }
        let changes = seen.compactMap { if case .clipsFolderChanged(let change) = $0 { change } else { nil } }
        #expect(changes == [.remade(folder, lostClips: [clip1])], "the app is told which clip is gone")

        let summary = try #require(try await recorder.stopRecording())
        #expect(summary.lostClips == [clip1])
        #expect(!summary.isWhole)
        let delegated = try await eventually { told.calls.withLock { $0 } == ["clipsFolderDidChange"] }
        #expect(delegated, "the delegate was told too: \(told.calls.withLock { $0 })")
        _ = try await recorder.stop()
    }

    @Test func aCameraThatDropsAndComesBackIsSaid() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let told = Told()
        let recorder = recorder(dir, clock, camera: InterruptedCamera(interruptAt: 15, resumeAt: 30), telling: told)
        var events = recorder.events.makeAsyncIterator()
        var seen: [CameraRecorder.Event] = []
        try await recorder.start()
        try recorder.record()
        await next(&events, clock, seen: &seen) { if case .sourceResumed = $0 { true } else { false } }
        let notices = seen.compactMap { event -> String? in
            switch event {
            case .sourceInterrupted(let name, let error): "interrupted \(name): \(error.message)"
            case .sourceResumed(let name): "resumed \(name)"
            default: nil
            }
        }
        #expect(notices == ["interrupted camera: the camera stopped sending", "resumed camera"])
        let delegated = try await eventually {
            told.calls.withLock { $0 } == ["sourceWasInterrupted camera", "sourceInterruptionEnded camera"]
        }
        #expect(delegated, "\(told.calls.withLock { $0 })")
        _ = try await recorder.stopRecording()
        _ = try await recorder.stop()
    }

    /// Polls `condition` for up to 20 s.
    func eventually(_ condition: () -> Bool) async throws -> Bool {
        let end = Date().addingTimeInterval(20)
        while !condition() && Date() < end { try await Task.sleep(for: .milliseconds(50)) }
        return condition()
    }

    /// A take that fails (its disk fills) says so on the events and to the delegate, with the
    /// error: `NextLevelDelegate`'s and `AVCaptureFileOutputRecordingDelegate`'s error callback
    /// (the stranger porting a camera app never saw it called: nothing had tested it).
    @Test func aTakeThatFailsSaysSoOnTheEventsAndToTheDelegate() async throws {
        let disk = try SmallDisk(size: "900k")
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        settings.video.rateControl = .crf(0)
        settings.minimumFreeSpace = nil
        let camera = TestPatternSource(size: PixelSize(width: 1280, height: 720), frameRate: FrameRate(30))
        let recorder = CameraRecorder(camera: camera, settings: settings)
        recorder.outputURL = disk.url.appendingPathComponent("full.mp4")
        let told = Told()
        recorder.delegate = told
        let failures = Mutex<[ReelError.Code]>([])
        let listening = Task {
            for await event in recorder.events { if case .failed(let error) = event { failures.withLock { $0.append(error.code) } } }
        }
        defer { listening.cancel() }
        try await recorder.start()
        try recorder.record()
        #expect(try await eventually { !failures.withLock { $0 }.isEmpty }, "the full disk fails the take")
        _ = try? await recorder.stop()
        #expect(failures.withLock { $0 } == [.insufficientStorage])
        #expect(try await eventually { told.calls.withLock { $0 }.contains("didFailWith insufficientStorage") }, "\(told.calls.withLock { $0 })")
    }

    /// The record button's state is observed as `isRecording` is: a SwiftUI button bound to
    /// `canRecord` (or to `isRunning`) is redrawn when it changes (it read them, and was never told).
    @Test func canRecordAndIsRunningAreObserved() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let recorder = recorder(dir, clock)
        let changes = Mutex<[String]>([])
        func watch() {
            withObservationTracking { _ = recorder.canRecord } onChange: { changes.withLock { $0.append("canRecord") } }
            withObservationTracking { _ = recorder.isRunning } onChange: { changes.withLock { $0.append("isRunning") } }
        }
        watch()
        try await recorder.start()
        #expect(recorder.canRecord && recorder.isRunning)
        #expect(Set(changes.withLock { $0 }) == ["canRecord", "isRunning"], "start() is observed: \(changes.withLock { $0 })")
        changes.withLock { $0 = [] }
        watch()
        try recorder.record()
        #expect(!recorder.canRecord)
        #expect(changes.withLock { $0 } == ["canRecord"], "record() is observed: \(changes.withLock { $0 })")
        var events = recorder.events.makeAsyncIterator()
        var seen: [CameraRecorder.Event] = []
        await next(&events, clock, seen: &seen) { if case .progress = $0 { true } else { false } }
        _ = try await recorder.stopRecording()
        _ = try await recorder.stop()
    }
}
