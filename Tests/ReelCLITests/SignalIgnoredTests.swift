import Foundation
import Testing
import ReelTestSupport

/// A signal reel ignores is said with `--json` too (a `signalIgnored` event), not only on
/// standard error: a script that sent it can tell that nothing happened.
@Suite(.serialized, .tags(.realTime)) struct SignalIgnoredTests {
    @Test func anIgnoredSignalIsAJSONEvent() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("ignored.mp4")
        let recording = try ClipRecoveryTests.Recording(["--test-pattern", "--size", "160x120", "--preset", "ultrafast", "-o", url.path], in: dir.url)
        try await recording.started()
        recording.signal(SIGUSR2)
        try await Task.sleep(for: .seconds(1))
        recording.signal(SIGINT)
        let (status, stderr) = recording.end()
        #expect(status == 0, "\(stderr)")
        let events = ((try? String(contentsOf: recording.events, encoding: .utf8)) ?? "").split(separator: "\n")
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let ignored = events.first { $0["event"] as? String == "signalIgnored" }
        #expect(ignored?["signal"] as? String == "SIGUSR2", "\(events.map { $0["event"] ?? "" })")
        #expect((ignored?["reason"] as? String ?? "").isEmpty == false)
    }
}
