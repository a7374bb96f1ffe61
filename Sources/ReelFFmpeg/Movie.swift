import Foundation
import ReelCore

/// The tracks of a fragmented recording: what its empty index says about them, and the samples
/// its fragments hold.
struct Movie {
    typealias No = MP4Finaliser.CopyInstead

    struct Chunk {
        var offset: Int64
        var samples: UInt32
        var descriptionIndex: UInt32
    }

    struct Track {
        var id: UInt32
        var tkhdVersion: UInt8 = 0
        var tkhdFlags: UInt32 = 0
        var tkhdTimes: (UInt64, UInt64) = (0, 0)
        /// The fields of `tkhd` after its duration.
        var tkhdTail: [UInt8] = []
        var mdhdTimes: (UInt64, UInt64) = (0, 0)
        var timescale: UInt32 = 0
        /// Language and pre-defined fields of `mdhd`.
        var mdhdTail: [UInt8] = []
        var handler: BoxType = "    "
        /// `mdia` children other than `mdhd` and `minf`, as they were (`hdlr`…).
        var mdiaBoxes: [[UInt8]] = []
        /// `minf` children before and after `stbl`, as they were (`vmhd`, `smhd`, `dinf`…).
        var minfBoxes: [[UInt8]] = []
        var stblPosition = 0
        var stsd: [UInt8] = []
        var sampleEntry: BoxType = "    "
        /// `trak` children other than `tkhd`, `edts` and `mdia`, as they were (`udta`…).
        var trakBoxes: [[UInt8]] = []
        var defaults = (descriptionIndex: UInt32(1), duration: UInt32(0), size: UInt32(0), flags: UInt32(0))

        var sizes: [UInt32] = []
        var durations: [UInt32] = []
        var compositionOffsets: [Int64] = []
        var syncSamples: [UInt32] = []
        var chunks: [Chunk] = []
        var firstDecodeTime: Int64?
        var nextDecodeTime: Int64 = 0
    }

    var movieTimescale: UInt32 = 1000
    var mvhdTimes: (UInt64, UInt64) = (0, 0)
    /// The fields of `mvhd` from rate to before `next_track_ID`.
    var mvhdTail: [UInt8] = []
    var tracks: [Track] = []
    /// `moov` children other than `mvhd`, `trak` and `mvex`, as they were (`udta`…).
    var movieBoxes: [[UInt8]] = []
    /// The `mvex` box as it was (kept, as `free` in the end, for crash safety).
    var mvex: [UInt8] = []

    /// Reads the empty index of a fragmented file.
    init(moov bytes: [UInt8]) throws {
        guard bytes.count >= 8 else { throw No("the moov box is cut short") }
        let children = try Box.children(of: bytes, in: 8..<bytes.count)
        guard let mvhd = children.first(.mvhd), children.first(.mvex) != nil else {
            throw No("the moov box is not a fragmented file's")
        }
        var r = ByteReader(bytes, range: mvhd.payloadRange)
        let version = try r.u8()
        try r.skip(3)
        if version == 1 {
            mvhdTimes = (try r.u64(), try r.u64())
            movieTimescale = try r.u32()
            try r.skip(8)
        } else {
            mvhdTimes = (UInt64(try r.u32()), UInt64(try r.u32()))
            movieTimescale = try r.u32()
            try r.skip(4)
        }
        guard r.remaining == 80 else { throw No("the mvhd box has an unexpected size") }
        guard (1...10_000_000).contains(movieTimescale) else { throw No("the movie timescale \(movieTimescale) is implausible") }
        mvhdTail = Array(try r.read(76))

        for child in children {
            switch child.type {
            case .mvhd: break
            case .trak: tracks.append(try Self.track(child, in: bytes))
            case .mvex:
                mvex = Array(bytes[Int(child.offset)..<Int(child.end)])
                for trex in try Box.children(of: bytes, in: child.payloadRange) where trex.type == .trex {
                    var t = ByteReader(bytes, range: trex.payloadRange)
                    try t.skip(4)
                    let id = try t.u32()
                    guard let i = tracks.firstIndex(where: { $0.id == id }) else { throw No("a trex box names no track") }
                    tracks[i].defaults = (try t.u32(), try t.u32(), try t.u32(), try t.u32())
                }
            default:
                movieBoxes.append(Array(bytes[Int(child.offset)..<Int(child.end)]))
            }
        }
        guard !tracks.isEmpty else { throw No("the file has no tracks") }
        guard Set(tracks.map(\.id)).count == tracks.count else { throw No("two tracks share an ID") }
    }

