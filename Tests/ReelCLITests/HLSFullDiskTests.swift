import Foundation
import Testing
import ReelTestSupport

/// HLS on a disk of its own that another program fills (issue 26, F2 of the stranger pass).
extension StreamCommandTests {
    /// The playlist is never destroyed by a full disk: while the disk is full a player reading
    /// it finds the last good playlist, and at the end it lists every segment written whole
    /// (never one cut short) and has its end, so the archive plays to where the stream stopped.
    /// FFmpeg's writer replaced it with the empty or short copy it could write (0 bytes),
    /// which `reel recover` then took for a stream that recorded nothing.
    @Test(arguments: ["ts", "fmp4"])
    func hlsOnAFilledDiskKeepsItsLastGoodPlaylistAndEndsIt(_ segments: String) throws {
        let dir = try TemporaryDirectory()
        let disk = try SmallDisk(size: "4m")
        let hls = disk.url.appendingPathComponent("hls")
        let playlist = hls.appendingPathComponent("index.m3u8")
        let file = dir.url.appendingPathComponent("f.mp4")
        let run = try RunningRecord(Self.recording + ["--hls", hls.path, "--hls-segments", segments, "--hls-window", "0", "--min-free", "0",
                                                      "--json", "-o", file.path], in: dir, events: events)
        defer { run.killIfRunning() }
        func listed() -> [String] {
            ((try? String(contentsOf: playlist, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#") }
        }
        run.wait(for: "two segments listed") { listed().count >= 2 }
        let before = listed()
        // Another program fills the disk.
        _ = try Subprocess.run(["dd", "if=/dev/zero", "of=\(disk.url.appendingPathComponent("fill").path)", "bs=64k"])
        // A player reading the playlist meanwhile finds it whole, with what it listed before.
        var bad: [String] = []
        let until = Date().addingTimeInterval(4)
        while Date() < until {
            let text = (try? String(contentsOf: playlist, encoding: .utf8)) ?? ""
            if !text.hasPrefix("#EXTM3U") || !before.allSatisfy(listed().contains) { bad.append(text) }
            usleep(50_000)
        }
        #expect(bad.isEmpty, "the playlist was not whole while the disk was full: \(bad.first ?? "")")
        kill(run.process.processIdentifier, SIGINT)
        run.process.waitUntilExit()
        #expect(run.process.terminationStatus == 3, "\(run.errors)")
        let failed = run.seen("streamFailed")
        #expect(failed.count == 1, "\(run.output.suffix(800))")
        try FileManager.default.removeItem(at: disk.url.appendingPathComponent("fill"))
        let text = try String(contentsOf: playlist, encoding: .utf8)
        #expect(text.hasSuffix("#EXT-X-ENDLIST\n"), "ended where the stream stopped: \(text)")
        let names = listed()
        #expect(before.allSatisfy(names.contains), "every segment listed before is listed: \(names)")
        for name in names {
            let size = (try? FileManager.default.attributesOfItem(atPath: hls.appendingPathComponent(name).path)[.size] as? Int) ?? 0
            #expect(size > 0 && size != 4096, "\(name), listed, is whole (\(size) bytes)")
        }
        // Nothing of Reel's own is left in the folder: the playlist and the segments alone.
        let files = try FileManager.default.contentsOfDirectory(atPath: hls.path)
        #expect(files.allSatisfy { $0 == "index.m3u8" || ($0.hasPrefix("index-") && !$0.hasSuffix(".tmp")) }, "\(files)")
        // Nor a segment the writer began on the full disk and could write nothing into: it held
        // nothing, and looked like a segment lost (it was left, 0 bytes).
        let empty = files.filter { ((try? FileManager.default.attributesOfItem(atPath: hls.appendingPathComponent($0).path)[.size] as? Int) ?? 0) == 0 }
        #expect(empty.isEmpty, "\(empty) left empty in \(files)")
        // It plays: every frame in order, any gap one the recording said it dropped.
        let finished = try #require(run.seen("finished").first)
        let dropped = (finished["dropped"] as? NSNumber)?.intValue ?? -1
        let played = try counters(playlist)
        #expect(played.count >= 60 && played.allSatisfy { $0 >= 0 }, "\(played.count) frames: \(played.prefix(8))")
        #expect(zip(played, played.dropFirst()).allSatisfy { $0 < $1 }, "in order: \(played)")
        let gaps = Int((played.last ?? 0) - (played.first ?? 0)) + 1 - played.count
        #expect(gaps <= dropped, "\(played.count) frames from \(played.first ?? -1) to \(played.last ?? -1), \(dropped) dropped: \(played)")
    }
}
