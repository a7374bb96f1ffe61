import Foundation
import Testing
import ReelCore
import ReelFFmpeg
import ReelTestSupport

@Suite struct AssetWriterTests {
    let size = PixelSize(width: 160, height: 120)

    func configuration(_ url: URL, codec: VideoCodec = .h264, container: Container? = nil, audio: Bool = true) -> AssetWriter.Configuration {
        var video = VideoSettings(codec: codec)
        video.preset = codec.presets.isEmpty ? nil : "ultrafast"
        let track = AssetWriter.AudioTrack(settings: AudioSettings(codec: container == .mkv ? .opus : .aac),
                                           inputFormat: AudioFormat(), title: "Tone")
        return AssetWriter.Configuration(url: url, container: container,
                                         video: AssetWriter.VideoTrack(settings: video, inputFormat: .yuv420p, inputSize: size),
                                         audio: audio ? [track] : [])
    }

    /// Writes `frames` test-pattern frames (and matching tone) and finishes.
    func write(_ writer: AssetWriter, frames: Int) throws -> AssetWriter.Summary {
        let pool = FramePool(format: .yuv420p, size: size, capacity: 2)
        let tone = ToneSource()
        for i in 0..<frames {
            let frame = pool.makeFrame()!
            try TestPattern.draw(index: Int64(i), flash: false, into: frame)
            try writer.appendVideo(frame, at: FrameRate(30).time(ofFrame: Int64(i)))
            if !writer.configuration.audio.isEmpty {
                var samples: [Float] = []
                for n in (i * 1600)..<((i + 1) * 1600) { let v = tone.value(atSample: Int64(n)); samples += [v, v] }
                try writer.appendAudio(AudioBuffer(format: AudioFormat(), presentationTime: MediaTime(value: Int64(i * 1600), timescale: 48_000),
                                                   data: samples.withUnsafeBytes { Array($0) }), track: 0)
            }
        }
        return try writer.finish()
    }

