import Foundation
import Testing
import Reel
import ReelTestSupport

/// A frame log linked to a recorder lists the frames its file holds at the file's times, across
/// pauses, in both pause modes.
@Suite struct FrameLogTests {
    @Test(arguments: [Recorder.PauseMode.singleFile, .clips])
    func theLogMatchesTheFileAcrossPauses(mode: Recorder.PauseMode) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("paused.mp4")
        let logURL = dir.url.appendingPathComponent("frames.csv")
        let session = CaptureSession(clock: ManualClock())
        let pattern = TestPatternSource(size: PixelSize(width: 320, height: 240))
        try session.addInput(pattern)
        try session.addInput(ToneSource())
        var settings = Recorder.Settings(pauseMode: mode)
        settings.video.preset = "ultrafast"
        let recorder = Recorder(url: url, settings: settings)
        recorder.pause(at: MediaTime(seconds: 1))
        recorder.record(at: MediaTime(seconds: 1.5))
        recorder.maxRecordedDuration = MediaTime(seconds: 2)
        try session.addOutput(FrameLog(url: logURL, recorder: recorder), connectedTo: [pattern])
        try session.addOutput(recorder)
        try await session.start()
        _ = try await recorder.result()
        await session.stop()

        let lines = try String(contentsOf: logURL, encoding: .utf8).split(separator: "\n")
        #expect(lines.first == "source,name,frame,capture_time,presentation_time,recorded")
        let rows = lines.dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false) }
        let recorded = rows.filter { $0.last == "yes" }
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).compactMap(\.counter)
        #expect(recorded.compactMap { Int64($0[2]) } == counters)
        #expect(counters == (Array(0..<30) + Array(45..<75)).map { Int64($0) })
        let times = try MediaProbe.packetTimes(url).sorted()
        let logged = recorded.compactMap { Double($0[4]) }
        #expect(logged.count == times.count)
        for (a, b) in zip(logged, times) { #expect(abs(a - b) < 0.000_002, "log \(a), file \(b)") }
        #expect(rows.filter { $0.last == "no" }.allSatisfy { $0[4].isEmpty })
        #expect(rows.contains { $0[2] == "35" && $0.last == "no" }, "a paused frame is listed as not recorded")
    }

    /// Frames the source dropped (its numbers skip them: no output saw them) have a row each,
    /// without times, `recorded` `dropped`; before, the log just lacked them (s6 N8).
    @Test func framesTheSourceDroppedHaveARowSayingSo() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("lossy.mp4")
        let logURL = dir.url.appendingPathComponent("frames.csv")
        let session = CaptureSession(clock: ManualClock())
        let camera = ReportingLossySource(said: Set(10...12), reason: .captureLate, unsaid: Set(30...31))
        try session.addInput(camera)
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        let recorder = Recorder(url: url, settings: settings)
        recorder.maxRecordedDuration = MediaTime(seconds: 2)
        try session.addOutput(FrameLog(url: logURL, recorder: recorder), connectedTo: [camera])
        try session.addOutput(recorder)
        try await session.start()
        _ = try await recorder.result()
        await session.stop()
        let rows = try String(contentsOf: logURL, encoding: .utf8).split(separator: "\n").dropFirst()
            .map { $0.split(separator: ",", omittingEmptySubsequences: false) }
        let dropped = rows.filter { $0.last == "dropped" }
        #expect(dropped.compactMap { Int64($0[2]) } == [10, 11, 12, 30, 31], "\(dropped)")
        #expect(dropped.allSatisfy { $0[3].isEmpty && $0[4].isEmpty })
        let numbers = rows.compactMap { Int64($0[2]) }
        #expect(numbers.prefix(40) == ArraySlice(0..<40), "every number once, in order: \(numbers.prefix(40))")
    }
}

/// A frame log that cannot be written says so, and the recording beside it goes on.
@Suite struct FrameLogFailureTests {
    @Test func aLogOnAFullDiskReportsItsFailureAndTheRecordingIsKept() async throws {
        let dir = try TemporaryDirectory()
        let disk = try SmallDisk(size: "64k")
        // Fill the small disk, so that the log is created but its rows find no room.
        _ = try Subprocess.run(["dd", "if=/dev/zero", "of=\(disk.url.appendingPathComponent("filler").path)", "bs=4k"])
        let url = dir.url.appendingPathComponent("kept.mp4")
        let logURL = disk.url.appendingPathComponent("frames.csv")
        let session = CaptureSession(clock: ManualClock())
        let pattern = TestPatternSource(size: PixelSize(width: 160, height: 120))
        try session.addInput(pattern)
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        let recorder = Recorder(url: url, settings: settings)
        recorder.maxRecordedDuration = MediaTime(seconds: 1)
        let log = FrameLog(url: logURL, recorder: recorder)
        try session.addOutput(log, connectedTo: [pattern])
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()

        #expect(summary.frames == 30)
        #expect(try MediaProbe.decodeLuma(url, width: 160, height: 120).count == 30)
        let error = try #require(log.error, "the failure to write the log is reported")
        #expect(error.code == .insufficientStorage, "\(error)")
        #expect(error.message.contains(logURL.path), "\(error.message)")
    }
}
