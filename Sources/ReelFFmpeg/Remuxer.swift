import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

/// Copies the packets of one media file into another container without re-encoding.
///
/// Used to finalise a fragmented recording into a regular MP4 with its index at the front.
public enum Remuxer {
    /// Copies every stream of `input` into `output` (which must not exist unless `overwrite`).
    /// With `fastStart` an MP4/MOV gets its index at the front, so players start at once.
    /// `shift` is taken off every timestamp (see ``AssetWriter``'s fragment offset).
    public static func remux(_ input: URL, to output: URL, container: Container, fastStart: Bool = true,
                             overwrite: Bool = false, shift: MediaTime = .zero) throws {
        try copyPackets(of: input, to: output, container: container, fastStart: fastStart, overwrite: overwrite, shift: shift)
            .lock?.release()
    }

    /// What ``copyPackets(of:view:to:container:fastStart:overwrite:shift:)`` wrote.
    struct Copy {
        /// The lock on the output, still held: the caller releases it once the file is where
        /// it belongs (see ``RecordingLock``).
        var lock: RecordingLock?
        /// Whether the input has a video stream.
        var hasVideo: Bool
        /// The video packets copied.
        var videoPackets: Int64
        /// All packets copied.
        var packets: Int64
    }

    /// ``remux(_:to:container:fastStart:overwrite:shift:)`` that reads `input` as `view` shows
    /// it if given (the complete part of a file cut short) and hands over the output's lock.
    /// `meter` hears the position read in `input`. `chapters` (else the input's own) go into an
    /// MP4/MOV as a chapter list after the index (`chaptersAsList`), or as libavformat writes them.
    static func copyPackets(of input: URL, view: FileView? = nil, to output: URL, container: Container,
                            fastStart: Bool = true, overwrite: Bool = false, shift: MediaTime = .zero, lateStarts: [Int: MediaTime]? = nil,
                            meter: ProgressMeter? = nil, chapters: [Chapter]? = nil, chaptersAsList: Bool = true) throws -> Copy {
        FFmpeg.silenceLibraryLogging()
        let reader = try InputFile(url: input, view: view)
        try checkFits(reader, into: container)
        // The chapters given, else the input's own (on the copy's timeline).
        let wanted = chapters ?? reader.chapters(from: shift)
        // An MP4/MOV with its index at the front gets its chapters as a chapter list in room
        // left right after the index (libavformat's own way adds a chapter text track): the
        // room is what a first copy's index measured, and the list, so the file is as compact
        // as one without chapters.
        var listed: (chapters: [Chapter], room: Int)?
        if chaptersAsList && fastStart && container.isISOBaseMedia && !wanted.isEmpty {
            let size = try indexSize(ofCopyOf: input, view: view, beside: output, container: container, shift: shift)
            listed = (wanted, size + MP4ChapterList.box(wanted).count + 8)
        }
        let muxer = try Muxer(url: output, container: container, overwrite: overwrite)
        let lock = muxer.takeLock()
        do {
            let (videoPackets, packets, end) = try copyPackets(from: reader, to: muxer, input: input, output: output, fastStart: fastStart,
                                                          shift: shift, lateStarts: lateStarts, meter: meter, chapters: listed == nil ? wanted : [],
                                                          reservedIndexSize: listed?.room)
            if let listed, try !MP4ChapterList.add(Chapter.beginning(listed.chapters, before: end), to: output) {
                throw ReelError(.encodingFailed, "the chapters of \(output.path) found no room after its index", hint: "try again")
            }
            let hasVideo = av_find_best_stream(reader.context, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0) >= 0
            return Copy(lock: lock, hasVideo: hasVideo, videoPackets: videoPackets, packets: packets)
        } catch let error as ReelError where listed != nil && error.averror == reel_averror(EINVAL) {
            // The index came out larger than measured (its chunk offsets grew past 32 bits):
            // libavformat's own chapters, then.
            muxer.abandon()
            unlink(output.path)
            lock?.release()
            return try copyPackets(of: input, view: view, to: output, container: container, fastStart: fastStart, overwrite: overwrite,
                                   shift: shift, lateStarts: lateStarts, meter: meter, chapters: wanted, chaptersAsList: false)
        } catch {
            muxer.abandon()
            lock?.release()
            throw error
        }
    }

