import Foundation
internal import CFFmpeg
import ReelCore

/// Writes clips one after the other into one file by copying their packets, moving each clip's
/// timestamps to follow the one before.
final class CopyingJoiner {
    private let muxer: Muxer
    /// Per output stream: the time base the timeline is counted in (the first clip's).
    private var timeBases: [AVRational] = []
    private var lastDTS: [Int64]
    /// Per audio stream: where the audio written so far ends when decoded sample after sample
    /// (ticks of `timeBases`).
    private var decodedEnd: [Int64?]
    /// Where each audio stream's next packet goes in an Ogg file (in the output's time base):
    /// Ogg keeps no time per packet, only one per page, and a reader counts packets from it, so
    /// the packets must follow one another exactly.
    private var oggNext: [Int64?]
    /// The start of the next clip on the merged timeline.
    private(set) var offset = MediaTime.zero
    /// The chapters of the clips appended, on the joined timeline.
    private(set) var chapters: [Chapter] = []
    private(set) var videoPackets: Int64 = 0
    /// The packets that the clips appended list and do not play (see ``ClipReader/leftOut``).
    private(set) var packetsLeftOut: [MergeSummary.PacketsLeftOut] = []

    private let reservedIndexSize: Int?
    /// The first clip: its streams are the output's.
    private let first: ClipFacts

    init(url: URL, container: Container, first: ClipFacts, input: InputFile, reservedIndexSize: Int?) throws {
        self.reservedIndexSize = reservedIndexSize
        self.first = first
        // Reopened without truncating: see ``Muxer``'s `truncating`.
        muxer = try Muxer(url: url, container: container, overwrite: false, truncating: false)
        lastDTS = Array(repeating: Int64.min, count: first.streams.count)
        decodedEnd = Array(repeating: nil, count: first.streams.count)
        oggNext = Array(repeating: nil, count: first.streams.count)
        for facts in first.streams {
            let stream = try muxer.addStream(copying: input.context.pointee.streams[facts.index]!, of: input.url)
            timeBases.append(stream.pointee.time_base)
        }
        muxer.copyMetadata(of: input)
        try muxer.writeHeader(fastStart: true, reservedIndexSize: reservedIndexSize)
    }

