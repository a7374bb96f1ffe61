import ReelCore

/// The packets a ``ReplayBuffer`` holds, and the rules that keep them within its bounds: a
/// value, changed under the buffer's lock, that never does any I/O.
///
/// Video is kept in whole groups of pictures (a keyframe and the packets up to the next), so
/// that what is kept always starts where a decoder can: the oldest group goes once the group
/// after it starts at or before the newest time − the window (so the window still covers that
/// much), and, past `maxBytes`, at once. Audio is kept from the start of the oldest video
/// group on; without video, for the window's length.
struct ReplayWindow {
    /// One stream's packets in decoding order, oldest first.
    struct Queue {
        let stream: EncodedStream
        var packets: [EncodedPacket] = []
        /// Index in `packets` of the first packet still held (dropped ones are compacted away
        /// now and then rather than on every drop).
        var head = 0
        /// Indices in `packets` of the keyframes held, oldest first.
        var keys: [Int] = []
        /// The end of the newest frame (or audio) held.
        var newestEnd: MediaTime?

        var live: ArraySlice<EncodedPacket> { packets[head...] }
        var isEmpty: Bool { head == packets.count }

        mutating func append(_ packet: EncodedPacket) {
            if packet.isKeyframe { keys.append(packets.count) }
            packets.append(packet)
            newestEnd = max(newestEnd ?? packet.endTime, packet.endTime)
        }

        /// Drops the `n` oldest packets held; returns their bytes.
        mutating func dropFirst(_ n: Int) -> Int {
            var bytes = 0
            for packet in packets[head..<(head + n)] { bytes += packet.byteCount }
            head += n
            keys.removeFirst(keys.prefix { $0 < head }.count)
            if isEmpty { newestEnd = nil }
            if head > 1024 && head * 2 > packets.count {
                packets.removeFirst(head)
                keys = keys.map { $0 - head }
                head = 0
            }
            return bytes
        }
    }

    /// What was dropped to stay within `maxBytes`, and what the window holds at most.
    struct Counters: Sendable, Hashable {
        var groupsDroppedForSize = 0
        var bytesDroppedForSize: Int64 = 0
        var mostBytesHeld: Int64 = 0
        var longestVideoHeld = MediaTime.zero
    }

    let duration: MediaTime
    let maxBytes: Int64?
    private(set) var queues: [Queue] = []
    private(set) var bytes: Int64 = 0
    private(set) var counters = Counters()
    /// Video packets are refused until the next keyframe (a group was dropped whole while it
    /// was still growing, so its rest could not be decoded).
    private var waitingForKeyframe = true
    /// Whether the producer is finished: every frame has come out of the encoders.
    var ended = false

    init(duration: MediaTime, maxBytes: Int64?) {
        self.duration = duration
        self.maxBytes = maxBytes
    }

    /// The queue of the first video stream, if any.
    private var videoQueue: Int? { queues.firstIndex { $0.stream.kind == .video } }

    mutating func add(_ stream: EncodedStream) {
        guard !queues.contains(where: { $0.stream === stream }) else { return }
        queues.append(Queue(stream: stream))
    }

    /// Takes `packet`, then drops what the bounds no longer allow. Packets of a stream not
    /// added are ignored; so are a video stream's packets before its first keyframe.
    mutating func take(_ packet: EncodedPacket) {
        guard let q = queues.firstIndex(where: { $0.stream === packet.stream }) else { return }
        if q == videoQueue {
            if waitingForKeyframe {
                guard packet.isKeyframe else { return }
                waitingForKeyframe = false
            }
        }
        queues[q].append(packet)
        bytes += Int64(packet.byteCount)
        trimToDuration()
        trimToSize()
        counters.mostBytesHeld = max(counters.mostBytesHeld, bytes)
        if let v = videoQueue, let first = queues[v].live.first, let newest = newestVideoEnd {
            counters.longestVideoHeld = max(counters.longestVideoHeld, newest - first.presentationTime)
        }
    }

    /// The end of the newest video frame held.
    var newestVideoEnd: MediaTime? { videoQueue.flatMap { queues[$0].newestEnd } }

    /// The end of the newest packet held, of any stream.
    var newestEnd: MediaTime? { queues.compactMap(\.newestEnd).max() }

    /// Indices (into `packets`) of the held video keyframes.
    private func keyframes(_ queue: Queue) -> [Int] { queue.keys }

    private mutating func trimToDuration() {
        if let v = videoQueue {
            // Measured from the newest video packet's decoding time: every frame shown before it
            // has come out of the encoder, so a save can end no earlier (frames still in the
            // encoder cannot be saved, and must not push the window's start later).
            guard let newest = queues[v].live.last?.decodeTime else { return }
            let keys = keyframes(queues[v])
            // The latest keyframe at or before newest − duration: everything before it goes.
            if let cut = keys.last(where: { queues[v].packets[$0].presentationTime <= newest - duration }), cut > queues[v].head {
                bytes -= Int64(queues[v].dropFirst(cut - queues[v].head))
            }
            trimAudioToVideo()
        } else if let newest = newestEnd {
            for q in queues.indices {
                let n = queues[q].live.prefix { $0.endTime <= newest - duration }.count
                if n > 0 { bytes -= Int64(queues[q].dropFirst(n)) }
            }
        }
    }

    private mutating func trimToSize() {
        guard let maxBytes else { return }
        while bytes > maxBytes {
            if let v = videoQueue, !queues[v].isEmpty {
                // The oldest whole group goes; the only group, still growing, goes too (then
                // nothing is held until the next keyframe).
                let keys = keyframes(queues[v])
                let end = keys.count >= 2 ? keys[1] : queues[v].packets.count
                if keys.count < 2 { waitingForKeyframe = true }
                let dropped = queues[v].dropFirst(end - queues[v].head)
                bytes -= Int64(dropped)
                counters.groupsDroppedForSize += 1
                counters.bytesDroppedForSize += Int64(dropped)
                trimAudioToVideo(all: queues[v].isEmpty)
            } else if let q = queues.indices.compactMap({ q in queues[q].live.first.map { (q, $0.presentationTime) } })
                        .min(by: { $0.1 < $1.1 })?.0 {
                let dropped = queues[q].dropFirst(1)
                bytes -= Int64(dropped)
                counters.bytesDroppedForSize += Int64(dropped)
            } else {
                return
            }
        }
    }

    /// Drops the audio that ends before the oldest video frame held (all of it when `all`);
    /// while no video is held, the audio older than the window.
    private mutating func trimAudioToVideo(all: Bool = false) {
        guard let v = videoQueue else { return }
        guard let start = queues[v].live.first?.presentationTime ?? newestEnd.map({ $0 - duration }) else { return }
        for q in queues.indices where q != v && queues[q].stream.kind == .audio {
            let n = all ? queues[q].live.count : queues[q].live.prefix { $0.endTime <= start }.count
            guard n > 0 else { continue }
            let dropped = queues[q].dropFirst(n)
            bytes -= Int64(dropped)
            if all { counters.bytesDroppedForSize += Int64(dropped) }
        }
    }

    /// The held packets of each stream (shared, not copied: a snapshot to write out of the lock).
    func snapshot() -> [(stream: EncodedStream, packets: [EncodedPacket])] {
        queues.map { ($0.stream, Array($0.live)) }
    }
}
