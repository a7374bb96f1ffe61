import Foundation
import Synchronization
import Testing
import Reel
import ReelTestSupport

/// The README's Swift example is this test target's `ReadmeExample.swift`, word for word, so
/// it compiles with every build; and it runs.
@Suite(.tags(.realTime)) struct ReadmeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func between(_ text: String, _ begin: String, _ end: String) -> String? {
        guard let a = text.range(of: begin), let b = text.range(of: end, range: a.upperBound..<text.endIndex) else { return nil }
        return String(text[a.upperBound..<b.lowerBound]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func readmeShowsTheCompiledExample() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: Self.root.appendingPathComponent("Tests/ReelTests/ReadmeExample.swift"), encoding: .utf8)
        let example = try #require(between(source, "// README-EXAMPLE-BEGIN", "// README-EXAMPLE-END"))
        let shown = try #require(between(readme, "```swift", "```"))
        #expect(shown == example)
    }

    @Test func readmeNamesTheTwoCommandsAndCIRunsTheTestOne() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains("scripts/demo"))
        #expect(readme.contains("scripts/test"))
        let ci = try String(contentsOf: Self.root.appendingPathComponent(".ci/run"), encoding: .utf8)
        #expect(ci.contains("scripts/test"))
    }

    @Test func theExampleRuns() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("readme.mp4")
        let summary = try await recordTestPattern(to: url, seconds: 1)
        // In real time a loaded machine may make the source miss a slot: counted as dropped.
        #expect(summary.frames + summary.droppedFrames == 30, "\(summary.frames) frames, \(summary.droppedFrames) dropped")
        #expect(summary.frames >= 27)
        #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == Int(summary.frames))
    }

    @Test func theReplayExampleRuns() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("replay.mp4")
        let saved = try await saveTheLastSeconds(1, to: url) { try? await Task.sleep(for: .seconds(2.5)) }
        #expect(saved.duration.seconds >= 1 && saved.duration.seconds <= 3.05)
        #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == saved.videoFrames)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path) == ["replay.mp4"], "nothing else written")
    }

    @Test func theCameraRecorderExampleRuns() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("two-clips.mp4")
        let summary = try #require(try await recordTwoClips(of: .testPattern(.green), to: url, window: false))
        #expect(summary.clipCount == 2)
        #expect(summary.duration.seconds > 1.6 && summary.duration.seconds < 2.6)
        #expect(try MediaProbe.probe(url).audioStreams.count == 1)
    }

    @Test func theCameraExampleRuns() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("pip.mp4")
        let summary = try await recordTwoCameras(.testPattern(.red), .testPattern(.blue), to: url, eachInto: dir.url, seconds: 1)
        #expect(summary.frames >= 29)
        #expect(try MediaProbe.probe(url).videoStreams.first?.width == 1280)
        for i in 1...2 {
            #expect(try MediaProbe.probe(dir.url.appendingPathComponent("camera-\(i).mp4")).videoStreams.first?.frameCount ?? 0 >= 29)
        }
    }

    @Test func theLiveFramesExampleRuns() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("watched.mp4")
        final class Shown: Sendable { let frames = Mutex<[LiveFrame]>([]) }
        let shown = Shown()
        let summary = try await recordWhileWatching(to: url, seconds: 1.5) { frame in
            shown.frames.withLock { $0.append(frame) }
            try? await Task.sleep(for: .milliseconds(300))     // a slow viewer
        }
        // Every slot a frame, or on a loaded machine one counted as dropped: a few at most (a
        // viewer that held the recording up would cost most of them).
        #expect(summary.frames + summary.droppedFrames == 45 && summary.droppedFrames <= 2, "\(summary.frames) frames, \(summary.droppedFrames) dropped")
        let frames = shown.frames.withLock { $0 }
        #expect(frames.count >= 2 && frames.count <= 8, "\(frames.count) frames shown")
        #expect(frames.allSatisfy { $0.size == PixelSize(width: 640, height: 360) && $0.format == .rgba })
    }
}
