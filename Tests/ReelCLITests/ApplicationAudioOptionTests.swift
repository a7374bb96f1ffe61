import Foundation
import Testing
@testable import ReelCLI

/// `--app-audio=APP` (repeatable) and `--app-audio-except=APP`: what they parse to and the
/// combinations refused.
@Suite struct ApplicationAudioOptionTests: ParsesRecordOptions {
    @Test func namedApplicationsAreAllKeptInOrder() throws {
        let o = try options(["--app-audio=Firefox", "--app-audio=1234", "--mic"])
        #expect(o.appAudioApplications == ["Firefox", "1234"])
        #expect(o.appAudioExcept.isEmpty)
        #expect(o.appAudio == .some("1234"))
    }

    @Test func exceptAloneIsAnAudioSource() throws {
        let o = try options(["--app-audio-except=zoom", "--app-audio-except", "Slack"])
        #expect(o.appAudioExcept == ["zoom", "Slack"])
        #expect(o.appAudio == .some(nil))
        #expect(o.appAudioApplications.isEmpty)
    }

    @Test func aBareAppAudioStillMeansTheDefaultSink() throws {
        let o = try options(["--app-audio"])
        #expect(o.appAudio == .some(nil))
        #expect(o.appAudioApplications.isEmpty)
    }

    @Test func refusedCombinations() {
        #expect(usageError(["--app-audio", "--app-audio=A"])?.contains("--app-audio without a value records every application") == true)
        #expect(usageError(["--app-audio=A", "--app-audio-except=B"])?.contains("cannot be combined") == true)
        #expect(usageError(["--app-audio="])?.contains("need an application's name") == true)
        #expect(usageError(["--app-audio-except="])?.contains("need an application's name") == true)
        // Options that need an audio source see one in --app-audio-except.
        #expect(usageError(["--app-audio-except=A", "--audio-bitrate", "128k", "-o", "x.m4a"]) == nil)
    }
}
