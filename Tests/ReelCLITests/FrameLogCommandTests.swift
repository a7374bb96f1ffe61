import Foundation
import Testing
import Reel
import ReelTestSupport

/// `reel record --frame-log`: the log holds the frames the file holds, at the file's times,
/// and its errors speak of --frame-log.
@Suite(.tags(.realTime)) struct FrameLogCommandTests {
    /// The rows of a frame log, by column name.
    static func rows(_ url: URL) throws -> (header: [String], rows: [[String: String]]) {
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("#") }
        let header = lines.first.map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) } ?? []
        let rows = lines.dropFirst().map { line in
            Dictionary(uniqueKeysWithValues: zip(header, line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)))
        }
        return (header, rows)
    }

    @Test func theLogHoldsTheRecordedFramesAtTheFilesTimes() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("logged.mp4")
        let log = dir.url.appendingPathComponent("frames.csv")
        let r = try ReelBinary.run(["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "--faster-than-real-time",
                                    "--duration", "2", "--frame-log", log.path, "-o", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        let (header, rows) = try Self.rows(log)
        #expect(header == ["source", "name", "frame", "capture_time", "presentation_time", "recorded"])
        let recorded = rows.filter { $0["recorded"] == "yes" }
        #expect(recorded.count == 60, "\(rows.count) rows, \(recorded.count) recorded")
        #expect(rows.filter { $0["recorded"] != "yes" }.allSatisfy { $0["recorded"] == "no" && $0["presentation_time"] == "" })
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).compactMap(\.counter)
        #expect(recorded.compactMap { $0["frame"].flatMap { Int64($0) } } == counters)
        let times = try MediaProbe.packetTimes(url).sorted()
        let logged = recorded.compactMap { $0["presentation_time"].flatMap(Double.init) }
        #expect(logged.count == times.count)
        for (a, b) in zip(logged, times) { #expect(abs(a - b) < 0.000_002, "log \(a), file \(b)") }
    }

    /// While recording, the rows reach the disk within about a second: a disk that fills, or a
    /// crash, later keeps them. They waited for 64 kB (about 50 s of rows), so a log whose disk
    /// filled three seconds in held none (issue 26, F9).
    @Test func theRowsReachTheDiskWhileRecording() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("live.mp4")
        let log = dir.url.appendingPathComponent("live.csv")
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--test-pattern", "--size", "160x120", "--preset", "ultrafast", "--duration", "4",
                             "--frame-log", log.path, "-o", url.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        try await Task.sleep(for: .milliseconds(2500))
        #expect(process.isRunning, "still recording")
        let lines = ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n")
        // The header and at least the first second's 30 frames, read while it records.
        #expect(lines.count >= 31, "\(lines.count) lines on the disk 2.5 s in")
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    /// A frame log that could not be written whole is in `--json`'s `finished`
    /// (`frameLogIncomplete`: the file and why), not on stderr alone; the recording beside it is
    /// complete (issue 26, F9).
    @Test func aFrameLogOnAFullDiskIsInTheFinishedEvent() throws {
        let dir = try TemporaryDirectory()
        let disk = try SmallDisk(size: "64k")
        _ = try Subprocess.run(["dd", "if=/dev/zero", "of=\(disk.url.appendingPathComponent("filler").path)", "bs=4k"])
        let url = dir.url.appendingPathComponent("kept.mp4")
        let log = disk.url.appendingPathComponent("frames.csv")
        let r = try ReelBinary.run(["record", "--test-pattern", "--size", "160x120", "--preset", "ultrafast", "--faster-than-real-time",
                                    "--duration", "1", "--frame-log", log.path, "--json", "-o", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        let finished = r.output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .last { $0["event"] as? String == "finished" }
        let failure = try #require(finished?["frameLogIncomplete"] as? [String: Any], "\(r.output)")
        #expect(failure["file"] as? String == log.path && (failure["error"] as? String ?? "").contains("space"), "\(failure)")
        #expect(finished?["complete"] as? Bool == true, "the recording itself is whole")
        #expect(r.stderr.contains("the frame log is incomplete"), "\(r.stderr)")
    }

    /// Stopped by Ctrl-C, the log is finished before reel exits: the recording's columns, a
    /// row for every frame the file holds (it used to be left with the raw columns, or empty).
    @Test func aLogStoppedByASignalIsComplete() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("stopped.mp4")
        let log = dir.url.appendingPathComponent("stopped.csv")
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "--json",
                             "--frame-log", log.path, "-o", url.path]
        let events = Pipe()
        process.standardOutput = events
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Once the first progress is out, frames are being written.
        var seen = Data()
        while !String(decoding: seen, as: UTF8.self).contains("\"progress\""), process.isRunning {
            seen += events.fileHandleForReading.availableData
        }
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let (header, rows) = try Self.rows(log)
        #expect(header == ["source", "name", "frame", "capture_time", "presentation_time", "recorded"])
        let recorded = rows.filter { $0["recorded"] == "yes" }.compactMap { $0["frame"].flatMap { Int64($0) } }
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).compactMap(\.counter)
        #expect(!counters.isEmpty && recorded == counters)
    }

    @Test func frameLogErrorsNameTheOption() throws {
        let dir = try TemporaryDirectory()
        let missing = try ReelBinary.run(["record", "--test-pattern", "--duration", "0.5", "--frame-log", "/nonexistent/folder/f.csv",
                                          "-o", dir.url.appendingPathComponent("a.mp4").path])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("--frame-log"), "\(missing.stderr)")
        #expect(!missing.stderr.contains("-o)") && !missing.stderr.contains("with -o"), "\(missing.stderr)")
        let existing = dir.url.appendingPathComponent("frames.csv")
        try Data("mine".utf8).write(to: existing)
        let exists = try ReelBinary.run(["record", "--test-pattern", "--duration", "0.5", "--frame-log", existing.path,
                                         "-o", dir.url.appendingPathComponent("b.mp4").path])
        #expect(exists.status == 1)
        #expect(exists.stderr.contains("--frame-log"), "\(exists.stderr)")
        #expect(try Data(contentsOf: existing) == Data("mine".utf8))
    }
}
