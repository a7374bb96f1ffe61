internal import CFFmpeg
import ReelCore

/// One libavcodec audio encoder, with resampling (libswresample) from the source's format to
/// the encoder's and a FIFO that cuts the stream into the encoder's frame size.
///
/// Audio handed to ``send(_:)`` is taken as contiguous: presentation times of the encoded
/// frames count samples from zero. Gaps and overlaps are the caller's to resolve. Packets come
/// out as values through ``receive()``, which feeds the encoder from the FIFO as it needs;
/// ``finish()`` flushes.
final class AudioEncoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    let settings: AudioSettings
    let inputFormat: AudioFormat
    private let resampler: Resampler
    private var fifo: OpaquePointer?
    private var frame: UnsafeMutablePointer<AVFrame>
    private let packetOwner: Packet
    private var packet: UnsafeMutablePointer<AVPacket> { packetOwner.pointer }
    private var scratch: [UnsafeMutableRawPointer?]
    private var scratchCapacity = 0
    private var samplesSent: Int64 = 0
    private let frameSize: Int32
    /// The stream of the packets this encoder gives; set once the encoder is open.
    private var openedStream: EncodedStream?
    /// Where the encoder is in its life: taking audio, finishing (the FIFO's rest still to go
    /// in, then the flush), flushed.
    private enum Phase { case taking, finishing, flushed }
    private var phase = Phase.taking

    static func encoderName(for codec: AudioCodec) -> String {
        switch codec {
        case .aac: return "aac"
        case .opus: return "libopus"
        case .flac: return "flac"
        case .pcm: return "pcm_s16le"
        }
    }

    /// The sample format the encoder of `codec` takes: planar float for AAC, packed float for
    /// Opus, packed 16-bit integers for FLAC and PCM (a 16-bit file, like a CD).
    static func sampleFormat(for codec: AudioCodec) -> AVSampleFormat {
        switch codec {
        case .aac: return AV_SAMPLE_FMT_FLTP
        case .opus: return AV_SAMPLE_FMT_FLT
        case .flac, .pcm: return AV_SAMPLE_FMT_S16
        }
    }

    /// Opens an encoder for `settings` taking audio of `inputFormat`; its packets belong to
    /// stream number `streamIndex` of the owner, titled `title` (or, `continuing`, to that
    /// stream: one encoder carrying on another's track).
    init(settings: AudioSettings, inputFormat: AudioFormat, globalHeader: Bool, streamIndex: Int = 0, title: String? = nil,
         continuing stream: EncodedStream? = nil) throws {
        try settings.validate()
        let name = Self.encoderName(for: settings.codec)
        guard let codec = avcodec_find_encoder_by_name(name) else {
            throw ReelError(.unsupportedFormat, "this FFmpeg has no \(name) encoder", hint: LibraryHint.useAAC)
        }
        guard let context = avcodec_alloc_context3(codec), let frame = av_frame_alloc(), let packetOwner = try? Packet() else {
            throw ReelError(.encodingFailed, "cannot allocate the \(name) encoder")
        }
        self.context = context
        self.frame = frame
        self.packetOwner = packetOwner
        self.settings = settings
        self.inputFormat = inputFormat
        self.scratch = []

        let sampleFormat = Self.sampleFormat(for: settings.codec)
        context.pointee.sample_fmt = sampleFormat
        context.pointee.sample_rate = Int32(settings.sampleRate)
        av_channel_layout_default(&context.pointee.ch_layout, Int32(settings.channels))
        // A lossless encoder spends what the sound needs.
        if !settings.codec.isLossless { context.pointee.bit_rate = Int64(settings.bitRate) }
        context.pointee.time_base = AVRational(num: 1, den: Int32(settings.sampleRate))
        if globalHeader { context.pointee.flags |= Int32(AV_CODEC_FLAG_GLOBAL_HEADER) }
        try FFmpeg.check(avcodec_open2(context, codec, nil), "cannot open the \(name) encoder", code: .invalidConfiguration)
        EncoderCensus.noteOpened(video: false)
        openedStream = try stream ?? EncodedStream(encoder: context, index: streamIndex, title: title)
        frameSize = context.pointee.frame_size > 0 ? context.pointee.frame_size : 1024

        var inLayout = AVChannelLayout()
        av_channel_layout_default(&inLayout, Int32(inputFormat.channels))
        defer { av_channel_layout_uninit(&inLayout) }
        let inFormat: AVSampleFormat = inputFormat.sampleFormat == .f32 ? AV_SAMPLE_FMT_FLT : AV_SAMPLE_FMT_S16
        resampler = try Resampler(from: &inLayout, inFormat, Int32(inputFormat.sampleRate),
                                  to: &context.pointee.ch_layout, sampleFormat, Int32(settings.sampleRate), what: "from \(inputFormat)")
        guard let f = av_audio_fifo_alloc(sampleFormat, Int32(settings.channels), frameSize * 4) else {
            throw ReelError(.encodingFailed, "cannot allocate the audio FIFO")
        }
        fifo = f
        frame.pointee.nb_samples = frameSize
        frame.pointee.format = sampleFormat.rawValue
        frame.pointee.sample_rate = Int32(settings.sampleRate)
        try FFmpeg.check(av_channel_layout_copy(&frame.pointee.ch_layout, &context.pointee.ch_layout), "cannot copy the channel layout")
        try FFmpeg.check(av_frame_get_buffer(frame, 0), "cannot allocate the audio frame")
        scratch = Array(repeating: nil, count: settings.channels)
    }

    deinit {
        for pointer in scratch { av_free(pointer) }
        av_audio_fifo_free(fifo)
        var f: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&f)
        var c: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&c)
    }

    /// The encoder's time base (1 / sample rate).
    var timeBase: AVRational { context.pointee.time_base }

    /// Samples handed to the encoder so far, at the output rate.
    var encodedSampleCount: Int64 { max(0, samplesSent - leadingSilence) }

    /// Where this encoder's first real sample lies on the track's timeline, in samples: zero,
    /// or for an encoder that carries on a finished one (``successor(leadingSilence:)``), where
    /// that one's last ended.
    private(set) var origin: Int64 = 0

    /// The time just after the last sample handed to the encoder, on the track's timeline (in
    /// samples): where an encoder carrying this one on begins.
    var nextSampleTime: Int64 { origin + samplesSent - leadingSilence }

    /// A new encoder of the same settings and stream that carries this finished one's track on
    /// from where it ended: its packets belong to the same ``stream`` (whose header is the same),
    /// and begin with its own priming, `leadingSilence` samples of silence before it.
    func successor(leadingSilence: Int64) throws -> AudioEncoder {
        let next = try AudioEncoder(settings: settings, inputFormat: inputFormat,
                                    globalHeader: context.pointee.flags & Int32(AV_CODEC_FLAG_GLOBAL_HEADER) != 0,
                                    continuing: try stream)
        next.origin = nextSampleTime
        try next.setLeadingSilence(leadingSilence)
        return next
    }

    /// Samples the encoder adds before the first real one (AAC's 1024, Opus's 312).
    var priming: Int64 { Int64(context.pointee.initial_padding) }

    /// Silence put before the first real sample so that this track's first packet decodes at
    /// the same time as the video's (see ``AssetWriter``). Set before the first append.
    private(set) var leadingSilence: Int64 = 0

    /// Sets ``leadingSilence`` to `samples`.
    ///
    /// - Throws: `.alreadyRunning` once audio has gone into the encoder (its timeline is fixed).
    func setLeadingSilence(_ samples: Int64) throws {
        guard samplesSent == 0 && !leadingSilenceWritten else {
            throw ReelError(.alreadyRunning, "the leading silence of an audio track cannot change once audio has been appended")
        }
        leadingSilence = samples
    }
    private var leadingSilenceWritten = false

    /// Throws `.invalidConfiguration` unless `buffer` is of the encoder's input format: the
    /// resampler was set up for it, and other samples would be misread.
    func checkFits(_ buffer: AudioBuffer) throws {
        guard buffer.format != inputFormat else { return }
        throw ReelError(.invalidConfiguration, "audio of format \(buffer.format) does not fit a track that takes \(inputFormat)",
                        hint: "hand the writer audio in the format its audio track was configured with")
    }

    /// The stream of the packets this encoder gives.
    var stream: EncodedStream {
        get throws {
            guard let openedStream else { throw ReelError(.encodingFailed, "the audio encoder is not open") }
            return openedStream
        }
    }

    /// Converts and queues `buffer`; ``receive()`` encodes it a frame at a time.
    ///
    /// - Throws: `.invalidConfiguration` for audio that does not fit (see ``checkFits(_:)``),
    ///   `.notRunning` after ``finish()``.
    func send(_ buffer: AudioBuffer) throws {
        guard phase == .taking else { throw ReelError(.notRunning, "the audio encoder has been finished") }
        try checkFits(buffer)
        let inCount = Int32(buffer.frameCount)
        guard inCount > 0 else { return }
        try writeLeadingSilence()
        try convert(count: inCount) { out, capacity in
            buffer.withUnsafeBytes { raw in
                var input: UnsafePointer<UInt8>? = raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
                return resampler.convert(&input, count: inCount, into: out, capacity: capacity)
            }
        }
    }

    /// Tells the encoder that no more audio comes: the resampler's rest goes into the FIFO, and
    /// ``receive()`` gives everything (the last frame may be short), then `.endOfStream`.
    func finish() throws {
        guard phase == .taking else { return }
        try writeLeadingSilence()
        try convert(count: 0) { out, capacity in resampler.convert(nil, count: 0, into: out, capacity: capacity) }
        phase = .finishing
    }

    /// The next packet, or `.needsInput` (less than a frame queued) or `.endOfStream`
    /// (finished and empty). Feeds the encoder from the FIFO as it asks.
    func receive() throws -> EncoderOutput {
        while true {
            let r = avcodec_receive_packet(context, packet)
            if r == FFmpeg.eof { return .endOfStream }
            if r != FFmpeg.eagain {
                try FFmpeg.check(r, "the audio encoder failed")
                return .packet(try EncodedPacket(taking: packet, stream: stream))
            }
            let queued = av_audio_fifo_size(fifo)
            if queued >= frameSize || (phase == .finishing && queued > 0) {
                try sendFrameFromFIFO()
            } else if phase == .finishing {
                try FFmpeg.check(avcodec_send_frame(context, nil), "the audio encoder cannot be flushed")
                phase = .flushed
            } else {
                return .needsInput
            }
        }
    }

    /// Hands the encoder the next frame (or the short last one) from the FIFO.
    private func sendFrameFromFIFO() throws {
        try FFmpeg.check(av_frame_make_writable(frame), "cannot reuse the audio frame")
        let n = min(frameSize, av_audio_fifo_size(fifo))
        let read = withUnsafeMutablePointer(to: &frame.pointee.data) { data in
            data.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 8) { av_audio_fifo_read(fifo, $0, n) }
        }
        frame.pointee.nb_samples = read
        frame.pointee.pts = origin + samplesSent - leadingSilence
        samplesSent += Int64(read)
        defer { frame.pointee.nb_samples = frameSize }
        try FFmpeg.check(avcodec_send_frame(context, frame), "the audio encoder refused a frame")
    }

    private func convert(count: Int32, _ body: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, Int32) -> Int32) throws {
        let capacity = resampler.outputCapacity(forInput: count) + 32
        if capacity > scratchCapacity {
            // Planar formats take one plane per channel; packed ones hold every channel in the first.
            let planar = av_sample_fmt_is_planar(context.pointee.sample_fmt) != 0
            let bytes = Int(capacity) * Int(av_get_bytes_per_sample(context.pointee.sample_fmt)) * (planar ? 1 : settings.channels)
            for i in scratch.indices {
                av_free(scratch[i])
                scratch[i] = av_malloc(bytes)
            }
            scratchCapacity = Int(capacity)
        }
        let converted: Int32 = scratch.withUnsafeMutableBufferPointer { planes in
            planes.baseAddress!.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: planes.count) { out in
                // Interleaved output (Opus) uses only the first pointer.
                body(out, capacity)
            }
        }
        try FFmpeg.check(converted, "audio conversion failed")
        if converted > 0 {
            let written: Int32 = scratch.withUnsafeMutableBufferPointer { planes in
                av_audio_fifo_write(fifo, planes.baseAddress, converted)
            }
            guard written == converted else { throw ReelError(.encodingFailed, "the audio FIFO is full") }
        }
    }

    private func writeLeadingSilence() throws {
        guard !leadingSilenceWritten else { return }
        leadingSilenceWritten = true
        guard leadingSilence > 0 else { return }
        // Zero bytes are silence for float and integer samples, planar or packed.
        let count = Int32(leadingSilence)
        let planar = av_sample_fmt_is_planar(context.pointee.sample_fmt) != 0
        let planes = planar ? settings.channels : 1
        let planeBytes = Int(count) * Int(av_get_bytes_per_sample(context.pointee.sample_fmt)) * (planar ? 1 : settings.channels)
        let zeros = UnsafeMutableRawPointer.allocate(byteCount: planeBytes, alignment: 64)
        defer { zeros.deallocate() }
        zeros.initializeMemory(as: UInt8.self, repeating: 0, count: planeBytes)
        var pointers = [UnsafeMutableRawPointer?](repeating: zeros, count: planes)
        let written = av_audio_fifo_write(fifo, &pointers, count)
        guard written == count else { throw ReelError(.encodingFailed, "the audio FIFO is full") }
    }
}
