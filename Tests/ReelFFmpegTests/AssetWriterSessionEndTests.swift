import Foundation
import Testing
import ReelCore
import ReelFFmpeg
import ReelTestSupport

/// `endSession(atSourceTime:)` as `AVAssetWriter` has it: the file's presentation ends there,
/// whatever was appended past it; and `cancelWriting()`, which keeps what reached the disk.
@Suite struct AssetWriterSessionEndTests {
    typealias Ported = AssetWriterInputTests
    static let start = Ported.sessionStart

    /// Frames `range` of the pattern at their grid times from the session's start, and the tone
    /// over the same span in 0.1 s buffers.
    static func feed(_ range: Range<Int>, video: AssetWriterInput, audio: AssetWriterInput?) throws {
        for i in range {
            #expect(video.append(try Ported.bgraPatternFrame(Int64(i), at: start + FrameRate(30).time(ofFrame: Int64(i)))))
        }
        guard let audio else { return }
        for tenth in stride(from: range.lowerBound / 3, to: range.upperBound / 3, by: 1) {
            #expect(audio.append(try Ported.tone(from: start + MediaTime(value: Int64(tenth) * 4800, timescale: 48_000), seconds: 0.1)))
        }
    }

    /// What the decoded file holds: its duration, the pattern's counters, the last frame's time
    /// and the seconds of sound.
    static func decoded(_ url: URL, audio: Bool = true) throws -> (duration: Double, counters: [Int64?], lastFrame: Double, sound: Double) {
        let probed = try MediaProbe.probe(url)
        let counters = try MediaProbe.decodeLuma(url, width: 160, height: 120).map(\.counter)
        let last = try MediaProbe.frameTimes(url).max() ?? -1
        let sound = audio ? Double(try MediaProbe.decodeAudio(url).count) / 48_000 : 0
        return (probed.duration, counters, last, sound)
    }

