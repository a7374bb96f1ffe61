import Foundation
import Testing
import Reel
import ReelTestSupport

/// `reel record --pause-mode clips` with `--stream` and `--hls` (issue 28): the clips are cut
/// from the one encode that the streams take too, so across pauses the file, what the RTMP
/// server received and the HLS playlist each hold every frame recorded, once (they were refused
/// together: each clip opened an encoder of its own). The replay buffer beside clips is tested
/// in the library (`ReplayRecorderTests`): with `--replay`, SIGUSR1 saves rather than pauses.
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
}
