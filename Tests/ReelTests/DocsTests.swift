import Foundation
import Testing
import Reel
import ReelTestSupport

/// The documentation's articles (Sources/Reel/Reel.docc) show only Swift that compiles: every
/// ```swift block is a DOCS-SNIPPET region of this target's sources, word for word (indentation
/// aside), as the README's example is ReadmeExample.swift. Blocks of Apple's API, which does not
/// exist here, begin with `// On iOS` and are the only ones left out.
@Suite struct DocsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let catalog = root.appendingPathComponent("Sources/Reel/Reel.docc")

    /// Lines without their common indentation, trimmed at both ends; blank lines kept.
    static func normalised(_ lines: [Substring]) -> String {
        let indent = lines.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
            .map { $0.prefix(while: { $0 == " " }).count }.min() ?? 0
        return lines.map { String($0.dropFirst(min(indent, $0.prefix(while: { $0 == " " }).count))) }
            .joined(separator: "\n").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The ```swift blocks of every article.
    static func articleBlocks() throws -> [(article: String, code: String)] {
        let files = try FileManager.default.contentsOfDirectory(atPath: catalog.path).filter { $0.hasSuffix(".md") }.sorted()
        var blocks: [(String, String)] = []
        for file in files {
            let text = try String(contentsOf: catalog.appendingPathComponent(file), encoding: .utf8)
            var current: [Substring]?
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if current == nil, trimmed == "```swift" {
                    current = []
                } else if current != nil, trimmed == "```" {
                    blocks.append((file, normalised(current!)))
                    current = nil
                } else {
                    current?.append(line)
                }
            }
        }
        return blocks
    }

    /// The DOCS-SNIPPET regions of this test target's sources.
    static func snippets() throws -> [String] {
        let folder = root.appendingPathComponent("Tests/ReelTests")
        var found: [String] = []
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path).filter({ $0.hasSuffix(".swift") }).sorted()
        where file != "DocsTests.swift" {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            var current: [Substring]?
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if trimmed == "// DOCS-SNIPPET-BEGIN" {
                    current = []
                } else if trimmed == "// DOCS-SNIPPET-END", let lines = current {
                    found.append(normalised(lines))
                    current = nil
                } else {
                    current?.append(line)
                }
            }
        }
        return found
    }

    @Test func everySwiftBlockOfTheArticlesCompiles() throws {
        let blocks = try Self.articleBlocks()
        let snippets = Set(try Self.snippets())
        let reel = blocks.filter { !$0.code.hasPrefix("// On iOS") }
        #expect(reel.count >= 10, "the articles show the library's Swift")
        for block in reel {
            #expect(snippets.contains(block.code), "a ```swift block of \(block.article) is not a DOCS-SNIPPET of Tests/ReelTests, so nothing compiles it:\n\(block.code)")
        }
    }

    @Test func everySnippetIsShown() throws {
        let shown = Set(try Self.articleBlocks().map(\.code))
        for snippet in try Self.snippets() {
            #expect(shown.contains(snippet), "a DOCS-SNIPPET is in no article (changed on one side only?):\n\(snippet)")
        }
    }

    @Test func theReadmeLinksTheDocsAndCIBuildsAndRendersThem() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains("Sources/Reel/Reel.docc"))
        #expect(readme.contains("scripts/docs "))
        let ci = try String(contentsOf: Self.root.appendingPathComponent(".ci/run"), encoding: .utf8)
        #expect(ci.contains("scripts/docs "))
        #expect(ci.contains("scripts/docs-check "))
        // Articles, not the pages of the modules (`# ``Reel```, `# ``ReelPreview```), which the
        // site has at documentation/reel/ and documentation/reelpreview/.
        let articles = try FileManager.default.contentsOfDirectory(atPath: Self.catalog.path).filter { $0.hasSuffix(".md") }
            .filter { !(try String(contentsOf: Self.catalog.appendingPathComponent($0), encoding: .utf8)).hasPrefix("# ``") }
        #expect(articles.count >= 10 && !articles.contains("Reel.md") && !articles.contains("ReelPreview.md"))
        for article in articles {
            #expect(readme.contains("Sources/Reel/Reel.docc/\(article)"), "the README links \(article)")
        }
    }

    @Test func theTimingArticlesScriptedRecordingHoldsWhatItSays() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("scripted.mp4")
        let summary = try await DocsExamples.scriptedRecording(to: url)
        // "The file holds 4 s: frames from 0 to 2 s and from 5 to 7 s."
        #expect(summary.frames == 120)
        let counters = try MediaProbe.decodeLuma(url, width: 1280, height: 720).map(\.counter)
        #expect(counters == Array(0..<60).map { Int64($0) as Int64? } + Array(150..<210).map { Int64($0) as Int64? })
    }

    /// The porting article's pool example runs: 90 frames drawn into the pool's reused memory,
    /// the session ended at 2.5 s: a file of 75 frames lasting 2.5 s, each frame's grey as drawn.
    @Test func thePortingArticlesPoolExampleEndsAtTheSessionEnd() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("pool.mp4")
        let writer = try await DocsExamples.drawIntoThePool(to: url)
        #expect(writer.status == .completed, "\(String(describing: writer.error))")
        #expect(abs(try MediaProbe.probe(url).duration - 2.5) < 0.05)
        let frames = try MediaProbe.decodeLuma(url, width: 640, height: 360)
        #expect(frames.count == 75)
        for (i, frame) in frames.enumerated() where i % 10 == 0 {
            let wanted = Double(i * 2)   // BGRA grey, decoded to full-range grey
            let luma = frame.meanLuma(in: PixelRect(x: 100, y: 100, width: 64, height: 64))
            #expect(abs(luma - wanted) < 4, "frame \(i): luma \(luma), drawn \(wanted)")
        }
    }

    /// The porting article's sound made by hand (p5: no article showed how) is a second of the
    /// 440 Hz tone, as drawn, in a file of an AVAssetWriter-style writer.
    @Test func thePortingArticlesHandMadeSoundIsASecondOfTheTone() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("tone.mp4")
        let writer = try AssetWriter(outputURL: url, fileType: .mp4)
        let audioInput = AssetWriterInput(mediaType: .audio, outputSettings: AudioSettings(codec: .aac))
        writer.add(audioInput)
        #expect(writer.startWriting())
        writer.startSession(atSourceTime: .zero)
        try DocsExamples.appendATone(to: audioInput)
        audioInput.markAsFinished()
        await writer.finishWriting()
        #expect(writer.status == .completed, "\(String(describing: writer.error))")
        let sound = try MediaProbe.decodeAudio(url)
        #expect(abs(Double(sound.count) / 48_000 - 1) < 0.03, "\(Double(sound.count) / 48_000) s")
        // 880 zero crossings a second (decoded to mono, its level depends on the downmix).
        let middle = sound[4_800..<min(sound.count, 43_200)]
        let crossings = zip(middle, middle.dropFirst()).filter { ($0 < 0) != ($1 < 0) }.count
        #expect(abs(crossings - 704) <= 6, "\(crossings) zero crossings in 0.8 s")
        #expect((sound.map { abs($0) }.max() ?? 0) > 0.2, "a tone, not silence")
    }

    /// The porting article's AVAssetWriter loop runs: BGRA frames of another size and audio, from
    /// a session at 50 s, make a complete file of the input's size with every frame and the sound.
    @Test func thePortingArticlesAssetWriterLoopWritesEveryFrame() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("ported.mp4")
        let start = MediaTime(seconds: 50)
        let frames = try (0..<20).map { i in
            try VideoFrame(format: .bgra, size: PixelSize(width: 320, height: 180),
                           presentationTime: start + FrameRate(30).time(ofFrame: Int64(i))) { _, bytes, _ in
                bytes.initializeMemory(as: UInt8.self, repeating: UInt8(40 + i * 8))
            }
        }
        let sound = try (0..<7).map { k in
            try AudioBuffer(format: AudioFormat(), presentationTime: start + MediaTime(value: Int64(k) * 4800, timescale: 48_000),
                            data: [UInt8](repeating: 0, count: 4800 * AudioFormat().bytesPerFrame))
        }
        let writer = try await DocsExamples.writeLikeAVAssetWriter(frames: frames, sound: sound, to: url)
        #expect(writer.status == .completed, "\(String(describing: writer.error))")
        let probed = try MediaProbe.probe(url)
        #expect(probed.videoStreams.first?.width == 640 && probed.videoStreams.first?.height == 360)
        #expect(probed.audioStreams.count == 1)
        let pictures = try MediaProbe.decodeLuma(url, width: 640, height: 360)
        #expect(pictures.count == 20)
        let levels = pictures.map { $0.meanLuma(in: PixelRect(x: 300, y: 160, width: 8, height: 8)) }
        #expect(zip(levels, levels.dropFirst()).allSatisfy { $0 < $1 }, "each frame in its place, brighter than the one before")
    }
}
