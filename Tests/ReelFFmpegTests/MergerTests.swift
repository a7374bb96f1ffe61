import Foundation
import Testing
import ReelCore
@testable import ReelFFmpeg
import ReelTestSupport

/// Clips made like the recorder makes them (H.264 with B-frames and AAC in MP4, or Opus in
/// MKV), from the test pattern and the tone. Clip `k` counts its frames from `1000 * (k + 1)`,
/// and each clip beeps and flashes at 0.5 s and 1.5 s of its own time, so that a merged file
/// shows whether any frame went missing or came twice and whether sound and picture stay
/// together across every join.
struct ClipMaker {
    static let size = PixelSize(width: 320, height: 240)
    static let rate = FrameRate(30)
    static let beeps = BeepSchedule()

    let folder: URL
    var container: Container = .mp4
    var preset = "veryfast"
    var codec: VideoCodec = .h264
    /// The audio codec; `nil` takes Opus for MKV and AAC otherwise.
    var audioCodec: AudioCodec?
    var hasAudio = true

    /// The first counter of clip `k`.
    static func firstCounter(_ k: Int) -> Int64 { Int64(1000 * (k + 1)) }

    /// Writes clip `k` of `frames` frames and returns its file.
    @discardableResult
    func make(_ k: Int, frames: Int, size: PixelSize = ClipMaker.size, name: String? = nil) throws -> URL {
        let url = folder.appendingPathComponent(name ?? "clip\(k + 1).\(container.fileExtension)")
        var video = VideoSettings(codec: codec, frameRate: Self.rate)
        video.preset = preset
        let audio = AssetWriter.AudioTrack(settings: AudioSettings(codec: audioCodec ?? (container == .mkv ? .opus : .aac)),
                                           inputFormat: AudioFormat(), title: "Tone")
        let writer = try AssetWriter(configuration: AssetWriter.Configuration(
            url: url, container: container,
            video: AssetWriter.VideoTrack(settings: video, inputFormat: .yuv420p, inputSize: size), audio: hasAudio ? [audio] : []))
        let pool = FramePool(format: .yuv420p, size: size, capacity: 2)
        let tone = ToneSource()
        for i in 0..<frames {
            let time = Self.rate.time(ofFrame: Int64(i))
            let frame = pool.makeFrame()!
            try TestPattern.draw(index: Self.firstCounter(k) + Int64(i), flash: Self.beeps.isBeeping(at: time), into: frame)
            try writer.appendVideo(frame, at: time)
            guard hasAudio else { continue }
            var samples: [Float] = []
            samples.reserveCapacity(3200)
            for n in (i * 1600)..<((i + 1) * 1600) { let v = tone.value(atSample: Int64(n)); samples += [v, v] }
            try writer.appendAudio(AudioBuffer(format: AudioFormat(), presentationTime: MediaTime(value: Int64(i * 1600), timescale: 48_000),
                                               data: samples.withUnsafeBytes { Array($0) }), track: 0)
        }
        _ = try writer.finish()
        return url
    }

    /// The counters the clips of `frames` frames show, one after the other.
    static func counters(_ frames: [Int]) -> [Int64] {
        frames.enumerated().flatMap { k, n in (0..<Int64(n)).map { firstCounter(k) + $0 } }
    }

    /// The times (seconds) at which beeps and flashes start in clips of `frames` frames, one
    /// after the other.
    static func beepTimes(_ frames: [Int]) -> [Double] {
        var times: [Double] = []
        var start = 0.0
        for n in frames {
            let length = Double(n) / 30
            for b in 0..<10 {
                let t = beeps.beepTime(b).seconds
                if t + 2.0 / 30 <= length + 1e-9 { times.append(start + t) }  // flashes for two frames at least
            }
            start += length
        }
        return times
    }
}

/// Checks of a merged file: frames, timestamps, and sound against picture.
enum MergedFile {
    /// The times (seconds) of the frames that start a flash.
    static func flashOnsets(_ frames: [MediaProbe.LumaFrame]) -> [Double] {
        var onsets: [Double] = []
        var previous = false
        for (i, frame) in frames.enumerated() {
            let flash = frame.isFlash
            if flash && !previous { onsets.append(Double(i) / 30) }
            previous = flash
        }
        return onsets
    }