    private static func track(_ trak: Box, in bytes: [UInt8]) throws -> Track {
        var track = Track(id: 0)
        var sawMedia = false
        for child in try Box.children(of: bytes, in: trak.payloadRange) {
            switch child.type {
            case .tkhd:
                var r = ByteReader(bytes, range: child.payloadRange)
                track.tkhdVersion = try r.u8()
                track.tkhdFlags = try r.u24()
                if track.tkhdVersion == 1 {
                    track.tkhdTimes = (try r.u64(), try r.u64())
                    track.id = try r.u32()
                    try r.skip(12)
                } else {
                    track.tkhdTimes = (UInt64(try r.u32()), UInt64(try r.u32()))
                    track.id = try r.u32()
                    try r.skip(8)
                }
                guard r.remaining == 60 else { throw No("the tkhd box has an unexpected size") }
                track.tkhdTail = Array(try r.read(60))
            case .edts:
                break  // a fragmented file's edit list (if any) is replaced
            case .mdia:
                sawMedia = true
                try readMedia(child, in: bytes, into: &track)
            default:
                track.trakBoxes.append(Array(bytes[Int(child.offset)..<Int(child.end)]))
            }
        }
        guard track.id != 0, sawMedia, (1...10_000_000).contains(track.timescale), !track.stsd.isEmpty else {
            throw No("a track lacks its header, media header or sample descriptions")
        }
        return track
    }

    private static func readMedia(_ mdia: Box, in bytes: [UInt8], into track: inout Track) throws {
        for child in try Box.children(of: bytes, in: mdia.payloadRange) {
            switch child.type {
            case .mdhd:
                var r = ByteReader(bytes, range: child.payloadRange)
                let version = try r.u8()
                try r.skip(3)
                if version == 1 {
                    track.mdhdTimes = (try r.u64(), try r.u64())
                    track.timescale = try r.u32()
                    try r.skip(8)
                } else {
                    track.mdhdTimes = (UInt64(try r.u32()), UInt64(try r.u32()))
                    track.timescale = try r.u32()
                    try r.skip(4)
                }
                guard r.remaining == 4 else { throw No("the mdhd box has an unexpected size") }
                track.mdhdTail = Array(try r.read(4))
            case .minf:
                for box in try Box.children(of: bytes, in: child.payloadRange) {
                    guard box.type == .stbl else {
                        track.minfBoxes.append(Array(bytes[Int(box.offset)..<Int(box.end)]))
                        continue
                    }
                    track.stblPosition = track.minfBoxes.count
                    for table in try Box.children(of: bytes, in: box.payloadRange) {
                        switch table.type {
                        case .stsd:
                            track.stsd = Array(bytes[Int(table.offset)..<Int(table.end)])
                            if let entry = try Box.children(of: bytes, in: Int(table.payloadOffset) + 8..<Int(table.end)).first {
                                track.sampleEntry = entry.type
                            }
                        case .stsz:
                            var r = ByteReader(bytes, range: table.payloadRange)
                            try r.skip(8)
                            guard try r.u32() == 0 else { throw No("the moov box already lists samples") }
                        case .stts, .stsc, .stco, .co64, .ctts, .stss, .sgpd, .sbgp, .stz2:
                            break
                        default:
                            throw No("the sample table holds an unexpected \(table.type) box")
                        }
                    }
                }
            default:
                if child.type == .hdlr {
                    var r = ByteReader(bytes, range: child.payloadRange)
                    try r.skip(8)
                    track.handler = BoxType(rawValue: try r.u32())
                }
                track.mdiaBoxes.append(Array(bytes[Int(child.offset)..<Int(child.end)]))
            }
        }
    }

    // MARK: Fragments

