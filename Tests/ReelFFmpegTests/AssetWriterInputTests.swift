import Foundation
import Synchronization
import Testing
import ReelCore
import ReelFFmpeg
import ReelTestSupport

/// `AssetWriter` in `AVAssetWriter`'s shape: a ported writing loop, and the misuses Apple
/// answers with exceptions, which fail the writer here.
@Suite struct AssetWriterInputTests {
    static let size = PixelSize(width: 160, height: 120)
    static let sessionStart = MediaTime(seconds: 100)

    static func videoSettings() -> VideoSettings {
        var settings = VideoSettings(codec: .h264, size: size, frameRate: FrameRate(30))
        settings.preset = "ultrafast"
        return settings
    }

    /// Test-pattern frame `index` (its counter), drawn at 320x240 and turned into BGRA: twice the
    /// track's size, in another pixel format.
    static func bgraPatternFrame(_ index: Int64, at time: MediaTime) throws -> VideoFrame {
        let big = PixelSize(width: 320, height: 240)
        let yuv = try VideoFrame(format: .yuv420p, size: big) { _, _, _ in }
        try TestPattern.draw(index: index, flash: false, into: yuv)
        let bgra = try VideoFrame(format: .bgra, size: big, presentationTime: time) { _, _, _ in }
        try FrameScaler().draw(yuv, into: bgra, at: PixelRect(x: 0, y: 0, width: big.width, height: big.height))
        return bgra
    }

    /// `seconds` of the tone from source time `from` (48 kHz stereo float).
    static func tone(from: MediaTime, seconds: Double) throws -> AudioBuffer {
        let tone = ToneSource()
        var samples: [Float] = []
        for n in 0..<Int(seconds * 48_000) { let v = tone.value(atSample: Int64(n)); samples += [v, v] }
        return try AudioBuffer(format: AudioFormat(), presentationTime: from, data: samples.withUnsafeBytes { Array($0) })
    }

    /// A writer for `url` with a video input (and an audio one if `audio`), writing, its
    /// session started at ``sessionStart``.
    static func startedWriter(_ url: URL, audio: Bool = false) throws -> (AssetWriter, AssetWriterInput, AssetWriterInput?) {
        let writer = try AssetWriter(outputURL: url, fileType: .mp4)
        let video = AssetWriterInput(mediaType: .video, outputSettings: videoSettings())
        writer.add(video)
        let sound = audio ? AssetWriterInput(mediaType: .audio, outputSettings: AudioSettings(codec: .aac)) : nil
        if let sound { writer.add(sound) }
        #expect(writer.startWriting())
        writer.startSession(atSourceTime: sessionStart)
        return (writer, video, sound)
    }

    /// Frames `from..<from + count` of the pattern at the session's start plus their grid times.
    static func append(_ count: Int, from: Int = 0, to input: AssetWriterInput) throws {
        for i in from..<(from + count) {
            let time = sessionStart + FrameRate(30).time(ofFrame: Int64(i))
            #expect(input.append(try bgraPatternFrame(Int64(i), at: time)))
        }
    }

    /// The loop of an app that used `AVAssetWriter`: inputs added, writing started, a session at
    /// a source time of 100 s, each input fed from its own queue by `requestMediaDataWhenReady`
    /// with BGRA frames of twice the size (some missing) and audio, marked finished, the file
    /// finished. Every frame is in the file at its time from the session's start, at the track's
    /// size, and so is the sound.
    @Test(.timeLimit(.minutes(1))) func aPortedWritingLoopPutsEveryFrameAtItsTime() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("ported.mp4")
        let writer = try AssetWriter(outputURL: url, fileType: .mp4)
        #expect(writer.status == .unknown)
        let videoInput = AssetWriterInput(mediaType: .video, outputSettings: Self.videoSettings())
        let audioInput = AssetWriterInput(mediaType: .audio, outputSettings: AudioSettings(codec: .aac))
        let adaptor = AssetWriterInputPixelBufferAdaptor(assetWriterInput: videoInput)
        #expect(!videoInput.isReadyForMoreMediaData, "not before the writer writes")
        for input in [videoInput, audioInput] {
            #expect(writer.canAdd(input))
            writer.add(input)
        }
        #expect(!writer.canAdd(videoInput), "an input is added once")
        #expect(writer.startWriting())
        #expect(writer.status == .writing)
        writer.startSession(atSourceTime: Self.sessionStart)

