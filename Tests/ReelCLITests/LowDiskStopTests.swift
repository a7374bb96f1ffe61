import Foundation
import Testing
import Reel
import ReelTestSupport

/// A recording that `--min-free` stops because the disk is nearly full keeps what it recorded,
/// and says it is not all that was asked for: `"complete": false` and exit 3, as for a source
/// that did not record its whole part (it said complete, exit 0, though 3 s of 30 were there).
@Suite(.serialized, .tags(.realTime)) struct LowDiskStopTests {
    @Test func aStopForDiskSpaceIsAnIncompleteRecording() throws {
        let dir = try TemporaryDirectory()
        let disk = try SmallDisk(size: "12M")
        let url = disk.url.appendingPathComponent("short.mp4")
        let events = dir.url.appendingPathComponent("events.jsonl")
        _ = FileManager.default.createFile(atPath: events.path, contents: nil)
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast", "--duration", "30",
                             "--min-free", "4M", "--json", "-o", url.path]
        process.standardOutput = try FileHandle(forWritingTo: events)
        process.standardError = FileHandle.nullDevice
        try process.run()
        usleep(2_000_000)
        // Something else fills the disk to below the 4 MB asked to stay free.
        try Data(count: 9_000_000).write(to: disk.url.appendingPathComponent("filler"))
        process.waitUntilExit()
        let lines = ((try? String(contentsOf: events, encoding: .utf8)) ?? "").split(separator: "\n")
        let finished = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .first { $0["event"] as? String == "finished" } ?? [:]
        #expect(process.terminationStatus == 3, "\(lines.suffix(3))")
        #expect(finished["ending"] as? String == "lowDiskSpace", "\(finished)")
        #expect(finished["complete"] as? Bool == false, "\(finished)")
        #expect(Recovery.isFinished(url))
        #expect((try MediaProbe.probe(url).videoStreams.first?.frameCount ?? 0) >= 30)
    }
}
