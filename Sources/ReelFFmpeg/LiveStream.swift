import Foundation
internal import CFFmpeg
import ReelCore

/// Sends a recording's encoded video and audio live to a streaming server — RTMP (`rtmp://`,
/// `rtmps://`: FLV, H.264 and AAC) or SRT (`srt://`: MPEG-TS) — or writes it as HLS (a
/// `file://` URL of a `.m3u8` playlist: segments and a playlist any web server can serve),
/// from the same encode as the file beside it.
///
/// A live stream is a ``PacketSink``: add it to an ``AssetWriter`` or a ``StreamEncoder``
/// (``StreamEncoder/addSink(_:policy:)``), or to a `Recorder`. It connects when it is added (a server
/// that cannot be reached then is an error at once), and from then on sends on a thread of its
/// own: ``write(_:)`` only queues the packet (its data shared, not copied), so a slow or broken
/// network never holds up the encoder or the file.
///
/// - The queue is bounded (``Options/maxQueuedBytes``). When the link is slower than the
///   stream, the packets waiting are dropped in whole groups of pictures and the stream picks
///   up at the next keyframe; ``Statistics`` counts what went.
/// - When the connection breaks, the stream reconnects with a growing pause between attempts
///   (``Options/initialBackoff`` doubling up to ``Options/maximumBackoff``) and resumes on a
///   keyframe, while the recording goes on. ``Event``s say when it was lost and when it is back.
/// - ``finish()`` sends what waits (for at most ``Options/timeout``) and ends the stream
///   properly (the FLV trailer; RTMP's end of stream when the connection closes).
///
/// SRT's listener mode (`srt://:PORT?mode=listener`, or an address of this machine) turns
/// it round: the stream waits for a player (an SRT caller) to connect, on its thread, so the
/// start does not wait; until one does, and after it leaves, the queue drops whole groups, and
/// a caller gets the stream from a keyframe.
///
/// The stream key in an address is a secret: ``name`` (and every message and error) shows the
/// address with it replaced by `***` (see ``redacted(_:)``). SRT's stream ID and passphrase can
/// be given apart from the address (``Options/srtSecrets``), so that they are in no address at all.
public final class LiveStream: PacketSink, @unchecked Sendable {
    /// The address the stream goes to (it may hold a key: show ``name`` instead).
    public let url: URL
    /// What libavformat is given: the address as it was typed (a key's `[` stays `[`, where
    /// `URL` would send `%5B`), or the playlist's path for HLS.
    private let address: String
    /// The address without its key, for messages and progress.
    public let name: String
    /// How the stream sends.
    public let options: Options
    /// libavformat's muxer for the address's protocol.
    let format: String

    let condition = NSCondition()
    // Guarded by `condition`:
    private var streams: [EncodedStream] = []
    private var queue: LiveStreamQueue
    private var phase = Phase.configuring
    var statistics_: Statistics
    private var eventHandler: (@Sendable (Event) -> Void)?
    private var connection: Muxer?
    /// Where the sender thread is; decided under the lock.
    private enum Phase { case configuring, sending, finishing, finished }

    let gate = InterruptGate()
    private let done = DispatchSemaphore(value: 0)
    private var meter = (bytes: Int64(0), since: DispatchTime.now().uptimeNanoseconds)
    /// HLS: the time of the last video packet written (the sending thread's alone; see
    /// ``hlsTimed(_:)``).
    var hlsLastVideoPTS: Int64?

    /// A stream to `url` (`rtmp://host/app/key`, `rtmps://…`, `srt://host:port?…`).
    ///
    /// - Throws: `.invalidConfiguration` for an address of another kind, or options out of
    ///   range (SRT secrets with another kind of address, or given by the address too).
    public convenience init(url: URL, options: Options = Options()) throws {
        try self.init(url: url, address: url.isFileURL ? url.path : url.absoluteString, options: options)
    }

    /// A stream to `address` as typed: what is sent is exactly this text, where a `URL` made
    /// from it would escape the characters an address may not hold (a stream key's `[`, say)
    /// and the server would see another key. An address in capitals (`RTMP://`) is taken.
    ///
    /// - Throws: `.invalidConfiguration` for text that is no address Reel can send to, or
    ///   options out of range.
    public convenience init(address: String, options: Options = Options()) throws {
        guard var parts = URLComponents(string: address), let scheme = parts.scheme else {
            throw ReelError(.invalidConfiguration, "the stream address does not parse", hint: "use an rtmp://, rtmps:// or srt:// address")
        }
        parts.scheme = scheme.lowercased()
        guard let url = parts.url else {
            throw ReelError(.invalidConfiguration, "the stream address does not parse", hint: "use an rtmp://, rtmps:// or srt:// address")
        }
        let typed = scheme.lowercased() + address.dropFirst(scheme.count)
        try self.init(url: url, address: url.isFileURL ? url.path : typed, options: options)
    }