    /// Every beep starts within 40 ms of a flash and the other way round.
    static func expectInSync(_ url: URL, expected: [Double], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let flashes = flashOnsets(try MediaProbe.decodeLuma(url, width: 320, height: 240))
        let beeps = MediaProbe.beepOnsets(try MediaProbe.decodeAudio(url))
        #expect(flashes.count == expected.count, "flashes at \(flashes), expected \(expected)", sourceLocation: sourceLocation)
        #expect(beeps.count == expected.count, "beeps at \(beeps), expected \(expected)", sourceLocation: sourceLocation)
        for (flash, want) in zip(flashes, expected) {
            #expect(abs(flash - want) < 0.001, "flash at \(flash), expected \(want)", sourceLocation: sourceLocation)
        }
        for (beep, flash) in zip(beeps, flashes) {
            #expect(abs(beep - flash) < 0.040, "beep at \(beep) s but flash at \(flash) s", sourceLocation: sourceLocation)
        }
    }

    /// Players that follow timestamps hear each clip's beeps on time too: audio decoded from a
    /// point in each clip (FFmpeg seeks by timestamps) beeps at the expected moments.
    static func expectBeepsByTimestamp(_ url: URL, frames: [Int], sourceLocation: SourceLocation = #_sourceLocation) throws {
        var start = 0.0
        for n in frames {
            let length = Double(n) / 30
            let from = start + 0.2
            let r = try Subprocess.run(["ffmpeg", "-v", "error", "-ss", String(from), "-i", url.path, "-map", "0:a:0",
                                        "-t", String(length - 0.2), "-ac", "1", "-ar", "48000", "-f", "f32le", "-"])
            let samples = r.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
            let beeps = MediaProbe.beepOnsets(samples).map { $0 + from }
            let expected = ClipMaker.beepTimes([n]).map { $0 + start }
            #expect(beeps.count == expected.count, "beeps at \(beeps), expected \(expected)", sourceLocation: sourceLocation)
            for (beep, want) in zip(beeps, expected) {
                // 5 ms analysis windows; Opus after a seek may keep its 6.5 ms pre-skip.
                #expect(abs(beep - want) < 0.015, "beep at \(beep) s by its timestamp, expected \(want) s", sourceLocation: sourceLocation)
            }
            start += length
        }
    }

    /// Presentation times of every stream rise strictly.
    static func expectRisingTimestamps(_ url: URL, sourceLocation: SourceLocation = #_sourceLocation) throws {
        for stream in ["v:0", "a:0"] {
            let times = try MediaProbe.packetTimes(url, stream: stream)
            #expect(!times.isEmpty, sourceLocation: sourceLocation)
            let repeats = zip(times, times.dropFirst()).filter { $0.1 <= $0.0 }
            #expect(repeats.isEmpty, "\(stream) timestamps repeat: \(repeats.prefix(5))", sourceLocation: sourceLocation)
        }
    }

    /// What is in `folder`, by name, with contents.
    static func snapshot(_ folder: URL) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
            files[name] = try Data(contentsOf: folder.appendingPathComponent(name))
        }
        return files
    }
}

@Suite struct MergerTests {
    /// Clip lengths that put the joins at different places within audio packets.
    let lengths = [60, 47, 73, 52, 61]

