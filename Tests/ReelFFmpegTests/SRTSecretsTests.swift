import Foundation
import Testing
import ReelCore
@testable import ReelFFmpeg

/// SRT's stream ID and passphrase given apart from the address (issue 26 item 17): they reach
/// libsrt as its options, never the address, the stream's name, a message or a printout; a
/// setting given twice, out of SRT's limits or with another protocol is refused without its value.
@Suite struct SRTSecretsTests {
    static let id = "cam7-id-that-must-not-show"
    static let passphrase = "passphrase-that-must-not-show"
    static let secrets = LiveStream.SRTSecrets(streamID: id, passphrase: passphrase)

    func options(_ secrets: LiveStream.SRTSecrets) -> LiveStream.Options {
        var options = LiveStream.Options()
        options.srtSecrets = secrets
        return options
    }

    func leaks(_ text: String) -> Bool { text.contains(Self.id) || text.contains(Self.passphrase) }

    @Test func theyGoToSRTAsOptionsAndShowNowhere() throws {
        let stream = try LiveStream(address: "srt://127.0.0.1:9000?latency=200", options: options(Self.secrets))
        #expect(stream.connectionOptions["streamid"] == Self.id)
        #expect(stream.connectionOptions["passphrase"] == Self.passphrase)
        #expect(stream.name == "srt://127.0.0.1:9000?latency=200")
        #expect(!leaks(stream.url.absoluteString) && !leaks(stream.statistics.name))
        for printed in [String(describing: Self.secrets), String(reflecting: Self.secrets), String(describing: stream.options),
                        String(reflecting: stream.options), { var s = ""; dump(stream.options, to: &s); return s }()] {
            #expect(!leaks(printed), "\(printed)")
            #expect(printed.contains("***"), "\(printed)")
        }
        // Without them, nothing is set; a listener has no connection timeout to outlast.
        let plain = try LiveStream(address: "srt://127.0.0.1:9000")
        #expect(plain.connectionOptions["streamid"] == nil && plain.connectionOptions["passphrase"] == nil)
        #expect(plain.connectionOptions["connect_timeout"] == "6000", "SRT's own wait outlasts the 5 s timeout")
        #expect(try LiveStream(address: "srt://:9000?mode=listener").connectionOptions["connect_timeout"] == nil)
    }

    @Test func givenTwiceOutOfLimitsOrNotForSRTIsRefusedWithoutTheValue() throws {
        let cases: [(String, LiveStream.SRTSecrets, String)] = [
            ("rtmp://127.0.0.1/live", Self.secrets, "are SRT's, and rtmp://127.0.0.1/live is not an SRT address"),
            ("srt://127.0.0.1:9000?streamid=other", LiveStream.SRTSecrets(streamID: Self.id), "gives streamid= in its address"),
            ("srt://127.0.0.1:9000?PassPhrase=otherother", LiveStream.SRTSecrets(passphrase: Self.passphrase), "gives passphrase= in its address"),
            ("srt://127.0.0.1:9000", LiveStream.SRTSecrets(passphrase: "short"), "10 to 79 bytes long, and this one has 5"),
            ("srt://127.0.0.1:9000", LiveStream.SRTSecrets(passphrase: String(repeating: "p", count: 80)), "this one has 80"),
            ("srt://127.0.0.1:9000", LiveStream.SRTSecrets(streamID: ""), "this one is empty"),
            ("srt://127.0.0.1:9000", LiveStream.SRTSecrets(streamID: String(repeating: "i", count: 513)), "1 to 512 bytes"),
        ]
        for (address, secrets, message) in cases {
            let error = try #require(throws: ReelError.self, "\(address)") { try LiveStream(address: address, options: options(secrets)) }
            #expect(error.code == .invalidConfiguration)
            #expect(error.message.contains(message), "\(error)")
            #expect(!leaks(error.description) && !error.description.contains("otherother") && !error.description.contains("short"), "\(error)")
        }
        // The limits themselves are taken.
        _ = try LiveStream(address: "srt://127.0.0.1:9000", options: options(.init(streamID: String(repeating: "i", count: 512),
                                                                                    passphrase: String(repeating: "p", count: 79))))
        _ = try LiveStream(address: "srt://127.0.0.1:9000", options: options(.init(passphrase: String(repeating: "p", count: 10))))
    }
}
