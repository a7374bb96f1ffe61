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

    /// The disk filled a moment before the stop (something else took the space; no `--min-free`
    /// to stop first): the stop cannot write the last fragment, and finalises what reached the
    /// disk in place, as a recovery would on the full disk; it says how much the file keeps and
    /// how much was lost. Before, it failed with the advice to recover the file, left fragmented
    /// with its last fragment torn.
    @Test func aDiskThatFillsAtTheStopLeavesAFinalisedFileAndSaysWhatWasLost() throws {
        let disk = try SmallDisk(size: "20M")
        let url = disk.url.appendingPathComponent("full.mp4")
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast", "--min-free", "0",
                             "-o", url.path]
        let stderr = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = stderr
        try process.run()
        usleep(3_000_000)
        let free = try FileManager.default.attributesOfFileSystem(forPath: disk.url.path)[.systemFreeSize] as? Int ?? 0
        try Data(count: max(0, free - 20_000)).write(to: disk.url.appendingPathComponent("filler"))
        usleep(500_000)
        kill(process.processIdentifier, SIGTERM)
        let said = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 1, "\(said)")
        #expect(said.contains("the disk filled as \(url.path) was finished: it keeps the first "), "\(said)")
        // What could not be written, the pictures' and the sound's apart when they differ.
        #expect(said.contains(" could not be written"), "\(said)")
        #expect(Recovery.isFinished(url), "\(said)")
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter)
        #expect(counters.count >= 45 && said.contains(", \(counters.count) frames and plays"), "\(counters.count) frames: \(said)")
        #expect(zip(counters, counters.dropFirst()).allSatisfy { a, b in a.flatMap { a in b.map { $0 > a } } == true }, "\(counters)")
    }
}
