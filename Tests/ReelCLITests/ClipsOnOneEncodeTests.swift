import Foundation
import Testing
import Reel
import ReelTestSupport

/// `reel record --pause-mode clips` with `--stream` and `--hls` (issue 28): the clips are cut
/// from the one encode that the streams take too, so across pauses the file, what the RTMP
/// server received and the HLS playlist each hold every frame recorded, once (they were refused
/// together: each clip opened an encoder of its own). With `--replay` beside clips, SIGUSR1
/// saves and `reel control pause` pauses.
@Suite(.serialized, .tags(.realTime)) struct ClipsOnOneEncodeTests {
    static func counters(_ url: URL) throws -> [Int64] {
        try MediaProbe.decodeLuma(url, width: 320, height: 240).map { $0.counter ?? -1 }
    }

    @Test func theFileTheStreamAndHLSHoldEveryFrameAcrossPauses() async throws {
        let server = try RTMPServer()
        let dir = try TemporaryDirectory()
        let file = dir.url.appendingPathComponent("talk.mp4")
        let hls = dir.url.appendingPathComponent("hls")
        let run = try await AudioFileTests.Recording.start(
            ["--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast", "--pause-mode", "clips",
             "--stream", server.url(key: "clips").absoluteString, "--hls", hls.path, "--hls-window", "0",
             "-o", file.path], in: dir)
        let pid = run.process.processIdentifier
        try await Task.sleep(for: .seconds(1.5))
        kill(pid, SIGUSR1)  // pause: the first clip ends
        try await Task.sleep(for: .seconds(1))
        kill(pid, SIGUSR1)  // resume: the second begins
        try await Task.sleep(for: .seconds(1.5))
        kill(pid, SIGUSR1)
        try await Task.sleep(for: .seconds(0.5))
        kill(pid, SIGUSR1)  // a third clip
        try await Task.sleep(for: .seconds(1))
        kill(pid, SIGINT)
        let finished = try run.finish()
        #expect(finished.status == 0, "\(finished.stderr)")
        let clips = finished.events.split(separator: "\n")
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .compactMap { $0["clips"] as? Int }.max()
        #expect(clips == 3, "the progress events count three clips: \(finished.events.suffix(600))")

        // The merged file: counters rising, with the pauses left out.
        let recorded = try Self.counters(file)
        #expect(recorded.count > 90, "\(recorded.count) frames")
        #expect(!recorded.contains(-1), "every picture has its counter")
        #expect(zip(recorded, recorded.dropFirst()).allSatisfy { $0 < $1 }, "no frame twice, none out of order")
        let gaps = zip(recorded, recorded.dropFirst()).filter { $1 - $0 > 10 }.count
        #expect(gaps == 2, "the two pauses are left out of the file: \(recorded)")

        // The streams are the same encode: the same frames, once each.
        let received = try #require(server.recordings(count: 1) { ((try? Self.counters($0).count) ?? 0) >= recorded.count }.first,
                                    "nginx log:\n\(server.log)")
        #expect(try Self.counters(received) == recorded, "the server received every frame of the file")
        #expect(try Self.counters(hls.appendingPathComponent("index.m3u8")) == recorded, "the HLS event plays every frame of the file")
    }

    /// `--pause-mode clips --replay`: the buffer lives across the clips (it is fed by the one
    /// encode), so a save after two pauses holds the last clips' frames, the paused time left
    /// out, each frame once; the merged file holds every frame recorded.
    @Test func aReplaySavedAfterPausesHoldsTheClipsBeforeThem() async throws {
        let dir = try TemporaryDirectory()
        let file = dir.url.appendingPathComponent("talk.mp4")
        let saves = dir.url.appendingPathComponent("saves")
        try FileManager.default.createDirectory(at: saves, withIntermediateDirectories: true)
        let socket = dir.url.appendingPathComponent("reel.sock")
        let run = try await AudioFileTests.Recording.start(
            ["--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast", "--pause-mode", "clips",
             "--replay", "30", "--replay-dir", saves.path, "--control=\(socket.path)", "-o", file.path], in: dir)
        let pid = run.process.processIdentifier
        func control(_ command: String) throws {
            let r = try ReelBinary.run(["control", socket.path, command])
            #expect(r.status == 0, "reel control \(command): \(r.stderr)")
        }
        try await Task.sleep(for: .seconds(1.5))
        try control("pause")  // the first clip ends
        try await Task.sleep(for: .seconds(1))
        try control("resume")
        try await Task.sleep(for: .seconds(1.5))
        try control("pause")
        try await Task.sleep(for: .seconds(0.5))
        try control("resume")  // a third clip
        try await Task.sleep(for: .seconds(1))
        kill(pid, SIGUSR1)  // with --replay: save
        let deadline = Date().addingTimeInterval(20)
        var saved: [URL] = []
        while saved.isEmpty && Date() < deadline {
            try await Task.sleep(for: .milliseconds(200))
            saved = ((try? FileManager.default.contentsOfDirectory(at: saves, includingPropertiesForKeys: nil)) ?? [])
                .filter { !$0.lastPathComponent.hasPrefix(".") }
        }
        try await Task.sleep(for: .seconds(1))
        kill(pid, SIGINT)
        let finished = try run.finish()
        #expect(finished.status == 0, "\(finished.stderr)")
        #expect(finished.events.contains("\"event\":\"saved\""), "\(finished.events.suffix(800))")

        let recorded = try Self.counters(file)
        #expect(recorded.count > 90 && !recorded.contains(-1), "\(recorded.count) frames")
        #expect(zip(recorded, recorded.dropFirst()).allSatisfy { $0 < $1 }, "no frame twice, none out of order")
        #expect(zip(recorded, recorded.dropFirst()).filter { $1 - $0 > 10 }.count == 2, "the two pauses are left out: \(recorded)")

        let replay = try #require(saved.first, "a replay was saved into \(saves.path)")
        let held = try Self.counters(replay)
        #expect(!held.contains(-1) && zip(held, held.dropFirst()).allSatisfy { $0 < $1 }, "\(held)")
        #expect(zip(held, held.dropFirst()).filter { $1 - $0 > 10 }.count == 2, "the replay spans both pauses, left out: \(held)")
        #expect(Set(held).isSubset(of: Set(recorded)), "the replay's frames are the file's")
        #expect((held.first ?? 99) <= 2, "it holds the first clip from its start (30 s of buffer): \(held.prefix(5))")
    }
}
