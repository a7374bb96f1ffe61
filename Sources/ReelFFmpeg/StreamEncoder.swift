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
    enum Phase { case configuring, encoding, finished }

    /// A sink and what its end does to the recording; `open` until it answered full or gone
    /// (it then takes nothing more, but a full one is still finished with the others).
    struct Attached {
        let sink: any PacketSink
        let policy: SinkPolicy
        var open = true
    }

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
    var audio: [AudioEncoder]
    /// Per audio track, in clip mode: where its encoder ends and what carries it on (see
    /// `StreamEncoder+ClipAudio.swift`).
    var clipAudio: [ClipAudioTrack]
    let frameRate: FrameRate?
    var sinks: [Attached] = []
    var phase = Phase.configuring
    private var lastVideoIndex: Int64 = -1
    /// How many ticks earlier every video packet decodes, so that all tracks start together
    /// (see ``alignTrackStarts()``).
    private var videoDTSShift: Int64 = 0
    /// ``trackLead`` in frames: how far before its first frame the video's decoding starts.
    private var leadFrames: Int64 = 0
    /// The frame numbers handed to the video encoder that have not come out of it, in order,
    /// and the highest that has: a packet after which no frame shown before it is still inside
    /// completes its group (``EncodedPacket/completesGroup``).
    var inEncoder: [Int64] = []
    private var highestOut: Int64 = -1

    /// Grid slots are sent to the video encoder this many slots later: the slots that pauses'
    /// padding took (see ``pause()``). Packets are moved back before the sinks see them.
    var slotOffset: Int64 = 0
    /// The encoder slots of pauses' padding frames, whose packets no sink sees.
    var paddingSlots: [ClosedRange<Int64>] = []
    /// The encoder slot of the last frame sent (padding included).
    var lastSentSlot: Int64 = -1
    /// The next frame is sent as a keyframe (after a pause's padding).
    var keyframeAtNextFrame = false
    /// Grid slots from which the next frame is a keyframe (where clips begin).
    var keyframeRequests: [Int64] = []

    /// Whether a ``SinkPolicy/required`` sink has answered ``SinkFlow/full``: the recording
    /// has reached its size.
    public private(set) var hasFullSink = false
    /// The sink the recording depends on whose failure was thrown (the first), if one failed.
    package private(set) var failedSink: (any PacketSink)?

    /// Called on the encoder's thread when an ``SinkPolicy/optional`` sink failed (with its
    /// error) or went, once it has been finished and dropped.
    package var onSinkDropped: ((any PacketSink, (any Error)?) -> Void)?

    /// Opens an encoder for the video track (if any) and one for each audio track; their
    /// packets belong to the ``streams``, video first.
    ///
    /// - Throws: `.invalidConfiguration` without any track, or for settings that make no sense;
    ///   `.unsupportedFormat` when this FFmpeg lacks an encoder.
    public convenience init(video: AssetWriter.VideoTrack?, audio: [AssetWriter.AudioTrack]) throws {
        try self.init(video: video, audio: audio, alignsTrackStarts: false)
    }

    /// Opens the encoders, as ``init(video:audio:)``; with `alignsTrackStarts`, every track's
    /// first packet decodes at the same time (what an MP4/MOV file needs: see
    /// ``alignTrackStarts()``).
    package init(video: AssetWriter.VideoTrack?, audio: [AssetWriter.AudioTrack], alignsTrackStarts: Bool) throws {
        FFmpeg.silenceLibraryLogging()
        guard video != nil || !audio.isEmpty else {
            throw ReelError(.invalidConfiguration, "nothing to encode: no video and no audio track")
        }
        // MP4, MOV and MKV all keep codec headers out of band; so do the sinks.
        self.video = try video.map {
            try VideoEncoder(settings: $0.settings, inputFormat: $0.inputFormat, inputSize: $0.inputSize, globalHeader: true, streamIndex: 0,
                             keepsAspect: $0.keepsAspect)
        }
        let firstAudio = video == nil ? 0 : 1
        self.audio = try audio.enumerated().map { i, track in
            try AudioEncoder(settings: track.settings, inputFormat: track.inputFormat, globalHeader: true,
                             streamIndex: firstAudio + i, title: track.title)
        }
        clipAudio = Array(repeating: ClipAudioTrack(), count: audio.count)
        frameRate = video?.settings.frameRate
        if alignsTrackStarts { try alignTrackStarts() }
    }

    /// Makes every track's first packet decode at the same time.
    ///
    /// Encoders start before zero: x264's first packet decodes B-frame-delay frames early, AAC
    /// primes 1024 samples. FFmpeg writes a fragmented MP4 without edit lists and moves the whole
    /// file by the first packet it sees, pulling any track that starts later back to zero, which
    /// would put audio and video out of step. So all tracks are made to start at one lead time:
    /// the video's decoding times move earlier by whole frames (legal: only the reorder offset
    /// grows), and the audio gets silence before its first sample. Finalising an MP4 takes the
    /// lead off again and the edit list hides it; other sinks see the same times, which still
    /// put every sample where it was recorded.
    private func alignTrackStarts() throws {
        guard let video, let rate = frameRate else { return }
        let frame = rate.frameDuration
        var lead = video.decodeDelay
        for a in audio {
            let priming = MediaTime(value: a.priming, timescale: Int32(a.settings.sampleRate))
            lead = max(lead, rate.frameIndex(at: priming, rounding: .up))
        }
        videoDTSShift = lead - video.decodeDelay
        leadFrames = lead
        trackLead = frame * lead
        for a in audio {
            let leadSamples = (frame * lead).convertedValue(to: Int32(a.settings.sampleRate), rounding: .nearest)
            try a.setLeadingSilence(max(0, leadSamples - a.priming))
        }
    }

    /// The streams of the packets this encoder makes: the video track's first (if any), then the
    /// audio tracks' in order.
    public var streams: [EncodedStream] {
        get throws { try (video.map { [try $0.stream] } ?? []) + audio.map { try $0.stream } }
    }

    /// The size the video is encoded at (the asked-for size, made even for 4:2:0).
    public var videoSize: PixelSize? { video?.outputSize }

    /// Adds a sink that takes every packet from now on; it learns of the ``streams`` at once and
    /// is finished with the encoder. `policy` says what the sink's end does to the recording:
    /// a ``SinkPolicy/required`` sink's failure is the encoder's (appending throws it), an
    /// ``SinkPolicy/optional`` one is finished and dropped, and the encoder goes on.
    ///
    /// - Throws: `.alreadyRunning` once video or audio has been appended (the sink would miss
    ///   the start of the streams, their first keyframe); what the sink's ``PacketSink/add(_:)``
    ///   and ``PacketSink/begin()`` throw.
    public func addSink(_ sink: any PacketSink, policy: SinkPolicy = .required) throws {
        guard phase == .configuring else {
            throw ReelError(.alreadyRunning, "a sink can be added only before anything is appended")
        }
        for stream in try streams { try sink.add(stream) }
        try sink.begin()
        sinks.append(Attached(sink: sink, policy: policy))
    }

    /// How far before their first frame every track's first packet decodes when the tracks
    /// are aligned (see ``alignTrackStarts()``); zero otherwise.
    package private(set) var trackLead = MediaTime.zero

    /// Video frames handed to the encoder that have not come out of it yet (its lookahead).
    package var framesInEncoder: Int { inEncoder.count }

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
        let slot = index + slotOffset
        let requested = keyframeRequests.contains { $0 <= index }
        try video.send(frame, index: slot, keyframe: keyframeAtNextFrame || requested)
        keyframeAtNextFrame = false
        if requested { keyframeRequests.removeAll { $0 <= index } }
        lastSentSlot = slot
        inEncoder.append(slot)
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
        try give(buffer, track: track)
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

    /// Tells the sinks that no more packets come, in the order they were added (a recording's
    /// file first: a live stream still sending what it queued holds up nothing recorded).
    ///
    /// - Throws: the first error of a required sink, once every sink has been finished.
    func finishSinks() throws {
        phase = .finished
        var failure: (any Error)?
        for attached in sinks {
            do {
                try attached.sink.finish()
            } catch {
                if attached.policy == .required, failure == nil { failure = error; failedSink = failedSink ?? attached.sink }
                if attached.policy == .optional { onSinkDropped?(attached.sink, error) }
            }
        }
        sinks = []
        if let failure { throw failure }
    }

    /// Stops without draining the encoders: the sinks keep what they took and are abandoned
    /// (``PacketSink/abandon()``: a file is left as it is on the disk).
    public func abandon() {
        guard phase != .finished else { return }
        phase = .finished
        abandonVideoFlush()
        for attached in sinks { attached.sink.abandon() }
        sinks = []
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
        for packet in flushedVideo + heldVideo { try? writeVideo(packet) }
        flushedVideo = []
        heldVideo = []
    }

    /// Writes one video packet to every sink: on the grid's time (the slots pauses' padding
    /// took left out), unless it is padding, which no sink sees.
    private func writeVideo(_ packet: EncodedPacket) throws {
        let before = paddingSlots.reduce(Int64(0)) { $0 + ($1.upperBound < packet.pts ? Int64($1.count) : 0) }
        guard !paddingSlots.contains(where: { $0.contains(packet.pts) }) else { return }
        try deliver(completing(guarded(packet.retimed(ticksEarlier: before)), encoderSlot: packet.pts))
    }

    /// `packet` as the sinks take it, decoding later than the one before (see below); the
    /// first packet's header options are kept.
    private func guarded(_ packet: EncodedPacket) -> EncodedPacket {
        if !sawFirstVideoPacket, trackLead > .zero {
            // The lead counted on the encoder decoding its B-frame delay early; one that makes
            // no B-frames although its preset would (x264 with a keyframe every frame) decodes
            // its first packet when it shows it, and the shift makes up the whole lead (else the
            // first picture is cut off with the lead, and every other shown a frame early).
            videoDTSShift = max(0, leadFrames - (packet.pts - packet.dts))
        }
        var packet = packet.decodedEarlier(by: videoDTSShift)
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

    /// `packet` marked with whether it completes its group: no frame shown before it is still
    /// inside the encoder (a file under a size limit writes, or refuses, such groups whole).
    /// `encoderSlot` is the slot the encoder gave it (its time before padding was taken out).
    private func completing(_ packet: EncodedPacket, encoderSlot: Int64) -> EncodedPacket {
        if let i = inEncoder.firstIndex(of: encoderSlot) { inEncoder.remove(at: i) }
        highestOut = max(highestOut, encoderSlot)
        return packet.completingGroup(inEncoder.first.map { $0 > highestOut } ?? true)
    }

    func drainAudio(_ track: Int) throws {
        while case .packet(let packet) = try audio[track].receive() {
            // A carried-on encoder's priming overlaps the finished one's last packet: clip files
            // take it (each clip's sound is whole), one continuous track does not.
            if let end = clipAudio[track].overlapEnd {
                if packet.pts < end {
                    try deliver(packet, to: { $0 is any ClipAudioSink })
                    continue
                }
                clipAudio[track].overlapEnd = nil
            }
            try deliver(packet)
        }
    }

    /// Hands `packet` to every open sink, in order, and acts on what each answers by its
    /// policy: a required sink's failure is thrown once every sink has had the packet (so that
    /// a replay buffer still takes what the file could not); a required sink full marks the
    /// encoder ``hasFullSink``; an optional sink that failed or went is finished and dropped.
    func deliver(_ packet: EncodedPacket, to taking: (any PacketSink) -> Bool = { _ in true }) throws {
        var failure: (any Error)?
        var dropped: [(index: Int, error: (any Error)?)] = []
        for i in sinks.indices where sinks[i].open && taking(sinks[i].sink) {
            let flow: SinkFlow
            do {
                flow = try sinks[i].sink.write(packet)
            } catch {
                if sinks[i].policy == .required {
                    if failure == nil { failure = error; failedSink = failedSink ?? sinks[i].sink }
                } else {
                    dropped.append((i, error))
                }
                continue
            }
            switch (flow, sinks[i].policy) {
            case (.ok, _):
                break
            case (.full, .required):
                sinks[i].open = false
                hasFullSink = true
            case (.gone, .required):
                sinks[i].open = false
                if failure == nil { failure = ReelError(.encodingFailed, "a sink the recording depends on stopped taking packets") }
            case (.full, .optional), (.gone, .optional):
                dropped.append((i, nil))
            }
        }
        for (i, error) in dropped.reversed() {
            let sink = sinks.remove(at: i).sink
            try? sink.finish()
            onSinkDropped?(sink, error)
        }
        if let failure { throw failure }
    }
}