    private init(url: URL, address: String, options: Options) throws {
        guard let format = Self.format(for: url) else {
            throw ReelError(.invalidConfiguration, "\(Self.redacted(url)) is not a streaming address Reel can send to",
                            hint: "use an rtmp://, rtmps:// or srt:// address")
        }
        guard options.maxQueuedBytes >= 64 * 1024 else {
            throw ReelError(.invalidConfiguration, "a live stream's queue must hold at least 64 KB, not \(options.maxQueuedBytes) bytes",
                            hint: "allow a few megabytes")
        }
        if format == "hls" && url.path.contains("%") {
            throw ReelError(.invalidConfiguration, "FFmpeg's HLS writer cannot write into \(url.deletingLastPathComponent().path): its path holds a '%'",
                            hint: "choose a folder without '%' in its path")
        }
        if let window = options.playlistWindow, window < 1 {
            throw ReelError(.invalidConfiguration, "an HLS playlist must list at least one segment, not \(window)",
                            hint: "give a window of a few segments, or none for the whole event")
        }
        guard options.segmentDuration >= MediaTime(value: 1, timescale: 10) else {
            throw ReelError(.invalidConfiguration, "HLS segments must last at least 0.1 s")
        }
        guard options.sendBufferBytes >= 4096 else {
            throw ReelError(.invalidConfiguration, "a live stream's send buffer must be at least 4 KB, not \(options.sendBufferBytes) bytes")
        }
        guard options.timeout > .zero, options.initialBackoff > .zero, options.maximumBackoff >= options.initialBackoff else {
            throw ReelError(.invalidConfiguration, "a live stream's timeout and pauses must be positive, the longest pause at least the first")
        }
        try options.srtSecrets.check(for: url)
        self.url = url
        self.address = address
        self.options = options
        self.format = format
        name = Self.redacted(url)
        queue = LiveStreamQueue(maxBytes: options.maxQueuedBytes)
        statistics_ = Statistics(name: name, isConnected: false, bytesSent: 0, packetsSent: 0, bitrate: 0, queuedBytes: 0,
                                 mostQueuedBytes: 0, droppedFrames: 0, droppedGroups: 0, droppedBytes: 0, reconnects: 0)
    }

    deinit {
        gate.cancel()
        connection?.abandon()
    }

    /// Whether `url` is an address a live stream sends to (`rtmp`, `rtmps`, `srt`, or a file
    /// URL of an `.m3u8` playlist).
    public static func canSend(to url: URL) -> Bool { format(for: url) != nil }

    private static func format(for url: URL) -> String? {
        switch url.scheme?.lowercased() {
        case "rtmp", "rtmps": return "flv"
        case "srt": return "mpegts"
        case "file": return url.pathExtension.lowercased() == "m3u8" ? "hls" : nil
        default: return nil
        }
    }

