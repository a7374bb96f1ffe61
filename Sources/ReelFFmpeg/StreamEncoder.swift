import ReelCore

/// Encodes video frames and audio once and hands every packet to any number of sinks: the one
/// encode behind a recording's file, a ``ReplayBuffer`` and whatever else takes packets.
///
/// Owns one video encoder (for a video track) and one audio encoder per audio track. Frames are
/// placed on the video track's frame grid; audio is taken as contiguous per track. Every
/// packet that comes out is an ``EncodedPacket``, written to each ``PacketSink`` in the order
/// they were added. ``AssetWriter`` is a stream encoder whose first sink is its file; a stream
/// encoder on its own (sinks only, no file) serves a replay buffer that writes nothing until
/// asked.
///
/// Used from one thread at a time. (A change of preset flushes the replaced video encoder on a
/// thread of its own, which touches only that encoder and the list its packets wait in; they
/// reach the sinks on the caller's thread.)
public final class StreamEncoder: @unchecked Sendable {
    /// Where the encoder is in its life: sinks can be added until media is appended; nothing
    /// is taken after ``finish()``.
    private enum Phase { case configuring, encoding, finished }

    /// The video encoder; replaced by one of another preset when the speed changes (see
    /// `StreamEncoder+Speed.swift`).
    var video: VideoEncoder?
    /// The x264 options that shape the stream's header, from the first encoder's SEI (H.264).
    var pinnedVideoHeader: String?
    private(set) var sawFirstVideoPacket = false
    /// The last video packet's decoding time, in ticks: a replacement encoder's first packets
    /// decode no earlier (see `guarded(_:)`).
    private var lastVideoDTS: Int64?
    /// The flush of the encoder replaced last, running on its own thread, until it has ended
    /// and all it gave has been written (see `StreamEncoder+Speed.swift`).
    var videoFlush: VideoEncoderFlush?
    /// Packets the flush gave, not yet written; then the current encoder's packets, held back
    /// while the flush runs, not yet written: in the order the sinks take them.
    private var flushedVideo: [EncodedPacket] = []
    private var heldVideo: [EncodedPacket] = []
    /// Runs on the flush's thread before a replaced encoder is flushed (tests: to hold the
    /// flush, or fail it); `nil` in production.
    var beforeVideoFlush: (@Sendable () throws -> Void)?
    let audio: [AudioEncoder]
    private let frameRate: FrameRate?
    private var sinks: [any PacketSink] = []
    private var phase = Phase.configuring
    private var lastVideoIndex: Int64 = -1

    /// Opens an encoder for the video track (if any) and one for each audio track; their
    /// packets belong to the ``streams``, video first.
    ///
    /// - Throws: `.invalidConfiguration` without any track, or for settings that make no sense;
    ///   `.unsupportedFormat` when this FFmpeg lacks an encoder.
    public init(video: AssetWriter.VideoTrack?, audio: [AssetWriter.AudioTrack]) throws {
        FFmpeg.silenceLibraryLogging()
        guard video != nil || !audio.isEmpty else {
            throw ReelError(.invalidConfiguration, "nothing to encode: no video and no audio track")
        }
        // MP4, MOV and MKV all keep codec headers out of band; so do the sinks.
        self.video = try video.map {
            try VideoEncoder(settings: $0.settings, inputFormat: $0.inputFormat, inputSize: $0.inputSize, globalHeader: true, streamIndex: 0)
        }
        let firstAudio = video == nil ? 0 : 1
        self.audio = try audio.enumerated().map { i, track in
            try AudioEncoder(settings: track.settings, inputFormat: track.inputFormat, globalHeader: true,
                             streamIndex: firstAudio + i, title: track.title)
        }
        frameRate = video?.settings.frameRate
    }

    /// The streams of the packets this encoder makes: the video track's first (if any), then the
    /// audio tracks' in order.
    public var streams: [EncodedStream] {
        get throws { try (video.map { [try $0.stream] } ?? []) + audio.map { try $0.stream } }
    }

    /// The size the video is encoded at (the asked-for size, made even for 4:2:0).
    public var videoSize: PixelSize? { video?.outputSize }

    /// Adds a sink that takes every packet from now on; it learns of the ``streams`` at once and
    /// is finished with the encoder.
    ///
    /// - Throws: `.alreadyRunning` once video or audio has been appended (the sink would miss
    ///   the start of the streams, their first keyframe); what the sink's ``PacketSink/add(_:)``
    ///   and ``PacketSink/begin()`` throw.
    public func addSink(_ sink: any PacketSink) throws {
        guard phase == .configuring else {
            throw ReelError(.alreadyRunning, "a sink can be added only before anything is appended")
        }
        for stream in try streams { try sink.add(stream) }
        try sink.begin()
        sinks.append(sink)
    }

    /// Encodes a frame at `time` (zero is the streams' start), placed on the frame grid of the
    /// track's rate; a frame that lands in the same slot as the previous one is skipped and
    /// `false` returned.
    ///
    /// - Throws: `.invalidConfiguration` without a video track or for a frame that does not fit
    ///   it; `.notRunning` after ``finish()``; encoding errors and what the sinks throw.
    @discardableResult
    public func appendVideo(_ frame: VideoFrame, at time: MediaTime) throws -> Bool {
        guard let rate = frameRate else { throw ReelError(.invalidConfiguration, "this encoder has no video track") }
        let index = rate.frameIndex(at: time, rounding: .nearest)
        guard index > lastVideoIndex else { return false }
        try encodeVideo(frame, index: index)
        return true
    }

