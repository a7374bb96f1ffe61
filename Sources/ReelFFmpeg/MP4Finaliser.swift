import Foundation
import ReelCore

/// Turns a fragmented MP4/MOV recording into a regular one where it lies, without copying its
/// media data ("hybrid MP4").
///
/// While recording, ``AssetWriter`` leaves a `free` box right after the fragmented file's empty
/// index (`moov` with `mvex`), big enough for the index of the expected recording. At a clean
/// stop the fragments (`moof`: per-sample sizes, durations, composition offsets, sync flags and
/// data offsets) are read back, a complete index with sample tables whose chunk offsets point at
/// the media data already in the `mdat` boxes is written into that space, and the fragment
/// headers are turned into `free` boxes. Ordinary readers then see a regular MP4: `ftyp`, `moov`,
/// then `free` and `mdat` boxes.
///
/// ## Crash safety
///
/// Every state the file passes through plays in full, and ``resume(_:stoppingAfter:)`` (used by
/// `reel recover`) completes any of them. In order, each step made durable (`fsync`) before
/// the next starts:
///
/// 1. The new index is written into the reserved space as a `free` box (the old index and the
///    fragments still describe the file): first its contents and the header of a `free` box
///    for the unused rest, all inside the reserved `free` box; then, in one 8-byte write, the
///    header that splits the reservation into the two.
/// 2. Its type becomes `moov`. Readers take the first `moov` (the old one) and skip the second
///    as a duplicate, so the file still plays from its fragments. The new index numbers its
///    tracks apart from the fragments' track IDs and keeps the old `mvex`; so once it is the
///    only index, a reader finds each fragment's defaults (`trex`) but no track of its ID and
///    skips the fragment instead of failing or adding its samples twice.
/// 3. The old index becomes `free`: the new one now describes every sample.
/// 4. Every `moof` (and `mfra`) becomes `free`.
/// 5. The tracks get their final IDs (1, 2, …) and, for MP4, the `ftyp` brands of a regular file.
/// 6. The `mvex` inside the new index becomes `free`: a regular file.
///
/// Until step 6 the index holds an `mvex` next to sample tables, which marks an unfinished
/// finalise for ``interruptedIndex(in:)``.
enum MP4Finaliser {
    /// Points at which a finalise can be stopped, for tests that interrupt it as a crash would.
    enum Step: Int, Comparable, CaseIterable, Sendable {
        /// Half of the new index is written into the reserved space.
        case indexHalfWritten = 1
        /// The new index is written as a `free` box.
        case indexWritten
        /// The new index is a `moov`, after the old one.
        case indexActivated
        /// The old index is `free`.
        case oldIndexRetired
        /// Half of the fragment headers are `free`.
        case halfFragmentsRetired
        /// Every fragment header is `free`.
        case fragmentsRetired
        /// The tracks have their final IDs.
        case tracksRenumbered
        /// The file is a regular MP4/MOV.
        case finished

        static func < (a: Step, b: Step) -> Bool { a.rawValue < b.rawValue }
    }

    /// Why the file cannot be finalised in place. Nothing was changed that alters what the file
    /// holds, so it can be finalised by copying instead.
    struct Unavailable: Error, CustomStringConvertible {
        var reason: String
        init(_ reason: String) { self.reason = reason }
        var description: String { reason }
    }

    /// What finalising in place did.
    struct Outcome {
        /// Bytes written to the file (the index and box headers; no media data).
        var bytesWritten: Int64
        /// The size of the new index.
        var indexSize: Int
        /// The size of the space reserved for it.
        var reservedSize: Int64
    }

    // MARK: - Reserving space

