import Foundation
import Reel

/// `--hls DIR` and the options that go with it.
public struct HLSOutput: Sendable, Hashable {
    /// The folder of the playlist and segments.
    public var folder: URL
    /// Segments the playlist lists; `nil` for the whole event.
    public var window: Int? = 6
    /// The kind of segments.
    public var segments: LiveStream.Options.SegmentFormat = .mpegts

    /// The playlist, `DIR/index.m3u8`.
    public var playlist: URL { folder.appendingPathComponent("index.m3u8") }

    /// The live stream that writes it.
    public func makeStream() throws -> LiveStream {
        try LiveStream(url: playlist, options: .init(playlistWindow: window, segmentFormat: segments))
    }
}

extension RecordOptions {
    /// The live streams `--stream` asks for (their addresses as typed, and SRT's stream ID and
    /// passphrase from `--stream-key-file` apart from the address) and `--hls`'s.
    func makeLiveStreams() throws -> [LiveStream] {
        try streams.enumerated().map { index, address in
            var options = LiveStream.Options()
            if index == 0, let srtSecrets { options.srtSecrets = srtSecrets }
            return try LiveStream(address: address, options: options)
        } + (hls.map { [try $0.makeStream()] } ?? [])
    }

    /// `--stream URL` (repeatable) and `--stream-key-file FILE`, checked against the rest:
    /// an address Reel can send to, codecs its protocol carries, one encode for the session
    /// (no clips). Messages show addresses without their keys. For RTMP the file's key is
    /// added to the address; for SRT its stream ID and passphrase stay apart from it.
    mutating func parseStreams(_ args: ParsedArguments) throws {
        try parseHLS(args)
        let given = args.all("stream").compactMap { $0 }
        guard !given.isEmpty else {
            if args.has("stream-key-file") { throw UsageError("--stream-key-file does nothing without --stream") }
            return
        }
        var urls: [URL] = []
        // What is sent is the address as typed (URL would escape a key's '[' and the server
        // would see another key); the parsed URL is for the checks.
        var addresses: [String] = []
        for text in given {
            guard let url = URL(string: text), url.scheme?.lowercased() != "file", LiveStream.canSend(to: url),
                  !(url.host ?? "").isEmpty || (url.scheme?.lowercased() == "srt" && text.lowercased().contains("mode=listener")) else {
                let shown = URL(string: text).map(LiveStream.redacted) ?? "an address that does not parse"
                throw UsageError("--stream needs an rtmp://HOST/APP/KEY, rtmps://… or srt://HOST:PORT address, not \(shown)")
            }
            try Self.checkPortAndMode(url)
            // "host:" with nothing after the colon: URL takes it as no port at all.
            let authority = text.components(separatedBy: "://").dropFirst().first?.prefix { $0 != "/" && $0 != "?" && $0 != "#" } ?? ""
            if authority.hasSuffix(":") {
                throw UsageError("--stream \(LiveStream.redacted(url)): the port after '\(authority)' is missing (write host:PORT, or leave out the ':')")
            }
            if addresses.contains(text) {
                throw UsageError("--stream \(LiveStream.redacted(url)) is given twice (a server takes one stream per key)")
            }
            urls.append(url)
            addresses.append(text)
        }
        if let path = args.value("stream-key-file") ?? nil {
            guard urls.count == 1 else { throw UsageError("--stream-key-file goes with one --stream, not \(urls.count)") }
            let url = urls[0]
            if url.scheme?.lowercased() == "srt" {
                srtSecrets = try Self.readSRTSecrets(path, for: url)
                streams = addresses
                return
            }
            guard url.path.split(separator: "/").count <= 1, url.fragment == nil else {
                throw UsageError("--stream \(LiveStream.redacted(url)) already has a stream key; with --stream-key-file give rtmp://HOST/APP alone")
            }
            addresses[0] = try Self.adding(key: Self.readKey(path), to: addresses[0])
            urls[0] = URL(string: addresses[0]) ?? url
        }
        for url in urls where ["rtmp", "rtmps"].contains(url.scheme?.lowercased() ?? "") {
            let shown = LiveStream.redacted(url)
            if video.codec != .h264 && videoSourceCount > 0 {
                throw UsageError("--stream \(shown): RTMP carries H.264 video, not \(video.codec.rawValue) (drop --codec or use --codec h264)")
            }
            if audio.codec != .aac { throw UsageError("--stream \(shown): RTMP carries AAC audio, not \(audio.codec.rawValue) (use --audio-codec aac)") }
            let path = url.path.split(separator: "/")
            if path.count < 2 {
                // What is there may be the key typed without its application: not shown, but
                // said to be there (the message must not read as if it were dropped).
                var hostOnly = URLComponents(url: url, resolvingAgainstBaseURL: false)
                hostOnly?.path = path.isEmpty ? "" : "/***"
                hostOnly?.query = nil
                hostOnly?.fragment = nil
                if hostOnly?.password != nil { hostOnly?.password = "***" }
                let onePart = path.isEmpty ? "" : " has one part after the host (shown as *** in case it is the key), and"
                throw UsageError("--stream \(hostOnly?.string ?? "address")\(onePart) needs an application and a stream key: rtmp://HOST/APP/KEY (or rtmp://HOST/APP with --stream-key-file)")
            }
        }
        streams = addresses
    }