    /// Reads the samples of every fragment. `lateStarts` (by track index, when the writer
    /// knows them) says how much later than the earliest each track's first packet came.
    mutating func readFragments(_ layout: FragmentedLayout, from file: MP4File, lateStarts: [Int: MediaTime]? = nil) throws {
        for moof in layout.fragments {
            guard moof.size <= 64 << 20 else { throw No("a fragment header is implausibly large") }
            let bytes = try file.read(at: moof.offset, count: Int(moof.size))
            guard bytes.count == Int(moof.size) else { throw No("a fragment header is cut short") }
            for fragment in try TrackFragment.all(inMoof: bytes, at: moof.offset, headerSize: moof.headerSize, defaults: defaults(ofTrack:)) {
                try add(fragment, layout: layout)
            }
        }
        for (i, track) in tracks.enumerated() {
            guard !track.sizes.isEmpty else { throw No("track \(track.id) has no samples") }
            // A fragmented MP4 starts every track at zero: a track whose first packet came
            // later has that packet stretched back to zero. Give it its own length back: by
            // what the writer knew (a picture's length varies: a camera that started seconds
            // after the sound had its first picture shown from the start), else, for sound,
            // whose packets are all as long, by the second packet's length. Not for a picture
            // without the writer's word (a recovery): a picture's length varies (frame modes
            // leave repeats out, a lost frame lengthens the one before), so a long first one
            // tells no late start; left stretched, every later picture keeps its time.
            var extra: Int64 = 0
            if track.handler == "soun" {
                if track.durations.count >= 2 && track.durations[0] > track.durations[1] {
                    extra = Int64(track.durations[0] - track.durations[1])
                }
            } else if let late = lateStarts?[i] {
                // Only a first picture that was stretched: it lasts the lateness and at least
                // half a picture more.
                extra = late.convertedValue(to: Int32(clamping: track.timescale), rounding: .nearest)
                let typical = Int64(track.durations.count >= 2 ? track.durations[1] : track.durations[0])
                if Int64(track.durations[0]) < extra + typical / 2 { extra = 0 }
            }
            guard extra > 0 else { continue }
            tracks[i].durations[0] = UInt32(Int64(track.durations[0]) - extra)
            tracks[i].firstDecodeTime = (track.firstDecodeTime ?? 0) + extra
        }
    }

    /// The sample defaults of the track with ID `id` (its `trex`), `nil` if there is none.
    func defaults(ofTrack id: UInt32) -> TrackFragment.Defaults? {
        tracks.first { $0.id == id }?.defaults
    }

    /// Adds the samples of one track fragment to its track.
    private mutating func add(_ fragment: TrackFragment, layout: FragmentedLayout) throws {
        let id = fragment.trackID
        guard let t = tracks.firstIndex(where: { $0.id == id }) else { throw No("a fragment names an unknown track \(id)") }
        if let time = fragment.decodeTime {
            if tracks[t].firstDecodeTime == nil {
                tracks[t].firstDecodeTime = time
                tracks[t].nextDecodeTime = time
            } else if time != tracks[t].nextDecodeTime {
                // A gap or an overlap between fragments: the previous sample lasts up to this one.
                let gap = time - tracks[t].nextDecodeTime
                guard let last = tracks[t].durations.last, Int64(last) + gap > 0, Int64(last) + gap <= Int64(UInt32.max) else {
                    throw No("the fragments of track \(id) overlap")
                }
                tracks[t].durations[tracks[t].durations.count - 1] = UInt32(Int64(last) + gap)
                tracks[t].nextDecodeTime = time
            }
        } else if tracks[t].firstDecodeTime == nil {
            tracks[t].firstDecodeTime = 0
        }
        for run in fragment.runs {
            for sample in run.samples {
                tracks[t].sizes.append(sample.size)
                tracks[t].durations.append(sample.duration)
                tracks[t].compositionOffsets.append(sample.compositionOffset)
                if sample.isSync { tracks[t].syncSamples.append(UInt32(tracks[t].sizes.count)) }
                tracks[t].nextDecodeTime += Int64(sample.duration)
            }
            guard layout.holds(run.dataOffset..<(run.dataOffset + run.byteCount)) else {
                throw No("the samples of a fragment of track \(id) lie outside the media data")
            }
            tracks[t].chunks.append(Chunk(offset: run.dataOffset, samples: UInt32(run.samples.count), descriptionIndex: fragment.descriptionIndex))
        }
    }

    // MARK: The regular index