    /// The size of the index (`moov`) libavformat writes for a copy of `input` without
    /// chapters: measured by making that copy beside `output` (its index at the end: one pass)
    /// and removing it.
    private static func indexSize(ofCopyOf input: URL, view: FileView?, beside output: URL, container: Container,
                                  shift: MediaTime) throws -> Int {
        let measuring = FilePlacement.temporaryURL(beside: output, purpose: "measuring")
        let tracked = UnfinishedCopies.track(measuring)  // a copy: an interrupted command removes it
        defer { tracked.done() }
        let copy: Copy
        do {
            copy = try copyPackets(of: input, view: view, to: measuring, container: container, fastStart: false, shift: shift, chapters: [])
        } catch {
            if (error as? ReelError)?.code != .fileExists { unlink(measuring.path) }
            throw error
        }
        defer {
            unlink(measuring.path)
            copy.lock?.release()
        }
        let file = try MP4File(url: measuring, writable: false)
        defer { file.close() }
        guard let moov = try file.topLevelBoxes().boxes.first(where: { $0.type == .moov }) else {
            throw ReelError(.encodingFailed, "a copy of \(input.path) came out without an index", hint: "try again")
        }
        return Int(moov.size)
    }

    /// Throws `.unsupportedFormat` unless `container` can hold every video and audio stream
    /// of `reader` as it is (a copy never re-encodes): AAC sound is not made into a `.wav`.
    private static func checkFits(_ reader: InputFile, into container: Container) throws {
        let ctx = reader.context
        for i in 0..<Int(ctx.pointee.nb_streams) {
            let stream = ctx.pointee.streams[i]!
            let parameters = stream.pointee.codecpar.pointee
            let name = cString(avcodec_get_name(parameters.codec_id))
            let facts = StreamFacts(stream, kind: parameters.codec_type == AVMEDIA_TYPE_VIDEO ? .video : .audio)
            let fits: Bool
            switch parameters.codec_type {
            case AVMEDIA_TYPE_VIDEO: fits = facts.videoCodec.map(container.canHold) ?? (container == .mkv)
            case AVMEDIA_TYPE_AUDIO: fits = facts.audioCodec.map(container.canHold) ?? (container == .mkv)
            default: continue
            }
            guard !fits else { continue }
            let kinds = Container.allCases.filter { c in
                parameters.codec_type == AVMEDIA_TYPE_VIDEO ? facts.videoCodec.map(c.canHold) ?? (c == .mkv)
                                                             : facts.audioCodec.map(c.canHold) ?? (c == .mkv)
            }
            throw ReelError(.unsupportedFormat, "a .\(container.fileExtension) file cannot hold this recording's \(facts.codecLabel) (\(name)) without re-encoding it",
                            hint: "name the file \(kinds.map { ".\($0.fileExtension)" }.joined(separator: ", ")), and convert it afterwards if you need another kind")
        }
    }

