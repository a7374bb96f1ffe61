import Foundation
import Testing
import Reel
import ReelTestSupport
@testable import ReelCLI

/// `--stream` and `--stream-key-file` as parsed: with an SRT address (issue 26 item 17) the
/// file's stream ID and passphrase stay apart from the address, in any of the file's forms;
/// what is wrong is said without a value from the file or a key from the address.
@Suite struct StreamOptionTests: ParsesRecordOptions {
    static let secret = "k3y-that-must-not-show"

    func keyFile(_ text: String) throws -> (TemporaryDirectory, String) {
        let dir = try TemporaryDirectory()
        let file = dir.url.appendingPathComponent("key.txt")
        try Data(text.utf8).write(to: file)
        return (dir, file.path)
    }

    func parse(_ text: String, address: String = "srt://127.0.0.1:9000?latency=200") throws -> RecordOptions {
        let (dir, path) = try keyFile(text)
        defer { _ = dir }
        return try options(["--test-pattern", "--stream", address, "--stream-key-file", path])
    }

    @Test func theFileGivesTheStreamIDAndPassphraseApartFromTheAddress() throws {
        let both = try parse("  streamid = #!::r=live/\(Self.secret),m=publish\n\nPassphrase=pass-\(Self.secret)\n")
        #expect(both.streams == ["srt://127.0.0.1:9000?latency=200"], "the address as typed, nothing added")
        #expect(both.srtSecrets == LiveStream.SRTSecrets(streamID: "#!::r=live/\(Self.secret),m=publish", passphrase: "pass-\(Self.secret)"))
        // One line alone is the stream ID, '=' and all (SRT's access control syntax has them).
        #expect(try parse("#!::r=live/\(Self.secret),m=publish\n").srtSecrets == LiveStream.SRTSecrets(streamID: "#!::r=live/\(Self.secret),m=publish"))
        #expect(try parse("passphrase=pass-\(Self.secret)").srtSecrets == LiveStream.SRTSecrets(passphrase: "pass-\(Self.secret)"))
        let streams = try both.makeLiveStreams()
        #expect(streams.count == 1 && streams[0].options.srtSecrets == both.srtSecrets)
        #expect(!streams[0].name.contains(Self.secret) && !streams[0].url.absoluteString.contains(Self.secret))
        // RTMP's key is still added to the address.
        #expect(try parse(Self.secret, address: "rtmp://127.0.0.1/live").streams == ["rtmp://127.0.0.1/live/\(Self.secret)"])
        #expect(try parse(Self.secret, address: "rtmp://127.0.0.1/live").srtSecrets == nil)
    }

    @Test func whatIsWrongIsSaidWithoutTheValues() throws {
        let cases: [(String, String, String)] = [
            ("streamid=\(Self.secret)\n\(Self.secret)=x\n", "srt://127.0.0.1:9000", "line 2 is neither streamid=… nor passphrase=…"),
            ("streamid=\(Self.secret)\nstreamid=\(Self.secret)\n", "srt://127.0.0.1:9000", "gives streamid twice"),
            ("passphrase=\n", "srt://127.0.0.1:9000", "passphrase= has no value"),
            ("passphrase=\(Self.secret.prefix(9))", "srt://127.0.0.1:9000", "SRT's passphrase is 10 to 79 bytes long, and this one has 9"),
            ("streamid=\(Self.secret)", "srt://127.0.0.1:9000?streamid=\(Self.secret)", "gives streamid= in its address"),
        ]
        for (text, address, message) in cases {
            let said = try #require(try {
                let (dir, path) = try keyFile(text)
                defer { _ = dir }
                return usageError(["--test-pattern", "--stream", address, "--stream-key-file", path])
            }(), "\(text) was taken")
            #expect(said.contains(message), "\(said)")
            #expect(!said.contains(Self.secret) && !said.contains(Self.secret.prefix(9)), "\(said)")
        }
    }

    /// An RTMP address without its key says what it has, hidden, rather than seeming to drop
    /// it (issue 26 item 18: `rtmp://host/live` was shown as `rtmp://host`).
    @Test func anAddressWithoutItsKeySaysWhatIsThere() {
        let one = usageError(["--test-pattern", "--stream", "rtmp://127.0.0.1/\(Self.secret)"])
        #expect(one?.hasPrefix("--stream rtmp://127.0.0.1/*** has one part after the host (shown as *** in case it is the key), and needs an application and a stream key") == true,
                "\(one ?? "taken")")
        #expect(one?.contains(Self.secret) == false)
        let none = usageError(["--test-pattern", "--stream", "rtmp://127.0.0.1"])
        #expect(none?.hasPrefix("--stream rtmp://127.0.0.1 needs an application and a stream key") == true, "\(none ?? "taken")")
    }

    /// `--hls-segments fmp4` with a frame mode that leaves pictures out is refused, saying why
    /// (issue 26 item 15: its pictures would play at the wrong times).
    @Test func fragmentedMP4HLSIsRefusedWithASparseFrameMode() throws {
        for mode in ["vfr", "content"] {
            #expect(usageError(["--screen", "--frame-mode", mode, "--hls", "/tmp/reel-hls-\(mode)", "--hls-segments", "fmp4"])?
                        .hasPrefix("--hls-segments fmp4 cannot go with --frame-mode \(mode)") == true)
            #expect(usageError(["--screen", "--frame-mode", mode, "--hls", "/tmp/reel-hls-\(mode)"]) == nil, "MPEG-TS segments are taken")
        }
        #expect(usageError(["--screen", "--frame-mode", "cfr", "--hls", "/tmp/reel-hls-cfr", "--hls-segments", "fmp4"]) == nil)
    }
}