    /// The space to reserve for the index of a recording of `duration`: an estimate from the
    /// number of samples and fragments, with room for what sample tables usually need (sizes
    /// and composition offsets of every frame, sizes of every audio packet, a chunk per fragment
    /// and track). `baseIndexSize` is the size of the fragmented file's own index.
    static func reservation(duration: MediaTime, frameRate: FrameRate?, audioPacketRates: [Double],
                            fragmentInterval: MediaTime, keyframeInterval: Double?, baseIndexSize: Int) -> Int {
        let seconds = max(0, duration.seconds)
        var bytes = Double(baseIndexSize) + 512
        let tracks = Double((frameRate == nil ? 0 : 1) + audioPacketRates.count)
        bytes += 256 * tracks
        if let frameRate {
            // Size and composition offset, with slack for timing and sync sample entries.
            bytes += 16 * frameRate.framesPerSecond * seconds
        }
        for rate in audioPacketRates {
            bytes += 6 * rate * seconds
        }
        var fragmentsPerSecond = 1 / max(0.01, fragmentInterval.seconds)
        if let keyframeInterval, keyframeInterval > 0 { fragmentsPerSecond += 1 / keyframeInterval }
        // A chunk (stsc and co64 entries) per fragment and track.
        bytes += 20 * tracks * (fragmentsPerSecond * seconds + 2)
        let rounded = (Int(min(bytes, Double(maximumReservation))) + 4095) / 4096 * 4096
        return min(rounded, maximumReservation)
    }

    /// The most space ever reserved (enough for about ten hours at 60 fps with audio).
    static let maximumReservation = 64 << 20

    // MARK: - Finalising

    /// Finalises the fragmented file at `url` in place. `shift` is the time of the fragmented
    /// timeline at which the recording starts (the lead time the edit lists take off again).
    ///
    /// Throws ``Unavailable`` (having changed nothing the file means) when the file is not laid
    /// out as ``AssetWriter`` writes it, has no reserved space or too little, or — with
    /// `copyWhenSmall` — when the unused part of the reservation would be larger than the media
    /// data, so that copying the file is both cheap and gives a smaller file. Other errors
    /// during the in-place steps leave a file that plays and that ``resume(_:stoppingAfter:)`` completes.
    static func finalise(_ url: URL, shift: MediaTime, copyWhenSmall: Bool = false,
                         stoppingAfter stop: Step? = nil) throws -> Outcome {
        let file = try MP4File(url: url, writable: true)
        defer { file.close() }
        let layout: FragmentedLayout
        let index: [UInt8]
        do {
            layout = try FragmentedLayout(file)
            guard layout.moov.size <= 16 << 20 else { throw Unavailable("the moov box is implausibly large") }
            var movie = try Movie(moov: try file.read(at: layout.moov.offset, count: Int(layout.moov.size)))
            try movie.readFragments(layout, from: file)
            index = try movie.index(shift: shift)
        } catch let error as MP4LayoutError {
            throw Unavailable(error.reason)
        }
        let room = layout.reservation.size
        let fits = Int64(index.count) == room || Int64(index.count) + 8 <= room
        guard fits else {
            throw Unavailable("the index needs \(index.count) bytes, \(room) were reserved")
        }
        let unused = room - Int64(index.count)
        if copyWhenSmall && unused > layout.mediaBytes {
            throw Unavailable("the recording is small: copying its \(layout.mediaBytes) bytes beats keeping \(unused) unused bytes of reservation")
        }

        // 1. The index as a `free` box, followed by a `free` box for the rest of the space. All
        // but the first 8 bytes go in first, while the reserved `free` box still covers them;
        // then the header that splits the space in two.
        var bytes = index
        bytes.replaceSubrange(4..<8, with: [0x66, 0x72, 0x65, 0x65])  // "free"
        if unused > 0 {
            var rest = ByteWriter()
            rest.u32(UInt32(unused))
            rest.type(.free)
            bytes += rest.bytes
        }
        let start = layout.reservation.offset
        do {
            if layout.reservationIsSplit {
                // One 8-byte write makes the split space a single `free` box again, before its
                // inner headers are overwritten.
                var header = ByteWriter()
                header.u32(UInt32(room))
                header.type(.free)
                try file.write(header.bytes, at: start)
                try file.sync()
            }
            if stop == .indexHalfWritten {
                try file.write(Array(bytes[8..<(8 + (bytes.count - 8) / 2)]), at: start + 8)
                return Outcome(bytesWritten: Int64((bytes.count - 8) / 2), indexSize: index.count, reservedSize: room)
            }
            try file.write(Array(bytes[8...]), at: start + 8)
            try file.sync()
            try file.write(Array(bytes[0..<8]), at: start)
            try file.sync()
        } catch let error as ReelError {
            // The reservation is still one `free` box, or a `free` box for the index and one for the rest.
            throw Unavailable("cannot write the index: \(error)")
        }
        var written = Int64(bytes.count)
        if stop == .indexWritten { return Outcome(bytesWritten: written, indexSize: index.count, reservedSize: room) }
        do {
            written += try commit(file, index: layout.reservation.offset, stoppingAfter: stop)
        } catch let error as MP4LayoutError {
            throw ReelError(.invalidMedia, "cannot finish finalising \(url.lastPathComponent): \(error.reason)",
                            hint: "the file plays as it is; reel recover finishes it")
        }
        return Outcome(bytesWritten: written, indexSize: index.count, reservedSize: room)
    }

