import Foundation
import Testing
import Reel
import ReelTestSupport

/// `Recorder.Settings.maxRecordedDuration` on the clock (issue 26 item 19): the recorded time
/// counts what the sources deliver, so a camera that stalls (and is waited for) kept a
/// recording from ever reaching its limit. Under a real-time clock the recorder ends it once
/// the limit and a grace have passed, with what came, and says which source fell short.
@Suite(.serialized, .tags(.realTime)) struct LimitOnTheClockTests {
    @Test func aStalledCameraStillEndsAtTheLimit() async throws {
        let server = try MJPEGServer(color: RGBColor(red: 30, green: 60, blue: 220), counter: true)
        defer { server.terminate() }
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("stalled.mp4")
        let session = CaptureSession()
        try session.addInput(URLCameraSource(url: server.url, name: "network camera"))
        var settings = Recorder.Settings(maxRecordedDuration: MediaTime(seconds: 3))
        settings.video.preset = "ultrafast"
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        let interrupted = Task { () -> [String] in
            var names: [String] = []
            for await event in recorder.events { if case .sourceInterrupted(let name, _) = event { names.append(name) } }
            return names
        }
        try await session.start()
        try await Task.sleep(for: .seconds(1.5))
        server.freeze()
        defer { server.thaw() }
        // A bound that a hang breaks (the limit and grace are 5 s).
        let outcome = Task { try await recorder.result() }
        let watchdog = Task {
            try await Task.sleep(for: .seconds(30))
            outcome.cancel()
            await session.stop()
        }
        let summary = try await outcome.value
        watchdog.cancel()
        await session.stop()
        #expect(summary.ending == .maxDuration, "\(summary.ending)")
        #expect(summary.duration < MediaTime(seconds: 3), "it holds what came: \(summary.duration.seconds) s")
        #expect(summary.frames >= 20, "\(summary.frames) frames")
        let shortfall = try #require(summary.shortfalls.first, "a shortfall says the camera fell short")
        #expect(shortfall.source == "network camera" && shortfall.kind == .interrupted, "\(shortfall)")
        #expect(shortfall.error.message.contains("the 3 s to record passed on the clock"), "\(shortfall.error)")
        #expect(!summary.isComplete)
        #expect(await interrupted.value == ["network camera"])
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter)
        #expect(counters.count == Int(summary.frames) && counters.allSatisfy { $0 != nil }, "the file plays: \(counters.count) frames")
    }
}
