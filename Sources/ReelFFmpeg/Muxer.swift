import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

/// One libavformat output: an `AVFormatContext` and its `AVIOContext`.
final class Muxer {
    let context: UnsafeMutablePointer<AVFormatContext>
    let url: URL
    let container: Container
    private var codecTimeBases: [AVRational] = []
    /// The earliest decoding time of the first packets of all streams, as the encoders gave
    /// it (negative for B-frame delay and audio priming). A fragmented MP4 cannot carry the edit
    /// list that hides those, so FFmpeg moves the whole file so that this time becomes zero;
    /// finalising moves it back.
    private(set) var earliestDecodeTime: MediaTime?
    private var headerWritten = false
    private var closed = false
    /// The lock that marks the file as being written (see ``RecordingLock``), until it is closed
    /// or an owner that finalises the file afterwards takes it over (``takeLock()``).
    private var lock: RecordingLock?

    /// The libavformat muxer name for a container.
    static func formatName(_ container: Container) -> String {
        switch container {
        case .mp4: return "mp4"
        case .mov: return "mov"
        case .mkv: return "matroska"
        }
    }

    /// Opens `url` for writing. The file must not exist unless `overwrite` is set; the check
    /// and the creation are one atomic step, so nobody's file is ever truncated by mistake, and
    /// a file that another program is writing is never replaced. The file is locked as being
    /// written (see ``RecordingLock``) until it is closed.
    init(url: URL, container: Container, overwrite: Bool) throws {
        let lock = try RecordingLock.createFile(at: url, overwrite: overwrite)
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        let allocated = avformat_alloc_output_context2(&ctx, nil, Self.formatName(container), url.path)
        guard allocated >= 0, let ctx else {
            lock.release()
            throw FFmpeg.error(min(allocated, -1), "cannot set up a \(container.rawValue) file", code: .unsupportedFormat)
        }
        self.context = ctx
        self.url = url
        self.container = container
        self.lock = lock
        let opened = avio_open(&ctx.pointee.pb, url.path, AVIO_FLAG_WRITE)
        if opened < 0 {
            throw FFmpeg.error(opened, "cannot open \(url.path) for writing", code: .ioFailure)
        }
    }

    deinit {
        if !closed { avio_closep(&context.pointee.pb) }
        lock?.release()
        avformat_free_context(context)
    }

    /// Hands the lock on the file over to the caller, who finalises the file after it is closed
    /// and releases the lock when the file is complete.
    func takeLock() -> RecordingLock? {
        defer { lock = nil }
        return lock
    }

