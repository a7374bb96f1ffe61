import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

/// One libavformat output: an `AVFormatContext` and its `AVIOContext`, and the one path by
/// which Reel writes packets into a file.
///
/// Recording (``AssetWriter``), remuxing and finalising (``Remuxer``), joining clips
/// (``CopyingJoiner``, and ``ReencodingJoiner`` through its writer) and saving a replay
/// (``ReplayBuffer``) all add their streams, write their header, their packets and their
/// trailer here. As a ``PacketSink`` it takes ``EncodedPacket`` values; packets read from a
/// file go through ``write(demuxed:stream:)``; both end in the same interleaving write.
final class Muxer: PacketSink {
    let context: UnsafeMutablePointer<AVFormatContext>
    let url: URL
    let container: Container
    /// What messages call the output: the file's name, or a network address without its key.
    let name: String
    /// The gate a network output's blocking writes ask (see ``InterruptGate``); retained so the
    /// pointer libavformat holds stays valid while the context lives.
    private let gate: InterruptGate?
    private var codecTimeBases: [AVRational] = []
    /// The earliest decoding time of the first packets of all streams, as the encoders gave
    /// it (negative for B-frame delay and audio priming). A fragmented MP4 cannot carry the edit
    /// list that hides those, so FFmpeg moves the whole file so that this time becomes zero;
    /// finalising moves it back.
    private(set) var earliestDecodeTime: MediaTime?
    /// The decoding time of each stream's first packet (by stream index), as the encoders gave
    /// it: a track that began later than the earliest has its first sample stretched back to
    /// the fragmented file's zero, and finalising gives it its start back (see ``lateStarts``).
    private var firstDecodeTimes: [Int: MediaTime] = [:]
    /// Whether the output is a fragmented MP4/MOV, and where each of its streams' next packet
    /// decodes if it follows the last without a gap (in the stream's time base, by stream
    /// index): see ``markGaps(before:stream:)``.
    private var writesFragments = false
    private var nextDecodeTimes: [Int: Int64] = [:]
    private var headerWritten = false
    private var closed = false
    /// The lock that marks the file as being written (see ``RecordingLock``), until it is closed
    /// or an owner that finalises the file afterwards takes it over (``takeLock()``).
    private var lock: RecordingLock?
    /// The output stream of each ``EncodedStream`` added as a sink.
    private var streamIndices: [ObjectIdentifier: Int] = [:]
    /// The packet handed to libavformat, which takes over the data reference it holds.
    private let scratch: Packet
    /// For a file written off the muxing thread: the writer its bytes go to (see ``WriteQueue``).
    private var queuedOutput: QueuedOutput?
    /// What the context's callbacks use (its `opaque`; see ``HLSPublisher``): alive as long
    /// as the context, which calls them until it is freed.
    var callbackOwner: AnyObject?

    /// The libavformat muxer name for a container.
    static func formatName(_ container: Container) -> String {
        switch container {
        case .mp4: return "mp4"
        case .mov: return "mov"
        case .mkv: return "matroska"
        case .m4a: return "ipod"
        case .opus, .ogg: return "ogg"
        case .flac: return "flac"
        case .wav: return "wav"
        case .webm: return "webm"
        case .gif: return "gif"
        }
    }