    /// Encodes `frame` as frame number `index` of the grid (later than any before) and hands
    /// the packets that come out to the sinks.
    func encodeVideo(_ frame: VideoFrame, index: Int64) throws {
        guard let video else { throw ReelError(.invalidConfiguration, "this encoder has no video track") }
        guard phase != .finished else { throw ReelError(.notRunning, "the encoder has finished") }
        try video.checkFits(frame)
        phase = .encoding
        lastVideoIndex = max(lastVideoIndex, index)
        try video.send(frame, index: index)
        try drainVideo()
    }

    /// Encodes audio for track `track`, taken as contiguous with what came before.
    ///
    /// - Throws: `.invalidConfiguration` when there is no such track or `buffer` does not fit
    ///   it; `.notRunning` after ``finish()``; encoding errors and what the sinks throw.
    public func appendAudio(_ buffer: AudioBuffer, track: Int) throws {
        guard audio.indices.contains(track) else { throw ReelError(.invalidConfiguration, "no audio track \(track)") }
        guard phase != .finished else { throw ReelError(.notRunning, "the encoder has finished") }
        try audio[track].checkFits(buffer)
        phase = .encoding
        try audio[track].send(buffer)
        try drainAudio(track)
    }

    /// Drains the encoders into the sinks and finishes the sinks.
    public func finish() throws {
        try finishVideo()
        try finishAudio()
        try finishSinks()
    }

    /// Drains the video encoder into the sinks.
    func finishVideo() throws {
        phase = .finished
        guard let video else { return }
        try video.finish()
        try drainVideo()
        // The replaced encoder's last packets, then what the current one gave meanwhile.
        try writeFlushedVideo(waiting: true)
    }

    /// Drains the audio encoders into the sinks.
    func finishAudio() throws {
        phase = .finished
        for (i, a) in audio.enumerated() {
            try a.finish()
            try drainAudio(i)
        }
    }

    /// Tells the sinks that no more packets come.
    func finishSinks() throws {
        phase = .finished
        for sink in sinks { try sink.finish() }
    }

    /// Stops without draining the encoders: the sinks keep what they took and are finished.
    public func abandon() {
        guard phase != .finished else { return }
        phase = .finished
        abandonVideoFlush()
        for sink in sinks { try? sink.finish() }
    }

    /// Takes the video encoder's packets and writes them to the sinks; while a replaced
    /// encoder is being flushed they are held back, and what the flush gave is written first.
    ///
    /// - Throws: what the encoder and the sinks throw; what the flush threw, once.
    func drainVideo() throws {
        guard let video else { return }
        while case .packet(let packet) = try video.receive() {
            if videoFlush == nil && heldVideo.isEmpty { try writeVideo(packet) } else { heldVideo.append(packet) }
        }
        try writeFlushedVideo(waiting: false)
    }

    /// Writes what the replaced encoder's flush has given so far (all of it, `waiting` until it
    /// has ended), and once it has ended, the packets held back meanwhile.
    ///
    /// - Throws: what the sinks throw; what the flush threw (its packets not yet given are lost;
    ///   the held ones follow at the next call).
    func writeFlushedVideo(waiting: Bool) throws {
        if let flush = videoFlush {
            let taken = waiting ? flush.waitForEnd() : flush.take()
            flushedVideo += taken.packets
            if let end = taken.end {
                videoFlush = nil
                // Given before the error: they reach the sinks, like those of an encoder that fails.
                try writeAll(&flushedVideo)
                try end.get()
            }
        }
        try writeAll(&flushedVideo)
        if videoFlush == nil { try writeAll(&heldVideo) }
    }

    /// Writes `packets` in order, each taken off the list before it is written.
    private func writeAll(_ packets: inout [EncodedPacket]) throws {
        while !packets.isEmpty { try writeVideo(packets.removeFirst()) }
    }

    /// Abandoning: the sinks keep what came out of the encoders, without waiting for a flush
    /// still running (its thread ends on its own, its later packets unwritten).
    private func abandonVideoFlush() {
        if let taken = videoFlush?.take() { flushedVideo += taken.packets }
        videoFlush = nil
        // Each sink takes what it can: one that fails does not stop the others.
        for packet in flushedVideo + heldVideo {
            let packet = guarded(packet)
            for sink in sinks { try? sink.write(packet) }
        }
        flushedVideo = []
        heldVideo = []
    }

    /// Writes one video packet to every sink.
    private func writeVideo(_ packet: EncodedPacket) throws {
        let packet = guarded(packet)
        for sink in sinks { try sink.write(packet) }
    }

    /// `packet` as the sinks take it, decoding later than the one before (see below); the
    /// first packet's header options are kept.
    private func guarded(_ packet: EncodedPacket) -> EncodedPacket {
        var packet = packet
        // x264 starts a stream's decoding times at its first frame less the time its first
        // B-frame delay's worth of frames spans: after a change of encoder, with frames
        // missing around it, that can lie at or before the old encoder's last. Those first
        // packets decode one tick after the packet before instead (still no later than they
        // are shown: the old encoder's frames were all shown before the new one's first).
        if let last = lastVideoDTS, packet.dts <= last { packet = packet.decodedEarlier(by: packet.dts - (last + 1)) }
        lastVideoDTS = packet.dts
        if !sawFirstVideoPacket {
            sawFirstVideoPacket = true
            pinnedVideoHeader = VideoEncoder.pinnedHeaderParameters(fromFirstPacket: packet)
        }
        return packet
    }

    private func drainAudio(_ track: Int) throws {
        while case .packet(let packet) = try audio[track].receive() {
            for sink in sinks { try sink.write(packet) }
        }
    }
}