    private static func copyPackets(from reader: InputFile, to muxer: Muxer, input: URL, output: URL, fastStart: Bool,
                                    shift: MediaTime, lateStarts: [Int: MediaTime]? = nil, meter: ProgressMeter?, chapters: [Chapter],
                                    reservedIndexSize: Int?) throws -> (video: Int64, all: Int64, end: MediaTime) {
        let ctx = reader.context
        var mapping = [Int](repeating: -1, count: Int(ctx.pointee.nb_streams))
        var inputTimeBases: [AVRational] = []
        for i in 0..<Int(ctx.pointee.nb_streams) {
            let inStream = ctx.pointee.streams[i]!
            let type = inStream.pointee.codecpar.pointee.codec_type
            guard type == AVMEDIA_TYPE_VIDEO || type == AVMEDIA_TYPE_AUDIO else { continue }
            let outStream = try muxer.addStream(copying: inStream, of: input)
            mapping[i] = Int(outStream.pointee.index)
            inputTimeBases.append(inStream.pointee.time_base)
        }
        muxer.copyMetadata(of: reader)
        try muxer.writeHeader(fastStart: fastStart, reservedIndexSize: reservedIndexSize)

        // The first packet of each audio stream is held until the second arrives, to repair
        // its time: a fragmented MP4 pulls every stream's first packet to zero.
        var held: [Int: Packet] = [:]
        var seen = Set<Int>()
        var videoPackets: Int64 = 0, packets: Int64 = 0
        // Where the last packet ends: where the last chapter does.
        var end = MediaTime.zero
        func put(_ p: UnsafeMutablePointer<AVPacket>) throws {
            let index = Int(p.pointee.stream_index)
            let isVideo = muxer.isVideo(stream: index)
            if p.pointee.pts != FFmpeg.noPTS {
                end = max(end, MediaTime(ticks: p.pointee.pts + max(0, p.pointee.duration), muxer.timeBase(ofStream: index)))
            }
            try muxer.write(demuxed: p, stream: index)
            packets += 1
            if isVideo { videoPackets += 1 }
        }
        // libavformat reads a fragmented MP4's sound packets without their length (which the
        // fragments say). A sound packet without one waits for the next of its track, and gets
        // the time to it; the last gets the length of the one before. The copy's index takes
        // its last packet's length from the packet: with none, its edit list ended where that
        // packet begins, readers left the packet out, and a merge refused the recovered file
        // as cut short (46 of its 47 audio packets).
        var lengthless: [Int: Packet] = [:]
        var lastLength: [Int: Int64] = [:]
        func write(_ p: UnsafeMutablePointer<AVPacket>) throws {
            let index = Int(p.pointee.stream_index)
            guard !muxer.isVideo(stream: index) else { return try put(p) }
            if let waiting = lengthless.removeValue(forKey: index) {
                let before = waiting.pointer
                if before.pointee.dts != FFmpeg.noPTS, p.pointee.dts != FFmpeg.noPTS, p.pointee.dts > before.pointee.dts {
                    before.pointee.duration = p.pointee.dts - before.pointee.dts
                } else {
                    before.pointee.duration = lastLength[index] ?? 0
                }
                if before.pointee.duration > 0 { lastLength[index] = before.pointee.duration }
                try put(before)
            }
            guard p.pointee.duration > 0 else {
                lengthless[index] = try Packet(referencing: p)
                return
            }
            lastLength[index] = p.pointee.duration
            try put(p)
        }
        // A truncated tail ends the copy: what was read is kept.
        while let packet = reader.nextReadable() {
            let index = Int(packet.pointee.stream_index)
            guard index < mapping.count, mapping[index] >= 0 else { continue }
            if let meter, packet.pointee.pos >= 0 { meter.update(completed: packet.pointee.pos) }
            let inStream = ctx.pointee.streams[index]!
            let tb = muxer.timeBase(ofStream: mapping[index])
            av_packet_rescale_ts(packet, inStream.pointee.time_base, tb)
            if shift != .zero {
                // av_rescale_q and checked subtraction: a damaged file's times must not trap.
                let ticks = av_rescale_q(shift.value, AVRational(num: 1, den: shift.timescale), tb)
                for keyPath in [\AVPacket.pts, \AVPacket.dts] where packet.pointee[keyPath: keyPath] != FFmpeg.noPTS {
                    let (moved, overflow) = packet.pointee[keyPath: keyPath].subtractingReportingOverflow(ticks)
                    guard !overflow else {
                        throw ReelError(.invalidMedia, "\(input.path) is damaged: a packet's time is out of range",
                                        hint: "check that it is a complete recording")
                    }
                    packet.pointee[keyPath: keyPath] = moved
                }
            }
            packet.pointee.stream_index = Int32(mapping[index])
            packet.pointee.pos = -1
            let par = muxer.codecParameters(ofStream: mapping[index])
            if par.codec_type == AVMEDIA_TYPE_VIDEO, let late = lateStarts?[index], late > .zero, seen.insert(index).inserted {
                // The writer knew the picture's start: a first picture stretched back to zero goes
                // back there (see `Movie.readFragments`).
                let ticks = av_rescale_q(late.value, AVRational(num: 1, den: late.timescale), tb)
                if packet.pointee.duration >= ticks + 1 {
                    for keyPath in [\AVPacket.pts, \AVPacket.dts] where packet.pointee[keyPath: keyPath] != FFmpeg.noPTS {
                        packet.pointee[keyPath: keyPath] += ticks
                    }
                    packet.pointee.duration -= ticks
                }
            } else if par.codec_type == AVMEDIA_TYPE_AUDIO && par.frame_size > 0 && par.sample_rate > 0 {
                if !seen.contains(index) {
                    seen.insert(index)
                    held[index] = try Packet(referencing: packet)
                    continue
                }
                if let first = held.removeValue(forKey: index) {
                    let natural = Int64(par.frame_size) * Int64(tb.den) / (Int64(par.sample_rate) * Int64(max(tb.num, 1)))
                    if first.pointer.pointee.dts != FFmpeg.noPTS, packet.pointee.dts != FFmpeg.noPTS,
                       first.pointer.pointee.dts + natural < packet.pointee.dts {
                        first.pointer.pointee.dts = packet.pointee.dts - natural
                        first.pointer.pointee.pts = first.pointer.pointee.dts
                        first.pointer.pointee.duration = natural
                    }
                    try write(first.pointer)
                }
            }
            try write(packet)
        }
        for (key, first) in held {
            try write(first.pointer)
            held[key] = nil
        }
        for (index, last) in lengthless {
            if let length = lastLength[index] { last.pointer.pointee.duration = length }
            try put(last.pointer)
        }
        try muxer.setChapters(chapters, end: end)
        try muxer.finish()
        return (videoPackets, packets, end)
    }
}
