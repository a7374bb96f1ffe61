import ReelCore

/// Which of a replay buffer's packets a save writes, and from when: the selection rules of
/// ``ReplayBuffer``'s saves, on a snapshot of its packets.
struct ReplayCut {
    /// The streams to write, in the buffer's order (streams with nothing to save left out).
    let streams: [EncodedStream]
    /// The packets to write, in decoding order across streams, on the recording's timeline.
    let packets: [EncodedPacket]
    /// Where the save starts on the recording's timeline (its first frame; becomes zero).
    let start: MediaTime
    /// Where it ends (the end of its last frame, or of its audio without video).
    let end: MediaTime
    let videoFrames: Int
    let audioPackets: Int

    /// Selects from `snapshot` the last `duration`.
    ///
    /// Video starts on the latest keyframe at or before the newest savable frame's end − `duration`
    /// (the oldest if none is that old) and ends with the newest frame whose predecessors are
    /// all held: frames come out of an encoder out of order (a frame that others refer to
    /// before the frames shown ahead of it), and a file must not miss a frame before its last.
    /// Audio is what overlaps the video: with `trimsByEditList` (MP4, MOV) from the packet that
    /// holds the first frame's time, whose samples before it the file's edit list hides; else
    /// (Matroska, which would move every stream later to keep that packet's start) from the
    /// first packet at or after it, at most one packet (21 ms of AAC) late but in its place.
    /// Without video, the last `duration` of audio.
    ///
    /// - Throws: `.nothingRecorded` when nothing is held: no video keyframe (for streams with video),
    ///   no audio.
    /// `ended` says that the encoders are finished (every frame has come out).
    init(_ snapshot: [(stream: EncodedStream, packets: [EncodedPacket])], duration: MediaTime, ended: Bool,
         trimsByEditList: Bool) throws {
        var chosen: [(EncodedStream, [EncodedPacket])] = []
        let start: MediaTime, end: MediaTime
        var frames = 0
        if let video = snapshot.first(where: { $0.stream.kind == .video }) {
            // A recording with video saves video: none held (not yet, or a byte limit smaller than
            // one group of pictures) is nothing to save.
            let packets = video.packets
            // Measured from the newest frame the save can hold (frames still in the encoder
            // are not), so that it holds at least `duration` of what it writes.
            guard let oldestKey = packets.indices.first(where: { packets[$0].isKeyframe }) else { throw Self.nothingYet() }
            let held = Array(packets[oldestKey...])
            guard let newest = held.prefix(ended ? held.count : Self.completePrefix(of: held)).lazy.map(\.endTime).max(),
                  let first = packets.indices.last(where: { packets[$0].isKeyframe && packets[$0].presentationTime <= newest - duration })
                    ?? Optional(oldestKey) else {
                throw Self.nothingYet()
            }
            let group = Array(packets[first...])
            let count = ended ? group.count : Self.completePrefix(of: group)
            let kept = Array(group.prefix(count))
            start = kept.map(\.presentationTime).min() ?? group[0].presentationTime
            end = kept.map(\.endTime).max() ?? start
            frames = kept.count
            chosen.append((video.stream, kept))
            for audio in snapshot where audio.stream.kind == .audio {
                let overlapping = audio.packets.filter {
                    (trimsByEditList ? $0.endTime > start : $0.presentationTime >= start) && $0.presentationTime < end
                }
                if !overlapping.isEmpty { chosen.append((audio.stream, overlapping)) }
            }
        } else {
            guard let newest = snapshot.compactMap({ $0.packets.last?.endTime }).max() else { throw Self.nothingYet() }
            for audio in snapshot where audio.stream.kind == .audio {
                let recent = audio.packets.filter { $0.endTime > newest - duration }
                if !recent.isEmpty { chosen.append((audio.stream, recent)) }
            }
            guard let earliest = chosen.compactMap({ $0.1.first?.presentationTime }).min() else { throw Self.nothingYet() }
            start = earliest
            end = newest
        }
        streams = chosen.map(\.0)
        // Decoding order across streams (stable within each), so the muxer interleaves little.
        packets = chosen.flatMap(\.1).enumerated().sorted {
            $0.element.decodeTime != $1.element.decodeTime ? $0.element.decodeTime < $1.element.decodeTime : $0.offset < $1.offset
        }.map(\.element)
        self.start = start
        self.end = end
        videoFrames = frames
        audioPackets = chosen.dropFirst(frames > 0 ? 1 : 0).reduce(0) { $0 + $1.1.count }
    }

    /// How many of `packets` (one video stream's, in decoding order, from a keyframe) can be
    /// written without a gap: the longest prefix such that every frame shown up to its latest
    /// is in it and no later packet is shown before that. Every frame shown at or before the
    /// newest packet's decoding time has come out of the encoder (decoding times only grow, and
    /// no frame is shown before it is decoded), so those are known complete. At least the
    /// keyframe, which decodes on its own and is shown first.
    static func completePrefix(of packets: [EncodedPacket]) -> Int {
        guard let last = packets.last else { return 0 }
        let settled = last.decodeTime
        var laterEarliest = [MediaTime?](repeating: nil, count: packets.count + 1)
        for i in packets.indices.reversed() {
            let t = packets[i].presentationTime
            laterEarliest[i] = laterEarliest[i + 1].map { min($0, t) } ?? t
        }
        var latest: MediaTime?
        var count = 0
        for i in packets.indices {
            let t = packets[i].presentationTime
            latest = latest.map { max($0, t) } ?? t
            guard let shown = latest else { continue }
            let nothingLaterBefore = laterEarliest[i + 1].map { $0 > shown } ?? true
            if nothingLaterBefore && shown <= settled { count = i + 1 }
        }
        return max(count, 1)
    }

    private static func nothingYet() -> ReelError {
        ReelError(.nothingRecorded, "the replay buffer holds nothing to save yet",
                  hint: "save again once the recording has run for a moment: video needs its first keyframe, and a byte limit smaller than the video between two keyframes keeps nothing")
    }
}