    /// Completes a finalise that was interrupted after its new index became a `moov` (see the
    /// steps above). Returns the bytes written, or `nil` if the file holds no such index.
    static func resume(_ url: URL, stoppingAfter stop: Step? = nil) throws -> Int64? {
        let file = try MP4File(url: url, writable: true)
        defer { file.close() }
        do {
            guard let index = try interruptedIndex(in: file) else { return nil }
            return try commit(file, index: index, stoppingAfter: stop)
        } catch let error as MP4LayoutError {
            throw ReelError(.invalidMedia, "cannot finish finalising \(url.lastPathComponent): \(error.reason)")
        }
    }

    /// Whether the file at `url` holds a finalise that was interrupted after step 2.
    static func isInterrupted(_ url: URL) -> Bool {
        guard let file = try? MP4File(url: url, writable: false) else { return false }
        defer { file.close() }
        return ((try? interruptedIndex(in: file)) ?? nil) != nil
    }

    /// The offset of a top-level `moov` that has sample tables and an `mvex`: the index of a
    /// finalise that did not finish.
    static func interruptedIndex(in file: MP4File) throws -> Int64? {
        let (boxes, _) = try file.topLevelBoxes()
        for box in boxes where box.type == .moov && box.size <= 256 << 20 {
            let bytes = try file.read(at: box.offset, count: Int(box.size))
            guard bytes.count == Int(box.size) else { continue }
            let children = try Box.children(of: bytes, in: Int(box.headerSize)..<bytes.count)
            guard children.first(.mvex) != nil else { continue }
            for trak in children where trak.type == .trak {
                if try sampleCount(ofTrak: trak, in: bytes) > 0 { return box.offset }
            }
        }
        return nil
    }

    /// The number of samples in a `trak`'s sample tables.
    private static func sampleCount(ofTrak trak: Box, in bytes: [UInt8]) throws -> Int64 {
        guard let mdia = try Box.children(of: bytes, in: trak.payloadRange).first(.mdia),
              let minf = try Box.children(of: bytes, in: mdia.payloadRange).first(.minf),
              let stbl = try Box.children(of: bytes, in: minf.payloadRange).first(.stbl),
              let stsz = try Box.children(of: bytes, in: stbl.payloadRange).first(.stsz) else { return 0 }
        var r = ByteReader(bytes, range: stsz.payloadRange)
        try r.skip(8)
        return Int64(try r.u32())
    }

