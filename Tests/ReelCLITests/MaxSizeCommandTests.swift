import Foundation
import Testing
import Reel
import ReelTestSupport

/// `reel record --max-size` in real time: the file keeps the promise, and the progress shows
/// the media written, not the space kept for the index.
@Suite(.tags(.realTime)) struct MaxSizeCommandTests {
    @Test(arguments: [["--duration", "10"], []])
    func theFileStaysWithinTheLimit(_ extra: [String]) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("capped.mp4")
        let r = try ReelBinary.run(["record", "--test-pattern", "--tone", "--size", "320x240", "--max-size", "100k", "--json",
                                    "-o", url.path] + extra)
        #expect(r.status == 0, "\(r.stderr)")
        let size = ((try FileManager.default.attributesOfItem(atPath: url.path))[.size] as? NSNumber)?.int64Value ?? -1
        #expect(size <= 100_000 && size > 60_000, "\(size) bytes")
        let events = r.output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let bytes = events.filter { $0["event"] as? String == "progress" }.compactMap { $0["bytes"] as? Int }
        #expect(!bytes.isEmpty && bytes.allSatisfy { $0 <= size }, "\(bytes)")
        let finished = try #require(events.last)
        #expect(finished["bytes"] as? Int == Int(size))
        #expect((finished["frames"] as? Int ?? 0) > 30)
    }

    /// A still picture of noise, as a file camera: its keyframes are over half a megabyte, the
    /// frames between them a few bytes.
    static func noiseCamera(in dir: TemporaryDirectory) throws -> URL {
        let url = dir.url.appendingPathComponent("noise.mkv")
        let made = try Subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i",
                                       "color=gray:s=1280x720:d=1:r=30,noise=alls=100:allf=u,trim=end_frame=1,loop=loop=299:size=1,setpts=N/30/TB",
                                       "-c:v", "libx264", "-qp", "0", "-preset", "ultrafast", url.path])
        #expect(made.status == 0, "\(made.stderr)")
        return url
    }

    /// Large keyframes do not stop the recording early: a limit of two of them holds the whole
    /// first group (it stopped after half a second when the first keyframe's size was taken
    /// for every frame the encoder still held).
    @Test func largeKeyframesFillTheLimit() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("noise.mp4")
        let r = try ReelBinary.run(["record", "--camera=\(try Self.noiseCamera(in: dir).path)", "--max-size", "1M", "-o", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        let size = ((try FileManager.default.attributesOfItem(atPath: url.path))[.size] as? NSNumber)?.int64Value ?? -1
        #expect(size <= 1_000_000, "\(size) bytes")
        let probe = try MediaProbe.probe(url)
        let frames = try #require(probe.videoStreams.first?.frameCount)
        #expect(frames >= 58, "the first two-second group is whole: \(frames) frames, \(size) bytes")
    }

    /// A limit smaller than the first frame records nothing and says so; no empty file is left.
    @Test func aLimitBelowTheFirstFrameSaysSoAndLeavesNoFile() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("tiny.mp4")
        let r = try ReelBinary.run(["record", "--camera=\(try Self.noiseCamera(in: dir).path)", "--max-size", "300k", "-o", url.path])
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("first frame alone is larger than the size limit"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }
}