    /// A port, if given, that is a port; SRT's port given, and its `mode` one SRT knows.
    static func checkPortAndMode(_ url: URL) throws {
        let shown = LiveStream.redacted(url)
        if let port = url.port, !(1...65535).contains(port) {
            throw UsageError("--stream \(shown): \(port) is not a port (ports are 1 to 65535)")
        }
        guard url.scheme?.lowercased() == "srt" else { return }
        if url.port == nil { throw UsageError("--stream \(shown) needs a port: srt://HOST:PORT") }
        let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        if let mode = items.first(where: { $0.name.lowercased() == "mode" })?.value,
           !["caller", "listener", "rendezvous"].contains(mode.lowercased()) {
            throw UsageError("--stream \(shown): SRT's mode is caller, listener or rendezvous, not '\(mode)'")
        }
    }

    /// `--hls DIR`, `--hls-window N`, `--hls-segments ts|fmp4`.
    mutating func parseHLS(_ args: ParsedArguments) throws {
        guard let dir = args.value("hls") ?? nil else {
            if let given = ["hls-window", "hls-segments"].first(where: args.has) { throw UsageError("--\(given) does nothing without --hls") }
            return
        }
        guard !dir.isEmpty else { throw UsageError("--hls needs a folder") }
        var output = HLSOutput(folder: URL(fileURLWithPath: dir, isDirectory: true))
        if output.folder.path.contains("%") {
            throw UsageError("--hls \(output.folder.path): FFmpeg's HLS writer cannot write into a folder whose path holds '%'; choose another")
        }
        if let text = args.value("hls-window") ?? nil {
            guard let n = Int(text), (0...10_000).contains(n) else {
                throw UsageError("--hls-window needs a number of segments (0 for the whole event), not '\(text)'")
            }
            output.window = n == 0 ? nil : n
        }
        if let text = args.value("hls-segments") ?? nil {
            guard let kind = LiveStream.Options.SegmentFormat(rawValue: text.lowercased()) else {
                throw UsageError("--hls-segments must be ts or fmp4, not '\(text)'")
            }
            output.segments = kind
        }
        if video.codec != .h264 && videoSourceCount > 0 { throw UsageError("--hls carries H.264 video, not \(video.codec.rawValue) (drop --codec or use --codec h264)") }
        if audio.codec != .aac { throw UsageError("--hls carries AAC audio, not \(audio.codec.rawValue) (use --audio-codec aac)") }
        // HLS writes the folder's files as it goes: the recording must not be one of them.
        let folder = output.folder.standardizedFileURL.path
        for (option, path) in [("-o", self.output), ("-o", outputFolder), ("--replay-dir", replayDirectory)] {
            guard let path = path?.standardizedFileURL.path else { continue }
            if path == folder {
                // s6 N11: "-o X is in the --hls folder X" for one name given to both.
                throw UsageError("\(option) and --hls both name \(path): --hls writes a folder of segments and a playlist there; give each its own name")
            }
            if path.hasPrefix(folder + "/") {
                throw UsageError("\(option) \(path) is in the --hls folder \(folder), whose files HLS writes; give --hls a folder of its own")
            }
        }
        hls = output
    }

