import Foundation
import Testing
import ReelCore
import ReelFFmpeg
import ReelTestSupport

/// The fuzzer's seeds and what it found (Tests/Fuzz), run through the same readers as the fuzz
/// target (`scripts/fuzz`): each file either reads or gives a `ReelError` that says what is
/// wrong, within a few seconds, and is left as it was.
@Suite(.serialized) struct FuzzCorpusTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    static var files: [URL] {
        ["seeds", "regressions", "corpus"].flatMap { sub -> [URL] in
            let dir = folder.appendingPathComponent(sub)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
            return names.filter { !$0.hasPrefix(".") }.sorted().map { dir.appendingPathComponent($0) }
        }
    }

    /// The seeds are there (a corpus that went missing would make the test below pass vacuously).
    @Test func corpusIsThere() {
        let names = Set(Self.files.map(\.lastPathComponent))
        #expect(names.isSuperset(of: ["frag.mp4", "final.mp4", "plain.mov", "opus.mkv", "cut1-frag.mp4", "reel-cut.mp4",
                                      "leak-remux-failed-write.mp4", "oom-reencode-silence-to-far-timestamp.mp4"]), "\(names)")
    }

    @Test(arguments: files)
    func readsOrSaysWhatIsWrong(_ file: URL) throws {
        ReaderExercise.silenceLogging()  // the files are damaged on purpose
        let dir = try TemporaryDirectory(prefix: "reel-fuzz-corpus")
        let input = dir.url.appendingPathComponent("input.mp4")
        try FileManager.default.copyItem(at: file, to: input)
        let before = try Data(contentsOf: input)
        let scratch = dir.url.appendingPathComponent("scratch")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)

        // On a thread of its own, so that a hang fails the test instead of stopping the run.
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox()
        Thread {
            box.results = ReaderExercise.run(input, scratch: scratch)
            done.signal()
        }.start()
        let started = Date()
        guard done.wait(timeout: .now() + 20) == .success else {
            dir.keep()
            Issue.record("\(file.lastPathComponent): the readers did not finish within 20 s")
            return
        }
        let elapsed = Date().timeIntervalSince(started)
        #expect(elapsed < 10, "\(file.lastPathComponent): \(elapsed) s")
        #expect(box.results.map(\.reader) == ReaderExercise.readers)
        // The whole seeds are valid files: every reader reads them.
        let valid = file.deletingLastPathComponent().lastPathComponent == "seeds" && !file.lastPathComponent.hasPrefix("cut")
        for (reader, outcome) in box.results {
            switch outcome {
            case .succeeded:
                break
            case .failed(let error) where valid:
                Issue.record("\(file.lastPathComponent) \(reader): a valid file was refused: \(error)")
            case .failed(let error):
                #expect(!error.message.isEmpty && !error.message.contains("\n"), "\(file.lastPathComponent) \(reader): \(error)")
            case .unexpected(let text):
                Issue.record("\(file.lastPathComponent) \(reader): not a ReelError: \(text)")
            }
        }
        #expect(try Data(contentsOf: input) == before, "\(file.lastPathComponent): the input was changed")
    }
}

private final class ResultBox: @unchecked Sendable {
    var results: [(reader: String, outcome: ReaderExercise.Outcome)] = []
}