    /// Overwriting with a recording stopped before its first frame (a little audio at most)
    /// leaves the old file as it was: it used to be replaced by an audio-only stub.
    @Test func aRecordingWithoutItsVideoNeverReplacesAFile() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("keep.mp4")
        _ = try write(AssetWriter(configuration: configuration(url, audio: true)), frames: 30)
        let before = try Data(contentsOf: url)
        var settings = configuration(url, audio: true)
        settings.overwrite = true
        let writer = try AssetWriter(configuration: settings)
        var samples: [Float] = []
        for n in 0..<4800 { let v = ToneSource().value(atSample: Int64(n)); samples += [v, v] }
        try writer.appendAudio(AudioBuffer(format: AudioFormat(), presentationTime: .zero, data: samples.withUnsafeBytes { Array($0) }), track: 0)
        let error = #expect(throws: ReelError.self) { try writer.finish() }
        #expect(error?.code == .nothingRecorded)
        #expect(try Data(contentsOf: url) == before, "the old recording was replaced")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.url.path)
        #expect(names == ["keep.mp4"], "\(names)")
    }

    @Test(arguments: [(VideoCodec.h264, Container.mp4), (.hevc, .mp4), (.vp9, .mkv), (.h264, .mov), (.av1, .mkv)])
    func writesEachCodecAndContainer(_ codec: VideoCodec, _ container: Container) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("out.\(container.fileExtension)")
        let summary = try write(try AssetWriter(configuration: configuration(url, codec: codec, container: container)), frames: 30)
        #expect(summary.videoFrames == 30)
        let probe = try MediaProbe.probe(url)
        let expected = ["h264": "h264", "hevc": "hevc", "vp9": "vp9", "av1": "av1"][codec.rawValue]
        #expect(probe.videoStreams.first?.codec == expected)
        #expect(probe.videoStreams.first?.frameCount == 30)
        #expect(probe.audioStreams.first?.codec == (container == .mkv ? "opus" : "aac"))
        let counters = try MediaProbe.decodeLuma(url, width: 160, height: 120).map(\.counter)
        #expect(counters == (0..<30).map { Int64($0) })
    }

    @Test func neverReplacesAnExistingFile() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("exists.mp4")
        try Data("keep me".utf8).write(to: url)
        #expect { try AssetWriter(configuration: configuration(url)) } throws: { ($0 as? ReelError)?.code == .fileExists }
        #expect(try Data(contentsOf: url) == Data("keep me".utf8))
        var replace = configuration(url)
        replace.overwrite = true
        #expect(try write(try AssetWriter(configuration: replace), frames: 5).videoFrames == 5)
    }

    @Test func refusesWhatTheContainerCannotHold() throws {
        let dir = try TemporaryDirectory()
        #expect { try AssetWriter(configuration: configuration(dir.url.appendingPathComponent("x.mov"), codec: .vp9)) }
            throws: { ($0 as? ReelError)?.code == .unsupportedFormat }
        #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("x.mov").path))
    }

    @Test func finishedMP4HasItsIndexFirstAndExactDuration() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("fast.mp4")
        _ = try write(try AssetWriter(configuration: configuration(url)), frames: 60)
        let head = try FileHandle(forReadingFrom: url).read(upToCount: 4096) ?? Data()
        let moov = try #require(head.range(of: Data("moov".utf8)))
        let mdat = head.range(of: Data("mdat".utf8))
        #expect(mdat == nil || moov.lowerBound < mdat!.lowerBound)
        let probe = try MediaProbe.probe(url)
        #expect(abs((probe.videoStreams.first?.duration ?? 0) - 2.0) < 0.001)
        #expect(abs((probe.audioStreams.first?.duration ?? 0) - 2.0) < 0.03)
        let audioStart = try MediaProbe.packetTimes(url, stream: "a:0").first ?? 1
        #expect(audioStart <= 0, "priming sits before zero, hidden by the edit list")
    }

    /// An encoder that makes no B-frames although its preset would (a keyframe every frame)
    /// starts decoding at its first picture: the MP4 shows that picture at zero, the rest in
    /// step (it cut the first off with the lead, and showed every other one frame early).
    @Test(arguments: [nil, 1, 2])
    func everyPictureIsShownAtItsTimeWhateverTheEncoderDelays(keyframeInterval: Int?) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("k.mp4")
        var configuration = configuration(url)
        configuration.video?.settings.preset = "veryfast"
        configuration.video?.settings.keyframeInterval = keyframeInterval
        _ = try write(try AssetWriter(configuration: configuration), frames: 30)
        let shown = try MediaProbe.frameTimes(url)
        #expect(shown.count == 30)
        #expect(zip(shown, (0..<30).map { Double($0) / 30 }).allSatisfy { abs($0 - $1) < 0.001 }, "\(shown.prefix(4))")
        let audioStart = try MediaProbe.packetTimes(url, stream: "a:0").first ?? 1
        #expect(audioStart <= 0)
    }

    @Test func anAbandonedFileKeepsItsCompleteFragments() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("cut.mp4")
        var config = configuration(url, audio: false)
        config.fragmentInterval = MediaTime(value: 1, timescale: 2)
        let writer = try AssetWriter(configuration: config)
        let pool = FramePool(format: .yuv420p, size: size, capacity: 2)
        for i in 0..<90 {
            let frame = pool.makeFrame()!
            try TestPattern.draw(index: Int64(i), flash: false, into: frame)
            try writer.appendVideo(frame, at: FrameRate(30).time(ofFrame: Int64(i)))
        }
        writer.cancelWriting()
        let counters = try MediaProbe.decodeLuma(url, width: 160, height: 120).compactMap(\.counter)
        #expect(counters.count >= 60, "all but the last half-second fragment")
        #expect(counters == (0..<Int64(counters.count)).map { $0 })
    }

    /// A frame whose size changed mid-recording, or of another pixel format, is refused with an
    /// error that says so (it used to stop the process on a precondition); nothing of it is
    /// written, and frames that fit go on into a file that plays.
    @Test func aFrameThatDoesNotFitTheTrackIsRefused() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("fits.mp4")
        let writer = try AssetWriter(configuration: configuration(url, audio: false))
        let pool = FramePool(format: .yuv420p, size: size, capacity: 2)
        let first = try #require(pool.makeFrame())
        try TestPattern.draw(index: 0, flash: false, into: first)
        try writer.appendVideo(first, at: .zero)
        let larger = try #require(FramePool(format: .yuv420p, size: PixelSize(width: 320, height: 240), capacity: 1).makeFrame())
        let resized = #expect(throws: ReelError.self) { try writer.appendVideo(larger, at: FrameRate(30).time(ofFrame: 1)) }
        #expect(resized?.code == .invalidConfiguration)
        #expect(resized?.message.contains("size changed from 160x120 to 320x240") == true, "\(String(describing: resized))")
        let bgra = try #require(FramePool(format: .bgra, size: size, capacity: 1).makeFrame())
        let reformatted = #expect(throws: ReelError.self) { try writer.appendVideo(bgra, at: FrameRate(30).time(ofFrame: 1)) }
        #expect(reformatted?.code == .invalidConfiguration)
        #expect(reformatted?.message.contains("pixel format is bgra") == true, "\(String(describing: reformatted))")
        #expect(writer.videoFrameCount == 1)
        let second = try #require(pool.makeFrame())
        try TestPattern.draw(index: 1, flash: false, into: second)
        #expect(try writer.appendVideo(second, at: FrameRate(30).time(ofFrame: 1)), "the refused frames took no slot")
        let summary = try writer.finish()
        #expect(summary.videoFrames == 2)
        #expect(try MediaProbe.decodeLuma(url, width: 160, height: 120).map(\.counter) == [0, 1])
    }

    /// Audio of another format than its track takes is refused with an error (it used to stop
    /// the process on a precondition), and the track goes on with audio that fits.
    @Test func audioThatDoesNotFitTheTrackIsRefused() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("sound.mp4")
        let writer = try AssetWriter(configuration: configuration(url))
        let mono = AudioFormat(sampleFormat: .s16, sampleRate: 44_100, channels: 1)
        let wrong = AudioBuffer.silence(format: mono, frameCount: 441, at: .zero)
        let error = #expect(throws: ReelError.self) { try writer.appendAudio(wrong, track: 0) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("\(mono)") == true, "\(String(describing: error))")
        let summary = try write(writer, frames: 15)
        #expect(summary.audioSamples.first.map { $0 >= 15 * 1600 - 1024 } == true, "\(summary.audioSamples)")
    }
}