    /// Steps 2 to 6 for the new index at `index`; each is skipped where it is done already.
    private static func commit(_ file: MP4File, index: Int64, stoppingAfter stop: Step?) throws -> Int64 {
        var written: Int64 = 0
        func retype(_ type: BoxType, at offset: Int64) throws {
            try file.setType(type, ofBoxAt: offset)
            written += 4
        }
        // 2. The new index becomes a `moov` (behind the old one, which readers still take).
        guard let current = try file.box(at: index, fileSize: try file.size()) else {
            throw ReelError(.invalidMedia, "the new index of \(file.url.lastPathComponent) is missing")
        }
        if current.type != .moov {
            try retype(.moov, at: index)
            try file.sync()
        }
        if stop == .indexActivated { return written }

        // 3. The old index becomes `free`.
        var boxes = try file.topLevelBoxes().boxes
        for box in boxes where box.type == .moov && box.offset != index {
            try retype(.free, at: box.offset)
        }
        try file.sync()
        if stop == .oldIndexRetired { return written }

        // 4. The fragment headers become `free`.
        boxes = try file.topLevelBoxes().boxes
        let fragments = boxes.filter { $0.type == .moof || $0.type == .mfra }
        for (i, box) in fragments.enumerated() {
            if stop == .halfFragmentsRetired && i == fragments.count / 2 { return written }
            try retype(.free, at: box.offset)
        }
        try file.sync()
        if stop == .fragmentsRetired { return written }

        // 5. Final track IDs and brands.
        guard let moovBox = try file.box(at: index, fileSize: try file.size()), moovBox.type == .moov else {
            throw ReelError(.invalidMedia, "the new index of \(file.url.lastPathComponent) is missing")
        }
        let moov = try file.read(at: index, count: Int(moovBox.size))
        let children = try Box.children(of: moov, in: Int(moovBox.headerSize)..<moov.count)
        var patches: [(offset: Int64, value: UInt32)] = []
        var number: UInt32 = 0
        for trak in children where trak.type == .trak {
            number += 1
            guard let tkhd = try Box.children(of: moov, in: trak.payloadRange).first(.tkhd), tkhd.payloadSize >= 24 else { continue }
            let version = moov[Int(tkhd.payloadOffset)]
            patches.append((tkhd.payloadOffset + (version == 1 ? 20 : 12), number))
        }
        if let mvhd = children.first(.mvhd), mvhd.payloadSize >= 100 {
            patches.append((mvhd.end - 4, number + 1))
        }
        for patch in patches {
            var r = ByteReader(moov, range: Int(patch.offset)..<Int(patch.offset) + 4)
            guard try r.u32() != patch.value else { continue }
            var w = ByteWriter()
            w.u32(patch.value)
            try file.write(w.bytes, at: index + patch.offset)
            written += 4
        }
        written += try rewriteBrands(file)
        try file.sync()
        if stop == .tracksRenumbered { return written }

        // 6. The `mvex` becomes `free`: a regular file.
        if let mvex = children.first(.mvex) {
            try retype(.free, at: index + mvex.offset)
            try file.sync()
        }
        return written
    }

    /// Gives an MP4 that FFmpeg wrote fragmented (`iso5`/`iso6` brands) the brands of a regular
    /// file, in the same number of bytes. MOV (`qt  `) is left as it is.
    private static func rewriteBrands(_ file: MP4File) throws -> Int64 {
        guard let ftyp = try file.box(at: 0, fileSize: try file.size()), ftyp.type == .ftyp,
              ftyp.headerSize == 8, ftyp.size >= 16, ftyp.size <= 64, (ftyp.size - 16) % 4 == 0 else { return 0 }
        let bytes = try file.read(at: 8, count: 4)
        let major = BoxType(rawValue: try { var r = ByteReader(bytes); return try r.u32() }())
        guard major == "iso5" || major == "iso6" else { return 0 }
        var w = ByteWriter()
        w.type("isom")
        w.u32(0x200)
        let brands: [BoxType] = ["isom", "iso2", "mp41", "avc1"]
        for i in 0..<Int((ftyp.size - 16) / 4) { w.type(i < brands.count ? brands[i] : "isom") }
        try file.write(w.bytes, at: 8)
        return Int64(w.bytes.count)
    }
}

// MARK: - The fragmented file

/// The top-level boxes of a fragmented recording as ``AssetWriter`` writes it: `ftyp`, `moov`
/// (with `mvex`), the reserved `free` box, then `moof`/`mdat` pairs and perhaps an `mfra`.
struct FragmentedLayout {
    var moov: Box
    /// The reserved space: the `free` boxes right after the `moov`, as one box.
    var reservation: Box
    /// Whether the reserved space is more than one `free` box (an earlier finalise that stopped
    /// after step 1 split it): it is made one again before anything is written inside it.
    var reservationIsSplit = false
    var fragments: [Box] = []
    /// The payloads of the `mdat` boxes, in file order.
    var mediaData: [Range<Int64>] = []
    var mediaBytes: Int64 { mediaData.reduce(0) { $0 + ($1.upperBound - $1.lowerBound) } }

