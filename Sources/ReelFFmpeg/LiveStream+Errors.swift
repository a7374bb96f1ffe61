import Foundation
internal import CFFmpeg
import ReelCore

/// What a live stream says when its address cannot be used or its connection fails: the
/// checks before connecting and the errors that say what happened.
extension LiveStream {
    /// An SRT listener binds its UDP port with `SO_REUSEADDR`, so a port another program holds
    /// is taken without complaint and no caller ever arrives: the port is tried alone first.
    func checkListenerPort() throws {
        guard let port = url.port, (1...65535).contains(port) else {
            throw ReelError(.invalidConfiguration, "\(name) needs a port to listen on", hint: "give srt://:PORT?mode=listener")
        }
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return }  // no socket to try with: the listener says what it finds
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = INADDR_ANY
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if bound != 0 && errno == EADDRINUSE {
            throw ReelError(.busy, "\(name) cannot listen: UDP port \(port) is in use by another program",
                            hint: "choose another port", errno: EADDRINUSE)
        }
    }

    /// Turns a failure to send on a connection that worked into an error that says what
    /// happened (not what to check at the start: the address and key were good).
    func explainBreak(_ error: ReelError) -> ReelError {
        if isListener {
            return ReelError(.ioFailure, "the player calling \(name) went away; waiting for the next", averror: error.averror)
        }
        if gate.hasExpired || error.averror == reel_averror(ETIMEDOUT) {
            return ReelError(.ioFailure, "\(name) stopped taking the stream for \(options.timeout.seconds) s", errno: ETIMEDOUT, averror: error.averror)
        }
        return ReelError(error.code, "\(name): the connection broke (\(Self.cause(of: error)))", errno: error.errno, averror: error.averror)
    }

    /// The system's or FFmpeg's words for what went wrong, without Reel's message around them.
    static func cause(of error: ReelError) -> String {
        if let averror = error.averror, averror < 0 { return FFmpeg.describe(averror) }
        return error.message
    }

    /// Turns a failure to connect or send into an error that says what happened.
    func explain(_ error: ReelError) -> ReelError {
        if error.averror == reel_averror(ECONNREFUSED) || error.errno == ECONNREFUSED {
            return ReelError(.ioFailure, "nothing accepts streams at \(name) (connection refused)",
                             hint: "check the server's address and port, and that it is running",
                             errno: ECONNREFUSED, averror: error.averror)
        }
        if gate.hasExpired || error.averror == reel_averror(ETIMEDOUT) {
            return ReelError(.ioFailure, "\(name) did not answer within \(options.timeout.seconds) s",
                             hint: "check that the server is reachable", errno: ETIMEDOUT, averror: error.averror)
        }
        if format != "hls", error.averror == reel_averror(EPERM) || error.averror == reel_averror(EACCES) {
            return ReelError(.permissionDenied, "\(name) refused the stream",
                             hint: format == "flv" ? "check the application and the stream key; the key may be streaming already"
                                                   : "check the stream id and passphrase",
                             errno: EPERM, averror: error.averror)
        }
        if isTLS, error.averror == reel_averror(EIO), let host = url.host, isCertificateRefused(host: host) {
            return ReelError(.permissionDenied, "the certificate of \(host) is not trusted, or is not for that name; nothing was sent to \(name)",
                             hint: "if the server's certificate comes from an authority of your own, point SSL_CERT_FILE at it",
                             averror: error.averror)
        }
        if format != "hls", let host = url.host, !host.isEmpty, !Self.resolves(host) {
            return ReelError(.sourceUnavailable, "cannot find the host \(host) of \(name)",
                             hint: "check the address and the network", averror: error.averror)
        }
        if format == "flv", error.averror == reel_averror(EIO), !gate.hasExpired, !gate.isCancelled {
            // The server took the connection, then closed it: what nginx-rtmp does with an
            // application it has not, or a key its publishing check turns away.
            return ReelError(.permissionDenied, "\(name) closed the connection without taking the stream: the server turns away this application or stream key",
                             hint: "check the application and the stream key", averror: error.averror)
        }
        if isSRTRefusal(error) {
            let why = hasSRTPassphrase ? "the passphrase is not the one it has (or it wants none), or it turns the stream ID away"
                                       : "it may want a passphrase, or turn the stream ID away"
            return ReelError(.permissionDenied, "\(name) refused the connection: \(why)",
                             hint: "check the passphrase and the stream ID the other end expects", averror: error.averror)
        }
        let hint: String? = switch format {
        case "flv": "check the server's address, application and stream key"
        case "mpegts": "check the address, its port and mode, and that the other end is running"
        default: error.hint
        }
        return ReelError(error.code, "\(name): \(error.message)", hint: hint, errno: error.errno, averror: error.averror)
    }

    /// Whether an SRT caller's failure to connect was the other end turning it away: SRT says
    /// no more than an input/output error, but its own wait for an answer is set to outlast
    /// ours (``connectionOptions``), so one that fails before ours ran out was answered, with a
    /// no (a wrong or missing passphrase, a stream ID it does not take).
    func isSRTRefusal(_ error: ReelError) -> Bool {
        format == "mpegts" && !isListener && !setsSRTConnectTimeout && error.averror == reel_averror(EIO)
            && !gate.hasExpired && !gate.isCancelled
    }

    /// Whether a TLS handshake with the server succeeds when its certificate is not checked:
    /// then the check is what failed. (The handshake alone sends no key.)
    func isCertificateRefused(host: String) -> Bool {
        let probe = InterruptGate()
        probe.arm(options.timeout)
        var callback = probe.callback
        var dictionary: OpaquePointer? = nil
        defer { av_dict_free(&dictionary) }
        av_dict_set(&dictionary, "tls_verify", "0", 0)
        var context: UnsafeMutablePointer<AVIOContext>? = nil
        let hostPart = host.contains(":") ? "[\(host)]" : host
        let opened = avio_open2(&context, "tls://\(hostPart):\(url.port ?? 443)", AVIO_FLAG_WRITE, &callback, &dictionary)
        avio_closep(&context)
        return opened >= 0
    }

    /// Whether `host` has an address (a name the resolver knows, or a numeric address).
    static func resolves(_ host: String) -> Bool {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), nil, &hints, &found)
        if let found { freeaddrinfo(found) }
        return status == 0
    }
}