    @Test(arguments: [Container.mp4, .mkv])
    func compatibleClipsAreJoinedByCopying(_ container: Container) throws {
        let dir = try TemporaryDirectory()
        let maker = ClipMaker(folder: dir.url, container: container)
        let clips = try lengths.enumerated().map { try maker.make($0.offset, frames: $0.element) }
        let before = try MergedFile.snapshot(dir.url)
        let output = dir.url.appendingPathComponent("merged.\(container.fileExtension)")

        let summary = try Merger.merge(clips.map { MergeInput(url: $0) }, to: output)

        #expect(summary.reencodedClips.isEmpty, "joined by copying")
        #expect(summary.clipCount == 5)
        #expect(summary.videoFrames == Int64(lengths.reduce(0, +)))
        let total = Double(lengths.reduce(0, +)) / 30
        #expect(abs(summary.duration.seconds - total) < 0.001)
        #expect(summary.bytes > 0)
        let probe = try MediaProbe.probe(output)
        #expect(probe.videoStreams.first?.codec == "h264")
        #expect(probe.videoStreams.first?.width == 320)
        #expect(probe.videoStreams.first?.frameCount == lengths.reduce(0, +))
        #expect(probe.audioStreams.count == 1)
        #expect(probe.audioStreams.first?.title == "Tone")
        #expect(abs(probe.duration - total) < 1.0 / 30, "duration \(probe.duration) vs the clips' \(total)")
        if let video = probe.videoStreams.first?.duration { #expect(abs(video - total) < 1.0 / 30) }
        try MergedFile.expectRisingTimestamps(output)

        let counters = try MediaProbe.decodeLuma(output, width: 320, height: 240).map(\.counter)
        #expect(counters == ClipMaker.counters(lengths).map { Optional($0) }, "every frame once, in order")
        try MergedFile.expectInSync(output, expected: ClipMaker.beepTimes(lengths))
        try MergedFile.expectBeepsByTimestamp(output, frames: lengths)

        // The inputs are as they were; nothing but the output was added.
        var after = try MergedFile.snapshot(dir.url)
        #expect(after.removeValue(forKey: output.lastPathComponent) != nil)
        #expect(after == before)
    }

    @Test func mergedMP4HasItsIndexFirstAndKeepsTheFirstClipsPriming() throws {
        let dir = try TemporaryDirectory()
        let maker = ClipMaker(folder: dir.url)
        let clips = try [30, 30].enumerated().map { try maker.make($0.offset, frames: $0.element) }
        let output = dir.url.appendingPathComponent("merged.mp4")
        _ = try Merger.merge(clips.map { MergeInput(url: $0) }, to: output)
        let head = try FileHandle(forReadingFrom: output).read(upToCount: 1 << 16) ?? Data()
        let moov = try #require(head.range(of: Data("moov".utf8)))
        let mdat = head.range(of: Data("mdat".utf8))
        #expect(mdat == nil || moov.lowerBound < mdat!.lowerBound, "faststart")
        let audioStart = try MediaProbe.packetTimes(output, stream: "a:0").first ?? 1
        #expect(audioStart < 0, "the priming sits before zero, hidden by the edit list")
        #expect(try MediaProbe.packetTimes(output, stream: "v:0").first == 0)
    }

    /// Large merges reserve room for the index before the media data (one pass); small ones
    /// move it there at the end (a second pass). If a reservation were too small, the merge
    /// would be done again the second way.
    @Test(arguments: [4 << 20, 2000, 0])
    func theIndexComesFirstWhetherReservedOrMoved(_ reservation: Int) throws {
        let dir = try TemporaryDirectory()
        let maker = ClipMaker(folder: dir.url)
        let frames = [40, 50, 30]
        let clips = try frames.enumerated().map { try maker.make($0.offset, frames: $0.element) }
        let output = dir.url.appendingPathComponent("merged.mp4")
        let summary = try Merger.merge(clips.map { MergeInput(url: $0) }, to: output, options: MergeOptions(),
                                       indexReservation: reservation)
        #expect(summary.videoFrames == 120)
        let head = try FileHandle(forReadingFrom: output).read(upToCount: 1 << 16) ?? Data()
        let moov = try #require(head.range(of: Data("moov".utf8)))
        let mdat = try #require(try Data(contentsOf: output).range(of: Data("mdat".utf8)))
        #expect(moov.lowerBound < mdat.lowerBound)
        if reservation == 4 << 20 { #expect(mdat.lowerBound > 4 << 20, "the reserved room sits before the media data") }
        if reservation == 2000 { #expect(mdat.lowerBound < 1 << 20, "too small a reservation: the index was moved instead") }
        let counters = try MediaProbe.decodeLuma(output, width: 320, height: 240).map(\.counter)
        #expect(counters == ClipMaker.counters(frames).map { Optional($0) })
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).count == 4, "no temporary file is left")
    }

    @Test func aClipOfAnotherSizeIsRefusedNamingIt() throws {
        let dir = try TemporaryDirectory()
        let maker = ClipMaker(folder: dir.url)
        let clips = [try maker.make(0, frames: 30), try maker.make(1, frames: 30),
                     try maker.make(2, frames: 30, size: PixelSize(width: 640, height: 480), name: "big.mp4")]
        let before = try MergedFile.snapshot(dir.url)
        let output = dir.url.appendingPathComponent("merged.mp4")
        let error = try #require(throws: ReelError.self) { try Merger.merge(clips.map { MergeInput(url: $0) }, to: output) }
        #expect(error.code == .incompatibleClips)
        #expect(error.message == "clip 3 (big.mp4) is 640x480 but clip 1 is 320x240", "\(error.message)")
        #expect(error.hint?.contains(LibraryHint.allowReencoding) == true)
        #expect(try MergedFile.snapshot(dir.url) == before, "no output and no temporary file")
    }

    @Test func otherDifferencesAreNamedToo() throws {
        let dir = try TemporaryDirectory()
        let maker = ClipMaker(folder: dir.url)
        let first = try maker.make(0, frames: 20)
        var fast = maker
        fast.preset = "ultrafast"
        let other = try fast.make(1, frames: 20, name: "ultrafast.mp4")
        let error = try #require(throws: ReelError.self) {
            try Merger.merge([MergeInput(url: first), MergeInput(url: other)], to: dir.url.appendingPathComponent("m.mp4"))
        }
        #expect(error.code == .incompatibleClips)
        #expect(error.message.contains("clip 2 (ultrafast.mp4)") && error.message.contains("SPS/PPS"), "\(error.message)")

        var mkv = maker
        mkv.container = .mkv
        let opus = try mkv.make(2, frames: 20)
        let audioError = try #require(throws: ReelError.self) {
            try Merger.merge([MergeInput(url: first), MergeInput(url: opus)], to: dir.url.appendingPathComponent("m.mkv"))
        }
        #expect(audioError.code == .incompatibleClips)
        #expect(audioError.message == "clip 2 (clip3.mkv) has Opus audio but clip 1 has AAC audio", "\(audioError.message)")
    }

    @Test func clipsThatDifferAreReencodedWhenAllowed() throws {
        let dir = try TemporaryDirectory()
        let maker = ClipMaker(folder: dir.url)
        let frames = [45, 40, 50]
        let clips = [try maker.make(0, frames: frames[0]), try maker.make(1, frames: frames[1]),
                     try maker.make(2, frames: frames[2], size: PixelSize(width: 640, height: 480), name: "big.mp4")]
        let output = dir.url.appendingPathComponent("merged.mp4")
        let summary = try Merger.merge(clips.map { MergeInput(url: $0) }, to: output, options: MergeOptions(allowsReencoding: true))
        #expect(summary.reencodedClips.contains(2))
        #expect(summary.reencodingReason?.contains("clip 3 (big.mp4) is 640x480") == true)
        #expect(summary.videoFrames == Int64(frames.reduce(0, +)))
        let probe = try MediaProbe.probe(output)
        #expect(probe.videoStreams.first?.width == 320 && probe.videoStreams.first?.height == 240)
        #expect(abs(probe.duration - Double(frames.reduce(0, +)) / 30) < 1.0 / 30 + 0.001)
        try MergedFile.expectRisingTimestamps(output)
        let counters = try MediaProbe.decodeLuma(output, width: 320, height: 240).map(\.counter)
        #expect(counters == ClipMaker.counters(frames).map { Optional($0) }, "every frame readable, once, in order")
        try MergedFile.expectInSync(output, expected: ClipMaker.beepTimes(frames))
    }

    @Test(arguments: [false, true])
    func aMutedClipIsSilentInItsSpan(_ reencode: Bool) throws {
        let dir = try TemporaryDirectory()
        let maker = ClipMaker(folder: dir.url)
        let frames = [60, 60, 60]
        var clips = try frames.enumerated().map { try maker.make($0.offset, frames: $0.element) }
        if reencode {
            clips[2] = try maker.make(2, frames: 60, size: PixelSize(width: 160, height: 120), name: "small.mp4")
        }
        let output = dir.url.appendingPathComponent("merged.mp4")
        let inputs = clips.enumerated().map { MergeInput(url: $0.element, isMuted: $0.offset == 1) }
        let summary = try Merger.merge(inputs, to: output, options: MergeOptions(allowsReencoding: reencode))
        #expect(summary.reencodedClips.isEmpty == !reencode)

        let audio = try MediaProbe.decodeAudio(output)
        func rms(_ from: Double, _ to: Double) -> Double {
            ToneAnalysis.rms(of: Array(audio[Int(from * 48_000)..<min(audio.count, Int(to * 48_000))]))
        }
        #expect(rms(0.1, 1.9) > 0.05, "clip 1 is heard")
        #expect(rms(2.05, 3.95) < 0.001, "clip 2 is silent")
        #expect(rms(4.1, 5.9) > 0.05, "clip 3 is heard")
        #expect(abs(Double(audio.count) / 48_000 - 6) < 0.03, "the silence keeps the clip's length")
        let beeps = MediaProbe.beepOnsets(audio)
        let expected = [0.5, 1.5, 4.5, 5.5]
        #expect(beeps.count == expected.count, "beeps at \(beeps)")
        for (beep, want) in zip(beeps, expected) { #expect(abs(beep - want) < 0.040, "beep at \(beep), expected \(want)") }
        let counters = try MediaProbe.decodeLuma(output, width: 320, height: 240).map(\.counter)
        #expect(counters.count == 180 && counters.allSatisfy { $0 != nil })
    }

    /// A recording's own clip with the picture and no sound where the others have sound (in
    /// clip mode, a clip cut by the size limit before its first sound was encoded) is joined by
    /// copying, with silence for its span: the recording's merge used to refuse it ("clip 3 has
    /// video and no audio"). Files from elsewhere are still refused (their sound may be damage).
    @Test(arguments: [1, 2])
    func aClipWithoutSoundIsJoinedByCopyingWithSilence(_ quietClip: Int) throws {
        let dir = try TemporaryDirectory()
        var quiet = ClipMaker(folder: dir.url)
        quiet.hasAudio = false
        let loud = ClipMaker(folder: dir.url)
        let frames = [60, 60, 60]
        let clips = try frames.indices.map { k in
            k == quietClip ? try quiet.make(k, frames: 60, name: "quiet.mp4") : try loud.make(k, frames: 60)
        }
        let output = dir.url.appendingPathComponent("merged.mp4")
        // Files from elsewhere: a missing track may be damage, so it is refused as before.
        let refused = try #require(throws: ReelError.self) { try Merger.merge(clips.map { MergeInput(url: $0) }, to: output) }
        #expect(refused.code == .incompatibleClips && refused.message.contains("has video and no audio"), "\(refused.message)")
        let summary = try Merger.merge(clips.map { MergeInput(url: $0, soundMayBeMissing: true) }, to: output)
        #expect(summary.reencodedClips.isEmpty, "joined by copying, not: \(summary.reencodingReason ?? "")")
        #expect(summary.videoFrames == 180)

        let audio = try MediaProbe.decodeAudio(output)
        func rms(_ clip: Int) -> Double {
            let from = Double(clip) * 2 + 0.1, to = Double(clip) * 2 + 1.9
            return ToneAnalysis.rms(of: Array(audio[Int(from * 48_000)..<min(audio.count, Int(to * 48_000))]))
        }
        for k in frames.indices {
            if k == quietClip { #expect(rms(k) < 0.001, "clip \(k + 1) is silence") } else { #expect(rms(k) > 0.05, "clip \(k + 1) is heard") }
        }
        #expect(abs(Double(audio.count) / 48_000 - 6) < 0.03, "the sound runs the whole length: \(Double(audio.count) / 48_000) s")
        let beeps = MediaProbe.beepOnsets(audio)
        let expected = frames.indices.filter { $0 != quietClip }.flatMap { [Double($0) * 2 + 0.5, Double($0) * 2 + 1.5] }
        #expect(beeps.count == expected.count, "beeps at \(beeps)")
        for (beep, want) in zip(beeps, expected) { #expect(abs(beep - want) < 0.040, "beep at \(beep), expected \(want)") }
        let counters = try MediaProbe.decodeLuma(output, width: 320, height: 240).map(\.counter)
        #expect(counters == ClipMaker.counters(frames).map { Optional($0) })
        try MergedFile.expectRisingTimestamps(output)
    }

    /// Reel's own MP4, MOV and MKV files, made with the same settings, are joined by copying in
    /// any order: an MP4 states its stereo as "2 channels" (no layout box), MOV and MKV as
    /// stereo, and those are the same thing.
    @Test(arguments: [Container.mp4, .mkv])
    func reelsOwnMP4MOVAndMKVJoinByCopying(_ output: Container) throws {
        let dir = try TemporaryDirectory()
        var clips: [URL] = []
        let frames = [40, 35, 45]
        for (k, container) in [Container.mp4, .mkv, .mov].enumerated() {
            var maker = ClipMaker(folder: dir.url, container: container)
            maker.audioCodec = .aac
            clips.append(try maker.make(k, frames: frames[k]))
        }
        let url = dir.url.appendingPathComponent("merged.\(output.fileExtension)")
        let summary = try Merger.merge(clips.map { MergeInput(url: $0) }, to: url)
        #expect(summary.reencodedClips.isEmpty, "joined by copying, not: \(summary.reencodingReason ?? "")")
        #expect(summary.videoFrames == Int64(frames.reduce(0, +)))
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter)
        #expect(counters == ClipMaker.counters(frames).map { Optional($0) })
        if output == .mp4 {
            try MergedFile.expectInSync(url, expected: ClipMaker.beepTimes(frames))
        } else {
            // Matroska has no edit list: the video starts after the first clip's B-frame delay
            // and the audio with its priming. Picture and sound meet by their timestamps.
            let videoStart = try #require(try MediaProbe.packetTimes(url, stream: "v:0").first)
            let audioStart = try #require(try MediaProbe.packetTimes(url, stream: "a:0").first)
            let flashes = MergedFile.flashOnsets(try MediaProbe.decodeLuma(url, width: 320, height: 240)).map { $0 + videoStart }
            let beeps = MediaProbe.beepOnsets(try MediaProbe.decodeAudio(url)).map { $0 + audioStart }
            #expect(flashes.count == ClipMaker.beepTimes(frames).count && beeps.count == flashes.count, "\(flashes) \(beeps)")
            for (beep, flash) in zip(beeps, flashes) { #expect(abs(beep - flash) < 0.040, "beep at \(beep) s but flash at \(flash) s") }
        }
        // The other way round too.
        let back = dir.url.appendingPathComponent("back.\(output.fileExtension)")
        #expect(try Merger.merge(clips.reversed().map { MergeInput(url: $0) }, to: back).reencodedClips.isEmpty)
    }

    /// Channels that really differ are still told apart, named as people name them.
    @Test func monoAndStereoAreStillDifferent() throws {
        let dir = try TemporaryDirectory()
        let stereo = try ClipMaker(folder: dir.url).make(0, frames: 20)
        let mono = dir.url.appendingPathComponent("mono.mkv")
        let r = try Subprocess.run(["ffmpeg", "-v", "error", "-i", stereo.path, "-c:v", "copy", "-c:a", "aac", "-ac", "1", mono.path])
        #expect(r.status == 0, "\(r.stderr)")
        let error = try #require(throws: ReelError.self) {
            try Merger.merge([MergeInput(url: stereo), MergeInput(url: mono)], to: dir.url.appendingPathComponent("m.mp4"))
        }
        #expect(error.code == .incompatibleClips)
        #expect(error.message == "clip 2 (mono.mkv)'s audio is mono but clip 1's is stereo", "\(error.message)")
    }

    /// Re-encoding keeps the audio of every clip that has some, with silence for the clips
    /// that have none, whichever clip comes first.
    @Test(arguments: [true, false])
    func reencodingKeepsAudioWhenAnyClipHasIt(_ silentFirst: Bool) throws {
        let dir = try TemporaryDirectory()
        var quiet = ClipMaker(folder: dir.url)
        quiet.hasAudio = false
        let loud = ClipMaker(folder: dir.url)
        let frames = [60, 60]
        let clips = silentFirst
            ? [try quiet.make(0, frames: 60, name: "noaudio.mp4"), try loud.make(1, frames: 60, name: "audio.mp4")]
            : [try loud.make(0, frames: 60, name: "audio.mp4"), try quiet.make(1, frames: 60, name: "noaudio.mp4")]
        let output = dir.url.appendingPathComponent("merged.mp4")
        let summary = try Merger.merge(clips.map { MergeInput(url: $0) }, to: output, options: MergeOptions(allowsReencoding: true))
        #expect(summary.videoFrames == 120)
        let probe = try MediaProbe.probe(output)
        #expect(probe.audioStreams.count == 1, "the audio is kept")
        #expect(probe.audioStreams.first?.title == "Tone")
        let audio = try MediaProbe.decodeAudio(output)
        func rms(_ from: Double, _ to: Double) -> Double {
            ToneAnalysis.rms(of: Array(audio[Int(from * 48_000)..<min(audio.count, Int(to * 48_000))]))
        }
        let (silent, heard) = silentFirst ? ((0.1, 1.9), (2.1, 3.9)) : ((2.1, 3.9), (0.1, 1.9))
        #expect(rms(silent.0, silent.1) < 0.001, "the clip without audio is silence")
        #expect(rms(heard.0, heard.1) > 0.05, "the clip with audio is heard")
        #expect(abs(Double(audio.count) / 48_000 - 4) < 0.03, "audio runs the whole length")
        let beeps = MediaProbe.beepOnsets(audio)
        let expected = silentFirst ? [2.5, 3.5] : [0.5, 1.5]
        #expect(beeps.count == expected.count, "beeps at \(beeps)")
        for (beep, want) in zip(beeps, expected) { #expect(abs(beep - want) < 0.040, "beep at \(beep), expected \(want)") }
        let counters = try MediaProbe.decodeLuma(output, width: 320, height: 240).map(\.counter)
        #expect(counters == ClipMaker.counters(frames).map { Optional($0) })
    }

    /// Video that only a later clip has is not dropped without a word.
    @Test func videoOnlyInALaterClipIsRefused() throws {
        let dir = try TemporaryDirectory()
        let video = try ClipMaker(folder: dir.url).make(0, frames: 30)
        let sound = dir.url.appendingPathComponent("sound.mp4")
        let r = try Subprocess.run(["ffmpeg", "-v", "error", "-i", video.path, "-vn", "-c:a", "copy", sound.path])
        #expect(r.status == 0, "\(r.stderr)")
        let error = try #require(throws: ReelError.self) {
            try Merger.merge([MergeInput(url: sound), MergeInput(url: video)], to: dir.url.appendingPathComponent("m.mp4"),
                             options: MergeOptions(allowsReencoding: true))
        }
        #expect(error.code == .incompatibleClips)
        #expect(error.message.contains("clip 2 (clip1.mp4) has video but clip 1 has none"), "\(error.message)")
    }

    /// HEVC in MP4 and MOV is tagged hvc1 (what QuickTime and Safari play) whether the clips are
    /// copied or encoded again.
    @Test(arguments: [false, true])
    func mergedHEVCIsTaggedHvc1(_ reencode: Bool) throws {
        let dir = try TemporaryDirectory()
        var maker = ClipMaker(folder: dir.url)
        maker.codec = .hevc
        maker.preset = "ultrafast"
        var clips = [try maker.make(0, frames: 20), try maker.make(1, frames: 20)]
        if reencode { clips[1] = try maker.make(1, frames: 20, size: PixelSize(width: 160, height: 120), name: "small.mp4") }
        for container in [Container.mp4, .mov] {
            let output = dir.url.appendingPathComponent("merged.\(container.fileExtension)")
            let summary = try Merger.merge(clips.map { MergeInput(url: $0) }, to: output, options: MergeOptions(allowsReencoding: reencode))
            #expect(summary.reencodedClips.isEmpty == !reencode)
            let video = try #require(try MediaProbe.probe(output).videoStreams.first)
            #expect(video.codec == "hevc")
            #expect(video.codecTag == "hvc1", "\(container): \(video.codecTag ?? "none")")
        }
    }

    @Test func anExistingOutputIsRefusedUnlessOverwriting() throws {
        let dir = try TemporaryDirectory()
        let maker = ClipMaker(folder: dir.url)
        let clips = try [20, 20].enumerated().map { try maker.make($0.offset, frames: $0.element) }
        let output = dir.url.appendingPathComponent("exists.mp4")
        try Data("keep me".utf8).write(to: output)
        let before = try MergedFile.snapshot(dir.url)
        let error = try #require(throws: ReelError.self) { try Merger.merge(clips.map { MergeInput(url: $0) }, to: output) }
        #expect(error.code == .fileExists)
        #expect(try MergedFile.snapshot(dir.url) == before, "the file is untouched and nothing is left behind")

        let summary = try Merger.merge(clips.map { MergeInput(url: $0) }, to: output, options: MergeOptions(overwrite: true))
        #expect(summary.videoFrames == 40)
        #expect(try MediaProbe.probe(output).videoStreams.first?.frameCount == 40)

        let itself = try #require(throws: ReelError.self) {
            try Merger.merge(clips.map { MergeInput(url: $0) }, to: clips[1], options: MergeOptions(overwrite: true))
        }
        #expect(itself.code == .invalidConfiguration && itself.message.contains("clip 2"), "\(itself.message)")
    }

    /// A clip whose index lists a packet that it does not play, every byte of it on the disk
    /// (an earlier `reel recover` of a clip its full disk cut short listed the last sound packet
    /// with no length, past the end of the clip's edit list): merged with every packet it plays,
    /// by copying and by encoding again, and the summary says what was left out. It was
    /// refused as "cut short" (46 of its 47 audio packets), its frames lost to the merge.
    @Test func aClipListingASoundPacketPastItsEndMerges() throws {
        let dir = try TemporaryDirectory()
        let maker = ClipMaker(folder: dir.url)
        let clips = try [30, 46].enumerated().map { try maker.make($0.offset, frames: $0.element) }
        // Clip 2 copied as that recovery copied it: its sound packets without their lengths.
        let listing = dir.url.appendingPathComponent("listing.mp4")
        do {
            let input = try InputFile(url: clips[1])
            var packets: [Packet] = []
            while let packet = try input.next(failing: { FFmpeg.error($0, "read") }) { packets.append(try Packet(referencing: packet)) }
            let muxer = try Muxer(url: listing, container: .mp4, overwrite: false)
            for i in 0..<Int(input.context.pointee.nb_streams) {
                // Its frame size unknown, as libavformat read it from the fragments: the muxer
                // cannot make up the length.
                try muxer.addStream(copying: input.context.pointee.streams[i]!, of: clips[1]).pointee.codecpar.pointee.frame_size = 0
            }
            try muxer.writeHeader(fastStart: false)
            for packet in packets {
                let stream = Int(packet.pointer.pointee.stream_index)
                if !muxer.isVideo(stream: stream) { packet.pointer.pointee.duration = 0 }
                try muxer.write(demuxed: packet.pointer, stream: stream)
            }
            try muxer.finish()
        }
        // It plays one sound packet fewer than it lists (its edit list ends where the packet
        // begins: with 46 frames, to the sample).
        let input = try InputFile(url: listing)
        var read: [Int64] = [0, 0]
        while let packet = try input.next(failing: { FFmpeg.error($0, "read") }) { read[Int(packet.pointee.stream_index)] += 1 }
        let listed = (0..<2).map { input.context.pointee.streams[$0]!.pointee.nb_frames }
        try #require(read == [46, listed[1] - 1] && listed[0] == 46, "read \(read) of \(listed)")
        for reencode in [false, true] {
            let output = dir.url.appendingPathComponent("merged-\(reencode).mp4")
            let summary = try Merger.merge([MergeInput(url: clips[0]), MergeInput(url: listing)], to: output,
                                           options: MergeOptions(allowsReencoding: reencode))
            let frames = try MediaProbe.probe(output).videoStreams.first?.frameCount
            #expect(summary.videoFrames == 76 && frames == 76, "\(summary)")
            #expect(summary.packetsLeftOut == [MergeSummary.PacketsLeftOut(clip: 1, file: "listing.mp4", videoPackets: 0, audioPackets: 1)],
                    "\(summary.packetsLeftOut)")
        }
    }

    @Test func aTruncatedClipIsInvalidMedia() throws {
        let dir = try TemporaryDirectory()
        let maker = ClipMaker(folder: dir.url)
        let clips = try [30, 60, 30].enumerated().map { try maker.make($0.offset, frames: $0.element) }
        let whole = try Data(contentsOf: clips[1])
        try whole.prefix(whole.count / 2).write(to: clips[1])
        let before = try MergedFile.snapshot(dir.url)
        let output = dir.url.appendingPathComponent("merged.mp4")
        for reencode in [false, true] {
            let error = try #require(throws: ReelError.self) {
                try Merger.merge(clips.map { MergeInput(url: $0) }, to: output, options: MergeOptions(allowsReencoding: reencode))
            }
            #expect(error.code == .invalidMedia)
            #expect(error.message.contains("clip 2 (clip2.mp4)"), "\(error.message)")
            #expect(try MergedFile.snapshot(dir.url) == before, "nothing is left behind")
        }
        // Not a media file at all, and no file.
        try Data(repeating: 0x42, count: 5000).write(to: clips[2])
        let garbage = try #require(throws: ReelError.self) {
            try Merger.merge([MergeInput(url: clips[0]), MergeInput(url: clips[2])], to: output)
        }
        #expect(garbage.code == .invalidMedia && garbage.message.contains("clip 2 (clip3.mp4)"), "\(garbage.message)")
        let missing = try #require(throws: ReelError.self) {
            try Merger.merge([MergeInput(url: clips[0]), MergeInput(url: dir.url.appendingPathComponent("nope.mp4"))], to: output)
        }
        #expect(missing.code == .ioFailure && missing.message.contains("nope.mp4"), "\(missing.message)")
    }
}