    /// Opens `url` for writing. The file must not exist unless `overwrite` is set; the check
    /// and the creation are one atomic step, so nobody's file is ever truncated by mistake, and
    /// a file that another program is writing is never replaced. The file is locked as being
    /// written (see ``RecordingLock``) until it is closed.
    ///
    /// `truncating` false opens the file just created without `O_TRUNC`: for a truncated file
    /// ext4 writes all the data out when it is closed (its guard for files replaced in place),
    /// which for a file as big as a merge adds a tenth of a second per 500 MB for nothing.
    ///
    /// With `writeQueue` the file's bytes are written by a thread of their own (see
    /// ``FileWriteQueue``): the muxing thread waits only when the queue is full.
    init(url: URL, container: Container, overwrite: Bool, truncating: Bool = true, writeQueue: WriteQueue? = nil) throws {
        let lock = try RecordingLock.createFile(at: url, overwrite: overwrite)
        guard let scratch = try? Packet() else {
            lock.release()
            throw ReelError(.encodingFailed, "cannot allocate a packet", hint: "the system is out of memory")
        }
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        let allocated = avformat_alloc_output_context2(&ctx, nil, Self.formatName(container), url.path)
        guard allocated >= 0, let ctx else {
            lock.release()
            throw FFmpeg.error(min(allocated, -1), "cannot set up a \(container.rawValue) file", code: .unsupportedFormat)
        }
        self.context = ctx
        self.url = url
        self.container = container
        self.name = url.lastPathComponent
        self.gate = nil
        self.lock = lock
        self.scratch = scratch
        if let writeQueue {
            // Opened as libavformat's file protocol opens it, then written through the queue.
            let fd = open(url.path, O_WRONLY | O_CLOEXEC | (truncating ? O_TRUNC : 0))
            if fd < 0 {
                throw FFmpeg.error(-errno, "cannot open \(url.path) for writing", code: .ioFailure)
            }
            let output = QueuedOutput(queue: FileWriteQueue(output: writeQueue.output(SystemFileOutput(fd: fd)), maxBytes: writeQueue.maxBytes,
                                                                spareRoom: writeQueue.spareRoom, roomAhead: writeQueue.roomAhead))
            guard let pb = output.makeContext() else {
                output.queue.close()
                throw ReelError(.encodingFailed, "cannot allocate the output of \(url.path)", hint: "the system is out of memory")
            }
            ctx.pointee.pb = pb
            queuedOutput = output
            return
        }
        var options: OpaquePointer? = nil
        defer { av_dict_free(&options) }
        if !truncating { av_dict_set(&options, "truncate", "0", 0) }
        let opened = avio_open2(&ctx.pointee.pb, url.path, AVIO_FLAG_WRITE, nil, &options)
        if opened < 0 {
            throw FFmpeg.error(opened, "cannot open \(url.path) for writing", code: .ioFailure)
        }
    }

    /// Closes the output: a queued one after writing what waits (see ``FileWriteQueue/close()``),
    /// returning the error number of a write that failed.
    @discardableResult
    private func closeOutput() -> Syscall.Errno? {
        guard let queuedOutput else {
            closedBytesOnDisk = bytesWritten
            avio_closep(&context.pointee.pb)
            return nil
        }
        if let pb = context.pointee.pb { avio_flush(pb) }
        let failure = queuedOutput.queue.close()
        closedBytesOnDisk = queuedOutput.queue.writtenBytes
        QueuedOutput.free(&context.pointee.pb)
        self.queuedOutput = nil
        return failure
    }

    /// Connects to the network address `url` as a live output in libavformat's `format`
    /// (`flv`, `mpegts`; or `hls`, which writes its own playlist and segments): no lock;
    /// blocking calls ask `gate`, so a stop or a deadline ends them. `name` is the address as
    /// messages may show it (without a stream key). `options` go to the connection, or for a
    /// format that opens its own files (HLS) to ``writeHeader(options:)``.
    init(network url: URL, address: String, format: String, name: String, gate: InterruptGate, options: [String: String] = [:]) throws {
        guard let scratch = try? Packet() else {
            throw ReelError(.encodingFailed, "cannot allocate a packet", hint: "the system is out of memory")
        }
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        let allocated = avformat_alloc_output_context2(&ctx, nil, format, address)
        guard allocated >= 0, let ctx else {
            throw FFmpeg.error(min(allocated, -1), "cannot set up a \(format) stream to \(name)", code: .unsupportedFormat)
        }
        self.context = ctx
        self.url = url
        self.container = .mkv  // no MP4 sample entries: these formats pick their own tags
        self.name = name
        self.gate = gate
        self.lock = nil
        self.scratch = scratch
        ctx.pointee.interrupt_callback = gate.callback
        // Each connection's timestamps start at zero, whatever the recording's time is.
        ctx.pointee.avoid_negative_ts = AVFMT_AVOID_NEG_TS_MAKE_ZERO
        if Int32(ctx.pointee.oformat.pointee.flags) & AVFMT_NOFILE != 0 { return }
        var dictionary: OpaquePointer? = nil
        defer { av_dict_free(&dictionary) }
        for (key, value) in options { av_dict_set(&dictionary, key, value, 0) }
        var callback = gate.callback
        let opened = avio_open2(&ctx.pointee.pb, address, AVIO_FLAG_WRITE, &callback, &dictionary)
        if opened < 0 {
            closed = true
            throw FFmpeg.error(opened, "cannot connect to \(name)", code: .ioFailure)
        }
    }

