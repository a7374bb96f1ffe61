import Foundation
import Synchronization
import Testing
import Reel
import ReelTestSupport

/// Recording into a GIF with the library, on a manual clock: the recording goes into a hidden
/// MP4 beside the GIF and is made into the GIF at the stop; what fails keeps that MP4, and
/// recovering it makes the GIF.
@Suite struct GIFRecordingTests {
    let size = PixelSize(width: 320, height: 240)

    func recorder(_ url: URL, seconds: Int? = 3, overwrite: Bool = false, tone: Bool = false) async throws -> (CaptureSession, Recorder) {
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: size, frameRate: FrameRate(15)))
        if tone { try session.addInput(ToneSource()) }
        var settings = Recorder.Settings(overwrite: overwrite)
        settings.video.frameRate = FrameRate(15)
        settings.video.preset = "ultrafast"
        settings.maxRecordedDuration = seconds.map { MediaTime(value: Int64($0), timescale: 1) }
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        return (session, recorder)
    }

    static func hiddenFiles(_ folder: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix(".") }
    }

    @Test func recordsEveryFrameIntoAGIFAndSaysHowFarTheMakingHasCome() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("demo.gif")
        let (session, recorder) = try await recorder(url)
        let converting = Mutex<[WorkProgress]>([])
        let listener = Task {
            for await event in recorder.events { if case .converting(let p) = event { converting.withLock { $0.append(p) } } }
        }
        try await session.start()
        let intermediate = try #require(recorder.intermediateURL)
        #expect(intermediate.deletingLastPathComponent().path == dir.url.path)
        #expect(intermediate.lastPathComponent.hasPrefix(".demo.gif-") && intermediate.pathExtension == "mp4")
        #expect(Recovery.gifTarget(ofIntermediate: intermediate)?.path == url.path)
        let summary = try await recorder.result()
        await session.stop()
        await listener.value

        #expect(summary.url.path == url.path)
        #expect(summary.container == .gif)
        #expect(summary.frames == 45)
        #expect(summary.bytes == Int64(try Data(contentsOf: url).count))
        let probe = try MediaProbe.probe(url)
        #expect(probe.formatName == "gif")
        let video = try #require(probe.videoStreams.first)
        #expect(video.codec == "gif")
        #expect(video.width == 320 && video.height == 240)
        #expect(video.frameCount == 45)
        #expect(probe.audioStreams.isEmpty)
        #expect(abs(probe.duration - 3.0) <= 0.1, "\(probe.duration) s")
        // Through the palette and the dithering, the burned-in counter still reads: every
        // frame once, in order.
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter)
        #expect(counters == (0..<45).map { Int64($0) })
        // The intermediate is gone once the GIF is complete; nothing else is left.
        #expect(try Self.hiddenFiles(dir.url).isEmpty)
        let reports = converting.withLock { $0 }
        #expect(reports.first?.completedUnitCount == 0)
        #expect(reports.last?.isFinished == true)
        #expect(reports.allSatisfy { $0.stage == .converting })
    }

    @Test func aGIFHoldsNoSoundAndNeverReplacesAFileUnlessAsked() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("demo.gif")
        do {
            let (session, _) = try await recorder(url, tone: true)
            let error = await #expect(throws: ReelError.self) { try await session.start() }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.contains("holds no sound") == true, "\(String(describing: error))")
        }
        try Data("mine".utf8).write(to: url)
        do {
            let (session, _) = try await recorder(url)
            let error = await #expect(throws: ReelError.self) { try await session.start() }
            #expect(error?.code == .fileExists)
            #expect(try Data(contentsOf: url) == Data("mine".utf8))
            #expect(try Self.hiddenFiles(dir.url).isEmpty)
        }
        let (session, recorder) = try await recorder(url, seconds: 1, overwrite: true)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        #expect(summary.frames == 15)
        #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == 15)
    }

    /// A file put at the GIF's name while recording stops the GIF from being made: the stop
    /// fails, saying where the recording is kept; nothing is lost, and recovering the GIF's
    /// name (into another) makes the GIF from it and then removes it.
    @Test func aGIFThatCannotBeMadeKeepsTheRecordingForRecovery() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("demo.gif")
        let (session, recorder) = try await recorder(url, seconds: nil)
        try await session.start()
        let intermediate = try #require(recorder.intermediateURL)
        try Data("mine".utf8).write(to: url)
        try await Task.sleep(for: .milliseconds(200))
        await session.stop()
        let error = await #expect(throws: ReelError.self) { _ = try await recorder.result() }
        #expect(error?.code == .fileExists)
        #expect(error?.hint?.contains("kept in \(intermediate.path)") == true, "\(String(describing: error))")
        #expect(error?.hint?.contains(LibraryHint.makeTheGIF(intermediate.path)) == true, "the library call that makes it into the GIF")
        #expect(try Data(contentsOf: url) == Data("mine".utf8), "the file put there stays")
        #expect(Recovery.isFinished(intermediate), "the recording is a complete MP4")
        let frames = try #require(try MediaProbe.probe(intermediate).videoStreams.first?.frameCount)
        #expect(frames > 0)
        #expect(Recovery.cutOffGIFRecordings(of: url).map(\.path) == [intermediate.path])

        // Without leave to replace the file there, it is not replaced.
        #expect(throws: ReelError.self) { _ = try Recovery.recover(url) }
        #expect(FileManager.default.fileExists(atPath: intermediate.path))
        let other = dir.url.appendingPathComponent("other.gif")
        let recovered = try Recovery.recover(url, to: other)
        #expect(recovered.url.path == other.path)
        #expect(recovered.videoFrames == Int64(frames))
        #expect(try MediaProbe.probe(other).videoStreams.first?.frameCount == frames)
        #expect(!FileManager.default.fileExists(atPath: intermediate.path), "its work done, the intermediate goes")
        #expect(try Data(contentsOf: url) == Data("mine".utf8))
    }
}
