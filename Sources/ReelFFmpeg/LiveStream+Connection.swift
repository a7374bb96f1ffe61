import Foundation
import ReelCore

extension LiveStream {
    /// SRT's stream ID (what many SRT servers take as the stream key) and passphrase (which
    /// encrypts the stream, 10 to 79 characters), given apart from the address: they are
    /// never in ``LiveStream/name``, a message or an event, and show as `***` when printed.
    /// The address must not give them too (`streamid=`, `passphrase=`).
    public struct SRTSecrets: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        /// The stream ID, or `nil` for none.
        public var streamID: String?
        /// The passphrase, or `nil` for none.
        public var passphrase: String?

        /// Secrets with the given values.
        public init(streamID: String? = nil, passphrase: String? = nil) {
            self.streamID = streamID
            self.passphrase = passphrase
        }

        /// Whether neither is given.
        public var isEmpty: Bool { streamID == nil && passphrase == nil }

        /// Which are given, never their values.
        public var description: String {
            "SRTSecrets(streamID: \(streamID == nil ? "nil" : "***"), passphrase: \(passphrase == nil ? "nil" : "***"))"
        }

        /// The same as ``description``: the values never show.
        public var debugDescription: String { description }

        /// Which are given, never their values (for `dump` and debuggers).
        public var customMirror: Mirror {
            Mirror(self, children: ["streamID": streamID == nil ? "nil" : "***", "passphrase": passphrase == nil ? "nil" : "***"])
        }

        /// Checks these secrets for a stream to `url`: SRT's, within SRT's limits, and not
        /// given by the address as well. Messages name the settings, never their values.
        package func check(for url: URL) throws {
            guard !isEmpty else { return }
            let shown = LiveStream.redacted(url)
            guard url.scheme?.lowercased() == "srt" else {
                throw ReelError(.invalidConfiguration, "a stream ID and passphrase are SRT's, and \(shown) is not an SRT address",
                                hint: "give them only with an srt:// address")
            }
            if let streamID {
                guard !streamID.isEmpty, streamID.utf8.count <= 512, !streamID.contains("\0") else {
                    throw ReelError(.invalidConfiguration, "SRT's stream ID is 1 to 512 bytes of text, and this one \(streamID.isEmpty ? "is empty" : "is not")",
                                    hint: "give the stream ID the other end expects")
                }
            }
            if let passphrase {
                guard (10...79).contains(passphrase.utf8.count), !passphrase.contains("\0") else {
                    throw ReelError(.invalidConfiguration, "SRT's passphrase is 10 to 79 bytes long, and this one has \(passphrase.utf8.count)",
                                    hint: "give the passphrase the other end has")
                }
            }
            let inAddress = Set((URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []).map { $0.name.lowercased() })
            for (item, given) in [("streamid", streamID != nil), ("passphrase", passphrase != nil)] where given && inAddress.contains(item) {
                throw ReelError(.invalidConfiguration, "\(shown) gives \(item)= in its address, and it is given apart from the address too",
                                hint: "give it in one place: apart from the address it never shows")
            }
        }
    }

    /// Whether the address sets SRT's own connection timeout (`connect_timeout=`): then a
    /// failure before ours is not known to be a refusal.
    var setsSRTConnectTimeout: Bool {
        (URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []).contains { $0.name.lowercased() == "connect_timeout" }
    }

    /// Whether SRT is given a passphrase, apart from the address or in it.
    var hasSRTPassphrase: Bool {
        options.srtSecrets.passphrase != nil
            || (URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []).contains { $0.name.lowercased() == "passphrase" }
    }

    /// What a connection is opened with: the protocol's timeouts and buffer, SRT's stream ID
    /// and passphrase (given apart from the address, so never in a message), RTMPS's check of
    /// the server's certificate.
    var connectionOptions: [String: String] {
        var options: [String: String] = [:]
        let micros = String(max(1, self.options.timeout.convertedValue(to: 1_000_000)))
        if format == "mpegts" {
            options["timeout"] = micros
            // MPEG-TS packs seven 188-byte packets into one SRT datagram; closing waits for
            // what is still unsent (up to the timeout), so the end of the stream arrives.
            options["pkt_size"] = "1316"
            options["linger"] = String(max(1, Int(self.options.timeout.seconds.rounded())))
            // SRT's own wait for an answer (3 s unless told) outlasts ours: a caller that
            // fails before our timeout was turned away, not left unanswered.
            if !isListener { options["connect_timeout"] = String(self.options.timeout.convertedValue(to: 1000) + 1000) }
            if let id = self.options.srtSecrets.streamID { options["streamid"] = id }
            if let passphrase = self.options.srtSecrets.passphrase { options["passphrase"] = passphrase }
        } else {
            options["rw_timeout"] = micros
            options["send_buffer_size"] = String(self.options.sendBufferBytes)
        }
        if isTLS {
            // FFmpeg checks no certificate unless asked: the key would go to anyone in the way.
            options["tls_verify"] = "1"
            if let authorities = self.options.certificateAuthorities?.path ?? ProcessInfo.processInfo.environment["SSL_CERT_FILE"], !authorities.isEmpty {
                options["ca_file"] = authorities
            }
        }
        return options
    }
}