    /// Adds a stream with the parameters of an opened encoder; returns its index.
    func addStream(encoder: UnsafeMutablePointer<AVCodecContext>, title: String?) throws -> Int {
        guard let stream = avformat_new_stream(context, nil) else {
            throw ReelError(.encodingFailed, "cannot add a stream to \(url.lastPathComponent)")
        }
        try FFmpeg.check(avcodec_parameters_from_context(stream.pointee.codecpar, encoder), "cannot copy codec parameters")
        stream.pointee.codecpar.pointee.codec_tag = Self.codecTag(for: encoder.pointee.codec_id, in: container)
        stream.pointee.time_base = encoder.pointee.time_base
        if encoder.pointee.codec_type == AVMEDIA_TYPE_VIDEO {
            stream.pointee.avg_frame_rate = encoder.pointee.framerate
        }
        if let title {
            av_dict_set(&stream.pointee.metadata, "title", title, 0)
            av_dict_set(&stream.pointee.metadata, "handler_name", title, 0)  // what MP4/MOV keep
        }
        codecTimeBases.append(encoder.pointee.time_base)
        return Int(stream.pointee.index)
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
        if let fragmentInterval, container != .mkv {
            av_dict_set(&options, "movflags", "frag_keyframe+empty_moov+default_base_moof", 0)
            av_dict_set(&options, "frag_duration", String(max(1, fragmentInterval.convertedValue(to: 1_000_000))), 0)
        }
        context.pointee.flags |= AVFMT_FLAG_FLUSH_PACKETS
        av_dict_set(&context.pointee.metadata, "encoder", "Reel", 0)
        try FFmpeg.check(avformat_write_header(context, &options), "cannot write the header of \(url.lastPathComponent)",
                         code: .ioFailure)
        headerWritten = true
        guard let pb = context.pointee.pb else { return }
        headerSize = avio_tell(pb)
        let reserve = fragmentInterval != nil && container != .mkv && headerSize > 0 ? reserveIndex(Int(headerSize)) : 0
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
                throw FFmpeg.error(pb.pointee.error, "cannot write to \(url.lastPathComponent)", code: .ioFailure)
            }
            indexReservation = (headerSize, reserve)
        }
    }

    /// Writes an encoded packet of stream `index`, converting its times from the encoder's time base.
    /// `dtsShift` ticks of the encoder's time base are taken off the packet's decoding time.
    func write(_ packet: UnsafeMutablePointer<AVPacket>, stream index: Int, dtsShift: Int64 = 0) throws {
        let stream = context.pointee.streams[index]!
        if dtsShift != 0 && packet.pointee.dts != FFmpeg.noPTS { packet.pointee.dts -= dtsShift }
        packet.pointee.stream_index = Int32(index)
        if earliestDecodeTime == nil || firstPacketSeen.count <= index || !firstPacketSeen[index] {
            noteFirstPacket(packet, stream: index)
        }
        av_packet_rescale_ts(packet, codecTimeBases[index], stream.pointee.time_base)
        payloadBytes += Int64(packet.pointee.size)
        packetCount += 1
        try FFmpeg.check(av_interleaved_write_frame(context, packet), "cannot write to \(url.lastPathComponent)", code: .ioFailure)
    }

    /// The bytes of the packets handed over so far (encoded media, without the container's
    /// boxes; some may still wait in libavformat's buffers).
    private(set) var payloadBytes: Int64 = 0
    /// The packets handed over so far.
    private(set) var packetCount: Int64 = 0

    private var firstPacketSeen: [Bool] = []

    private func noteFirstPacket(_ packet: UnsafeMutablePointer<AVPacket>, stream index: Int) {
        if firstPacketSeen.count < codecTimeBases.count { firstPacketSeen = Array(repeating: false, count: codecTimeBases.count) }
        guard !firstPacketSeen[index] else { return }
        firstPacketSeen[index] = true
        let tb = codecTimeBases[index]
        let dts = packet.pointee.dts != FFmpeg.noPTS ? packet.pointee.dts : packet.pointee.pts
        guard dts != FFmpeg.noPTS else { return }
        let time = MediaTime(value: dts * Int64(tb.num), timescale: tb.den)
        earliestDecodeTime = earliestDecodeTime.map { min($0, time) } ?? time
    }

    /// Bytes written to the file so far.
    var bytesWritten: Int64 {
        guard let pb = context.pointee.pb else { return 0 }
        return avio_tell(pb)
    }

    /// Writes the trailer and closes the file.
    func finish() throws {
        guard !closed else { return }
        defer {
            closed = true
            avio_closep(&context.pointee.pb)
            lock?.release()
        }
        if headerWritten {
            try FFmpeg.check(av_write_trailer(context), "cannot finish \(url.lastPathComponent)", code: .ioFailure)
        }
        if let pb = context.pointee.pb, pb.pointee.error < 0 {
            throw FFmpeg.error(pb.pointee.error, "cannot write to \(url.lastPathComponent)", code: .ioFailure)
        }
    }

    /// Closes the file without a trailer: what is on disk stays as it is.
    func abandon() {
        guard !closed else { return }
        closed = true
        if let pb = context.pointee.pb { avio_flush(pb) }
        avio_closep(&context.pointee.pb)
        lock?.release()
    }
}
