/// The packets waiting to be sent by a ``LiveStream``, bounded in bytes: when the network is
/// slower than the stream, whole groups of pictures are dropped here (the file beside it keeps
/// every frame), never the encoder held up.
///
/// Dropping works on groups: when a packet would take the queue past ``maxBytes``, everything
/// waiting goes, and so does everything after it up to the next video keyframe, where the
/// stream picks up again (a decoder needs nothing from before a keyframe). The same wait for a
/// keyframe starts a new connection (``awaitKeyframe()``). Audio waits with the video, so the
/// two stay together; a stream without video has no keyframes to wait for.
struct LiveStreamQueue {
    /// The most bytes of packet data waiting at once.
    let maxBytes: Int64
    /// Whether the streams include video (else every packet starts a group).
    var hasVideo = false
    private var packets: [EncodedPacket] = []
    private var head = 0
    /// The bytes of packet data waiting.
    private(set) var bytes: Int64 = 0
    /// The most bytes that have waited at once.
    private(set) var mostBytes: Int64 = 0
    /// Whether packets are being dropped until the next video keyframe.
    private(set) var awaitingKeyframe = false
    /// Packets dropped so far (video and audio).
    private(set) var droppedPackets: Int64 = 0
    /// Their bytes.
    private(set) var droppedBytes: Int64 = 0
    /// Groups of pictures (from one keyframe to the next) dropped, whole or their unsent rest.
    private(set) var droppedGroups: Int64 = 0
    /// Video frames dropped.
    private(set) var droppedFrames: Int64 = 0

    init(maxBytes: Int64) {
        self.maxBytes = maxBytes
    }

    /// Whether nothing waits.
    var isEmpty: Bool { head == packets.count }

    /// Takes `packet`, or drops it (and what waits) to stay within ``maxBytes``.
    mutating func push(_ packet: EncodedPacket) {
        if awaitingKeyframe {
            guard startsGroup(packet) else { return drop(packet) }
            awaitingKeyframe = false
        }
        if bytes + Int64(packet.byteCount) > maxBytes && !isEmpty {
            dropWaiting()
            if !startsGroup(packet) {
                awaitingKeyframe = true
                return drop(packet)
            }
        }
        packets.append(packet)
        bytes += Int64(packet.byteCount)
        mostBytes = max(mostBytes, bytes)
    }

    /// The next packet to send, if any.
    mutating func pop() -> EncodedPacket? {
        guard !isEmpty else { return nil }
        let packet = packets[head]
        head += 1
        bytes -= Int64(packet.byteCount)
        if head == packets.count {
            packets.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 256 && head * 2 >= packets.count {
            packets.removeFirst(head)
            head = 0
        }
        return packet
    }

    /// Makes the stream start again at a keyframe (a new connection): waiting packets before
    /// the first keyframe among them are dropped, and new ones until a keyframe if none waits.
    /// `latest`: start at the newest keyframe waiting instead, dropping the groups before it
    /// (a connection back after an outage goes on live, not with the outage's backlog).
    mutating func awaitKeyframe(latest: Bool = false) {
        groupCounted = false
        if latest, let newest = packets[head...].lastIndex(where: startsGroup), newest > head {
            while head < newest {
                if startsGroup(packets[head]) { groupCounted = false }
                drop(packets[head])
                bytes -= Int64(packets[head].byteCount)
                head += 1
            }
            groupCounted = false
        }
        while head < packets.count, !startsGroup(packets[head]) {
            drop(packets[head])
            bytes -= Int64(packets[head].byteCount)
            head += 1
        }
        if isEmpty {
            packets.removeAll(keepingCapacity: true)
            head = 0
            awaitingKeyframe = hasVideo
        }
    }

    /// Whether the group being dropped until the next keyframe has been counted.
    private var groupCounted = false

    /// Drops every packet waiting.
    mutating func dropWaiting() {
        var groups: Int64 = 0
        for packet in packets[head...] {
            if startsGroup(packet) { groups += 1 }
            count(packet)
        }
        // The unsent rest of the group being sent counts as one.
        if head < packets.count, !startsGroup(packets[head]) { groups += 1 }
        droppedGroups += groups
        groupCounted = true
        packets.removeAll(keepingCapacity: true)
        head = 0
        bytes = 0
    }

    /// Counts `packet`, taken to be sent and then not sent (a stop's time ran out), as dropped.
    mutating func dropTaken(_ packet: EncodedPacket) { drop(packet) }

    private mutating func drop(_ packet: EncodedPacket) {
        count(packet)
        if packet.stream.kind == .video && !groupCounted {
            groupCounted = true
            droppedGroups += 1
        }
    }

    private mutating func count(_ packet: EncodedPacket) {
        droppedPackets += 1
        droppedBytes += Int64(packet.byteCount)
        if packet.stream.kind == .video { droppedFrames += 1 }
    }

    private func startsGroup(_ packet: EncodedPacket) -> Bool {
        hasVideo ? packet.stream.kind == .video && packet.isKeyframe : true
    }
}
