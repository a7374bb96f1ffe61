import Foundation
import Testing
import Reel
import ReelTestSupport

/// An application's own sink beside a recording's file: one that says it is optional is
/// dropped when it fails and the recording goes on, saying so (`sinkDropped`); one that says
/// nothing is one the recording depends on, and its failure is the recording's.
@Suite struct RecorderSinkPolicyTests {
    /// Takes packets until the `failAt`th, then throws.
    final class Upload: PacketSink, CustomStringConvertible, @unchecked Sendable {
        let failAt: Int
        let declared: SinkPolicy?
        let failure: ReelError
        private let lock = NSLock()
        private var written = 0
        var taken: Int { lock.withLock { written } }
        var description: String { "the upload" }

        init(failAt: Int, policy: SinkPolicy?, failure: ReelError = ReelError(.ioFailure, "the server hung up")) {
            self.failAt = failAt
            declared = policy
            self.failure = failure
        }

        var policy: SinkPolicy { declared ?? .required }
        func add(_ stream: EncodedStream) throws {}
        func write(_ packet: EncodedPacket) throws -> SinkFlow {
            try lock.withLock {
                guard written < failAt else { throw failure }
                written += 1
                return .ok
            }
        }
        func finish() throws {}
    }

    func record(into file: URL, sink: Upload) async throws -> (Result<RecordingSummary, any Error>, [RecordingEvent]) {
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        settings.maxRecordedDuration = MediaTime(seconds: 2)
        let recorder = Recorder(url: file, settings: settings, sinks: [sink])
        let events = Task { () -> [RecordingEvent] in
            var all: [RecordingEvent] = []
            for await event in recorder.events { all.append(event) }
            return all
        }
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: PixelSize(width: 160, height: 120)))
        try session.addInput(ToneSource())
        try session.addOutput(recorder)
        try await session.start()
        let result: Result<RecordingSummary, any Error>
        do { result = .success(try await recorder.result()) } catch { result = .failure(error) }
        await session.stop()
        return (result, await events.value)
    }

    @Test func anOptionalSinkThatFailsIsDroppedSaidAndTheFileIsWhole() async throws {
        let dir = try TemporaryDirectory()
        let file = dir.url.appendingPathComponent("kept.mp4")
        let upload = Upload(failAt: 20, policy: .optional)
        let (result, events) = try await record(into: file, sink: upload)
        let summary = try result.get()
        #expect(summary.isComplete)
        #expect(upload.taken == 20)
        let drops = events.compactMap { event -> (String, ReelError?)? in
            if case .sinkDropped(let name, let error) = event { return (name, error) }
            return nil
        }
        #expect(drops.count == 1 && drops.first?.0 == "the upload", "\(drops)")
        #expect(drops.first?.1?.message.contains("the server hung up") == true)
        #expect(try MediaProbe.probe(file).videoStreams.first?.frameCount == 60, "the file has every frame")
    }

    @Test func aSinkThatSaysNothingIsRequiredAndItsFailureIsTheRecordings() async throws {
        let dir = try TemporaryDirectory()
        let file = dir.url.appendingPathComponent("failed.mp4")
        let (result, events) = try await record(into: file, sink: Upload(failAt: 20, policy: nil))
        #expect(throws: ReelError.self) { try result.get() }
        #expect(!events.contains { if case .sinkDropped = $0 { true } else { false } })
    }

    /// A sink the recording depends on that fails because its own disk filled (an app writing
    /// elsewhere): the recording ends with its error, which names it; the file's disk is not
    /// full, so the file is finished as at a stop, with every frame it took, and nothing says
    /// its disk filled. (Any sink's `ENOSPC` was taken for the file's: "the disk filled while
    /// FILE was recorded".)
    @Test func aRequiredSinkWhoseDiskFilledEndsTheRecordingAndTheFileIsFinished() async throws {
        let dir = try TemporaryDirectory()
        let file = dir.url.appendingPathComponent("kept.mp4")
        let upload = Upload(failAt: 40, policy: nil,
                            failure: ReelError(.insufficientStorage, "no space left to write /elsewhere/upload.bin", errno: ENOSPC))
        let (result, _) = try await record(into: file, sink: upload)
        let error = try #require(result.failure as? ReelError, "the sink's failure is the recording's")
        #expect(error.code == .insufficientStorage, "\(error)")
        #expect(error.message == "the upload failed, which ended the recording: no space left to write /elsewhere/upload.bin", "\(error)")
        #expect(!error.description.contains("the disk filled") && !error.description.contains("recover"), "\(error)")
        #expect(error.hint?.contains("what was recorded until then is in \(file.path), which plays") == true, "\(error)")
        #expect(Recovery.isFinished(file), "finalised as at a stop")
        let counters = try MediaProbe.decodeLuma(file, width: 160, height: 120).map(\.counter)
        #expect(counters.count >= 10 && counters == (0..<counters.count).map { Int64($0) }, "\(counters)")
    }
}

extension Result {
    /// The error, if it failed.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
