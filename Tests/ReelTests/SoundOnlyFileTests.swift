import Foundation
import Testing
import Reel
import ReelTestSupport

/// Sound-only files as the library records them, on a manual clock: what a file of one audio
/// track takes, and how a recording at its limit ends (a stranger's findings s2 F4 and F6).
@Suite struct SoundOnlyFileTests {
    /// Settings for a file of kind `ext`, in its own codec (PCM for WAV, FLAC for FLAC…).
    static func settings(_ ext: String, mixesAudio: Bool = false) throws -> Recorder.Settings {
        let codec = try #require(Container(name: ext)).defaultAudioCodec
        return Recorder.Settings(audio: AudioSettings(codec: codec), mixesAudio: mixesAudio, maxRecordedDuration: MediaTime(seconds: 1.5))
    }

    /// A session of two tones: two audio sources.
    static func twoTones() throws -> CaptureSession {
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(ToneSource())
        try session.addInput(ToneSource(toneFrequency: 700, kind: .micAudio))
        return session
    }

    /// A WAV or FLAC holds one audio track: two sources failed with FFmpeg's "cannot write the
    /// header … Invalid argument". Refused before the file is made, naming the setting that
    /// mixes them; mixed, they are recorded into one track.
    @Test(arguments: ["wav", "flac"])
    func twoSourcesInAFileOfOneTrackAreRefusedUnlessMixed(ext: String) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("two.\(ext)")
        let session = try Self.twoTones()
        try session.addOutput(Recorder(url: url, settings: try Self.settings(ext)))
        var refusal: ReelError?
        do { try await session.start() } catch let error as ReelError { refusal = error }
        await session.stop()
        let error = try #require(refusal, "two sources into a .\(ext) must be refused")
        #expect(error.code == .invalidConfiguration, "\(error)")
        #expect(error.message.contains("one audio track") && error.message.contains("2 audio sources"), "\(error)")
        #expect(error.hint?.contains("mixesAudio") == true && error.hint?.contains("--") == false, "\(error)")
        #expect(!FileManager.default.fileExists(atPath: url.path), "nothing is made")
        #expect(throws: ReelError.self) { try Recorder.Settings().checkAudioSources(2, into: Container(name: ext)!) }

        let mixed = try Self.twoTones()
        let recorder = Recorder(url: url, settings: try Self.settings(ext, mixesAudio: true))
        try mixed.addOutput(recorder)
        try await mixed.start()
        let summary = try await recorder.result()
        await mixed.stop()
        #expect(summary.ending == .maxDuration)
        let probe = try MediaProbe.probe(url)
        #expect(probe.audioStreams.count == 1)
        #expect(abs(probe.duration - 1.5) < 0.1, "\(probe.duration) s")
    }

    /// Files that hold a track for each source take two; one source is never refused.
    @Test func otherFilesAndOneSourceAreTaken() throws {
        for container in Container.allCases where container.isAudioOnly {
            try Recorder.Settings().checkAudioSources(1, into: container)
            try Recorder.Settings(mixesAudio: true).checkAudioSources(3, into: container)
        }
        for container in [Container.m4a, .opus, .ogg, .mp4, .mkv] {
            try Recorder.Settings().checkAudioSources(2, into: container)
        }
        #expect(Container.wav.maximumAudioTracks == 1 && Container.flac.maximumAudioTracks == 1)
        #expect(Container.gif.maximumAudioTracks == 0 && Container.m4a.maximumAudioTracks == nil)
    }

    /// A sound-only recording that reaches its maximum duration ends as a video recording does
    /// (``RecordingEnding/maxDuration``); it said `.requested`, as if stopped by hand.
    @Test(arguments: ["wav", "flac", "m4a", "ogg"])
    func aSoundRecordingAtItsLimitEndsAtTheMaximumDuration(ext: String) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("timed.\(ext)")
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(ToneSource())
        let recorder = Recorder(url: url, settings: try Self.settings(ext))
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        #expect(summary.ending == .maxDuration, "\(summary.ending)")
        #expect(summary.duration == MediaTime(seconds: 1.5), "\(summary.duration.seconds) s")
    }
}
