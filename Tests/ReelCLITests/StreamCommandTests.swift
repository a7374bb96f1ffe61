import Foundation
import Testing
import Reel
import ReelTestSupport
@testable import ReelCLI

/// `reel record --stream`, run as a user runs it against a real nginx-rtmp on the loopback: the
/// file and the stream come from one encode, the key never shows (not in messages, not in
/// JSON), `--stream-key-file` adds it, and a server killed mid-stream and restarted is ridden
/// out (the file is whole, the stream resumes on a keyframe, the reconnect is reported).
@Suite(.serialized) struct StreamCommandTests {
    static let recording = ["--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast"]
    static let key = "k3y-that-must-not-show"

    func counters(_ url: URL) throws -> [Int64] {
        try MediaProbe.decodeLuma(url, width: 320, height: 240).map { $0.counter ?? -1 }
    }

    func events(_ output: String) -> [[String: Any]] {
        output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// The server's recordings once there are `count` and the newest decodes to at least
    /// `frames` frames (see ``RTMPServer/recordings(count:newestIs:)``).
    func serverRecordings(_ server: RTMPServer, count: Int, frames: Int) -> [URL] {
        server.recordings(count: count) { ((try? counters($0).count) ?? 0) >= frames }
    }

    @Test func aFileAndAStreamFromOneRunWithTheKeyFromAFile() throws {
        let server = try RTMPServer()
        let dir = try TemporaryDirectory()
        let keyFile = dir.url.appendingPathComponent("key.txt")
        try "\(Self.key)\n".write(to: keyFile, atomically: true, encoding: .utf8)
        let file = dir.url.appendingPathComponent("local.mp4")
        let app = "rtmp://127.0.0.1:\(server.port)/live"
        let r = try ReelBinary.run(["record"] + Self.recording + ["--duration", "3", "--faster-than-real-time", "--json",
                                    "-o", file.path, "--stream", app, "--stream-key-file", keyFile.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!r.output.contains(Self.key) && !r.stderr.contains(Self.key), "the key never shows")
        #expect(try counters(file) == Array(0..<90))
        let finished = try #require(events(r.output).first { $0["event"] as? String == "finished" })
        let streams = try #require(finished["streams"] as? [[String: Any]])
        #expect(streams.count == 1)
        #expect(streams.first?["stream"] as? String == "\(app)/***")
        #expect((streams.first?["bytesSent"] as? Int ?? 0) > 10_000)
        #expect(streams.first?["reconnects"] as? Int == 0)
        #expect(events(r.output).contains { ($0["streams"] as? [[String: Any]])?.isEmpty == false && $0["event"] as? String == "progress" })
        let received = try #require(serverRecordings(server, count: 1, frames: 90).first, "nginx log:\n\(server.log)")
        #expect(received.lastPathComponent.hasPrefix(Self.key), "the stream went to the key read from the file")
        #expect(try counters(received) == Array(0..<90), "the server received every frame")
        #expect(try MediaProbe.probe(received).audioStreams.first?.codec == "aac")
    }

    @Test func rtmpAndHLSAtOnceBesideTheFile() throws {
        let server = try RTMPServer()
        let dir = try TemporaryDirectory()
        let file = dir.url.appendingPathComponent("local.mp4")
        let hls = dir.url.appendingPathComponent("www/live")  // made by reel
        let r = try ReelBinary.run(["record"] + Self.recording + ["--duration", "4", "--faster-than-real-time", "--json", "-o", file.path,
                                    "--stream", server.url(key: Self.key).absoluteString,
                                    "--hls", hls.path, "--hls-window", "0", "--hls-segments", "fmp4"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!r.output.contains(Self.key))
        #expect(try counters(file) == Array(0..<120))
        let playlist = hls.appendingPathComponent("index.m3u8")
        #expect(try counters(playlist) == Array(0..<120), "the HLS event plays every frame")
        let received = try #require(serverRecordings(server, count: 1, frames: 120).first)
        #expect(try counters(received) == Array(0..<120))
        let finished = try #require(events(r.output).first { $0["event"] as? String == "finished" })
        let names = (finished["streams"] as? [[String: Any]] ?? []).compactMap { $0["stream"] as? String }
        #expect(names == ["rtmp://127.0.0.1:\(server.port)/live/***", playlist.path])
        // The same folder again: its playlist is not written over.
        let again = try ReelBinary.run(["record"] + Self.recording + ["--duration", "1", "-o", dir.url.appendingPathComponent("b.mp4").path,
                                        "--hls", hls.path])
        #expect(again.status == 1)
        #expect(again.stderr.contains("index.m3u8 already exists"), "\(again.stderr)")
    }

    @Test func badStreamsAreRefusedWithoutShowingTheKey() throws {
        let dir = try TemporaryDirectory()
        let file = dir.url.appendingPathComponent("x.mp4").path
        let keyFile = dir.url.appendingPathComponent("key.txt")
        try Data("other-key\n".utf8).write(to: keyFile)
        let cases: [([String], String)] = [
            (["--stream", "rtmp://127.0.0.1/\(Self.key)"], "needs an application and a stream key"),
            (["--stream", "rtmp://127.0.0.1/live/\(Self.key)", "--stream-key-file", keyFile.path], "already has a stream key"),
            (["--stream", "srt://127.0.0.1:9000/\(Self.key)", "--stream-key-file", keyFile.path], "streamid="),
            (["--hls", dir.url.path], "is in the --hls folder"),
            (["--stream", "http://example.com/live/\(Self.key)"], "--stream needs an rtmp://HOST/APP/KEY"),
            (["--stream", "rtmp://127.0.0.1/live/\(Self.key)", "--codec", "hevc"], "RTMP carries H.264 video, not hevc"),
            (["--stream", "rtmp://127.0.0.1/live/\(Self.key)", "--audio-codec", "opus"], "RTMP carries AAC audio"),
            (["--stream", "rtmp://127.0.0.1/live/\(Self.key)", "--pause-mode", "clips"], "--stream cannot be combined with --pause-mode clips"),
            (["--stream-key-file", "/nonexistent"], "--stream-key-file does nothing without --stream"),
            (["--stream", "rtmp://127.0.0.1/live", "--stream-key-file", "/nonexistent/key"], "cannot be read"),
        ]
        for (arguments, message) in cases {
            let r = try ReelBinary.run(["record"] + Self.recording + ["--duration", "1", "-o", file] + arguments)
            #expect(r.status == 2, "\(arguments): \(r.stderr)")
            #expect(r.stderr.contains(message), "\(arguments): \(r.stderr)")
            #expect(!r.stderr.contains(Self.key), "\(arguments): \(r.stderr)")
        }
        // A server that is not there: the start fails at once (exit 1), named without its key.
        let port = try RTMPServer.freePort()
        let r = try ReelBinary.run(["record"] + Self.recording + ["--duration", "1", "-o", file,
                                    "--stream", "rtmp://127.0.0.1:\(port)/live/\(Self.key)"])
        #expect(r.status == 1)
        #expect(r.stderr.hasPrefix("reel: error: nothing accepts streams at rtmp://127.0.0.1:\(port)/live/*** (connection refused)"), "\(r.stderr)")
        #expect(!r.stderr.contains(Self.key))
        #expect(!FileManager.default.fileExists(atPath: file), "no file is left behind by a start that failed")
    }

    @Test func aServerKilledAndRestartedMidStreamIsRiddenOut() throws {
        let server = try RTMPServer()
        let dir = try TemporaryDirectory()
        let file = dir.url.appendingPathComponent("local.mkv")
        let stdout = dir.url.appendingPathComponent("out.jsonl"), stderr = dir.url.appendingPathComponent("err.txt")
        for f in [stdout, stderr] { _ = FileManager.default.createFile(atPath: f.path, contents: nil) }
        let process = Process()
        process.executableURL = ReelBinary.url
        // A keyframe a second, so the stream picks up soon after the server is back.
        process.arguments = ["record"] + Self.recording + ["--keyframe-interval", "30", "--duration", "10", "--json", "-o", file.path,
                                                          "--stream", server.url(key: Self.key).absoluteString]
        process.standardOutput = try FileHandle(forWritingTo: stdout)
        process.standardError = try FileHandle(forWritingTo: stderr)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        func seen(_ name: String) -> [[String: Any]] {
            events((try? String(contentsOf: stdout, encoding: .utf8)) ?? "").filter { $0["event"] as? String == name }
        }
        func wait(for what: String, _ condition: () -> Bool) {
            let deadline = Date().addingTimeInterval(60)
            while !condition() && process.isRunning && Date() < deadline { usleep(50_000) }
            if !condition() { Issue.record("never saw \(what); stderr: \((try? String(contentsOf: stderr, encoding: .utf8)) ?? "")") }
        }
        wait(for: "2 s recorded") { seen("progress").contains { ($0["duration"] as? Double ?? 0) >= 2 } }
        server.kill()
        wait(for: "the stream interrupted") { !seen("streamInterrupted").isEmpty }
        try server.restart()
        wait(for: "the stream resumed") { !seen("streamResumed").isEmpty }
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let output = (try? String(contentsOf: stdout, encoding: .utf8)) ?? ""
        #expect(!output.contains(Self.key))
        #expect(seen("streamInterrupted").first?["stream"] as? String == "rtmp://127.0.0.1:\(server.port)/live/***")
        // The file is whole: every frame of the 10 s (the pattern counts from the source's
        // start, a few frames before the recording's in real time).
        let local = try counters(file)
        #expect(local.count == 300 && local == Array(local[0]...local[0] + 299), "\(local.prefix(3))…\(local.count)")
        let finished = try #require(seen("finished").first)
        let stream = try #require((finished["streams"] as? [[String: Any]])?.first)
        #expect(stream["reconnects"] as? Int == 1)
        // nginx recorded each publishing session: the second starts on a keyframe (its first
        // frame decodes) and runs without a gap to the end.
        let files = serverRecordings(server, count: 2, frames: 30)
        #expect(files.count == 2, "nginx log:\n\(server.log)")
        if files.count == 2 {
            let before = try counters(files[0]), after = try counters(files[1])
            #expect(before.first == local.first && before.count >= 30, "the first session has the first seconds: \(before.prefix(3))…\(before.count)")
            let flags = try Subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=flags",
                                            "-of", "csv=p=0", "-read_intervals", "%+#1", files[1].path]).output
            #expect(flags.hasPrefix("K"), "resumed on a keyframe: the first packet's flags are \(flags)")
            #expect(after.last == local.last, "and went on to the end")
            #expect(after == Array(after.first!...after.last!), "without a gap after resuming")
        }
    }
}
