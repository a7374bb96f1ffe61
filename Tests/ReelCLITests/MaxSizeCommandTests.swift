import Foundation
import Testing
import Reel
import ReelTestSupport

/// `reel record --max-size` in real time: the file keeps the promise, and the progress shows
/// the media written, not the space kept for the index.
@Suite struct MaxSizeCommandTests {
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
}
