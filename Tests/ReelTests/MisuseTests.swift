import Foundation
import Testing
import Reel
import ReelTestSupport

/// Misuse of the API gives a typed error or does nothing; it never crashes or breaks a file.
@Suite struct MisuseTests {
    @Test func startingTwiceStoppingTwiceAndStoppingWhatNeverStarted() async throws {
        let dir = try TemporaryDirectory()
        let session = CaptureSession(clock: ManualClock())
        await session.stop()  // never started: nothing happens
        await #expect { try await session.start() } throws: { ($0 as? ReelError)?.code == .invalidConfiguration }
        try session.addInput(TestPatternSource(size: PixelSize(width: 160, height: 120)))
        let recorder = Recorder(url: dir.url.appendingPathComponent("misuse.mp4"),
                                settings: .init(maxRecordedDuration: MediaTime(seconds: 1)))
        try session.addOutput(recorder)
        #expect { try session.addOutput(recorder) } throws: { ($0 as? ReelError)?.code == .cannotAddOutput }
        try await session.start()
        await #expect { try await session.start() } throws: { ($0 as? ReelError)?.code == .alreadyRunning }
        #expect { try session.addInput(ToneSource()) } throws: { ($0 as? ReelError)?.code == .cannotAddInput }
        _ = try await recorder.result()
        await session.stop()
        await session.stop()
        #expect { try recorder.pause() } throws: { ($0 as? ReelError)?.code == .notRunning }
        // A recorder records once; starting the session again says so.
        await #expect { try await session.start() } throws: { ($0 as? ReelError)?.code == .cannotAddOutput }
        #expect(try MediaProbe.probe(dir.url.appendingPathComponent("misuse.mp4")).videoStreams.first?.frameCount == 30)
    }

    /// HLS in fragmented MP4 segments times each picture as one frame: a recording that leaves
    /// repeated pictures out is refused with it (issue 26 item 15), before any file is made.
    @Test func fragmentedMP4HLSIsRefusedWithAFrameModeThatLeavesPicturesOut() async throws {
        let dir = try TemporaryDirectory()
        for mode in [FrameMode.variable, .content] {
            let hls = try LiveStream(url: dir.url.appendingPathComponent("\(mode.rawValue)/index.m3u8"), options: .init(segmentFormat: .fmp4))
            let session = CaptureSession(clock: ManualClock())
            try session.addInput(TestPatternSource(size: PixelSize(width: 160, height: 120)))
            var settings = Recorder.Settings(maxRecordedDuration: MediaTime(seconds: 1))
            settings.video.frameMode = mode
            let file = dir.url.appendingPathComponent("\(mode.rawValue).mp4")
            let recorder = Recorder(url: file, settings: settings, sinks: [hls])
            try session.addOutput(recorder)
            await #expect { try await session.start() } throws: {
                let error = $0 as? ReelError
                return error?.code == .invalidConfiguration && error?.message.contains("fragmented MP4 segments") == true
                    && error?.hint == "write HLS in MPEG-TS segments, or record every picture (the constant frame mode)"
            }
            await session.stop()
            #expect(!FileManager.default.fileExists(atPath: file.path))
        }
    }

    @Test func callsFromManyTasksAtOnce() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("storm.mp4")
        let session = CaptureSession()
        try session.addInput(TestPatternSource(size: PixelSize(width: 160, height: 120)))
        try session.addInput(ToneSource())
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        let started = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<16 { group.addTask { (try? await session.start()) != nil } }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(started == 1, "exactly one start wins")
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<32 {
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(10 * i))
                    if i % 2 == 0 { try? recorder.pause() } else { try? recorder.record() }
                }
            }
        }
        try? recorder.record()
        try await Task.sleep(for: .milliseconds(300))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<16 { group.addTask { await session.stop() } }
        }
        await session.stop()
        let summary = try await recorder.result()
        #expect(summary.frames > 0)
        let frames = try MediaProbe.decodeLuma(url, width: 160, height: 120).compactMap(\.counter)
        #expect(frames.count == Int(summary.frames))
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $1 > $0 }, "frames rise through every pause")
    }
}