        // Frames 10 to 14 never come: the others keep their times.
        let indices: [Int64] = Array(0..<10) + Array(15..<45)
        let frames = Mutex(indices[...])
        let sound = Mutex((0..<15).map { Self.sessionStart + MediaTime(value: Int64($0) * 4800, timescale: 48_000) }[...])
        let group = DispatchGroup()
        group.enter()
        videoInput.requestMediaDataWhenReady(on: DispatchQueue(label: "video")) {
            while videoInput.isReadyForMoreMediaData {
                guard let i = frames.withLock({ $0.popFirst() }),
                      let frame = try? Self.bgraPatternFrame(i, at: Self.sessionStart + FrameRate(30).time(ofFrame: i)),
                      adaptor.append(frame, withPresentationTime: frame.presentationTime) else {
                    videoInput.markAsFinished(); group.leave(); return
                }
            }
        }
        group.enter()
        audioInput.requestMediaDataWhenReady(on: DispatchQueue(label: "audio")) {
            while audioInput.isReadyForMoreMediaData {
                guard let time = sound.withLock({ $0.popFirst() }), let buffer = try? Self.tone(from: time, seconds: 0.1),
                      audioInput.append(buffer) else {
                    audioInput.markAsFinished(); group.leave(); return
                }
            }
        }
        await withCheckedContinuation { done in group.notify(queue: .global()) { done.resume() } }
        #expect(frames.withLock { $0.isEmpty } && sound.withLock { $0.isEmpty }, "every sample was taken")
        await writer.finishWriting()
        #expect(writer.status == .completed, "\(String(describing: writer.error))")
        #expect(writer.error == nil)
        #expect(writer.summary?.videoFrames == 40)

