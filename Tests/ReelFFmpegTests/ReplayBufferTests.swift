import Foundation
import Testing
import ReelCore
import ReelFFmpeg
import ReelTestSupport

/// A recording fed faster than real time: test-pattern frames with their counter burned in and
/// flashes on the beep schedule, and the tone with beeps, on a synthetic timeline.
final class SyntheticRecording {
    static let size = PixelSize(width: 320, height: 240)
    static let rate = FrameRate(30)
    static let samplesPerFrame = 1600
    /// The file's writer, for a recording into a file.
    private(set) var fileWriter: AssetWriter?
    /// The encoder, for a recording into sinks only.
    private(set) var encoder: StreamEncoder?
    var writer: AssetWriter { fileWriter! }
    let beeps = BeepSchedule()
    private let pool = FramePool(format: .yuv420p, size: SyntheticRecording.size, capacity: 2)
    private let tone = ToneSource()
    /// Frames fed so far (the next frame's number).
    private(set) var fed: Int64 = 0

    static func tracks(preset: String?) -> (AssetWriter.VideoTrack, AssetWriter.AudioTrack) {
        var video = VideoSettings(codec: .h264, frameRate: Self.rate)
        video.preset = preset
        video.keyframeInterval = ReplayBuffer.recommendedKeyframeInterval(at: Self.rate)
        return (AssetWriter.VideoTrack(settings: video, inputFormat: .yuv420p, inputSize: Self.size),
                AssetWriter.AudioTrack(settings: AudioSettings(codec: .aac), inputFormat: AudioFormat()))
    }

    /// A recording into the file `url` (and the sinks added to its writer).
    init(_ url: URL, preset: String? = nil) throws {
        let (video, audio) = Self.tracks(preset: preset)
        fileWriter = try AssetWriter(configuration: AssetWriter.Configuration(url: url, video: video, audio: [audio]))
    }

    /// A recording into the sinks of a stream encoder only.
    init(sinks: [any PacketSink], preset: String? = nil) throws {
        let (video, audio) = Self.tracks(preset: preset)
        let encoder = try StreamEncoder(video: video, audio: [audio])
        for sink in sinks { try encoder.addSink(sink) }
        self.encoder = encoder
    }

    /// Feeds `count` more frames and the audio that goes with them.
    func feed(_ count: Int64) throws {
        for _ in 0..<count {
            let time = Self.rate.time(ofFrame: fed)
            guard let frame = pool.makeFrame() else { throw ReelError(.encodingFailed, "the test's frame pool is empty") }
            try TestPattern.draw(index: fed, flash: beeps.isBeeping(at: time), into: frame)
            if let encoder { try encoder.appendVideo(frame, at: time) } else { try writer.appendVideo(frame, at: time) }
            var samples: [Float] = []
            samples.reserveCapacity(2 * Self.samplesPerFrame)
            let first = Int(fed) * Self.samplesPerFrame
            for n in first..<(first + Self.samplesPerFrame) {
                let v = tone.value(atSample: Int64(n))
                samples += [v, v]
            }
            let buffer = try AudioBuffer(format: AudioFormat(), presentationTime: MediaTime(value: Int64(first), timescale: 48_000), data: samples.withUnsafeBytes { Array($0) })
            if let encoder { try encoder.appendAudio(buffer, track: 0) } else { try writer.appendAudio(buffer, track: 0) }
            fed += 1
        }
    }
}

@Suite struct ReplayBufferTests {
    static let keyframeFrames: Int64 = 60  // 2 s at 30 fps

    /// What a saved replay holds, checked against what was fed.
    struct SavedFile {
        var counters: [Int64]
        var first: Int64 { counters.first ?? -1 }
        var last: Int64 { counters.last ?? -1 }
    }