/// Camera formats keep their levels through the encoder: limited-range YUYV and NV12 are not
/// taken for full range (which would squeeze black and white towards grey).
@Suite struct CameraFormatLevelTests {
    @Test(arguments: [PixelFormat.yuyv, .nv12])
    func yuvCameraFramesKeepTheirLevels(_ format: PixelFormat) throws {
        let size = PixelSize(width: 64, height: 48)
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("levels.mkv")
        var video = VideoSettings()
        video.preset = "ultrafast"
        video.rateControl = .crf(0)
        video.size = PixelSize(width: 32, height: 24)  // scaled on the way in, where the range matters
        let writer = try AssetWriter(configuration: .init(url: url, container: .mkv,
                                                          video: .init(settings: video, inputFormat: format, inputSize: size), audio: []))
        let pool = FramePool(format: format, size: size, capacity: 2)
        let levels: [YUVColor] = [YUVColor(y: 16, cb: 128, cr: 128), YUVColor(y: 235, cb: 128, cr: 128), YUVColor(y: 120, cb: 90, cr: 170)]
        for (i, colour) in levels.enumerated() {
            let frame = try #require(pool.makeFrame())
            frame.fill(with: colour)
            _ = try writer.appendVideo(frame, at: FrameRate(30).time(ofFrame: Int64(i)))
        }
        _ = try writer.finish()
        let raw = try Subprocess.run(["ffmpeg", "-v", "error", "-i", url.path, "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"])
        let bytes = [UInt8](raw.stdout)
        let frameBytes = 32 * 24 * 3 / 2
        #expect(bytes.count == frameBytes * levels.count)
        for (i, colour) in levels.enumerated() where bytes.count >= frameBytes * (i + 1) {
            let y = Int(bytes[frameBytes * i + 32 * 12 + 16])
            let cb = Int(bytes[frameBytes * i + 32 * 24 + 16 * 6 + 8])
            let cr = Int(bytes[frameBytes * i + 32 * 24 + 16 * 12 + 16 * 6 + 8])
            #expect(abs(y - Int(colour.y)) <= 2 && abs(cb - Int(colour.cb)) <= 2 && abs(cr - Int(colour.cr)) <= 2,
                    "\(format) frame \(i): got Y\(y) Cb\(cb) Cr\(cr), wanted \(colour)")
        }
    }
}