    init(_ file: MP4File) throws {
        typealias No = MP4Finaliser.Unavailable
        let (boxes, truncated) = try file.topLevelBoxes()
        guard !truncated else { throw No("the file ends inside a box (it was cut off)") }
        guard boxes.first?.type == .ftyp else { throw No("the file does not start with an ftyp box") }
        var moov: Box?
        var reservation: Box?
        var sawMfra = false
        for (i, box) in boxes.enumerated().dropFirst() {
            guard !sawMfra else { throw No("boxes follow the mfra box") }
            switch box.type {
            case .moov:
                guard moov == nil, fragments.isEmpty else { throw No("the file has more than one moov box") }
                moov = box
            case .free, .skip:
                if moov != nil, fragments.isEmpty, boxes[i - 1].type == .moov {
                    reservation = box
                } else if var first = reservation, fragments.isEmpty, first.end == box.offset, box.headerSize == 8 {
                    first.size += box.size
                    reservation = first
                    reservationIsSplit = true
                }
            case .wide:
                break
            case .moof:
                guard moov != nil else { throw No("a fragment comes before the moov box") }
                fragments.append(box)
            case .mdat:
                guard !fragments.isEmpty else { throw No("media data comes before the first fragment") }
                mediaData.append(box.payloadOffset..<box.end)
            case .mfra:
                sawMfra = true
            default:
                throw No("the file holds an unexpected \(box.type) box")
            }
        }
        guard let moov else { throw No("the file has no moov box") }
        guard !fragments.isEmpty else { throw No("the file has no fragments") }
        guard let reservation, reservation.headerSize == 8 else { throw No("no space was reserved for the index") }
        guard reservation.size <= Int64(UInt32.max) else { throw No("the reserved space is implausibly large") }
        self.moov = moov
        self.reservation = reservation
    }

    /// Whether `range` lies inside the payload of one `mdat` box.
    func holds(_ range: Range<Int64>) -> Bool {
        var low = 0, high = mediaData.count
        while low < high {
            let mid = (low + high) / 2
            if mediaData[mid].lowerBound <= range.lowerBound { low = mid + 1 } else { high = mid }
        }
        guard low > 0 else { return false }
        let data = mediaData[low - 1]
        return range.lowerBound >= data.lowerBound && range.upperBound <= data.upperBound
    }
}

/// The tracks of a fragmented recording: what its empty index says about them, and the samples
/// its fragments hold.
struct Movie {
    typealias No = MP4Finaliser.Unavailable

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

    /// Reads the samples of every fragment.
    mutating func readFragments(_ layout: FragmentedLayout, from file: MP4File) throws {
        for moof in layout.fragments {
            guard moof.size <= 64 << 20 else { throw No("a fragment header is implausibly large") }
            let bytes = try file.read(at: moof.offset, count: Int(moof.size))
            guard bytes.count == Int(moof.size) else { throw No("a fragment header is cut short") }
            var previousEnd = moof.offset  // where the data of the previous track fragment ended
            for traf in try Box.children(of: bytes, in: Int(moof.headerSize)..<bytes.count) {
                switch traf.type {
                case .mfhd: continue
                case .traf: previousEnd = try readTrackFragment(traf, in: bytes, moofOffset: moof.offset,
                                                                 previousEnd: previousEnd, layout: layout)
                default: throw No("a fragment holds an unexpected \(traf.type) box")
                }
            }
        }
        for (i, track) in tracks.enumerated() {
            guard !track.sizes.isEmpty else { throw No("track \(track.id) has no samples") }
            if track.handler == "soun" && track.durations.count >= 2 && track.durations[0] > track.durations[1] {
                // A fragmented MP4 starts every track at zero: a track whose first packet came
                // later has that packet stretched back to zero. Give it its own length back.
                let extra = Int64(track.durations[0] - track.durations[1])
                tracks[i].durations[0] = track.durations[1]
                tracks[i].firstDecodeTime = (track.firstDecodeTime ?? 0) + extra
            }
        }
    }