    /// The complete `moov` box: the fragments' samples in sample tables, an edit list per track
    /// that starts the presentation at `shift` on the fragmented timeline, temporary track IDs
    /// apart from the fragments', and the old `mvex` (see ``MP4Finaliser``). With `end` (a time
    /// of the presentation, from its start) the edit lists end there: what lies past it is not
    /// presented (an asset writer's session end).
    func index(shift: MediaTime, end presentationEnd: MediaTime? = nil, chapters: [Chapter] = []) throws -> [UInt8] {
        let firstTemporaryID = (tracks.map(\.id).max() ?? 0) + 1
        var edits: [[(duration: Int64, mediaTime: Int64)]] = []
        for track in tracks {
            let start = shift.convertedValue(to: Int32(clamping: track.timescale), rounding: .nearest) - (track.firstDecodeTime ?? 0)
            var decode: Int64 = 0, end: Int64 = 0
            for i in track.durations.indices {
                end = max(end, decode + track.compositionOffsets[i] + Int64(track.durations[i]))
                decode += Int64(track.durations[i])
            }
            func movie(_ ticks: Int64) -> Int64 {
                MediaTime(value: ticks, timescale: Int32(clamping: track.timescale)).convertedValue(to: Int32(clamping: movieTimescale))
            }
            // The most of the presentation the track may fill, in its ticks.
            let limit = presentationEnd.map { $0.convertedValue(to: Int32(clamping: track.timescale), rounding: .nearest) } ?? .max
            var list: [(Int64, Int64)] = []
            if start >= 0 {
                guard end > start else { throw No("track \(track.id) ends before the recording starts") }
                guard limit > 0 else { throw No("the presentation ends before it starts") }
                list.append((movie(min(end - start, limit)), start))
            } else {
                // The track begins after the recording: empty until its first sample is shown
                // (a picture's composition offset past its decoding), then from there.
                let shown = track.compositionOffsets.first.map { max(0, $0) } ?? 0
                list.append((movie(min(-start + shown, limit)), -1))
                if limit > -start + shown { list.append((movie(min(end - shown, limit + start - shown)), shown)) }
            }
            edits.append(list)
        }
        let trackDurations = edits.map { $0.reduce(0) { $0 + $1.0 } }
        let movieDuration = trackDurations.max() ?? 0

        var w = ByteWriter()
        try w.box(.moov) { w in
            let long = movieDuration > Int64(UInt32.max)
            w.fullBox(.mvhd, version: long ? 1 : 0) { w in
                if long {
                    w.u64(mvhdTimes.0); w.u64(mvhdTimes.1); w.u32(movieTimescale); w.u64(UInt64(movieDuration))
                } else {
                    w.u32(UInt32(truncatingIfNeeded: mvhdTimes.0)); w.u32(UInt32(truncatingIfNeeded: mvhdTimes.1))
                    w.u32(movieTimescale); w.u32(UInt32(movieDuration))
                }
                w.append(mvhdTail)
                w.u32(firstTemporaryID + UInt32(tracks.count))
            }
            for (i, track) in tracks.enumerated() {
                try write(track, id: firstTemporaryID + UInt32(i), duration: trackDurations[i], edits: edits[i], into: &w)
            }
            for box in movieBoxes { w.append(box) }
            // A chapter past the presentation's end (a marker whose media was never written) is left out.
            let shown = Chapter.beginning(chapters, before: MediaTime(value: movieDuration, timescale: Int32(clamping: movieTimescale)))
            if !shown.isEmpty { w.append(MP4ChapterList.box(shown)) }
            w.append(mvex)
        }
        return w.bytes
    }

    private func write(_ track: Track, id: UInt32, duration: Int64, edits: [(duration: Int64, mediaTime: Int64)],
                       into w: inout ByteWriter) throws {
        let mediaDuration = track.durations.reduce(Int64(0)) { $0 + Int64($1) }
        try w.box(.trak) { w in
            let long = duration > Int64(UInt32.max)
            w.fullBox(.tkhd, version: long ? 1 : 0, flags: track.tkhdFlags) { w in
                if long {
                    w.u64(track.tkhdTimes.0); w.u64(track.tkhdTimes.1); w.u32(id); w.u32(0); w.u64(UInt64(duration))
                } else {
                    w.u32(UInt32(truncatingIfNeeded: track.tkhdTimes.0)); w.u32(UInt32(truncatingIfNeeded: track.tkhdTimes.1))
                    w.u32(id); w.u32(0); w.u32(UInt32(duration))
                }
                w.append(track.tkhdTail)
            }
            w.box(.edts) { w in
                let wide = edits.contains { $0.duration > Int64(Int32.max) || $0.mediaTime > Int64(Int32.max) }
                w.fullBox(.elst, version: wide ? 1 : 0) { w in
                    w.u32(UInt32(edits.count))
                    for edit in edits {
                        if wide {
                            w.u64(UInt64(edit.duration)); w.u64(UInt64(bitPattern: edit.mediaTime))
                        } else {
                            w.u32(UInt32(edit.duration)); w.u32(UInt32(bitPattern: Int32(edit.mediaTime)))
                        }
                        w.u16(1); w.u16(0)  // rate 1.0
                    }
                }
            }
            try w.box(.mdia) { w in
                let longMedia = mediaDuration > Int64(UInt32.max)
                w.fullBox(.mdhd, version: longMedia ? 1 : 0) { w in
                    if longMedia {
                        w.u64(track.mdhdTimes.0); w.u64(track.mdhdTimes.1); w.u32(track.timescale); w.u64(UInt64(mediaDuration))
                    } else {
                        w.u32(UInt32(truncatingIfNeeded: track.mdhdTimes.0)); w.u32(UInt32(truncatingIfNeeded: track.mdhdTimes.1))
                        w.u32(track.timescale); w.u32(UInt32(mediaDuration))
                    }
                    w.append(track.mdhdTail)
                }
                for box in track.mdiaBoxes { w.append(box) }
                try w.box(.minf) { w in
                    for (i, box) in track.minfBoxes.enumerated() {
                        if i == track.stblPosition { try writeSampleTables(track, into: &w) }
                        w.append(box)
                    }
                    if track.stblPosition >= track.minfBoxes.count { try writeSampleTables(track, into: &w) }
                }
            }
            for box in track.trakBoxes { w.append(box) }
        }
    }