    /// Decodes `url` and checks that its frames are one unbroken run of counters, its audio's
    /// beeps start with its flashes (within 20 ms), and audio lasts as long as video.
    func check(_ url: URL, summary: ReplaySummary) throws -> SavedFile {
        let probe = try MediaProbe.probe(url)
        #expect(probe.videoStreams.count == 1)
        #expect(probe.audioStreams.count == 1)
        let frames = try MediaProbe.decodeLuma(url, width: SyntheticRecording.size.width, height: SyntheticRecording.size.height)
        let counters = frames.map { $0.counter ?? -1 }
        let first = counters.first ?? -1
        let breaks = zip(counters, counters.dropFirst()).filter { $1 != $0 + 1 }.map { "\($0) then \($1)" }
        #expect(breaks.isEmpty, "frames missing or repeated in \(url.lastPathComponent): \(breaks.prefix(5))")
        #expect(summary.videoFrames == counters.count)
        #expect(SyntheticRecording.rate.frameIndex(at: summary.start) == first)
        // Flash onsets (seconds into the file) against beep onsets in the decoded audio.
        var flashes: [Double] = []
        for (i, frame) in frames.enumerated() where frame.isFlash && (i == 0 || !frames[i - 1].isFlash) && i > 0 {
            flashes.append(Double(i) / 30)
        }
        let audioStart = try startTime(of: url, stream: "a:0")
        let videoStart = try startTime(of: url, stream: "v:0")
        #expect(abs(videoStart) < 0.001, "\(url.lastPathComponent)'s video starts at \(videoStart) s, not zero")
        let samples = try MediaProbe.decodeAudio(url)
        let beeps = MediaProbe.beepOnsets(samples).map { $0 + audioStart }.filter { $0 > 0.05 }
        #expect(flashes.count >= 20, "a 30 s replay shows a flash a second")
        #expect(abs(beeps.count - flashes.count) <= 1)
        for flash in flashes {
            let nearest = beeps.min { abs($0 - flash) < abs($1 - flash) }
            #expect(nearest.map { abs($0 - flash) <= 0.020 } == true, "beep \(String(describing: nearest)) for the flash at \(flash) s")
        }
        let videoLength = Double(counters.count) / 30
        let audioEnd = audioStart + Double(samples.count) / 48_000
        if url.pathExtension == "mkv" {
            // No edit list: audio starts with its first packet at or after the first frame.
            #expect(audioStart >= 0 && audioStart < 1024.0 / 48_000, "audio starts \(audioStart) s after the first frame")
        } else {
            #expect(abs(audioStart) < 0.001, "audio starts \(audioStart) s from the first frame, not with it")
        }
        #expect(abs(audioEnd - videoLength) < 0.05, "audio ends at \(audioEnd) s, video at \(videoLength) s")
        return SavedFile(counters: counters)
    }

