import Foundation
import Testing
import Reel
import ReelTestSupport

/// A library error's hint speaks to a library user: it names settings, never a `reel` flag.
@Suite struct LibraryHintTests {
    @Test func aFileThatExistsIsNotAnsweredWithACommandLineFlag() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("there.mp4")
        try Data("mine".utf8).write(to: url)
        var hints: [String] = []
        for mode in [Recorder.PauseMode.clips, .singleFile] {
            let session = CaptureSession(clock: ManualClock())
            try session.addInput(TestPatternSource(size: PixelSize(width: 160, height: 120)))
            try session.addOutput(Recorder(url: url, settings: Recorder.Settings(pauseMode: mode)))
            do { try await session.start() } catch let error as ReelError {
                #expect(error.code == .fileExists)
                hints.append(error.hint ?? "")
            }
            await session.stop()
        }
        let clip = dir.url.appendingPathComponent("clip.mp4")
        try PatternFile.write(clip, settings: VideoSettings(preset: "ultrafast"))
        do { _ = try Merger.merge([MergeInput(url: clip)], to: url) } catch let error as ReelError {
            #expect(error.code == .fileExists)
            hints.append(error.hint ?? "")
        }
        #expect(hints.count == 3)
        for hint in hints {
            #expect(!hint.contains("--"), "a flag in a library hint: \(hint)")
            #expect(hint.contains("overwrit"), "\(hint)")
        }
        #expect(try Data(contentsOf: url) == Data("mine".utf8))
    }

    /// The porting stranger's `/dev/video0` on a machine with no camera: said when the source
    /// is made (not at the session's start), in words for an app's user.
    @Test func aMissingCameraIsSaidWhenItsSourceIsMade() throws {
        let error = #expect(throws: ReelError.self) { _ = try Cameras.source(for: try CameraLocation(parsing: "/dev/video-reel-none")) }
        #expect(error?.code == .sourceUnavailable)
        #expect(error?.message == "there is no camera at /dev/video-reel-none")
        #expect(error?.hint == LibraryHint.listCameras)
        let hint = error?.hint ?? ""
        #expect(!hint.contains("reel "), "no command of the command-line tool in a library hint")
    }
}