    /// Reads one `traf`; returns where its data ends.
    private mutating func readTrackFragment(_ traf: Box, in bytes: [UInt8], moofOffset: Int64, previousEnd: Int64,
                                            layout: FragmentedLayout) throws -> Int64 {
        let children = try Box.children(of: bytes, in: traf.payloadRange)
        guard let tfhd = children.first(.tfhd) else { throw No("a track fragment has no tfhd box") }
        var r = ByteReader(bytes, range: tfhd.payloadRange)
        try r.skip(1)
        let flags = try r.u24()
        let id = try r.u32()
        guard let t = tracks.firstIndex(where: { $0.id == id }) else { throw No("a fragment names an unknown track \(id)") }
        guard flags & 0x010000 == 0 else { throw No("a fragment is empty (duration-is-empty)") }
        var base: Int64
        if flags & 0x01 != 0 {
            base = Int64(bitPattern: try r.u64())
        } else if flags & 0x020000 != 0 {
            base = moofOffset
        } else {
            base = previousEnd
        }
        var defaults = tracks[t].defaults
        if flags & 0x02 != 0 { defaults.descriptionIndex = try r.u32() }
        if flags & 0x08 != 0 { defaults.duration = try r.u32() }
        if flags & 0x10 != 0 { defaults.size = try r.u32() }
        if flags & 0x20 != 0 { defaults.flags = try r.u32() }

        if let tfdt = children.first(.tfdt) {
            var d = ByteReader(bytes, range: tfdt.payloadRange)
            let version = try d.u8()
            try d.skip(3)
            let time = version == 1 ? Int64(bitPattern: try d.u64()) : Int64(try d.u32())
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

        var dataEnd = base
        for trun in children where trun.type == .trun {
            var s = ByteReader(bytes, range: trun.payloadRange)
            let version = try s.u8()
            let runFlags = try s.u24()
            let count = try s.u32()
            guard count > 0 else { continue }
            var offset = dataEnd
            if runFlags & 0x01 != 0 { offset = base + Int64(Int32(bitPattern: try s.u32())) }
            var firstFlags: UInt32?
            if runFlags & 0x04 != 0 { firstFlags = try s.u32() }
            let perSample = [0x100, 0x200, 0x400, 0x800].filter { runFlags & UInt32($0) != 0 }.count * 4
            guard Int(count) <= s.remaining / max(perSample, 1) || perSample == 0 else {
                throw No("a trun box lists more samples than it holds")
            }
            var runBytes: Int64 = 0
            for i in 0..<count {
                let duration = runFlags & 0x100 != 0 ? try s.u32() : defaults.duration
                let size = runFlags & 0x200 != 0 ? try s.u32() : defaults.size
                var sampleFlags = runFlags & 0x400 != 0 ? try s.u32() : defaults.flags
                if i == 0, let firstFlags { sampleFlags = firstFlags }
                var composition: Int64 = 0
                if runFlags & 0x800 != 0 {
                    let raw = try s.u32()
                    composition = version == 0 ? Int64(raw) : Int64(Int32(bitPattern: raw))
                }
                tracks[t].sizes.append(size)
                tracks[t].durations.append(duration)
                tracks[t].compositionOffsets.append(composition)
                if sampleFlags & 0x0001_0000 == 0 { tracks[t].syncSamples.append(UInt32(tracks[t].sizes.count)) }
                tracks[t].nextDecodeTime += Int64(duration)
                runBytes += Int64(size)
            }
            guard layout.holds(offset..<(offset + runBytes)) else {
                throw No("the samples of a fragment of track \(id) lie outside the media data")
            }
            tracks[t].chunks.append(Chunk(offset: offset, samples: count, descriptionIndex: defaults.descriptionIndex))
            dataEnd = offset + runBytes
        }
        for child in children where ![BoxType.tfhd, .tfdt, .trun].contains(child.type) {
            throw No("a track fragment holds an unexpected \(child.type) box")
        }
        return dataEnd
    }

    // MARK: The regular index

    /// The complete `moov` box: the fragments' samples in sample tables, an edit list per track
    /// that starts the presentation at `shift` on the fragmented timeline, temporary track IDs
    /// apart from the fragments', and the old `mvex` (see ``MP4Finaliser``).
    func index(shift: MediaTime) throws -> [UInt8] {
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
            var list: [(Int64, Int64)] = []
            if start >= 0 {
                guard end > start else { throw No("track \(track.id) ends before the recording starts") }
                list.append((movie(end - start), start))
            } else {
                list.append((movie(-start), -1))
                list.append((movie(end), 0))
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