    /// Copies every packet of `clip` to the end of the timeline. With `silence`, the clip's
    /// audio packets are replaced by silent ones of the same length, and a clip with no sound
    /// where the first has some gets silence for its whole span. `meter` hears how far
    /// reading has come: `readBefore` (the earlier clips' bytes) plus the position in this one.
    func append(_ clip: ClipFacts, from input: InputFile, isFirst: Bool, silence: [SilentPacket?]?,
                meter: ProgressMeter? = nil, readBefore: Int64 = 0, chapters: [Chapter] = []) throws {
        self.chapters += input.chapters(ofClipAt: clip.zero, adding: chapters, joinedAt: offset)
        var packets = ClipReader(clip, from: input, meter: meter, readBefore: readBefore)
        var started = [Bool](repeating: false, count: clip.streams.count)
        var shorterPackets = [Int](repeating: 0, count: clip.streams.count)
        var guesses = clip.streams.map { DecodeTimeGuess(delay: $0.kind == .video ? $0.videoDelay : 0) }
        var length = ClipLength()
        let videoPosition = clip.streams.firstIndex { $0.kind == .video }

        while let (packet, j) = try packets.next() {
            let facts = clip.streams[j]
            let tb = timeBases[j]
            // Times relative to the clip's zero, in the timeline's time base.
            let zero = clip.zero.ticks(in: facts.timeBase)
            var pts = packet.pointee.pts, dts = packet.pointee.dts
            if pts == FFmpeg.noPTS { pts = dts }
            guard pts != FFmpeg.noPTS else {
                throw ReelError(.invalidMedia, "\(clip.label) has packets without timestamps: \(clip.url.path)")
            }
            if dts == FFmpeg.noPTS {
                // Matroska stores no decoding times; the first packets may lack FFmpeg's guess.
                dts = guesses[j].decodeTime(pts: pts, duration: packet.pointee.duration > 0 ? packet.pointee.duration : facts.frameDurationTicks)
            }
            let start = av_rescale_q(pts - zero, facts.timeBase, tb)
            let decode = av_rescale_q(dts - zero, facts.timeBase, tb)
            var duration = av_rescale_q(packet.pointee.duration, facts.timeBase, tb)
            if duration <= 0, facts.kind == .video { duration = av_rescale_q(facts.frameDurationTicks, facts.timeBase, tb) }
            length.note(stream: j, start: MediaTime(ticks: start, tb), duration: MediaTime(ticks: max(duration, 0), tb))
            let base = offset.ticks(in: tb)
            var decodedLength = duration

            if facts.kind == .audio {
                // The length the decoder gives a packet, whatever the container says of the last one.
                let decoded = facts.frameSize > 0 ? av_rescale_q(Int64(facts.frameSize), AVRational(num: 1, den: facts.sampleRate), tb) : duration
                decodedLength = decoded
                if !isFirst {
                    // Priming before the clip's zero: the previous clip's audio plays there.
                    if start + max(decoded, duration) <= 0 { continue }
                    if !started[j] {
                        // Every packet decodes to a whole frame of samples, so one clip's audio
                        // never ends exactly where the next one's starts: the last packet is
                        // padded, the next clip's first may begin before its zero. Timestamps
                        // stay exact (players that follow them are in step); players that play
                        // samples one after the other must not drift either, so a packet that
                        // would decode mostly under the previous clip's end is left out. The
                        // audio is then never more than half a packet (10.7 ms of AAC at 48 kHz)
                        // from its place, however many joins there are.
                        if let end = decodedEnd[j] {
                            let error = end - (base + start)
                            if error * 2 > decoded { continue }
                        }
                        started[j] = true
                    }
                }
                decodedEnd[j] = (decodedEnd[j] ?? (base + start)) + decoded
                if let silence, let silent = silence[clip.audio.firstIndex { $0.index == facts.index }!] {
                    // A silent packet decodes to one encoder frame: every packet it stands in
                    // for must be as long (a clip's last packet may be shorter).
                    let length = av_rescale_q(decoded, tb, AVRational(num: 1, den: facts.sampleRate))
                    if length != silent.sampleCount {
                        shorterPackets[j] += 1
                        if length > silent.sampleCount || shorterPackets[j] > 1 {
                            throw Incompatibility("\(clip.label) is to be muted, but its \(facts.codecLabel) packets are not \(silent.sampleCount) samples long, so silence cannot be slipped in without re-encoding",
                                                  hint: LibraryHint.allowReencoding)
                        }
                    }
                    let flags = packet.pointee.flags
                    av_packet_unref(packet)
                    try FFmpeg.check(av_packet_ref(packet, silent.packet.pointer), "cannot make a silent packet")
                    packet.pointee.flags = flags
                }
            }

            packet.pointee.flags &= ~AV_PKT_FLAG_DISCARD
            let out = muxer.timeBase(ofStream: j)
            var outPTS = av_rescale_q(base + start, tb, out)
            var outDTS = av_rescale_q(base + decode, tb, out)
            if lastDTS[j] != Int64.min && outDTS <= lastDTS[j] {
                // A clip whose decoding starts earlier before its first frame than the previous
                // clip's did: its first decoding times would collide with the previous clip's last.
                outDTS = lastDTS[j] + 1
                if facts.kind == .audio { outPTS = max(outPTS, outDTS) }
                guard outDTS <= outPTS else {
                    // The times say which edge is wrong if this is ever seen in a recording's own clips.
                    let at = MediaTime(ticks: outPTS, out), before = MediaTime(ticks: lastDTS[j], out)
                    throw Incompatibility("\(clip.label) cannot follow the clip before it without re-encoding: its frames would be decoded before the previous clip's last (its \(facts.kind == .video ? "video" : "audio") at \(at.seconds) s of the joined file; the clip before decodes until \(before.seconds) s)",
                                          hint: LibraryHint.allowReencoding)
                }
            }
            var outDuration = av_rescale_q(duration, tb, out)
            if facts.kind == .audio && (muxer.container == .ogg || muxer.container == .opus) {
                // Back to back, each as long as it decodes (a clip's shortened last packet plays
                // whole: at most one frame of the encoder's padding a join).
                if facts.codecID == AV_CODEC_ID_OPUS, let samples = Self.opusSamples(packet) {
                    decodedLength = av_rescale_q(samples, AVRational(num: 1, den: 48_000), tb)
                }
                outDuration = av_rescale_q(decodedLength, tb, out)
                if let next = oggNext[j] { outPTS = next; outDTS = next }
                oggNext[j] = outPTS + outDuration
            }
            lastDTS[j] = outDTS
            packet.pointee.pts = outPTS
            packet.pointee.dts = outDTS
            packet.pointee.duration = outDuration
            if facts.kind == .video { videoPackets += 1 }
            try muxer.write(demuxed: packet, stream: j)
        }
        if let left = packets.leftOut { packetsLeftOut.append(left) }
        let clipLength = length.length(video: videoPosition, grid: videoPosition.flatMap { clip.streams[$0].inexactFrameDuration })
        if clip.lacksAudio(of: first) {
            // Only a clip allowed to lack its sound gets here (see ``MergeInput/soundMayBeMissing``).
            guard let silence else {
                throw Incompatibility("\(clip.label) has no audio, and silence cannot be slipped in without re-encoding", hint: LibraryHint.allowReencoding)
            }
            try fillWithSilence(silence, until: offset + clipLength)
        }
        offset += clipLength
    }