    private func writeSampleTables(_ track: Track, into w: inout ByteWriter) throws {
        let count = UInt32(track.sizes.count)
        try w.box(.stbl) { w in
            w.append(track.stsd)
            // Decoding times: runs of equal durations.
            var runs: [(UInt32, UInt32)] = []
            for d in track.durations {
                if let last = runs.last, last.1 == d { runs[runs.count - 1].0 += 1 } else { runs.append((1, d)) }
            }
            w.fullBox(.stts, version: 0) { w in
                w.u32(UInt32(runs.count))
                for run in runs { w.u32(run.0); w.u32(run.1) }
            }
            if track.syncSamples.count < track.sizes.count {
                w.fullBox(.stss, version: 0) { w in
                    w.u32(UInt32(track.syncSamples.count))
                    for s in track.syncSamples { w.u32(s) }
                }
            }
            if track.compositionOffsets.contains(where: { $0 != 0 }) {
                guard track.compositionOffsets.allSatisfy({ $0 >= Int64(Int32.min) && $0 <= Int64(UInt32.max) }) else {
                    throw No("a composition offset of track \(track.id) is out of range")
                }
                let signed = track.compositionOffsets.contains { $0 < 0 }
                if signed && track.compositionOffsets.contains(where: { $0 > Int64(Int32.max) }) {
                    throw No("a composition offset of track \(track.id) is out of range")
                }
                var offsets: [(UInt32, Int64)] = []
                for o in track.compositionOffsets {
                    if let last = offsets.last, last.1 == o { offsets[offsets.count - 1].0 += 1 } else { offsets.append((1, o)) }
                }
                w.fullBox(.ctts, version: signed ? 1 : 0) { w in
                    w.u32(UInt32(offsets.count))
                    for run in offsets { w.u32(run.0); w.u32(UInt32(truncatingIfNeeded: run.1)) }
                }
            }
            // Chunks: one per run of samples in a fragment.
            var chunkRuns: [(first: UInt32, samples: UInt32, description: UInt32)] = []
            for (i, chunk) in track.chunks.enumerated() {
                if let last = chunkRuns.last, last.samples == chunk.samples, last.description == chunk.descriptionIndex { continue }
                chunkRuns.append((UInt32(i + 1), chunk.samples, chunk.descriptionIndex))
            }
            w.fullBox(.stsc, version: 0) { w in
                w.u32(UInt32(chunkRuns.count))
                for run in chunkRuns { w.u32(run.first); w.u32(run.samples); w.u32(run.description) }
            }
            w.fullBox(.stsz, version: 0) { w in
                if let first = track.sizes.first, track.sizes.allSatisfy({ $0 == first }) {
                    w.u32(first); w.u32(count)
                } else {
                    w.u32(0); w.u32(count)
                    for s in track.sizes { w.u32(s) }
                }
            }
            if track.chunks.contains(where: { $0.offset > Int64(UInt32.max) }) {
                w.fullBox(.co64, version: 0) { w in
                    w.u32(UInt32(track.chunks.count))
                    for c in track.chunks { w.u64(UInt64(c.offset)) }
                }
            } else {
                w.fullBox(.stco, version: 0) { w in
                    w.u32(UInt32(track.chunks.count))
                    for c in track.chunks { w.u32(UInt32(c.offset)) }
                }
            }
            if track.sampleEntry == .mp4a {
                // AAC: each packet needs the one before it to decode fully (what FFmpeg writes too).
                w.fullBox(.sgpd, version: 1) { w in
                    w.type(.roll); w.u32(2); w.u32(1); w.u16(UInt16(bitPattern: -1))
                }
                w.fullBox(.sbgp, version: 0) { w in
                    w.type(.roll); w.u32(1); w.u32(count); w.u32(1)
                }
            }
        }
    }
}
