import Foundation
import Testing
@testable import ReelCLI
import Reel

/// `--no-adapt` and how the encoder's speed steps are shown.
@Suite struct NoAdaptOptionTests: ParsesRecordOptions {
    @Test func adaptsUnlessToldNotTo() throws {
        #expect(try options(["--test-pattern"]).adaptsEncoderSpeed)
        #expect(try !options(["--test-pattern", "--no-adapt"]).adaptsEncoderSpeed)
        #expect(try !options(["--screen", "--preset", "medium", "--no-adapt"]).adaptsEncoderSpeed)
    }

    @Test func noAdaptNeedsAVideoSource() {
        #expect(usageError(["--tone", "--no-adapt"]) == "--no-adapt does nothing without a video source (--screen, --camera or --test-pattern)")
    }

    @Test func theHelpSaysWhatItDoes() throws {
        let spec = try #require(RecordOptions.specs.first { $0.name == "no-adapt" })
        #expect(spec.help.contains("veryfast → superfast → ultrafast"))
    }

    @Test func stepsReadAsTheSummarySaysThem() {
        let down = EncoderSpeedChange(time: MediaTime(value: 12_400, timescale: 1000), reason: .overloaded,
                                      fromPreset: "veryfast", toPreset: "superfast", framesWaiting: 3)
        #expect(down.description == "encoder overloaded at 00:12: preset veryfast → superfast")
        let up = EncoderSpeedChange(time: MediaTime(value: 75, timescale: 1), reason: .recovered,
                                    fromPreset: "superfast", toPreset: "veryfast", framesWaiting: 0)
        #expect(up.description == "encoder recovered at 01:15: preset superfast → veryfast")
        let refused = EncoderSpeedChange(time: MediaTime(value: 3, timescale: 1), reason: .overloaded, fromPreset: "veryfast",
                                         toPreset: "superfast", framesWaiting: 2, refusal: "libx265 cannot change its speed within a stream: not adapted")
        #expect(refused.description == "encoder overloaded at 00:03: preset kept at veryfast, not superfast (libx265 cannot change its speed within a stream: not adapted)")

        let json = ProgressRenderer.json(ProgressRenderer.json(down))
        #expect(json == #"{"at":12.4,"event":"encoderSpeed","from":"veryfast","reason":"overloaded","to":"superfast","waiting":3}"#)
        #expect(ProgressRenderer.json(refused)["refused"] as? String == refused.refusal)
    }
}
