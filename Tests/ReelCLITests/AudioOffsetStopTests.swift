import Foundation
import Testing
import Reel
import ReelTestSupport

/// `--audio-offset` and a stop (Ctrl-C): every track ends together, as without an offset.
@Suite(.serialized, .tags(.realTime)) struct AudioOffsetStopTests {
    /// One audio frame of AAC at 48 kHz.
    static let audioFrame = 1024.0 / 48_000

    /// Where each track of `url` ends on the file's timeline (its start time plus its duration).
    static func trackEnds(_ url: URL) throws -> (video: Double, audio: Double) {
        let r = try Subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_type,start_time,duration", "-of", "csv=p=0", url.path])
        var ends: [String: Double] = [:]
        for line in r.output.split(separator: "\n") {
            let fields = line.split(separator: ",").map(String.init)
            guard fields.count == 3, let start = Double(fields[1]), let duration = Double(fields[2]) else { continue }
            ends[fields[0]] = start + duration
        }
        return (ends["video"] ?? .nan, ends["audio"] ?? .nan)
    }

    /// A sound moved later by 2 s (and by 200 ms) ended 2 s past the last picture at a stop: the
    /// shifted source's last samples, from before the stop, lie past the video's end. They are
    /// left out now, and nothing before the stop is: the pictures run to the stop.
    @Test(arguments: [2000, 200])
    func aStopEndsEveryTrackTogether(offset: Int) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("offset\(offset).mp4")
        let run = try await AudioFileTests.Recording.start(["--test-pattern", "--size", "320x240", "--tone", "--audio-offset", "\(offset)",
                                                            "--preset", "ultrafast", "-o", url.path], in: dir)
        try await Task.sleep(for: .seconds(4))
        kill(run.process.processIdentifier, SIGINT)
        let finished = try run.finish()
        #expect(finished.status == 0, "\(finished.stderr)")
        let ends = try Self.trackEnds(url)
        #expect(ends.video > 3.5, "the pictures run to the stop: \(ends)")
        #expect(abs(ends.audio - ends.video) <= Self.audioFrame + 0.001, "offset \(offset) ms: audio ends at \(ends.audio) s, video at \(ends.video) s")
        let reported = try #require(finished.finishedDuration, "\(finished.events)")
        #expect(abs(reported - ends.video) < 0.05, "reported \(reported) s, \(ends)")
    }
}