    deinit {
        if !closed { closeOutput() }
        lock?.release()
        avformat_free_context(context)
    }

    /// Hands the lock on the file over to the caller, who finalises the file after it is closed
    /// and releases the lock when the file is complete.
    func takeLock() -> RecordingLock? {
        defer { lock = nil }
        return lock
    }

    /// Adds a stream for the packets of `stream` (``PacketSink``).
    func add(_ stream: EncodedStream) throws {
        _ = try addStream(stream)
    }

    /// Adds a stream for the packets of `stream`; returns its index in the file.
    @discardableResult
    func addStream(_ stream: EncodedStream) throws -> Int {
        guard let output = avformat_new_stream(context, nil) else {
            throw ReelError(.encodingFailed, "cannot add a stream to \(name)")
        }
        try FFmpeg.check(avcodec_parameters_copy(output.pointee.codecpar, stream.parameters.pointer), "cannot copy codec parameters")
        output.pointee.codecpar.pointee.codec_tag = Self.codecTag(for: stream.parameters.pointer.pointee.codec_id, in: container)
        output.pointee.time_base = stream.avTimeBase
        if let rate = stream.frameRate { output.pointee.avg_frame_rate = AVRational(num: rate.frames, den: rate.per) }
        if let title = stream.title {
            av_dict_set(&output.pointee.metadata, "title", title, 0)
            av_dict_set(&output.pointee.metadata, "handler_name", title, 0)  // what MP4/MOV keep
        }
        codecTimeBases.append(stream.avTimeBase)
        let index = Int(output.pointee.index)
        streamIndices[ObjectIdentifier(stream)] = index
        return index
    }

    /// Adds a stream with the codec parameters, time base, frame rate, disposition and metadata
    /// of `input` (a stream of the file `source`), for copying its packets; returns it.
    func addStream(copying input: UnsafeMutablePointer<AVStream>, of source: URL) throws -> UnsafeMutablePointer<AVStream> {
        let par = input.pointee.codecpar.pointee
        // An MP4/MOV Opus track needs the 19-byte OpusHead. libavformat 5.1 finds out only when
        // writing the index, and leaks 1.3 KB on the way out: refuse such a stream up front.
        if par.codec_id == AV_CODEC_ID_OPUS && container.isISOBaseMedia && par.extradata_size < 19 {
            throw ReelError(.invalidMedia, "the Opus audio of \(source.path) has a damaged header (\(par.extradata_size) bytes, at least 19 expected)",
                            hint: "check that the file is complete, or write an .mkv")
        }
        guard let output = avformat_new_stream(context, nil) else {
            throw ReelError(.encodingFailed, "cannot add a stream to \(name)")
        }
        try FFmpeg.check(avcodec_parameters_copy(output.pointee.codecpar, input.pointee.codecpar), "cannot copy stream parameters")
        output.pointee.codecpar.pointee.codec_tag = Self.codecTag(for: par.codec_id, in: container)
        output.pointee.time_base = input.pointee.time_base
        output.pointee.avg_frame_rate = input.pointee.avg_frame_rate
        output.pointee.disposition = input.pointee.disposition
        av_dict_copy(&output.pointee.metadata, input.pointee.metadata, 0)
        codecTimeBases.append(input.pointee.time_base)
        return output
    }

    /// Copies the file-level metadata of `input` (a file being copied).
    func copyMetadata(of input: InputFile) {
        av_dict_copy(&context.pointee.metadata, input.context.pointee.metadata, 0)
    }

    /// The time base of output stream `index` (valid once the header is written: the container
    /// may choose its own).
    func timeBase(ofStream index: Int) -> AVRational { context.pointee.streams[index]!.pointee.time_base }

    /// The codec parameters of output stream `index`.
    func codecParameters(ofStream index: Int) -> AVCodecParameters { context.pointee.streams[index]!.pointee.codecpar.pointee }