    /// The text of the key file at `path`, without surrounding white space, not empty.
    static func readKeyFile(_ path: String) throws -> String {
        // Read to the end rather than by the file's size: a pipe (`<(pass show key)`) has none.
        let cannotRead = UsageError("--stream-key-file \(path) cannot be read (check the path and its permissions)")
        guard let handle = FileHandle(forReadingAtPath: path) else { throw cannotRead }
        defer { try? handle.close() }
        // Nothing at all (an empty file) reads as nil: that is an empty key, said below.
        guard let data = try? handle.read(upToCount: 65_536) ?? Data() else { throw cannotRead }
        guard let text = String(data: data, encoding: .utf8) else {
            throw UsageError("--stream-key-file \(path) does not hold text (it should hold the stream key)")
        }
        let key = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !key.isEmpty else { throw UsageError("--stream-key-file \(path) is empty (it should hold the stream key)") }
        return key
    }

    /// What the key file at `path` gives an SRT address `url`: `streamid=…` and
    /// `passphrase=…` lines (either or both), or one line alone, the stream ID (which may hold
    /// '=', as in `#!::r=live/cam,m=publish`). Neither may be in the address too. Messages
    /// name the settings and lines, never their values.
    static func readSRTSecrets(_ path: String, for url: URL) throws -> LiveStream.SRTSecrets {
        let lines = try readKeyFile(path).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let settings = lines.map { line -> (name: String, value: String)? in
            guard let equals = line.firstIndex(of: "="),
                  case let name = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased(),
                  ["streamid", "passphrase"].contains(name) else { return nil }
            return (name, String(line[line.index(after: equals)...]).trimmingCharacters(in: .whitespaces))
        }
        var secrets = LiveStream.SRTSecrets()
        if lines.count == 1, settings[0] == nil {
            secrets.streamID = lines[0]
        } else {
            for (number, setting) in settings.enumerated() {
                guard let (name, value) = setting else {
                    throw UsageError("--stream-key-file \(path): line \(number + 1) is neither streamid=… nor passphrase=… (for SRT the file holds those lines, or the stream ID alone)")
                }
                guard !value.isEmpty else { throw UsageError("--stream-key-file \(path): \(name)= has no value") }
                if name == "streamid" {
                    guard secrets.streamID == nil else { throw UsageError("--stream-key-file \(path) gives streamid twice") }
                    secrets.streamID = value
                } else {
                    guard secrets.passphrase == nil else { throw UsageError("--stream-key-file \(path) gives passphrase twice") }
                    secrets.passphrase = value
                }
            }
        }
        do {
            try secrets.check(for: url)
        } catch let error as ReelError {
            throw UsageError("--stream-key-file \(path): \(error.message)" + (error.hint.map { " (\($0))" } ?? ""))
        }
        return secrets
    }

    /// The key in the file at `path`: its text without surrounding white space, one line.
    static func readKey(_ path: String) throws -> String {
        let key = try readKeyFile(path)
        guard !key.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            throw UsageError("--stream-key-file \(path) holds more than one word (it should hold the stream key alone)")
        }
        return key
    }

    /// `address` with `key` as its last path part (`rtmp://host/app` + `key`), as typed.
    static func adding(key: String, to address: String) throws -> String {
        var text = address
        if !text.hasSuffix("/") { text += "/" }
        guard URL(string: text + key) != nil else {
            let shown = URL(string: address).map(LiveStream.redacted) ?? "the address"
            throw UsageError("the key in --stream-key-file does not make an address with \(shown) (it may hold characters an address cannot)")
        }
        return text + key
    }
}
