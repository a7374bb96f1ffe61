import Foundation
import Testing
import ReelCore
import ReelFFmpeg
import ReelSystem
import ReelTestSupport

/// A file whose disk filled past the room kept ahead of it (here a file system that keeps none,
/// so the first write past the disk's end fails, as when more waited than the room held) is
/// finalised in place with what reached the disk, whatever its kind: a WAV's sizes set and its
/// torn sample cut off, an Ogg's last whole page marked the end, a FLAC's header filled in, an
/// MKV or WebM given its size and duration without cues (which would need room). Nothing of that
/// needs room on the full disk. The error says what the file keeps, and the file plays to its
/// end without a decoding error. (WAV, Ogg, MKV and WebM were left unfinalised with the advice
/// to free space and recover them, the WAV ending mid-sample: "Invalid PCM packet".)
@Suite(.serialized) struct FullDiskFinishTests {
    let size = PixelSize(width: 320, height: 240)

    /// The file's writes, passed on, and no room kept ahead (``FileOutput``'s default: the
    /// file system keeps none).
    final class RoomlessOutput: FileOutput {
        let inner: any FileOutput
        init(_ inner: any FileOutput) { self.inner = inner }
        func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Syscall.Errno) { try inner.write(bytes, at: offset) }
        func close() { inner.close() }
    }

    /// Appends thirtieths of a second of the test pattern (with `video`) and the tone to
    /// `writer`, far more than the disk holds (a minute of WAV is 11 MB), then finishes it;
    /// the error that ended it, and how many it took.
    func fill(_ writer: AssetWriter, video: Bool) throws -> (ReelError?, Int) {
        let pool = FramePool(format: .yuv420p, size: size, capacity: 2)
        let tone = ToneSource()
        var appended = 0
        defer { writer.cancelWriting() }
        do {
            for i in 0..<9000 {
                if video {
                    let frame = try #require(pool.makeFrame())
                    try TestPattern.draw(index: Int64(i), flash: false, into: frame)
                    try writer.appendVideo(frame, at: FrameRate(30).time(ofFrame: Int64(i)))
                }
                var samples: [Float] = []
                for n in (i * 1600)..<((i + 1) * 1600) { let v = tone.value(atSample: Int64(n)); samples += [v, v] }
                try writer.appendAudio(AudioBuffer(format: AudioFormat(), presentationTime: MediaTime(value: Int64(i * 1600), timescale: 48_000),
                                                   data: samples.withUnsafeBytes { Array($0) }), track: 0)
                appended += 1
            }
            _ = try writer.finish()
        } catch let error as ReelError {
            return (error, appended)
        }
        return (nil, appended)
    }

    @Test(arguments: [Container.wav, .ogg, .flac, .mkv, .webm])
    func aFileThatOutrunsItsRoomIsFinalisedWithWhatReachedTheDisk(_ container: Container) throws {
        let disk = try SmallDisk(size: "1M")
        let url = disk.url.appendingPathComponent("full.\(container.fileExtension)")
        let hasVideo = container == .mkv || container == .webm
        let codec: AudioCodec = switch container { case .wav: .pcm; case .flac: .flac; default: .opus }
        var videoSettings = VideoSettings(codec: container == .webm ? .vp9 : .h264)
        videoSettings.preset = container == .webm ? nil : "ultrafast"
        videoSettings.rateControl = .crf(container == .webm ? 4 : 0)
        let video = hasVideo ? AssetWriter.VideoTrack(settings: videoSettings, inputFormat: .yuv420p, inputSize: size) : nil
        let audio = AssetWriter.AudioTrack(settings: AudioSettings(codec: codec), inputFormat: AudioFormat(), title: "Tone")
        let writer = try AssetWriter(configuration: AssetWriter.Configuration(url: url, video: video, audio: [audio]),
                                     wrappingOutput: { RoomlessOutput($0) })
        let (failure, appended) = try fill(writer, video: hasVideo)
        let error = try #require(failure, "1 MB held \(appended) thirtieths of a second")
        #expect(error.code == .insufficientStorage)
        #expect(error.message.contains("the disk filled while \(url.path) was recorded, which ended the recording: it keeps the first "), "\(error)")
        #expect(Recovery.isFinished(url), "\(error)")
        // Whole to its end: no torn sample, packet or block.
        let decoded = try Subprocess.run(["ffmpeg", "-v", "error", "-i", url.path, "-f", "null", "-"])
        #expect(decoded.status == 0 && decoded.stderr.isEmpty, "\(decoded.stderr)")
        let kept = try MediaProbe.probe(url).duration
        #expect(kept > 1 && kept <= Double(appended + 1) / 30 + 0.1, "\(kept) s kept of \(Double(appended) / 30) s")
        if hasVideo {
            let counters = try MediaProbe.decodeLuma(url, width: size.width, height: size.height).compactMap(\.counter)
            #expect(counters.count > 10 && counters == (0..<counters.count).map { Int64($0) }, "\(counters)")
            // The duration written in place is where the file's media ends.
            #expect(abs(kept - Double(counters.count) / 30) < 0.1, "\(kept) s for \(counters.count) frames")
        }
    }

    /// An MP4 whose pictures and sound reached the disk to ends apart (by more than 0.05 s) says
    /// what each keeps:
    /// its length is the longer's (s46 #8: "keeps the first 0.67 s, 20 frames" while its AAC
    /// held 0.49 s).
    @Test func anMP4WhosePicturesAndSoundEndApartSaysWhatEachKeeps() throws {
        let disk = try SmallDisk(size: "1M")
        let url = disk.url.appendingPathComponent("full.mp4")
        var videoSettings = VideoSettings(codec: .h264)
        videoSettings.preset = "ultrafast"
        videoSettings.rateControl = .crf(0)
        let video = AssetWriter.VideoTrack(settings: videoSettings, inputFormat: .yuv420p, inputSize: size)
        let audio = AssetWriter.AudioTrack(settings: AudioSettings(codec: .aac), inputFormat: AudioFormat(), title: "Tone")
        let writer = try AssetWriter(configuration: AssetWriter.Configuration(url: url, video: video, audio: [audio]),
                                     wrappingOutput: { RoomlessOutput($0) })
        let (failure, _) = try fill(writer, video: true)
        let error = try #require(failure)
        #expect(error.code == .insufficientStorage)
        let probed = try MediaProbe.probe(url)
        let pictures = try #require(probed.videoStreams.first?.duration), sound = try #require(probed.audioStreams.first?.duration)
        let frames = try MediaProbe.decodeLuma(url, width: size.width, height: size.height).count
        let twoPlaces = { (x: Double) in String(format: "%.2f", x) }
        // Here the video runs ahead of the sound (the AAC encoder's delay) at the cut.
        try #require(abs(pictures - sound) > 0.05, "\(pictures) s of pictures, \(sound) s of sound")
        #expect(error.message.contains("it keeps \(twoPlaces(pictures)) s of pictures (\(frames) frames) and \(twoPlaces(sound)) s of sound and plays"),
                "\(error.message)")
    }
}