    /// Whether output stream `index` is video.
    func isVideo(stream index: Int) -> Bool {
        context.pointee.streams[index]!.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO
    }

    /// Where the space reserved for the final index lies (a `free` box right after the
    /// fragmented file's empty index), if any.
    private(set) var indexReservation: (offset: Int64, size: Int)?

    /// The size of the header (`ftyp` and the empty index of a fragmented file) once written.
    private(set) var headerSize: Int64 = 0

    /// Writes the header. `fragmentInterval` turns on fragmented MP4/MOV output; `reserveIndex`
    /// bytes are then kept, as a `free` box right after the empty index, for the final index
    /// that ``MP4Finaliser`` writes there at a clean stop.
    func writeHeader(fragmentInterval: MediaTime?, reserveIndex: (_ headerSize: Int) -> Int = { _ in 0 }) throws {
        var options: OpaquePointer? = nil
        defer { av_dict_free(&options) }
        if let fragmentInterval, container.isISOBaseMedia {
            av_dict_set(&options, "movflags", "frag_keyframe+empty_moov+default_base_moof", 0)
            av_dict_set(&options, "frag_duration", String(max(1, fragmentInterval.convertedValue(to: 1_000_000))), 0)
            writesFragments = true
        }
        if let fragmentInterval, container == .mkv || container == .webm {
            // A Matroska cluster is written whole when it closes, and libavformat closes one at
            // a keyframe (every two seconds or more) or after five seconds: a kill lost up to
            // that. Clusters of one fragment interval lose at a kill what MP4's fragments do.
            av_dict_set(&options, "cluster_time_limit", String(max(1, fragmentInterval.convertedValue(to: 1000))), 0)
        }
        if let fragmentInterval, container == .ogg || container == .opus {
            // An Ogg page is what a cut-off file keeps whole, and libavformat holds a stream's
            // last page back (to mark the end of the stream on it): pages of half a fragment
            // lose at a kill about what MP4's fragments do.
            av_dict_set(&options, "page_duration", String(max(1, fragmentInterval.convertedValue(to: 1_000_000) / 2)), 0)
        }
        context.pointee.flags |= AVFMT_FLAG_FLUSH_PACKETS
        av_dict_set(&context.pointee.metadata, "encoder", "Reel", 0)
        try FFmpeg.check(avformat_write_header(context, &options), "cannot write the header of \(name)",
                         code: .ioFailure)
        headerWritten = true
        guard let pb = context.pointee.pb else { return }
        headerSize = avio_tell(pb)
        let reserve = fragmentInterval != nil && container.isISOBaseMedia && headerSize > 0 ? reserveIndex(Int(headerSize)) : 0
        if reserve >= 8 && reserve <= Int(UInt32.max) {
            avio_wb32(pb, UInt32(reserve))
            avio_wb32(pb, 0x6672_6565)  // "free"
            let zeros = [UInt8](repeating: 0, count: 64 * 1024)
            var left = reserve - 8
            while left > 0 {
                let n = min(left, zeros.count)
                zeros.withUnsafeBufferPointer { avio_write(pb, $0.baseAddress, Int32(n)) }
                left -= n
            }
            avio_flush(pb)
            if pb.pointee.error < 0 {
                throw FFmpeg.error(pb.pointee.error, "cannot write to \(name)", code: .ioFailure)
            }
            indexReservation = (headerSize, reserve)
        }
    }

    /// Writes the header of a live output with the muxer's `options` (HLS's segment length,
    /// playlist window).
    func writeHeader(options: [String: String]) throws {
        var dictionary: OpaquePointer? = nil
        defer { av_dict_free(&dictionary) }
        for (key, value) in options { av_dict_set(&dictionary, key, value, 0) }
        context.pointee.flags |= AVFMT_FLAG_FLUSH_PACKETS
        try FFmpeg.check(avformat_write_header(context, &dictionary), "cannot start \(name)", code: .ioFailure)
        headerWritten = true
    }