    func startTime(of url: URL, stream: String) throws -> Double {
        let result = try Subprocess.run(["ffprobe", "-v", "error", "-select_streams", stream, "-show_entries", "stream=start_time",
                                         "-of", "csv=p=0", url.path])
        return Double(result.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? .nan
    }

    /// Checks where a save of a 30 s window starts and ends: its last frame is the newest whose
    /// predecessors had all come out of the encoder when it was saved (at most `lag` frames
    /// before the newest fed), its first the keyframe at or before 30 s before that.
    func expectWindow(_ saved: SavedFile, fedBefore: Int64, fedAfter: Int64, lag: Int64) {
        #expect(saved.last < fedAfter)
        #expect(saved.last >= fedBefore - 1 - lag, "last frame \(saved.last), \(fedBefore) fed")
        let windowStart = saved.last + 1 - 900
        #expect(saved.first <= windowStart, "a save holds at least the window")
        #expect(saved.first > windowStart - Self.keyframeFrames, "and at most one keyframe interval more")
    }

    @Test func aLongSessionSavedAtSeveralMomentsEncodesOnceAndLosesNothing() async throws {
        let dir = try TemporaryDirectory()
        let census = EncoderCensus()
        let ring = try ReplayBuffer(duration: MediaTime(value: 30, timescale: 1))
        let full = dir.url.appendingPathComponent("full.mp4")
        let recording = try EncoderCensus.$current.withValue(census) { try SyntheticRecording(full) }
        try recording.writer.addSink(ring)
        // The encoder may hold this many frames it has been given (x264's lookahead, B-frames,
        // frame threads): a bound in frames, not a timing limit.
        let lag: Int64 = 60

        try recording.feed(45 * 30)
        let first = try await ring.save(to: dir.url.appendingPathComponent("at45.mp4"))
        let at45 = try check(first.url, summary: first)
        expectWindow(at45, fedBefore: 45 * 30, fedAfter: 45 * 30, lag: lag)

        try recording.feed(55 * 30)
        // Two saves that overlap each other and the recording, which goes on meanwhile.
        let fedBefore = recording.fed
        async let a = ring.save(to: dir.url.appendingPathComponent("overlap-a.mp4"))
        async let b = ring.save(to: dir.url.appendingPathComponent("overlap-b.mkv"))
        try recording.feed(10 * 30)
        let (savedA, savedB) = try await (a, b)
        let overlapA = try check(savedA.url, summary: savedA)
        let overlapB = try check(savedB.url, summary: savedB)
        expectWindow(overlapA, fedBefore: fedBefore, fedAfter: recording.fed, lag: lag)
        expectWindow(overlapB, fedBefore: fedBefore, fedAfter: recording.fed, lag: lag)

        // Ten minutes in all, with a save at five.
        try recording.feed(190 * 30)
        let fiveMinutes = try await ring.save(to: dir.url.appendingPathComponent("at300.mp4"))
        let at300 = try check(fiveMinutes.url, summary: fiveMinutes)
        expectWindow(at300, fedBefore: 300 * 30, fedAfter: 300 * 30, lag: lag)

        try recording.feed(300 * 30)
        let fedAtEnd = recording.fed
        #expect(fedAtEnd == 600 * 30)
        let summary = try recording.writer.finish()
        // Finished, every frame has come out: the save ends exactly with the newest one.
        let last = try await ring.save(to: dir.url.appendingPathComponent("after-finish.mov"))
        let afterFinish = try check(last.url, summary: last)
        #expect(afterFinish.last == fedAtEnd - 1)
        expectWindow(afterFinish, fedBefore: fedAtEnd, fedAfter: fedAtEnd, lag: 0)

        // The recording lost nothing to the saves.
        #expect(summary.videoFrames == fedAtEnd)
        #expect(try MediaProbe.probe(full).videoStreams.first?.frameCount == Int(fedAtEnd))
        #expect(try MediaProbe.packetTimes(full).count == Int(fedAtEnd))
        // One encode served the file and the ring.
        #expect(census.videoEncoders == 1)
        #expect(census.audioEncoders == 1)
        // The ring never held more than its window and one keyframe interval.
        let stats = ring.statistics
        #expect(stats.longestVideoHeld <= MediaTime(value: 32, timescale: 1) + SyntheticRecording.rate.frameDuration)
        #expect(stats.longestVideoHeld >= MediaTime(value: 30, timescale: 1))
        #expect(stats.groupsDroppedForSize == 0)
    }

    @Test func aByteLimitDropsWholeGroupsAndSaysSo() async throws {
        let dir = try TemporaryDirectory()
        let limit: Int64 = 400_000
        let ring = try ReplayBuffer(duration: MediaTime(value: 30, timescale: 1), maxBytes: limit)
        // A second ring on the same writer, smaller than one group of pictures: it drops the group
        // it is filling and waits for the next keyframe, never holding more than its limit.
        let tiny: Int64 = 30_000
        let small = try ReplayBuffer(duration: MediaTime(value: 30, timescale: 1), maxBytes: tiny)
        let recording = try SyntheticRecording(dir.url.appendingPathComponent("full.mp4"), preset: "ultrafast")
        try recording.writer.addSink(ring)
        try recording.writer.addSink(small)
        try recording.feed(40 * 30)
        #expect(small.statistics.mostBytesHeld <= tiny)
        #expect(small.statistics.groupsDroppedForSize > 0)
        let stats = ring.statistics
        #expect(stats.groupsDroppedForSize > 0)
        #expect(stats.bytesDroppedForSize > 0)
        #expect(stats.mostBytesHeld <= limit)
        #expect(stats.bytes <= limit)
        _ = try recording.writer.finish()
        let saved = try await ring.save(to: dir.url.appendingPathComponent("limited.mp4"))
        let frames = try MediaProbe.decodeLuma(saved.url, width: 320, height: 240).compactMap(\.counter)
        #expect(frames.last == recording.fed - 1)
        #expect(frames.first.map { Array($0...(recording.fed - 1)) == frames } == true, "frames missing or repeated")
        #expect(saved.duration < MediaTime(value: 30, timescale: 1), "the byte limit, not the window, bounds it")
        do {
            let little = try await small.save(to: dir.url.appendingPathComponent("tiny.mp4"))
            let counters = try MediaProbe.decodeLuma(little.url, width: 320, height: 240).compactMap(\.counter)
            #expect(counters.first.map { Array($0...(recording.fed - 1)) == counters } == true, "frames missing or repeated")
        } catch let error as ReelError {
            #expect(error.code == .nothingRecorded, "a ring that holds nothing says so: \(error)")
        }
    }

    /// The disk space a file system's files take, in bytes.
    static func used(_ folder: URL) -> Int64 {
        var info = statvfs()
        guard statvfs(folder.path, &info) == 0 else { return -1 }
        return Int64(info.f_blocks - info.f_bfree) * Int64(info.f_frsize)
    }

    @Test func aSpilledBufferKeepsItsBytesOnDiskAndSavesWhatMemoryWould() async throws {
        let dir = try TemporaryDirectory()
        let disk = try SmallDisk(size: "100M")
        let before = Self.used(disk.url)
        var spilled: ReplayBuffer? = try ReplayBuffer(duration: MediaTime(value: 30, timescale: 1), maxBytes: nil, spillFolder: disk.url,
                                                       spillSegmentSize: 1 << 20)
        let inMemory = try ReplayBuffer(duration: MediaTime(value: 30, timescale: 1))
        var recording: SyntheticRecording? = try SyntheticRecording(sinks: [spilled!, inMemory], preset: "ultrafast")
        try recording?.feed(40 * 30)
        let held = spilled!.statistics.bytes
        #expect(held == inMemory.statistics.bytes)
        #expect(try FileManager.default.contentsOfDirectory(atPath: disk.url.path).isEmpty, "the spill files have no names")
        #expect(Self.used(disk.url) - before >= held, "the packets' bytes are on the spill disk")
        #expect(spilled!.spillError == nil)
        try recording?.encoder?.finish()
        let a = try await spilled!.save(to: dir.url.appendingPathComponent("spilled.mp4"))
        let b = try await inMemory.save(to: dir.url.appendingPathComponent("memory.mp4"))
        #expect(try Data(contentsOf: a.url) == Data(contentsOf: b.url), "the same file, byte for byte")
        _ = try check(a.url, summary: a)
        // Gone with the buffer (and the encoder that fed it): the space is free again.
        recording = nil
        spilled = nil
        #expect(Self.used(disk.url) - before < 1 << 20)
    }

    /// The encoder's thread spills; the next segment (a file made, its blocks reserved, mapped)
    /// is made ahead on a thread of its own once the current one is half full, so the encoder
    /// never waits for the disk at a segment's end.
    @Test func theNextSpillSegmentIsMadeAheadOfTheEncodersThread() throws {
        let disk = try TemporaryDirectory()
        let buffer = try ReplayBuffer(duration: MediaTime(value: 60, timescale: 1), maxBytes: nil, spillFolder: disk.url,
                                      spillSegmentSize: 128 << 10)
        let recording = try SyntheticRecording(sinks: [buffer], preset: "ultrafast")
        // A second at a time, as a recording comes (the segment made ahead has time to be ready).
        for _ in 0..<30 {
            try recording.feed(30)
            usleep(100_000)
        }
        #expect(buffer.statistics.bytes > 6 * (128 << 10), "several segments filled: \(buffer.statistics.bytes) bytes")
        #expect(buffer.spillSegmentsMadeInLine == 0)
        #expect(buffer.spillError == nil)
    }

    @Test func aSpillDiskThatFillsKeepsThePacketsInMemory() async throws {
        let dir = try TemporaryDirectory()
        #expect { try ReplayBuffer(duration: MediaTime(value: 10, timescale: 1), maxBytes: nil, spillFolder: dir.url.appendingPathComponent("none")) } throws: {
            ($0 as? ReelError)?.message.contains("does not exist") == true
        }
        // Room for two segments of 256 KB and a little more.
        let disk = try SmallDisk(size: "600k")
        let ring = try ReplayBuffer(duration: MediaTime(value: 30, timescale: 1), maxBytes: nil, spillFolder: disk.url, spillSegmentSize: 256 << 10)
        let recording = try SyntheticRecording(sinks: [ring], preset: "ultrafast")
        try recording.feed(40 * 30)
        #expect(ring.statistics.bytes > 600 << 10, "more than the disk holds was kept")
        #expect(ring.spillError?.code == .insufficientStorage, "\(String(describing: ring.spillError))")
        try recording.encoder?.finish()
        let saved = try await ring.save(to: dir.url.appendingPathComponent("replay.mp4"))
        let file = try check(saved.url, summary: saved)
        #expect(file.last == recording.fed - 1)
    }

