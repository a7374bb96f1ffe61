import Foundation
import ReelCore
import ReelSystem

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
/// Every state the file passes through plays in full, and ``resume(_:fault:)`` (used by
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

    /// A fault injected into a finalise (tests); production passes `nil`. The one place where
    /// finalising can be made to fail on purpose.
    enum Fault: Sendable, Hashable {
        /// Finalising stops right after `step`, as if the process died there: what that step
        /// wrote is on the disk, nothing after it is.
        case crash(after: Step)

        /// Whether finalising stops once `step` is done.
        func stops(after step: Step) -> Bool {
            switch self {
            case .crash(let last): return last == step
            }
        }
    }

    /// The file cannot be finalised in place, and nothing was changed that alters what it holds:
    /// finalise it by copying instead. `reason` says why (it is reported with the copy).
    struct CopyInstead: Error, CustomStringConvertible {
        var reason: String
        /// Only because copying gives a smaller file: finalising in place would work too.
        var isChoice: Bool
        init(_ reason: String, isChoice: Bool = false) {
            self.reason = reason
            self.isChoice = isChoice
        }
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
    /// timeline at which the recording starts (the lead time the edit lists take off again);
    /// `chapters` go into the new index as a chapter list.
    ///
    /// Throws ``CopyInstead`` (having changed nothing the file means) when the file is not laid
    /// out as ``AssetWriter`` writes it, has no reserved space or too little, or — with
    /// `copyWhenSmall` — when the unused part of the reservation would be larger than the media
    /// data, so that copying the file is both cheap and gives a smaller file (unless `end` cuts
    /// media off, which a copy would show). Other errors
    /// during the in-place steps leave a file that plays and that ``resume(_:fault:)`` completes.
    /// The file is opened through `path` if given (see ``MP4File``).
    ///
    /// Each step runs through `gate` (the recording's, see ``FinaliseGate``): an abort that
    /// gives the finalise up stops it after the step under way, as a crash there would
    /// (``FinaliseGate/GivenUp`` is thrown), and learns from the last that it is complete.
    static func finalise(_ url: URL, opening path: URL? = nil, shift: MediaTime, lateStarts: [Int: MediaTime]? = nil, end: MediaTime? = nil,
                         chapters: [Chapter] = [], copyWhenSmall: Bool = false, fault: Fault? = nil,
                         gate: FinaliseGate? = nil) throws -> Outcome {
        let file = try MP4File(url: url, opening: path, writable: true)
        defer { file.close() }
        let layout: FragmentedLayout
        let movie: Movie
        let index: [UInt8]
        do {
            layout = try FragmentedLayout(file)
            guard layout.moov.size <= 16 << 20 else { throw CopyInstead("the moov box is implausibly large") }
            var read = try Movie(moov: try file.read(at: layout.moov.offset, count: Int(layout.moov.size)))
            try read.readFragments(layout, from: file, lateStarts: lateStarts)
            movie = read
            index = try movie.index(shift: shift, end: end, chapters: chapters)
        } catch let error as MP4LayoutError {
            throw CopyInstead(error.reason)
        }
        let room = layout.reservation.size
        let fits = Int64(index.count) == room || Int64(index.count) + 8 <= room
        guard fits else {
            throw CopyInstead("the index needs \(index.count) bytes, \(room) were reserved")
        }
        let unused = room - Int64(index.count)
        // A copy has no end of its own (see `Remuxer`): with one that cuts media off (an asset
        // writer's session ended before media appended past it), only this index can hide that.
        // An end that cuts nothing (the usual session end, with the media) gives the index it
        // would have without one, and does not stand in the copy's way.
        if copyWhenSmall && unused > layout.mediaBytes, try end == nil || index == movie.index(shift: shift, end: nil, chapters: chapters) {
            throw CopyInstead("the recording is small: copying its \(layout.mediaBytes) bytes beats keeping \(unused) unused bytes of reservation",
                              isChoice: true)
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
        // What the recording wrote goes to the disk before the steps, outside them: an abort
        // waits for the step under way, and this sync can take long (a slow disk, a large
        // recording's last pages); the steps' own syncs then write a few kilobytes.
        if gate != nil {
            do { try file.sync() } catch let error as ReelError { throw CopyInstead("cannot put the file on the disk: \(error)") }
        }
        let halfWritten = try step(gate) { () throws -> Bool in
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
                if fault?.stops(after: .indexHalfWritten) == true {
                    try file.write(Array(bytes[8..<(8 + (bytes.count - 8) / 2)]), at: start + 8)
                    return true
                }
                try file.write(Array(bytes[8...]), at: start + 8)
                try file.sync()
                try file.write(Array(bytes[0..<8]), at: start)
                try file.sync()
                return false
            } catch let error as ReelError {
                // The reservation is still one `free` box, or a `free` box for the index and one for the rest.
                throw CopyInstead("cannot write the index: \(error)")
            }
        }
        if halfWritten { return Outcome(bytesWritten: Int64((bytes.count - 8) / 2), indexSize: index.count, reservedSize: room) }
        var written = Int64(bytes.count)
        if fault?.stops(after: .indexWritten) == true { return Outcome(bytesWritten: written, indexSize: index.count, reservedSize: room) }
        do {
            written += try commit(file, index: layout.reservation.offset, fault: fault, gate: gate)
        } catch let error as MP4LayoutError {
            throw ReelError(.invalidMedia, "cannot finish finalising \(url.lastPathComponent): \(error.reason)",
                            hint: "the file plays as it is; \(LibraryHint.finalise(url.path))")
        }
        return Outcome(bytesWritten: written, indexSize: index.count, reservedSize: room)
    }

    /// Completes a finalise that was interrupted after its new index became a `moov` (see the
    /// steps above). Returns the bytes written, or `nil` if the file holds no such index.
    static func resume(_ url: URL, fault: Fault? = nil) throws -> Int64? {
        let file = try MP4File(url: url, writable: true)
        defer { file.close() }
        do {
            guard let index = try interruptedIndex(in: file) else { return nil }
            return try commit(file, index: index, fault: fault)
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

    /// Runs `body`, one step, through `gate` if there is one (see ``FinaliseGate``).
    private static func step<R>(_ gate: FinaliseGate?, finishing: URL? = nil, _ body: () throws -> R) throws -> R {
        guard let gate else { return try body() }
        return try gate.step(finishing: finishing, body)
    }

    /// Steps 2 to 6 for the new index at `index`; each is skipped where it is done already,
    /// and each runs through `gate`, if given.
    private static func commit(_ file: MP4File, index: Int64, fault: Fault?, gate: FinaliseGate? = nil) throws -> Int64 {
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
            try step(gate) {
                try retype(.moov, at: index)
                try file.sync()
            }
        }
        if fault?.stops(after: .indexActivated) == true { return written }

        // 3. The old index becomes `free`.
        var boxes = try file.topLevelBoxes().boxes
        try step(gate) {
            for box in boxes where box.type == .moov && box.offset != index {
                try retype(.free, at: box.offset)
            }
            try file.sync()
        }
        if fault?.stops(after: .oldIndexRetired) == true { return written }

        // 4. The fragment headers become `free`.
        boxes = try file.topLevelBoxes().boxes
        let fragments = boxes.filter { $0.type == .moof || $0.type == .mfra }
        let stoppedHalfWay = try step(gate) { () throws -> Bool in
            for (i, box) in fragments.enumerated() {
                if fault?.stops(after: .halfFragmentsRetired) == true && i == fragments.count / 2 { return true }
                try retype(.free, at: box.offset)
            }
            try file.sync()
            return false
        }
        if stoppedHalfWay { return written }
        if fault?.stops(after: .fragmentsRetired) == true { return written }

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
        try step(gate) {
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
        }
        if fault?.stops(after: .tracksRenumbered) == true { return written }

        // 6. The `mvex` becomes `free`: a regular file.
        // The last step: an abort from now on finds the file finished.
        try step(gate, finishing: file.url) {
            if let mvex = children.first(.mvex) {
                try retype(.free, at: index + mvex.offset)
                try file.sync()
            }
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