    /// Writes silent packets on every audio track from where its sound ends to `end` (give or
    /// take half a packet, as at any join), for a clip that has no sound of its own.
    private func fillWithSilence(_ silence: [SilentPacket?], until end: MediaTime) throws {
        for (a, facts) in first.audio.enumerated() {
            guard let j = first.streams.firstIndex(where: { $0.index == facts.index }), a < silence.count, let silent = silence[a] else { continue }
            let tb = timeBases[j]
            let step = av_rescale_q(silent.sampleCount, AVRational(num: 1, den: facts.sampleRate), tb)
            guard step > 0 else { continue }
            let stop = end.ticks(in: tb)
            var at = decodedEnd[j] ?? offset.ticks(in: tb)
            let out = muxer.timeBase(ofStream: j)
            while (stop - at) * 2 > step {
                let packet = try Packet(referencing: silent.packet.pointer)
                var time = av_rescale_q(at, tb, out)
                if lastDTS[j] != Int64.min && time <= lastDTS[j] { time = lastDTS[j] + 1 }
                if let next = oggNext[j] { time = next }
                packet.pointer.pointee.pts = time
                packet.pointer.pointee.dts = time
                packet.pointer.pointee.duration = av_rescale_q(step, tb, out)
                packet.pointer.pointee.flags = AV_PKT_FLAG_KEY
                if oggNext[j] != nil { oggNext[j] = time + packet.pointer.pointee.duration }
                lastDTS[j] = time
                try muxer.write(demuxed: packet.pointer, stream: j)
                at += step
            }
            decodedEnd[j] = at
        }
    }

    /// The chapters that begin at or after the joined file's end (see ``MergeSummary/leftOutMarkers``).
    var chaptersPastTheEnd: [Chapter] { chapters.filter { $0.start >= offset } }

    /// Writes the index (at the front of an MP4/MOV) and closes the file.
    func finish() throws {
        // None past the end: a chapter list added to the index kept them.
        let chapters = Chapter.beginning(self.chapters, before: offset)
        // Chapters of an MP4/MOV go into the room left after the index (see ``MP4ChapterList``).
        let listsChapters = muxer.container.isISOBaseMedia && reservedIndexSize != nil && !chapters.isEmpty
        do {
            if !listsChapters { try muxer.setChapters(chapters, end: offset) }
            try muxer.finish()
            if listsChapters, try !MP4ChapterList.add(chapters, to: muxer.url) { throw IndexReservationTooSmall() }
        } catch let error as ReelError where error.averror == reel_averror(EINVAL) && reservedIndexSize != nil {
            throw IndexReservationTooSmall()
        }
    }
}

/// The index did not fit the space reserved for it.
struct IndexReservationTooSmall: Error {}

extension CopyingJoiner {
    /// The samples (at 48 kHz) an Opus packet decodes to, from its table of contents (RFC 6716
    /// 3.1): the frame length its configuration says, times its frame count; `nil` when the
    /// packet is not Opus or is too short to say.
    static func opusSamples(_ packet: UnsafeMutablePointer<AVPacket>) -> Int64? {
        guard packet.pointee.size >= 1, let data = packet.pointee.data else { return nil }
        let toc = data[0]
        let config = Int(toc >> 3)
        // Frame lengths in tenths of a millisecond: SILK 10/20/40/60, hybrid 10/20, CELT 2.5/5/10/20.
        let tenths: Int
        switch config {
        case 0...11: tenths = [100, 200, 400, 600][config % 4]
        case 12...15: tenths = [100, 200][config % 2]
        default: tenths = [25, 50, 100, 200][config % 4]
        }
        let frames: Int
        switch toc & 3 {
        case 0: frames = 1
        case 1, 2: frames = 2
        default:
            guard packet.pointee.size >= 2 else { return nil }
            frames = Int(data[1] & 0x3F)
        }
        return Int64(frames * tenths * 48 / 10)
    }
}