    /// A small buffer spills in small files: 1 MB kept on a disk of 20 MB starts (it asked for
    /// 64 MB at once, refused with "no space left" and the advice to lower the size, which did
    /// nothing: issue 26, F11); a disk too small says how much it asked for and how much is free.
    @Test func aSmallBufferSpillsInSmallFilesAndAFullDiskSaysHowMuchItNeeds() throws {
        let disk = try SmallDisk(size: "20M")
        _ = try ReplayBuffer(duration: MediaTime(value: 5, timescale: 1), maxBytes: 1 << 20, spillFolder: disk.url)
        // A large one still asks for 64 MB.
        #expect { try ReplayBuffer(duration: MediaTime(value: 5, timescale: 1), maxBytes: 1 << 30, spillFolder: disk.url) } throws: {
            ($0 as? ReelError)?.message.contains("files of 67 MB") == true
        }
        let tiny = try SmallDisk(size: "2M")
        #expect { try ReplayBuffer(duration: MediaTime(value: 5, timescale: 1), maxBytes: 1 << 20, spillFolder: tiny.url) } throws: {
            guard let error = $0 as? ReelError else { return false }
            return error.code == .insufficientStorage && error.message.contains("files of 4 MB") && error.message.contains("MB free there")
        }
    }

    @Test func aSaveNeverReplacesAFileUnlessAllowed() async throws {
        let dir = try TemporaryDirectory()
        let ring = try ReplayBuffer(duration: MediaTime(value: 5, timescale: 1))
        await #expect { try await ring.save(to: dir.url.appendingPathComponent("empty.mp4")) } throws: {
            ($0 as? ReelError)?.code == .nothingRecorded
        }
        let recording = try SyntheticRecording(dir.url.appendingPathComponent("full.mp4"), preset: "ultrafast")
        try recording.writer.addSink(ring)
        try recording.feed(90)
        let url = dir.url.appendingPathComponent("exists.mp4")
        try Data("keep me".utf8).write(to: url)
        await #expect { try await ring.save(to: url) } throws: { ($0 as? ReelError)?.code == .fileExists }
        #expect(try Data(contentsOf: url) == Data("keep me".utf8))
        let replaced = try await ring.save(to: url, overwrite: true)
        #expect(replaced.videoFrames > 0)
        #expect(try MediaProbe.probe(url).videoStreams.count == 1)
        // Nothing is left behind under a temporary name.
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted() == ["exists.mp4", "full.mp4"])
        #expect { try recording.writer.addSink(ring) } throws: { ($0 as? ReelError)?.code == .alreadyRunning }
        _ = try recording.writer.finish()
    }

    @Test func eachWriterOpensItsOwnEncodersOnce() throws {
        let dir = try TemporaryDirectory()
        let census = EncoderCensus()
        try EncoderCensus.$current.withValue(census) {
            let one = try SyntheticRecording(dir.url.appendingPathComponent("one.mp4"), preset: "ultrafast")
            try one.writer.addSink(try ReplayBuffer(duration: MediaTime(value: 5, timescale: 1)))
            try one.writer.addSink(try ReplayBuffer(duration: MediaTime(value: 60, timescale: 1)))
            #expect(census.videoEncoders == 1 && census.audioEncoders == 1)
            _ = try SyntheticRecording(dir.url.appendingPathComponent("two.mp4"), preset: "ultrafast")
            #expect(census.videoEncoders == 2 && census.audioEncoders == 2)
        }
    }

    @Test func aReplayBufferNeedsNoFile() async throws {
        let dir = try TemporaryDirectory()
        let census = EncoderCensus()
        let ring = try ReplayBuffer(duration: MediaTime(value: 30, timescale: 1))
        let recording = try EncoderCensus.$current.withValue(census) { try SyntheticRecording(sinks: [ring]) }
        try recording.feed(40 * 30)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).isEmpty, "nothing is written until asked")
        try recording.encoder?.finish()
        let saved = try await ring.save(to: dir.url.appendingPathComponent("replay.mkv"))
        let file = try check(saved.url, summary: saved)
        #expect(file.last == recording.fed - 1)
        expectWindow(file, fedBefore: recording.fed, fedAfter: recording.fed, lag: 0)
        #expect(census.videoEncoders == 1 && census.audioEncoders == 1)
    }

    @Test func anAudioOnlyReplayKeepsItsWindowOfSound() async throws {
        let dir = try TemporaryDirectory()
        let ring = try ReplayBuffer(duration: MediaTime(value: 5, timescale: 1))
        let encoder = try StreamEncoder(video: nil, audio: [AssetWriter.AudioTrack(settings: AudioSettings(codec: .aac), inputFormat: AudioFormat())])
        try encoder.addSink(ring)
        let tone = ToneSource()
        let seconds = 12
        for second in 0..<seconds {
            var samples: [Float] = []
            for n in (second * 48_000)..<((second + 1) * 48_000) {
                let v = tone.value(atSample: Int64(n))
                samples += [v, v]
            }
            try encoder.appendAudio(AudioBuffer(format: AudioFormat(), presentationTime: .zero, data: samples.withUnsafeBytes { Array($0) }),
                                    track: 0)
        }
        try encoder.finish()
        let saved = try await ring.save(to: dir.url.appendingPathComponent("sound.mp4"))
        #expect(saved.videoFrames == 0)
        let probe = try MediaProbe.probe(saved.url)
        #expect(probe.videoStreams.isEmpty && probe.audioStreams.count == 1)
        let decoded = try MediaProbe.decodeAudio(saved.url)
        let length = Double(decoded.count) / 48_000
        #expect(length >= 5 && length < 5 + 1024.0 / 48_000, "\(length) s saved of a 5 s window")
        // The window is the last 5 s: beeps at 7.5 ... 11.5 s of the recording, 1 s apart.
        let onsets = MediaProbe.beepOnsets(decoded)
        #expect(onsets.count == 5)
        let start = saved.start.seconds
        for (i, onset) in onsets.enumerated() {
            #expect(abs(start + onset - (7.5 + Double(i))) <= 0.020, "beep \(i) at \(start + onset) s of the recording")
        }
    }
}
