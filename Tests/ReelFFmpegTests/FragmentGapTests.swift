import Foundation
import Testing
import ReelCore
import ReelFFmpeg
import ReelTestSupport

/// Pictures that stop for a while as the sound goes on (a recorder stopped by the system, a
/// source that stalled): the fragments the sound ends meanwhile must not move the first picture
/// after the gap, and the finished file's presentation lasts as long as its media.
@Suite struct FragmentGapTests {
    typealias Ported = AssetWriterInputTests
    static let start = Ported.sessionStart

    static func appendTone(from tenth: Int, to end: Int, _ audio: AssetWriterInput) throws {
        for t in tenth..<end {
            #expect(audio.append(try Ported.tone(from: start + MediaTime(value: Int64(t) * 4800, timescale: 48_000), seconds: 0.1)))
        }
    }

    /// Frames 0 to 59 (two seconds), none for three seconds, frames 150 to 209; the tone for
    /// all seven seconds. The file lasts seven seconds, as its video and its sound do; frame 150
    /// is shown at 5 s; every frame is there.
    @Test func aGapInThePicturesLeavesTheFileAsLongAsItsMedia() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("gap.mp4")
        let (writer, video, audio) = try Ported.startedWriter(url, audio: true)
        let sound = try #require(audio)
        try Ported.append(60, to: video)
        try Self.appendTone(from: 0, to: 20, sound)
        try Self.appendTone(from: 20, to: 50, sound)
        try Ported.append(60, from: 150, to: video)
        try Self.appendTone(from: 50, to: 70, sound)
        video.markAsFinished()
        sound.markAsFinished()
        await writer.finishWriting()
        #expect(writer.status == .completed, "\(String(describing: writer.error))")

        let probed = try MediaProbe.probe(url)
        let videoDuration = try #require(probed.videoStreams.first?.duration)
        #expect(abs(probed.duration - 7) < 0.05, "the file lasts \(probed.duration) s, its media 7 s")
        #expect(abs(videoDuration - 7) < 0.05, "the video track lasts \(videoDuration) s")
        let times = try MediaProbe.frameTimes(url)
        #expect(times.count == 120, "\(times.count) frames")
        if times.count == 120 {
            #expect(abs(times[60] - 5) < 0.002, "frame 150 is shown at \(times[60]) s")
            #expect(abs(times[119] - 209.0 / 30) < 0.002, "the last frame is shown at \(times[119]) s")
        }
        let counters = try MediaProbe.decodeLuma(url, width: 160, height: 120).map(\.counter)
        #expect(counters == (Array(0..<60) + Array(150..<210)).map { Optional(Int64($0)) })
    }
}
