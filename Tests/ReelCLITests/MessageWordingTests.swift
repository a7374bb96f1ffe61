import Foundation
import Testing
@testable import ReelCLI
import Reel
import ReelTestSupport

/// Messages that said the wrong thing (issue 26 item 18), each as a user met it.
@Suite struct MessageWordingTests: ParsesRecordOptions {
    /// `reel preview --replay` said "unknown option", as if reel had no replay buffer.
    @Test func aRecordOptionGivenToPreviewSaysWhoseItIs() throws {
        for (arguments, said) in [(["--test-pattern", "--replay", "30"], "--replay is an option of reel record, not reel preview: reel preview records clips and nothing else; reel record --preview --replay … shows the window while it records"),
                                  (["--test-pattern", "--hls=/tmp/x"], "--hls is an option of reel record, not reel preview"),
                                  (["--test-pattern", "--pause-mode", "clips"], "reel preview always records clips"),
                                  (["--test-pattern", "--preview"], "reel preview always shows its window")] {
            let error = #expect(throws: UsageError.self) { try RecordOptions.checkPreviewArguments(arguments) }
            #expect(error?.message.contains(said) == true, "\(arguments): \(String(describing: error))")
        }
        try RecordOptions.checkPreviewArguments(["--test-pattern", "--mic", "-o", "x.mp4", "--", "--replay"])
        #expect(RecordOptions.previewSpecs.allSatisfy { !RecordOptions.recordOnly.contains($0.name) })
        #expect(RecordOptions.recordOnly.allSatisfy { name in RecordOptions.specs.contains { $0.name == name } }, "each is reel record's")
    }

    /// Every run repeated one "looks cut off" note per old file; now one line says them all.
    /// A limit shorter than one picture is a usage error that says so ("nothing was recorded,
    /// check that the sources deliver samples" blamed the sources); sound alone can be that short.
    @Test func aLimitShorterThanOnePictureSaysSo() {
        #expect(usageError(["--test-pattern", "--duration", "0.01"]) == "--duration 0.01 is shorter than one picture at 30 fps (0.033 s): nothing would be recorded")
        #expect(usageError(["--test-pattern", "--fps", "10", "--max-duration", "0.05"])?.hasPrefix("--max-duration 0.05 is shorter than one picture at 10 fps") == true)
        #expect(usageError(["--test-pattern", "--duration", "0.04"]) == nil)
        #expect(usageError(["--tone", "--duration", "0.01", "-o", "x.m4a"]) == nil)
    }

    @Test func leftoversAreOneNoteEach() {
        let folder = URL(fileURLWithPath: "/videos")
        let files = (1...7).map { folder.appendingPathComponent("Reel \($0).mp4") }
        #expect(RecordCommand.leftoverNotes(cutOff: [], unmerged: []).isEmpty)
        #expect(RecordCommand.leftoverNotes(cutOff: [files[0]], unmerged: [])
                == ["/videos/Reel 1.mp4 looks cut off; recover it with: reel recover \"/videos/Reel 1.mp4\""])
        #expect(RecordCommand.leftoverNotes(cutOff: Array(files.prefix(2)), unmerged: [folder.appendingPathComponent("a.clips")])
                == ["2 recordings in /videos look cut off (Reel 1.mp4, Reel 2.mp4); recover them with: reel recover \"/videos/Reel 1.mp4\" \"/videos/Reel 2.mp4\"",
                    "/videos/a.clips holds the clips of a recording that was never merged; merge it with: reel recover \"/videos/a.clips\""])
        #expect(RecordCommand.leftoverNotes(cutOff: files, unmerged: [])
                == ["7 recordings in /videos look cut off (Reel 1.mp4, Reel 2.mp4, Reel 3.mp4, Reel 4.mp4, Reel 5.mp4 and 2 more); recover them with: reel recover FILE for each"])
    }

    /// `reel recover c.flac.clips` said only that it does not exist; the folder is `c.clips`.
    @Test func aClipsFolderNamedWithTheExtensionPointsToTheOneThatIs() throws {
        let dir = try TemporaryDirectory()
        let clips = dir.url.appendingPathComponent("c.clips")
        try FileManager.default.createDirectory(at: clips, withIntermediateDirectories: true)
        let missing = ReelError(.ioFailure, "cannot read c.flac.clips: No such file or directory", hint: "check the file name", errno: ENOENT)
        let pointed = RecoverCommand.pointingToClips(missing, given: dir.url.appendingPathComponent("c.flac.clips")) as? ReelError
        #expect(pointed?.hint == "the clips of c.flac are in c.clips: reel recover \(Shell.quoted(clips.path))")
        // Nothing to point to: the error as it was.
        for other in ["d.flac.clips", "c.clips.clips", "c.flac"] {
            #expect((RecoverCommand.pointingToClips(missing, given: dir.url.appendingPathComponent(other)) as? ReelError)?.hint == "check the file name", "\(other)")
        }
    }

    /// `--test-pattern --region …` added a screen nobody asked for, and blamed the display.
    @Test func aRegionBesideAnotherPictureAsksForTheScreen() throws {
        #expect(usageError(["--test-pattern", "--region", "100x100+0+0"])
                == "--region records a part of the screen, and --test-pattern has none: give --screen as well to record the screen beside it, or --size for the test pattern's size")
        #expect(usageError(["--camera=test", "--region", "100x100+0+0"])
                == "--region records a part of the screen, and --camera has none: give --screen as well to record the screen beside it")
        // With --screen, or alone, a region is the screen's, as before.
        #expect(try options(["--test-pattern", "--screen", "--region", "100x100+0+0"]).screen == .some(nil))
        #expect(try options(["--region", "100x100+0+0", "--mic"]).screen == .some(nil))
    }
}
