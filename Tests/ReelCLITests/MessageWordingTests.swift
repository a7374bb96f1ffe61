import Foundation
import Testing
@testable import ReelCLI
import Reel
import ReelTestSupport

/// Messages that said the wrong thing (issue 26 item 18), each as a user met it.
@Suite struct MessageWordingTests {
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
}