    /// Two seconds of video and sound appended, then the session ended at one second: the file
    /// presents the first second only, its last frame at 29/30 s, its sound a second long.
    @Test func mediaAppendedPastTheEndIsNotPresented() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("ended.mp4")
        let (writer, video, audio) = try Ported.startedWriter(url, audio: true)
        try Self.feed(0..<60, video: video, audio: audio)
        writer.endSession(atSourceTime: Self.start + MediaTime(seconds: 1))
        #expect(writer.sessionEnd == Self.start + MediaTime(seconds: 1))
        video.markAsFinished()
        audio?.markAsFinished()
        await writer.finishWriting()
        #expect(writer.status == .completed, "\(String(describing: writer.error))")
        let file = try Self.decoded(url)
        #expect(abs(file.duration - 1) < 0.03, "the file lasts \(file.duration) s")
        #expect(file.counters == (0..<30).map { Optional(Int64($0)) }, "frames 0 to 29, not \(file.counters)")
        #expect(abs(file.lastFrame - 29.0 / 30) < 0.002, "the last frame at \(file.lastFrame) s")
        #expect(abs(file.sound - 1) < 0.03, "\(file.sound) s of sound")
    }

    /// Media appended after the end is left out, as media before the session's start is: the
    /// append is not an error and the writer goes on writing, but nothing of it is in the file.
    @Test func mediaAppendedAfterTheEndIsLeftOut() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("after.mp4")
        let (writer, video, audio) = try Ported.startedWriter(url, audio: true)
        try Self.feed(0..<30, video: video, audio: audio)
        writer.endSession(atSourceTime: Self.start + MediaTime(seconds: 1))
        #expect(video.append(try Ported.bgraPatternFrame(30, at: Self.start + FrameRate(30).time(ofFrame: 30))))
        #expect(writer.videoFrameCount == 30, "frame 30, at the end, is not encoded")
        #expect(audio?.append(try Ported.tone(from: Self.start + MediaTime(seconds: 0.95), seconds: 0.5)) == true,
                "audio is taken up to the end")
        #expect(writer.status == .writing, "not a misuse")
        await writer.finishWriting()
        #expect(writer.status == .completed)
        let file = try Self.decoded(url)
        #expect(file.counters == (0..<30).map { Optional(Int64($0)) })
        #expect(abs(file.sound - 1) < 0.03, "\(file.sound) s of sound")
        #expect(abs(file.duration - 1) < 0.03, "\(file.duration) s")
    }

    /// An end past the last media appended ends the file with its media.
    @Test func anEndPastTheMediaEndsTheFileWithIt() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("late-end.mp4")
        let (writer, video, _) = try Ported.startedWriter(url)
        try Self.feed(0..<30, video: video, audio: nil)
        writer.endSession(atSourceTime: Self.start + MediaTime(seconds: 5))
        await writer.finishWriting()
        #expect(writer.status == .completed)
        let file = try Self.decoded(url, audio: false)
        #expect(file.counters.count == 30)
        #expect(abs(file.duration - 1) < 0.03, "\(file.duration) s")
    }

    /// A short file whose session ends with its media (an `AVAssetWriter` port's usual
    /// `endSession(atSourceTime:)`) is about the size of its media, as a recorder's short
    /// file is: the hour of index room kept for a crash is not left in it as `free` boxes.
    /// (It was 3.1 MB for 24 kB of media: finalised in place because the session had an end.)
    @Test func aShortFileWithAnEndIsTheSizeOfItsMedia() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("short.mp4")
        let (writer, video, audio) = try Ported.startedWriter(url, audio: true)
        try Self.feed(0..<60, video: video, audio: audio)
        video.markAsFinished()
        audio?.markAsFinished()
        writer.endSession(atSourceTime: Self.start + MediaTime(seconds: 2))
        await writer.finishWriting()
        #expect(writer.status == .completed, "\(String(describing: writer.error))")
        let media = try (MediaProbe.packetExtents(url, stream: "v:0") + MediaProbe.packetExtents(url, stream: "a:0")).reduce(0) { $0 + $1.size }
        let bytes = try #require((try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value)
        #expect(writer.summary?.bytes == bytes)
        #expect(bytes < media + 16_384, "\(bytes) bytes for \(media) bytes of media (\(String(describing: writer.summary?.finalisation)))")
        let file = try Self.decoded(url)
        #expect(file.counters == (0..<60).map { Optional(Int64($0)) }, "every frame, in order: \(file.counters)")
        #expect(abs(file.duration - 2) < 0.03, "the file lasts \(file.duration) s")
        #expect(abs(file.sound - 2) < 0.03, "\(file.sound) s of sound")
    }

    /// An end before the session's start, or a second end, fails the writer; what was
    /// appended is finished into a file that plays.
    @Test func endingTheSessionWronglyFailsTheWriterAndKeepsTheFile() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("wrong.mp4")
        let (writer, video, _) = try Ported.startedWriter(url)
        try Self.feed(0..<15, video: video, audio: nil)
        writer.endSession(atSourceTime: Self.start - MediaTime(seconds: 1))
        #expect(writer.status == .failed)
        #expect((writer.error as? ReelError)?.message.contains("before its start") == true, "\(String(describing: writer.error))")
        #expect(try Self.decoded(url, audio: false).counters == (0..<15).map { Optional(Int64($0)) })
    }

    /// `cancelWriting()` keeps the file, where `AVAssetWriter` deletes it: a partial recording
    /// is never deleted. It holds the complete fragments, which play; the writer is cancelled
    /// and takes nothing more.
    @Test func cancelWritingKeepsWhatReachedTheDisk() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("cancelled.mp4")
        let (writer, video, _) = try Ported.startedWriter(url)
        let adaptor = AssetWriterInputPixelBufferAdaptor(assetWriterInput: video)
        try Self.feed(0..<60, video: video, audio: nil)
        writer.cancelWriting()
        #expect(writer.status == .cancelled && writer.error == nil)
        #expect(adaptor.pixelBufferPool == nil, "no frames for a writer that has ended")
        #expect(!video.append(try Ported.bgraPatternFrame(60, at: Self.start + FrameRate(30).time(ofFrame: 60))))
        #expect(writer.status == .cancelled)
        writer.endSession(atSourceTime: Self.start)
        #expect(writer.status == .cancelled, "ending a cancelled writer's session does nothing")
        let counters = try MediaProbe.decodeLuma(url, width: 160, height: 120).map(\.counter)
        #expect(counters.count >= 15, "at least the first half-second fragment: \(counters.count) frames")
        #expect(counters == (0..<counters.count).map { Optional(Int64($0)) })
    }
}
