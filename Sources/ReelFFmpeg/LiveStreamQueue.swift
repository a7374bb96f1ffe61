import ReelCore

/// The packets waiting to be sent by a ``LiveStream``, bounded in bytes: when the network is
/// slower than the stream, whole groups of pictures are dropped here (the file beside it keeps
/// every frame), never the encoder held up.
///
/// The channel's buffer under ``ChannelPolicy/dropGroups`` decides; this says what a packet
/// weighs. When a packet would take the queue past ``maxBytes``, everything waiting goes, and
/// so does everything after it up to the next video keyframe, where the stream picks up again
/// (a decoder needs nothing from before a keyframe). The same wait for a keyframe starts a new
/// connection (``awaitKeyframe(latest:)``). Audio waits with the video, so the two stay
/// together; a stream without video has no keyframes to wait for (every packet starts a group).
/// It lives under the live stream's lock, whose sending thread also waits for its connection.
struct LiveStreamQueue {
    private var buffer: ChannelBuffer<EncodedPacket>
    /// Whether the streams include video (else every packet starts a group).
    var hasVideo = false

    init(maxBytes: Int64) {
        buffer = ChannelBuffer(bound: maxBytes, policy: .dropGroups, reserve: 256)
    }

    /// The most bytes of packet data waiting at once.
    var maxBytes: Int64 { buffer.bound }
    /// Whether nothing waits.
    var isEmpty: Bool { buffer.isEmpty }
    /// The bytes of packet data waiting.
    var bytes: Int64 { buffer.cost }
    /// The most bytes that have waited at once.
    var mostBytes: Int64 { buffer.mostCost }
    /// Packets dropped so far (video and audio).
    var droppedPackets: Int64 { buffer.drops.items }
    /// Their bytes.
    var droppedBytes: Int64 { buffer.drops.cost }
    /// Groups of pictures (from one keyframe to the next) dropped, whole or their unsent rest.
    var droppedGroups: Int64 { buffer.drops.groups }
    /// Video frames dropped.
    var droppedFrames: Int64 { buffer.drops.members }

    /// Takes `packet`, or drops it (and what waits) to stay within ``maxBytes``.
    mutating func push(_ packet: EncodedPacket) {
        buffer.offer(packet, weight: weight(of: packet))
    }

    /// The next packet to send, if any.
    mutating func pop() -> EncodedPacket? {
        buffer.take()?.element
    }

    /// Makes the stream start again at a keyframe (a new connection): waiting packets before
    /// the first keyframe among them are dropped, and new ones until a keyframe if none waits.
    /// `latest`: start at the newest keyframe waiting instead, dropping the groups before it
    /// (a connection back after an outage goes on live, not with the outage's backlog).
    mutating func awaitKeyframe(latest: Bool = false) {
        buffer.restartAtGroup(latest: latest)
    }

    /// Drops every packet waiting.
    mutating func dropWaiting() {
        buffer.dropAll()
    }

    /// Counts `packet`, taken to be sent and then not sent (a stop's time ran out), as dropped.
    mutating func dropTaken(_ packet: EncodedPacket) {
        buffer.countDropped(weight(of: packet))
    }

    /// Its bytes; a video keyframe starts a group (any packet, without video); video frames
    /// are the groups' members.
    private func weight(of packet: EncodedPacket) -> ChannelWeight {
        let isVideo = packet.stream.kind == .video
        return ChannelWeight(cost: Int64(packet.byteCount), startsGroup: hasVideo ? isVideo && packet.isKeyframe : true,
                             isGroupMember: isVideo)
    }
}
