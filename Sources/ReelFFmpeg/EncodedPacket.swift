internal import CFFmpeg
import ReelCore

/// One encoded packet as a value: its data, held by reference count (every copy of the value
/// and every sink that keeps it shares the one buffer the encoder filled), its times on the
/// stream's timeline, its keyframe flag and the stream it belongs to.
///
/// Immutable once made, so it crosses threads freely: an encoder hands it to a file muxer and
/// a replay buffer at once, and the buffer writes it out later from another thread.
public struct EncodedPacket: Sendable {
    /// The stream the packet belongs to.
    public let stream: EncodedStream
    /// Presentation and decoding times and duration, in ticks of the stream's time base.
    let pts: Int64
    let dts: Int64
    let durationTicks: Int64
    /// Whether the packet starts a group that decodes on its own.
    public let isKeyframe: Bool
    /// The bytes of encoded data.
    public let byteCount: Int
    /// Whether no frame shown before this one is still inside the encoder once it has come out
    /// (always true of audio): a video packet that completes its group. A file under a size
    /// limit writes or refuses such groups whole, so that it never misses a frame before its last.
    package let completesGroup: Bool
    /// The data (and side data). Never changed after the packet is made: writers take a new
    /// reference of their own (`av_packet_ref`), which shares the data.
    nonisolated(unsafe) let storage: Packet

    /// A packet holding what `source` holds, which it takes (moving the reference; `source` is
    /// left empty for reuse). Missing times are taken from each other.
    init(taking source: UnsafeMutablePointer<AVPacket>, stream: EncodedStream) throws {
        let packet = try Packet()
        av_packet_move_ref(packet.pointer, source)
        self.init(storage: packet, stream: stream)
    }

    /// A packet over `storage`, whose times are in `stream`'s time base.
    init(storage: Packet, stream: EncodedStream) {
        let p = storage.pointer.pointee
        let pts = p.pts != FFmpeg.noPTS ? p.pts : p.dts
        self.init(storage: storage, stream: stream, pts: pts, dts: p.dts != FFmpeg.noPTS ? p.dts : pts,
                  duration: max(0, p.duration), isKeyframe: p.flags & AV_PKT_FLAG_KEY != 0, completesGroup: true)
    }

    private init(storage: Packet, stream: EncodedStream, pts: Int64, dts: Int64, duration: Int64, isKeyframe: Bool,
                 completesGroup: Bool) {
        self.completesGroup = completesGroup
        self.storage = storage
        self.stream = stream
        self.pts = pts
        self.dts = dts
        self.durationTicks = duration
        self.isKeyframe = isKeyframe
        byteCount = storage.size
    }

    /// When the packet's frame is shown, on the stream's timeline.
    public var presentationTime: MediaTime { stream.time(ofTicks: pts) }
    /// When the packet is decoded (before its presentation time for frames that others refer to).
    public var decodeTime: MediaTime { stream.time(ofTicks: dts) }
    /// How long the packet's frame (or audio) lasts.
    public var duration: MediaTime { stream.time(ofTicks: durationTicks) }
    /// When the packet's frame (or audio) ends.
    public var endTime: MediaTime { stream.time(ofTicks: pts + durationTicks) }

    /// The same packet (the same data, shared) at times `offset` earlier.
    public func shifted(back offset: MediaTime) -> EncodedPacket {
        let ticks = stream.ticks(of: offset)
        return EncodedPacket(storage: storage, stream: stream, pts: pts &- ticks, dts: dts &- ticks, duration: durationTicks,
                             isKeyframe: isKeyframe, completesGroup: completesGroup)
    }

    /// The same packet `ticks` ticks earlier (its presentation and decoding times both).
    func retimed(ticksEarlier ticks: Int64) -> EncodedPacket {
        guard ticks != 0 else { return self }
        return EncodedPacket(storage: storage, stream: stream, pts: pts &- ticks, dts: dts &- ticks, duration: durationTicks,
                             isKeyframe: isKeyframe, completesGroup: completesGroup)
    }

    /// The same packet with its decoding time `ticks` ticks earlier (a writer's lead, see
    /// ``StreamEncoder``).
    func decodedEarlier(by ticks: Int64) -> EncodedPacket {
        guard ticks != 0 else { return self }
        return EncodedPacket(storage: storage, stream: stream, pts: pts, dts: dts &- ticks, duration: durationTicks, isKeyframe: isKeyframe,
                             completesGroup: completesGroup)
    }

    /// The same packet (times, flags, stream) over other storage holding the same bytes: a
    /// copy kept elsewhere (``ReplaySpill``).
    func replacingStorage(with other: Packet) -> EncodedPacket {
        EncodedPacket(storage: other, stream: stream, pts: pts, dts: dts, duration: durationTicks, isKeyframe: isKeyframe,
                      completesGroup: completesGroup)
    }

    /// The same packet said to last `ticks` ticks (0: unknown, for a muxer to work out).
    func lasting(ticks: Int64) -> EncodedPacket {
        guard ticks != durationTicks else { return self }
        return EncodedPacket(storage: storage, stream: stream, pts: pts, dts: dts, duration: max(0, ticks), isKeyframe: isKeyframe,
                             completesGroup: completesGroup)
    }

    /// The same packet, marked as completing its group or not (``completesGroup``).
    func completingGroup(_ completes: Bool) -> EncodedPacket {
        guard completes != completesGroup else { return self }
        return EncodedPacket(storage: storage, stream: stream, pts: pts, dts: dts, duration: durationTicks, isKeyframe: isKeyframe,
                             completesGroup: completes)
    }

    /// Copies the packet's properties (times, flags, side data) but not its data into `target`.
    func copyProperties(into target: UnsafeMutablePointer<AVPacket>) {
        av_packet_copy_props(target, storage.pointer)
    }

    /// Calls `body` with the encoded bytes, valid only inside it.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let p = storage.pointer.pointee
        return try body(UnsafeRawBufferPointer(start: p.data, count: Int(p.size)))
    }

    /// Fills the empty `target` with a new reference to this packet's data (no copy) and its
    /// times, ready for a muxer that takes it over.
    func reference(into target: UnsafeMutablePointer<AVPacket>) throws {
        try FFmpeg.check(av_packet_ref(target, storage.pointer), "cannot reference an encoded packet")
        target.pointee.pts = pts
        target.pointee.dts = dts
        target.pointee.duration = durationTicks
        target.pointee.pos = -1
        if isKeyframe { target.pointee.flags |= AV_PKT_FLAG_KEY } else { target.pointee.flags &= ~AV_PKT_FLAG_KEY }
    }
}