    /// `url` as it may be shown: the last part of a path of two parts or more (an RTMP
    /// address's stream key), a password, and the values of query items (SRT's `streamid`,
    /// `passphrase`) become `***`. Any scheme is redacted so, for messages about wrong ones.
    public static func redacted(_ url: URL) -> String {
        if url.isFileURL { return url.path }  // HLS into a folder: a path holds no key
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return "(an address that does not parse)" }
        if parts.password != nil { parts.password = "***" }
        let isRTMP = (parts.scheme?.lowercased() ?? "").hasPrefix("rtmp")
        if isRTMP {
            // RTMP has no settings in a query: whatever follows a '?' is part of the key.
            if let query = parts.percentEncodedQuery, !query.isEmpty { parts.percentEncodedQuery = "***" }
        } else if let items = parts.queryItems, !items.isEmpty {
            // SRT's plain settings are shown; any other value, or a word alone, is not.
            parts.queryItems = items.map {
                guard let value = $0.value else { return URLQueryItem(name: "***", value: nil) }
                return URLQueryItem(name: $0.name, value: Self.plainQueryItems.contains($0.name.lowercased()) ? value : "***")
            }
        }
        // RTMP: the application is shown, everything after it (the key, with any '/', '#' or
        // escaped character in it) is not; other schemes carry no path but a key, if any.
        let segments = parts.path.split(separator: "/", omittingEmptySubsequences: true)
        if isRTMP {
            // One part alone is the application (the key comes from elsewhere).
            if segments.count >= 2 || parts.fragment != nil {
                parts.path = segments.isEmpty ? "/***" : "/\(segments[0])/***"
            }
        } else if !segments.isEmpty || parts.fragment != nil {
            parts.path = "/***"
        }
        parts.fragment = nil
        return parts.string ?? "(an address that does not parse)"
    }

    /// Whether the stream goes over TLS (`rtmps`).
    var isTLS: Bool { url.scheme?.lowercased() == "rtmps" }

    /// Whether the address is an SRT listener (`mode=listener`): it waits for callers.
    public var isListener: Bool {
        format == "mpegts" && (URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? [])
            .contains { $0.name == "mode" && $0.value?.lowercased() == "listener" }
    }

    /// Query items of SRT addresses that hold no secret, shown as they are (every other value,
    /// `streamid` and `passphrase` among them, is `***`).
    static let plainQueryItems: Set<String> = ["mode", "latency", "rcvlatency", "peerlatency", "transtype", "pkt_size", "payload_size",
                                               "maxbw", "connect_timeout", "timeout", "pbkeylen", "linger", "tlpktdrop"]

    /// Calls `handler` (on the sending thread) for each ``Event`` from now on.
    public func setEventHandler(_ handler: @escaping @Sendable (Event) -> Void) {
        condition.withLock { eventHandler = handler }
    }

    /// What the stream has sent and dropped so far.
    public var statistics: Statistics {
        condition.withLock {
            var s = statistics_
            s.queuedBytes = queue.bytes
            s.mostQueuedBytes = queue.mostBytes
            s.droppedFrames = queue.droppedFrames
            s.droppedGroups = queue.droppedGroups
            s.droppedBytes = queue.droppedBytes
            return s
        }
    }

    // MARK: PacketSink

    /// ``SinkPolicy/optional``: a recording goes on without a stream that failed for good (the
    /// stream says so in its own events).
    public var policy: SinkPolicy { .optional }

    /// Takes note of a stream to send.
    ///
    /// - Throws: `.unsupportedFormat` for a codec the address's protocol cannot carry (RTMP:
    ///   H.264 video, AAC audio); `.alreadyRunning` once packets are flowing.
    public func add(_ stream: EncodedStream) throws {
        if format == "flv" || format == "hls" {
            let wanted = stream.kind == .video ? "h264" : "aac"
            guard stream.codecName == wanted else {
                let what = format == "hls" ? "HLS (as Reel writes it)" : "RTMP"
                throw ReelError(.unsupportedFormat, "\(what) carries H.264 video and AAC audio, not \(stream.codecName) (\(name))",
                                hint: stream.kind == .video ? "record the video as H.264" : "record the audio as AAC")
            }
        }
        try condition.withLock {
            guard phase == .configuring else { throw ReelError(.alreadyRunning, "\(name) is already sending") }
            streams.append(stream)
            if stream.kind == .video { queue.hasVideo = true }
        }
    }

    /// Connects (within ``Options/timeout``) and starts sending on a thread of its own.
    ///
    /// - Throws: `.ioFailure` (or a more precise code) when the server cannot be reached or
    ///   refuses the stream; `.invalidConfiguration` without streams.
    public func begin() throws {
        let streams = try condition.withLock {
            guard phase == .configuring else { throw ReelError(.alreadyRunning, "\(name) is already sending") }
            guard !self.streams.isEmpty else { throw ReelError(.invalidConfiguration, "\(name) has no streams to send") }
            return self.streams
        }
        if format == "hls" { try checkHLSFolder() }
        if isListener { try checkListenerPort() }
        // A listener waits for callers on its thread; anything else connects now, so that an
        // address that does not answer fails the start.
        let first: Muxer?
        do {
            first = isListener ? nil : try connect(streams)
        } catch {
            if format == "hls" { endHLS() }
            throw error
        }
        condition.withLock {
            connection = first
            phase = .sending
            statistics_.isConnected = first != nil
        }
        let thread = Thread { [self] in run(streams) }
        thread.name = "reel.stream"
        thread.start()
    }

    /// What ``checkHLSFolder()`` holds until the stream ends: the playlist's name, the folder's lock.
    var hlsClaim: HLSClaim?
    /// The HLS segments found whole on the disk so far (a listed one missing later was deleted).
    var hlsSegmentsSeen: Set<String> = []
    /// What publishes the HLS playlist (the sending thread's alone once it runs).
    var hlsPublisher: HLSPublisher?

    /// Queues `packet` for sending (never blocks on the network): ``SinkFlow/ok`` while the
    /// stream sends or reconnects (a slow link drops whole groups of pictures from its queue),
    /// ``SinkFlow/gone`` once it has failed for good or been cancelled.
    public func write(_ packet: EncodedPacket) throws -> SinkFlow {
        condition.withLock {
            guard phase == .sending else { return phase == .configuring ? .ok : .gone }
            queue.push(packet)
            condition.signal()
            return .ok
        }
    }

    /// Sends what waits (for at most ``Options/timeout``), ends the stream and closes the
    /// connection. Returns once the sending thread is done.
    public func finish() throws {
        // Whether there is anybody to send to is read with the phase, under one lock: read
        // after it, the sending thread could already have taken the connection to write the
        // trailer, which the cancel below then cut off (an HLS playlist emptied at the stop).
        let (wasSending, unconnected) = condition.withLock { () -> (Bool, Bool) in
            defer { if phase == .configuring { phase = .finished } }
            guard phase == .sending else { return (false, false) }
            phase = .finishing
            condition.signal()
            return (true, connection == nil)
        }
        guard wasSending else { return }
        // Nobody to send to (a listener without a caller, a server away): stop waiting at once.
        if unconnected { gate.cancel() }
        done.wait()
    }

    /// When a stop's sending of what waits ends (``Options/timeout`` after ``finish()``), as
    /// `CLOCK_MONOTONIC`-based `DispatchTime` nanoseconds; set once.
    private var finishBy: UInt64?

    /// Arms the gate for a blocking call: the per-call timeout while sending, or what is left
    /// of the stop's time once finishing. Returns false when that time is up.
    private func armGate(finishing: Bool) -> Bool {
        guard finishing else {
            gate.arm(options.timeout)
            return true
        }
        let deadline = condition.withLock { () -> UInt64 in
            if finishBy == nil { finishBy = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, options.timeout.nanoseconds)) }
            return finishBy!
        }
        let now = DispatchTime.now().uptimeNanoseconds
        guard now < deadline else { return false }
        gate.arm(MediaTime(value: Int64(deadline - now), timescale: 1_000_000_000))
        return true
    }

    /// Gives up at once: a ``begin()`` connecting on another thread throws, nothing more is
    /// sent, and ``finish()`` returns without waiting. For a stop that comes while the
    /// recording is still starting (a server slow to answer).
    public func cancel() {
        gate.cancel()
        condition.withLock { condition.broadcast() }
    }

    // MARK: Sending

    /// Opens a connection and writes the header (within the timeout).
    private func connect(_ streams: [EncodedStream]) throws -> Muxer {
        Self.networkReady
        // A listener waits for a caller as long as it takes (a stop cancels the gate).
        if isListener { gate.disarm() } else { gate.arm(options.timeout) }
        defer { if !isFinishing { gate.disarm() } }
        let muxerOptions = connectionOptions
        do {
            let muxer = try Muxer(network: url, address: address, format: format, name: name, gate: gate, options: muxerOptions)
            if format == "hls" { publishHLS(through: muxer) }
            for stream in streams { try muxer.add(stream) }
            if format == "hls" { try muxer.writeHeader(options: hlsOptions) } else { try muxer.writeHeader(fragmentInterval: nil) }
            return muxer
        } catch let error as ReelError {
            if gate.isCancelled && !isFinishing {
                throw ReelError(.notRunning, "\(name): connecting was given up (the recording stopped)", averror: error.averror)
            }
            throw explain(error)
        }
    }

    private var isFinishing: Bool { condition.withLock { phase == .finishing } }

    /// The sending thread: sends queued packets, reconnects after failures, ends the stream.
    private func run(_ streams: [EncodedStream]) {
        var link = LiveStreamLink(connected: condition.withLock { connection != nil }, isListener: isListener,
                                  initialBackoff: options.initialBackoff, maximumBackoff: options.maximumBackoff)
        while true {
            // Take the next packet (connecting first if need be), or learn that it is over.
            condition.lock()
            while queue.isEmpty && phase == .sending { condition.wait() }
            let finishing = phase != .sending
            let current = connection
            if (finishing && (queue.isEmpty || current == nil)) || gate.isCancelled {
                condition.unlock()
                break
            }
            guard let current else {
                condition.unlock()
                do {
                    let fresh = try connect(streams)
                    let isReturn = link.connected()
                    condition.withLock {
                        connection = fresh
                        // Back after an outage: on with the live picture, not the backlog.
                        queue.awaitKeyframe(latest: isReturn)
                        statistics_.isConnected = true
                        statistics_.reconnects = link.reconnects
                    }
                    if isReturn { report(.resumed(name: name)) }
                } catch {
                    let failure = error as? ReelError ?? ReelError(.ioFailure, "\(name): \(error)")
                    let (reports, wait) = link.connectFailed(failure)
                    if reports { report(.interrupted(name: name, error: failure)) }
                    pause(wait)
                }
                continue
            }
            let packet = queue.pop()
            condition.unlock()
            guard let packet else { continue }
            // A stop sends what waits for the stream's timeout, and no longer: the rest is
            // counted as dropped below.
            guard armGate(finishing: finishing) else {
                condition.withLock { queue.dropTaken(packet) }
                break
            }
            do {
                try current.write(format == "hls" ? hlsTimed(packet) : packet)
                if !finishing { gate.disarm() }
                sent(packet)
                // A keyframe starts a segment: the one before it must be on disk by now.
                if format == "hls" && packet.isKeyframe && packet.stream.kind == .video { try checkHLSSegments() }
            } catch {
                // HLS ends its playlist (players stop rather than wait for more); a network
                // connection that broke is dropped.
                if format != "hls" || (try? current.finish()) == nil { current.abandon() }
                condition.withLock {
                    connection = nil
                    statistics_.isConnected = false
                    statistics_.bitrate = 0
                    queue.awaitKeyframe()
                }
                let failure = format == "hls" ? (error as? ReelError).map(explain) ?? ReelError(.ioFailure, "\(name): \(error)")
                                              : (error as? ReelError).map(explainBreak) ?? ReelError(.ioFailure, "\(name): \(error)")
                if format == "hls" {
                    condition.withLock { statistics_.failure = failure }
                    if !finishing { report(.failed(name: name, error: failure)) }
                    break
                }
                // A break while the stop sends what waits is no outage: the recording has ended.
                if !finishing && link.broke(failure) { report(.interrupted(name: name, error: failure)) }
            }
        }
        // What a stop could not send in its time (or a stream down at the stop) is dropped,
        // and counted so.
        condition.withLock { if !queue.isEmpty { queue.dropWaiting() } }
        // The end of the stream: the trailer, then closing says goodbye to the server (in
        // what is left of the stop's time, at least a moment).
        if let last = condition.withLock({ () -> Muxer? in defer { connection = nil }; return connection }) {
            // HLS's trailer writes the playlist's end (the whole playlist, when no segment was
            // cut before the stop) into a local folder: it gets a time of its own, not what the
            // sending left (with a moment left it was cut off, and the playlist never written).
            if format == "hls" { gate.arm(options.timeout) } else if !armGate(finishing: true) { gate.arm(MediaTime(value: 1, timescale: 2)) }
            var ended: ReelError?
            do { try last.finish() } catch {
                last.abandon()
                ended = error as? ReelError ?? ReelError(.ioFailure, "\(name): \(error)")
            }
            if format == "hls" { checkHLSEnded(trailerError: ended) }
        }
        // A stream that failed on the way (a full disk) ends its playlist where it stopped.
        if format == "hls" { endHLS() }
        if let lost = link.endedEarly() {
            condition.withLock { statistics_.failure = lost }
            report(.failed(name: name, error: lost))
        }
        condition.withLock {
            phase = .finished
            statistics_.isConnected = false
            statistics_.hasEnded = true
        }
        done.signal()
    }

    /// Counts a packet sent, and the rate over about the last second.
    private func sent(_ packet: EncodedPacket) {
        let now = DispatchTime.now().uptimeNanoseconds
        meter.bytes += Int64(packet.byteCount)
        let elapsed = now - meter.since
        condition.withLock {
            statistics_.bytesSent += Int64(packet.byteCount)
            statistics_.packetsSent += 1
            if elapsed >= 1_000_000_000 {
                statistics_.bitrate = meter.bytes * 8 * 1_000_000_000 / Int64(elapsed)
            }
        }
        if elapsed >= 1_000_000_000 { meter = (0, now) }
    }

    /// Waits `time` before the next attempt, or less when the stream is finishing.
    private func pause(_ time: MediaTime) {
        condition.withLock {
            let until = Date(timeIntervalSinceNow: time.seconds)
            while phase == .sending && !gate.isCancelled && Date() < until { _ = condition.wait(until: until) }
        }
    }

    func report(_ event: Event) {
        let handler = condition.withLock { eventHandler }
        handler?(event)
    }

    /// libavformat's network layer, set up once per process.
    private static let networkReady: Void = {
        avformat_network_init()
    }()
}