        let probed = try MediaProbe.probe(url)
        #expect(probed.videoStreams.first?.width == 160 && probed.videoStreams.first?.height == 120)
        #expect(probed.audioStreams.first?.codec == "aac")
        let decoded = try MediaProbe.decodeLuma(url, width: 160, height: 120)
        let times = try MediaProbe.frameTimes(url)
        #expect(decoded.map(\.counter) == indices.map { Optional($0) }, "every frame, in order, readable after scaling")
        #expect(times.count == decoded.count)
        for (frame, time) in zip(decoded, times) {
            let wanted = Double(frame.counter ?? -1) / 30
            #expect(abs(time - wanted) < 0.002, "frame \(String(describing: frame.counter)) at \(time) s, not \(wanted) s")
        }
        let audio = try MediaProbe.decodeAudio(url)
        #expect(abs(Double(audio.count) / 48_000 - 1.5) < 0.03, "1.5 s of sound from the session's start")
        #expect(ToneAnalysis.rms(of: Array(audio[2400..<(48_000 + 24_000)])) > 0.05, "the tone throughout")
    }

    /// Appending before `startWriting()` fails the writer (`AVAssetWriter` raises an
    /// exception): `false`, `.failed`, an error that says so; no file is made.
    @Test func appendingBeforeTheStartFailsTheWriter() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("early.mp4")
        let writer = try AssetWriter(outputURL: url)
        let input = AssetWriterInput(mediaType: .video, outputSettings: Self.videoSettings())
        writer.add(input)
        #expect(!input.append(try Self.bgraPatternFrame(0, at: Self.sessionStart)))
        #expect(writer.status == .failed)
        let error = try #require(writer.error as? ReelError)
        #expect(error.code == .notRunning && error.message.contains("before startWriting()"), "\(error)")
        #expect(!writer.startWriting(), "a failed writer does not start")
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    /// Appending after `startWriting()` but before the session starts fails the writer, as does a
    /// second `startSession`.
    @Test func appendingBeforeTheSessionOrStartingItTwiceFailsTheWriter() throws {
        let dir = try TemporaryDirectory()
        let writer = try AssetWriter(outputURL: dir.url.appendingPathComponent("nosession.mp4"))
        let input = AssetWriterInput(mediaType: .video, outputSettings: Self.videoSettings())
        writer.add(input)
        #expect(writer.startWriting())
        #expect(!input.append(try Self.bgraPatternFrame(0, at: Self.sessionStart)))
        #expect(writer.status == .failed)
        #expect((writer.error as? ReelError)?.message.contains("before startSession(atSourceTime:)") == true)

        let (second, _, _) = try Self.startedWriter(dir.url.appendingPathComponent("twice.mp4"))
        second.startSession(atSourceTime: .zero)
        #expect(second.status == .failed)
        #expect((second.error as? ReelError)?.code == .alreadyRunning)
    }

    /// Adding an input once writing has started fails the writer, and what was appended before
    /// is finished into a file that plays.
    @Test func addingAnInputAfterTheStartFailsTheWriterAndKeepsTheFile() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("late.mp4")
        let (writer, video, _) = try Self.startedWriter(url)
        try Self.append(12, to: video)
        let late = AssetWriterInput(mediaType: .audio, outputSettings: AudioSettings(codec: .aac))
        #expect(!writer.canAdd(late))
        writer.add(late)
        #expect(writer.status == .failed)
        let error = try #require(writer.error as? ReelError)
        #expect(error.code == .alreadyRunning && error.message.contains("before startWriting()"), "\(error)")
        #expect(!video.isReadyForMoreMediaData)
        #expect(try MediaProbe.decodeLuma(url, width: 160, height: 120).map(\.counter) == (0..<12).map { Optional(Int64($0)) })
    }

    /// Appending after `markAsFinished()` fails the writer, the file keeping every frame before.
    @Test func appendingAfterMarkAsFinishedFailsTheWriter() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("finished.mp4")
        let (writer, video, audio) = try Self.startedWriter(url, audio: true)
        try Self.append(6, to: video)
        video.markAsFinished()
        #expect(!video.isReadyForMoreMediaData)
        #expect(audio?.isReadyForMoreMediaData == true, "the other input goes on")
        #expect(!video.append(try Self.bgraPatternFrame(6, at: Self.sessionStart + FrameRate(30).time(ofFrame: 6))))
        #expect(writer.status == .failed)
        #expect((writer.error as? ReelError)?.message.contains("marked finished") == true)
        #expect(audio?.isReadyForMoreMediaData == false)
        #expect(try MediaProbe.decodeLuma(url, width: 160, height: 120).map(\.counter) == (0..<6).map { Optional(Int64($0)) })
    }

    /// A second `finishWriting()` (an exception for `AVAssetWriter`) leaves the completed file
    /// and the status as they are; appending afterwards is refused without failing it.
    @Test func aSecondFinishWritingChangesNothing() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("twice.mp4")
        let (writer, video, _) = try Self.startedWriter(url)
        try Self.append(5, to: video)
        await writer.finishWriting()
        #expect(writer.status == .completed)
        let bytes = try Data(contentsOf: url)
        await writer.finishWriting()
        #expect(writer.status == .completed && writer.error == nil)
        #expect(!video.append(try Self.bgraPatternFrame(5, at: Self.sessionStart + FrameRate(30).time(ofFrame: 5))))
        #expect(writer.status == .completed)
        #expect(throws: ReelError.self) { try writer.finish() }
        #expect(try Data(contentsOf: url) == bytes)
    }

    /// A file at the URL is never written over unless asked: the writer refuses to be made, or,
    /// for a file put there after it was made, fails to start; with `overwrite` it is replaced.
    @Test func anExistingFileIsNeverOverwrittenUnlessAsked() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("precious.mp4")
        let precious = Data("someone's recording".utf8)
        try precious.write(to: url)
        #expect { try AssetWriter(outputURL: url) } throws: { ($0 as? ReelError)?.code == .fileExists }

        let other = dir.url.appendingPathComponent("appears.mp4")
        let writer = try AssetWriter(outputURL: other)
        writer.add(AssetWriterInput(mediaType: .video, outputSettings: Self.videoSettings()))
        try precious.write(to: other)
        #expect(!writer.startWriting())
        #expect(writer.status == .failed)
        #expect((writer.error as? ReelError)?.code == .fileExists)
        #expect(try Data(contentsOf: other) == precious)
        #expect(try Data(contentsOf: url) == precious)

        let replacing = try AssetWriter(outputURL: url, overwrite: true)
        let video = AssetWriterInput(mediaType: .video, outputSettings: Self.videoSettings())
        replacing.add(video)
        #expect(replacing.startWriting())
        replacing.startSession(atSourceTime: Self.sessionStart)
        try Self.append(3, to: video)
        await replacing.finishWriting()
        #expect(replacing.status == .completed)
        #expect(try MediaProbe.probe(url).videoStreams.count == 1)
    }

    /// Inputs that cannot be added say so before the start: a video input without a size, a
    /// second video input, settings for the other kind of media.
    @Test func inputsThatCannotBeAddedAreRefused() throws {
        let dir = try TemporaryDirectory()
        let writer = try AssetWriter(outputURL: dir.url.appendingPathComponent("refused.mp4"))
        #expect(!writer.canAdd(AssetWriterInput(mediaType: .video, outputSettings: VideoSettings(codec: .h264))))
        #expect(!writer.canAdd(AssetWriterInput(mediaType: .audio, outputSettings: Self.videoSettings())))
        #expect(!writer.canAdd(AssetWriterInput(mediaType: .video, outputSettings: AudioSettings())))
        writer.add(AssetWriterInput(mediaType: .video, outputSettings: Self.videoSettings()))
        #expect(!writer.canAdd(AssetWriterInput(mediaType: .video, outputSettings: Self.videoSettings())))
        #expect(writer.status == .unknown, "asking changes nothing")
        writer.add(AssetWriterInput(mediaType: .video, outputSettings: VideoSettings(codec: .h264)))
        #expect(writer.status == .failed)
        #expect((writer.error as? ReelError)?.message.contains("needs a size") == true)
    }

    /// A frame of another shape keeps its aspect ratio by default (black bars), fills the track
    /// cut to its shape with `.resizeAspectFill`, and is stretched with `.resize`.
    @Test(arguments: [AssetWriterInput.ScalingMode.resizeAspect, .resizeAspectFill, .resize])
    func aFrameOfAnotherShapeIsFittedByTheScalingMode(_ mode: AssetWriterInput.ScalingMode) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("fitted.mp4")
        let writer = try AssetWriter(outputURL: url)
        let input = AssetWriterInput(mediaType: .video, outputSettings: Self.videoSettings(), scalingMode: mode)
        writer.add(input)
        #expect(writer.startWriting())
        writer.startSession(atSourceTime: .zero)
        // 320x80, 4:1: white, with a black band a quarter wide at each end.
        let wide = try VideoFrame(format: .bgra, size: PixelSize(width: 320, height: 80)) { _, bytes, stride in
            for y in 0..<80 {
                for x in 0..<320 {
                    let level: UInt8 = (x < 80 || x >= 240) ? 0 : 255
                    for c in 0..<3 { bytes[y * stride + x * 4 + c] = level }
                    bytes[y * stride + x * 4 + 3] = 255
                }
            }
        }
        #expect(input.append(wide, withPresentationTime: .zero))
        await writer.finishWriting()
        let picture = try #require(try MediaProbe.decodeLuma(url, width: 160, height: 120).first)
        func luma(_ x: Int, _ y: Int) -> Double { picture.meanLuma(in: PixelRect(x: x, y: y, width: 4, height: 4)) }
        switch mode {
        case .resizeAspect:   // 160x40 in the middle: bars above and below, the ends' black bands within
            #expect(luma(78, 8) < 30 && luma(78, 108) < 30, "black bars above and below")
            #expect(luma(78, 58) > 200, "the white middle")
            #expect(luma(10, 58) < 30, "the frame's own black end band")
        case .resizeAspectFill:   // the middle 107x80 of the frame (all white) covers the track
            #expect(luma(4, 58) > 200 && luma(152, 58) > 200 && luma(78, 4) > 200, "white to the edges")
        case .resize:   // stretched: the end bands are 40 wide, full height
            #expect(luma(10, 4) < 30 && luma(10, 112) < 30, "the end band from top to bottom")
            #expect(luma(78, 4) > 200, "white to the top")
        }
    }

    /// Audio of another sample format, rate and channel count (16-bit mono at 44.1 kHz, as an
    /// app's sound may come) is converted to the input's source format: the file holds it at its
    /// times. A 16-bit source format takes only its own.
    @Test func audioOfAnotherFormatIsConverted() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("converted.mp4")
        let (writer, video, audio) = try Self.startedWriter(url, audio: true)
        let input = try #require(audio)
        let format = AudioFormat(sampleFormat: .s16, sampleRate: 44_100, channels: 1)
        let tone = ToneSource()
        for k in 0..<10 {   // 1 s in tenths, from the session's start
            let samples = (0..<4410).map { n in Int16(tone.value(atSample: Int64(k * 4410 + n)) * 32_000) }
            let buffer = try AudioBuffer(format: format, presentationTime: Self.sessionStart + MediaTime(value: Int64(k) * 4410, timescale: 44_100),
                                         data: samples.withUnsafeBytes { Array($0) })
            #expect(input.append(buffer), "\(String(describing: writer.error))")
        }
        try Self.append(30, to: video)
        await writer.finishWriting()
        #expect(writer.status == .completed, "\(String(describing: writer.error))")
        let sound = try MediaProbe.decodeAudio(url)
        #expect(abs(Double(sound.count) / 48_000 - 1) < 0.03, "1 s of sound")
        #expect(ToneAnalysis.rms(of: Array(sound[2400..<45_600])) > 0.05, "the tone throughout")

        let hinted = try AssetWriter(outputURL: dir.url.appendingPathComponent("hinted.mp4"))
        let pcm = AssetWriterInput(mediaType: .audio, outputSettings: AudioSettings(codec: .aac),
                                   sourceFormatHint: AudioFormat(sampleFormat: .s16, sampleRate: 48_000, channels: 2))
        hinted.add(pcm)
        #expect(hinted.startWriting())
        hinted.startSession(atSourceTime: .zero)
        #expect(!pcm.append(try Self.tone(from: .zero, seconds: 0.1)))
        #expect(hinted.status == .failed)
        #expect((hinted.error as? ReelError)?.code == .invalidConfiguration)
    }

    /// An input fed faster than another waits (not ready) once its media is more than a second
    /// ahead, as `AVAssetWriter` interleaves; it is ready again when the other catches up or is
    /// finished. An input whose media comes in real time never waits.
    @Test func anInputRunningAheadOfAnotherWaitsForIt() throws {
        let dir = try TemporaryDirectory()
        let (writer, video, audio) = try Self.startedWriter(dir.url.appendingPathComponent("paced.mp4"), audio: true)
        let sound = try #require(audio)
        try Self.append(30, to: video)   // 1 s: at the limit
        #expect(video.isReadyForMoreMediaData)
        try Self.append(15, from: 30, to: video)   // 1.5 s ahead of no sound
        #expect(!video.isReadyForMoreMediaData, "ahead by 1.5 s")
        #expect(sound.isReadyForMoreMediaData)
        #expect(sound.append(try Self.tone(from: Self.sessionStart, seconds: 0.75)))
        #expect(video.isReadyForMoreMediaData, "0.75 s behind it")
        try Self.append(45, from: 45, to: video)   // to 3 s
        #expect(!video.isReadyForMoreMediaData)
        sound.markAsFinished()
        #expect(video.isReadyForMoreMediaData, "nothing to wait for")
        #expect(writer.status == .writing)

        let (live, camera, microphone) = try Self.startedWriter(dir.url.appendingPathComponent("live.mp4"), audio: true)
        camera.expectsMediaDataInRealTime = true
        try Self.append(60, to: camera)
        #expect(camera.isReadyForMoreMediaData, "a capture never waits")
        #expect(microphone?.isReadyForMoreMediaData == true)
        live.cancelWriting()
        #expect(!camera.isReadyForMoreMediaData)
    }
}