    /// Writes the header of a file of copied or saved streams; with `fastStart` an MP4/MOV gets
    /// its index at the front when it is finished: in `reservedIndexSize` bytes left for it
    /// after the header if given (one pass; the trailer fails with `EINVAL` if it does not fit),
    /// else by moving the media data behind it (a second pass over the file).
    func writeHeader(fastStart: Bool, reservedIndexSize: Int? = nil) throws {
        var options: OpaquePointer? = nil
        defer { av_dict_free(&options) }
        if fastStart && container.isISOBaseMedia {
            if let reservedIndexSize {
                av_dict_set(&options, "moov_size", String(reservedIndexSize), 0)
            } else {
                av_dict_set(&options, "movflags", "faststart", 0)
            }
        }
        try FFmpeg.check(avformat_write_header(context, &options), "cannot write \(name)", code: .ioFailure)
        headerWritten = true
    }

    /// Writes `packet` (``PacketSink``), into the stream added for its ``EncodedStream``.
    @discardableResult
    func write(_ packet: EncodedPacket) throws -> SinkFlow {
        guard let index = streamIndices[ObjectIdentifier(packet.stream)] else {
            throw ReelError(.invalidConfiguration, "a packet of \(packet.stream) reached \(name), which has no such stream")
        }
        try write(packet, stream: index)
        return .ok
    }

    /// Writes `packet` into stream `index`, converting its times from its stream's time base.
    func write(_ packet: EncodedPacket, stream index: Int) throws {
        try packet.reference(into: scratch.pointer)
        defer { scratch.unref() }
        let p = scratch.pointer
        p.pointee.stream_index = Int32(index)
        if firstPacketSeen.count <= index || !firstPacketSeen[index] {
            noteFirstPacket(p, stream: index)
        }
        av_packet_rescale_ts(p, codecTimeBases[index], context.pointee.streams[index]!.pointee.time_base)
        if writesFragments { markGaps(before: p, stream: index) }
        try interleave(p)
        // A keyframe ends a fragment: what it ended goes on its way to the disk now, not when
        // the buffer fills (which pictures seconds apart, or a still screen, take long to do:
        // a crash meanwhile would lose them).
        if packet.isKeyframe, let pb = context.pointee.pb { avio_flush(pb) }
    }

    /// libavformat's fragmented MP4 times a track's first sample in a fragment by where its
    /// previous sample ended (that packet's duration), not by the packet's own time. A track
    /// that came back after a gap while another went on (pictures lost while reel was stopped
    /// or starved, the sound going on and ending fragments meanwhile) had its first picture
    /// after the gap timed at the gap's start and shown a gap later (a composition offset as
    /// long as the gap): the finalised file's presentation ran that much past its media. A
    /// packet that does not follow its stream's last marks the next fragment discontinuous
    /// (`frag_discont`): its tracks begin at their packets' own times, and the sample before
    /// the gap lasts up to the one after it (see `Movie`), as within a fragment.
    private func markGaps(before packet: UnsafeMutablePointer<AVPacket>, stream index: Int) {
        let dts = packet.pointee.dts != FFmpeg.noPTS ? packet.pointee.dts : packet.pointee.pts
        guard dts != FFmpeg.noPTS else { return }
        if let expected = nextDecodeTimes[index], expected != dts {
            av_opt_set(context.pointee.priv_data, "movflags", "+frag_discont", 0)
        }
        nextDecodeTimes[index] = dts + packet.pointee.duration
    }

    /// Writes a packet read from a file into stream `index`; its times are in that stream's
    /// time base (``timeBase(ofStream:)``) already. libavformat takes the packet's data over.
    func write(demuxed packet: UnsafeMutablePointer<AVPacket>, stream index: Int) throws {
        packet.pointee.stream_index = Int32(index)
        packet.pointee.pos = -1
        try interleave(packet)
    }

    /// The one call that hands packets to libavformat.
    private func interleave(_ packet: UnsafeMutablePointer<AVPacket>) throws {
        // A write that failed on the writer thread fails the next packet, as it would have
        // failed its own write.
        if let failure = queuedOutput?.queue.error {
            throw FFmpeg.error(-failure.rawValue, "cannot write to \(name)", code: .ioFailure)
        }
        payloadBytes += Int64(packet.pointee.size)
        packetCount += 1
        try FFmpeg.check(av_interleaved_write_frame(context, packet), "cannot write to \(name)", code: .ioFailure)
    }