extension AssetWriterTests {
    /// Audio lands where its timestamps say, on a session started at a source time, as with
    /// `AVAssetWriter`: a gap is silent, an overlap and what came before the start are left out.
    @Test func audioFollowsItsTimestampsFromTheSessionsStart() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("timed.mp4")
        let writer = try AssetWriter(configuration: configuration(url))
        let start = MediaTime(seconds: 100)
        writer.startSession(atSourceTime: start)
        let tone = ToneSource()
        func toneBuffer(from: Double, seconds: Double) throws -> AudioBuffer {
            var samples: [Float] = []
            for n in 0..<Int(seconds * 48_000) { let v = tone.value(atSample: Int64(n)); samples += [v, v] }
            return try AudioBuffer(format: AudioFormat(), presentationTime: start + MediaTime(seconds: from), data: samples.withUnsafeBytes { Array($0) })
        }
        let pool = FramePool(format: .yuv420p, size: size, capacity: 2)
        for i in -15..<60 {   // half a second before the start, which is left out
            let frame = pool.makeFrame(presentationTime: start + FrameRate(30).time(ofFrame: Int64(i)))!
            try TestPattern.draw(index: Int64(i + 15), flash: false, into: frame)
            #expect(try writer.appendVideo(frame) == (i >= 0))
        }
        try writer.appendAudio(try toneBuffer(from: -0.25, seconds: 0.75), track: 0)   // 0 to 0.5 s in the file
        try writer.appendAudio(try toneBuffer(from: 1.0, seconds: 0.5), track: 0)      // after a gap of 0.5 s
        try writer.appendAudio(try toneBuffer(from: 1.25, seconds: 0.75), track: 0)    // overlaps by 0.25 s
        let summary = try writer.finish()
        #expect(summary.audioSamples == [96_000])
        #expect(summary.videoFrames == 60)
        let counters = try MediaProbe.decodeLuma(url, width: 160, height: 120).map(\.counter)
        #expect(counters == (15..<75).map { Optional(Int64($0)) }, "the frames from the start on, at their times")
        let audio = try MediaProbe.decodeAudio(url)
        #expect(abs(Double(audio.count) / 48_000 - 2) < 0.03)
        func rms(_ from: Double, _ to: Double) -> Double { ToneAnalysis.rms(of: Array(audio[Int(from * 48_000)..<Int(to * 48_000)])) }
        #expect(rms(0.05, 0.45) > 0.05, "the tone from the start")
        #expect(rms(0.55, 0.95) < 0.001, "the gap is silent")
        #expect(rms(1.05, 1.95) > 0.05, "the tone after the gap, the overlap left out")
    }
}
