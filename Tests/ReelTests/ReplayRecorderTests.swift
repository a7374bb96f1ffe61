import Foundation
import Testing
import Reel
import ReelFFmpeg
import ReelTestSupport

/// A recorder that feeds a replay buffer, on a manual clock: with a file (one encode for both),
/// without one (nothing written until a save), across a pause, and in clip mode.
@Suite struct ReplayRecorderTests {
    static let size = PixelSize(width: 320, height: 240)

    /// Records the test pattern and tone for `seconds` of recorded time into `recorder`'s
    /// outputs, counting the encoders opened.
    func record(_ recorder: Recorder, census: EncoderCensus = EncoderCensus()) async throws -> RecordingSummary {
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: Self.size))
        try session.addInput(ToneSource())
        try session.addOutput(recorder)
        try await EncoderCensus.$current.withValue(census) { try await session.start() }
        let summary = try await recorder.result()
        await session.stop()
        return summary
    }

    static func settings(seconds: Double) -> Recorder.Settings {
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        settings.maxRecordedDuration = MediaTime(seconds: seconds)
        return settings
    }

    /// The frame counters of `url`, and whether its beeps start with its flashes.
    func counters(_ url: URL) throws -> [Int64] {
        try MediaProbe.decodeLuma(url, width: Self.size.width, height: Self.size.height).map { $0.counter ?? -1 }
    }

    @Test func aFileAndAReplayBufferCostOneEncode() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("full.mp4")
        let buffer = try ReplayBuffer(duration: MediaTime(seconds: 2))
        let census = EncoderCensus()
        let summary = try await record(Recorder(url: url, settings: Self.settings(seconds: 6), replayBuffer: buffer), census: census)
        #expect(census.videoEncoders == 1, "one video encode serves the file and the buffer")
        #expect(census.audioEncoders == 1)
        #expect(summary.frames == 180)
        #expect(try counters(url) == Array(0..<180))
        let saved = try await buffer.save(to: dir.url.appendingPathComponent("replay.mp4"))
        let replay = try counters(saved.url)
        // The default keyframe interval is 2 s (60 frames): the save starts on the keyframe at
        // or before 2 s before its end, which is the newest frame.
        #expect(replay.last == 179)
        #expect(replay.first == 120, "the keyframe at 4 s is exactly 2 s before the end")
        #expect(replay == Array(replay.first!...179), "no frame missing or repeated")
        #expect(saved.videoFrames == replay.count)
    }

    @Test func aSaveDuringTheRecordingLosesNothingFromEither() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("full.mkv")
        let buffer = try ReplayBuffer(duration: MediaTime(seconds: 2))
        let recorder = Recorder(url: url, settings: Self.settings(seconds: 8), replayBuffer: buffer)
        // Saved from the events while the recorder goes on encoding (the clock runs faster
        // than real time, so the recording is further on by the time the snapshot is taken).
        let replayURL = dir.url.appendingPathComponent("during.mp4")
        let save = Task { () -> ReplaySummary? in
            for await event in recorder.events {
                if case .progress(let p) = event, p.duration >= MediaTime(seconds: 4) {
                    return try await buffer.save(to: replayURL)
                }
            }
            return nil
        }
        let summary = try await record(recorder)
        let saved = try #require(try await save.value)
        #expect(summary.frames == 240)
        #expect(try counters(url) == Array(0..<240), "the file misses nothing")
        let replay = try counters(saved.url)
        #expect(replay.count >= 60, "at least the 2 s asked for")
        #expect(replay.count < 60 + 60, "and less than one keyframe interval more")
        #expect(replay == Array(replay.first!...replay.last!), "no frame missing or repeated")
        #expect(replay.first! % 60 == 0, "it starts on a keyframe")
    }

    @Test func aReplayOnlyRecorderWritesNothingUntilSaved() async throws {
        let dir = try TemporaryDirectory()
        let buffer = try ReplayBuffer(duration: MediaTime(seconds: 3))
        let census = EncoderCensus()
        let recorder = Recorder(replayBuffer: buffer, settings: Self.settings(seconds: 5))
        #expect(!recorder.writesFile)
        let summary = try await record(recorder, census: census)
        #expect(census.videoEncoders == 1 && census.audioEncoders == 1)
        #expect(summary.frames == 150)
        #expect(summary.bytes == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).isEmpty, "nothing written")
        #expect(FileManager.default.fileExists(atPath: "/dev/null"))
        let saved = try await buffer.save(to: dir.url.appendingPathComponent("replay.mkv"))
        let replay = try counters(saved.url)
        #expect(replay.last == 149)
        #expect(replay.first == 60, "the keyframe at or before 2 s (3 s before the end at 5 s)")
        #expect(replay == Array(60...149))
        let probe = try MediaProbe.probe(saved.url)
        #expect(probe.audioStreams.count == 1)
    }

    @Test func pausedTimeIsNotInTheBuffer() async throws {
        let dir = try TemporaryDirectory()
        let buffer = try ReplayBuffer(duration: MediaTime(seconds: 30))
        let recorder = Recorder(replayBuffer: buffer, settings: Self.settings(seconds: 4))
        recorder.pause(at: MediaTime(seconds: 2))
        recorder.record(at: MediaTime(seconds: 3))
        let summary = try await record(recorder)
        #expect(summary.frames == 120)
        let saved = try await buffer.save(to: dir.url.appendingPathComponent("replay.mp4"))
        // Recorded time only: 2 s before the pause, then from the resume at 3 s on.
        #expect(try counters(saved.url) == Array(0..<60) + Array(90..<150))
        #expect(abs(saved.duration.seconds - 4) < 0.05)
    }

    /// Clip mode cuts the one encode into clips: the replay buffer takes the same stream
    /// across the pauses, and the whole recording, three clips, costs one video encoder (it
    /// opened one a clip, and refused a replay buffer). The census counts on the recorder's
    /// own thread too, where an encoder opened at a resume would be.
    @Test func clipModeFeedsAReplayBufferFromTheOneEncode() async throws {
        let dir = try TemporaryDirectory()
        var settings = Self.settings(seconds: 4)
        settings.pauseMode = .clips
        settings.keepsClips = true
        let url = dir.url.appendingPathComponent("clips.mp4")
        let buffer = try ReplayBuffer(duration: MediaTime(seconds: 10))
        let recorder = Recorder(url: url, settings: settings, replayBuffer: buffer)
        recorder.pause(at: MediaTime(seconds: 1))
        recorder.record(at: MediaTime(seconds: 2))
        recorder.pause(at: MediaTime(seconds: 3))
        recorder.record(at: MediaTime(seconds: 4))
        let census = EncoderCensus()
        let summary = try await record(recorder, census: census)
        #expect(census.videoEncoders == 1, "one video encoder for every clip")
        // Each clip's sound comes from an audio encoder of its own (finished at its pause, so
        // that a paused clip is complete then), opened at the start and at each resume.
        #expect(census.audioEncoders == 3, "an audio encoder a clip")
        #expect(summary.clipCount == 3)
        #expect(summary.frames == 120)
        // The merged file, each clip, and the replay buffer: every frame recorded, once.
        let recorded: [Int64] = Array(0..<30) + Array(60..<90) + Array(120..<180)
        #expect(try counters(url) == recorded)
        let clips = try FileManager.default.contentsOfDirectory(atPath: recorder.clipsFolder!.path)
            .filter { $0.hasPrefix("clip-") }.sorted()
        #expect(clips.count == 3)
        #expect(try counters(recorder.clipsFolder!.appendingPathComponent(clips[0])) == Array(0..<30))
        #expect(try counters(recorder.clipsFolder!.appendingPathComponent(clips[1])) == Array(60..<90))
        #expect(try counters(recorder.clipsFolder!.appendingPathComponent(clips[2])) == Array(120..<180))
        let saved = try await buffer.save(to: dir.url.appendingPathComponent("replay.mp4"))
        #expect(try counters(saved.url) == recorded)
    }

    @Test func aReplayOnlyRecorderRefusesAFileSizeLimit() async throws {
        var settings = Self.settings(seconds: 1)
        settings.maxFileSize = 10_000_000
        let recorder = Recorder(replayBuffer: try ReplayBuffer(duration: MediaTime(seconds: 5)), settings: settings)
        let error = await #expect(throws: ReelError.self) { _ = try await record(recorder) }
        #expect(error?.code == .invalidConfiguration)
    }
}