    /// Writes out what waits in libavformat (packets held to interleave the streams, the
    /// fragment, cluster or page being filled) and hands it to the file's writer: a recording
    /// that pauses keeps on the disk all it took, whatever comes to it during the pause.
    func flush() throws {
        guard headerWritten, !closed else { return }
        try FFmpeg.check(av_interleaved_write_frame(context, nil), "cannot write to \(name)", code: .ioFailure)
        // Formats that can (MP4/MOV: a fragment; MKV: a cluster; Ogg: a page) end what they
        // were filling; the others have nothing held.
        if context.pointee.oformat.pointee.flags & AVFMT_ALLOW_FLUSH != 0 {
            try FFmpeg.check(av_write_frame(context, nil), "cannot write to \(name)", code: .ioFailure)
        }
        if let pb = context.pointee.pb { avio_flush(pb) }
    }

    /// The bytes of the packets handed over so far (encoded media, without the container's
    /// boxes; some may still wait in libavformat's buffers).
    private(set) var payloadBytes: Int64 = 0
    /// The packets handed over so far.
    private(set) var packetCount: Int64 = 0

    private var firstPacketSeen: [Bool] = []

    private func noteFirstPacket(_ packet: UnsafeMutablePointer<AVPacket>, stream index: Int) {
        while firstPacketSeen.count < codecTimeBases.count { firstPacketSeen.append(false) }
        guard !firstPacketSeen[index] else { return }
        firstPacketSeen[index] = true
        let tb = codecTimeBases[index]
        let dts = packet.pointee.dts != FFmpeg.noPTS ? packet.pointee.dts : packet.pointee.pts
        guard dts != FFmpeg.noPTS else { return }
        let time = MediaTime(value: dts * Int64(tb.num), timescale: tb.den)
        earliestDecodeTime = earliestDecodeTime.map { min($0, time) } ?? time
        firstDecodeTimes[index] = time
    }

    /// How much later than the earliest each stream's first packet decodes, by stream index
    /// (zero for the earliest): what FFmpeg's fragmented MP4 stretched each track's first
    /// sample by.
    var lateStarts: [Int: MediaTime] {
        guard let earliest = earliestDecodeTime else { return [:] }
        return firstDecodeTimes.mapValues { $0 - earliest }
    }

    /// Bytes written to the file so far (for a queued file, some may still wait to be written:
    /// see ``bytesOnDisk``).
    var bytesWritten: Int64 {
        guard let pb = context.pointee.pb else { return 0 }
        return avio_tell(pb)
    }

    /// Bytes the file holds so far: handed to the system, so that they outlive this process.
    /// ``bytesWritten`` for a file written on the muxing thread (what libavformat has flushed).
    var bytesOnDisk: Int64 {
        if let closedBytesOnDisk { return closedBytesOnDisk }
        if let queuedOutput { return queuedOutput.queue.writtenBytes }
        return bytesWritten
    }
    /// What ``bytesOnDisk`` was when the file was closed.
    private var closedBytesOnDisk: Int64?

    /// The file's write queue, if it is written off the muxing thread.
    var writeQueue: FileWriteQueue? { queuedOutput?.queue }

    /// Writes the trailer and closes the file.
    func finish() throws {
        guard !closed else { return }
        var outputClosed = false
        defer {
            closed = true
            if !outputClosed { closeOutput() }
            lock?.release()
        }
        if headerWritten {
            try FFmpeg.check(av_write_trailer(context), "cannot finish \(name)", code: .ioFailure)
        }
        if let pb = context.pointee.pb { avio_flush(pb) }
        if let pb = context.pointee.pb, pb.pointee.error < 0 {
            throw FFmpeg.error(pb.pointee.error, "cannot write to \(name)", code: .ioFailure)
        }
        // A queued file is complete once every byte waiting has been written.
        outputClosed = true
        if let failure = closeOutput() {
            throw FFmpeg.error(-failure.rawValue, "cannot write to \(name)", code: .ioFailure)
        }
    }

    /// Closes the file without a trailer: what is on disk stays as it is.
    func abandon() {
        guard !closed else { return }
        closed = true
        if let pb = context.pointee.pb { avio_flush(pb) }
        // A queued file keeps what was handed to its writer (the complete fragments before).
        closeOutput()
        lock?.release()
    }
}
