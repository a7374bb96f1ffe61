import Foundation
import ReelCore

/// One track fragment (`traf`) of a movie fragment (`moof`), read: which track, its decode time,
/// and where each run of samples lies in the file with what each sample is. The one reader of
/// `traf` boxes, shared by the finaliser (which lists every sample in the regular index) and by
/// recovery (which keeps the whole samples of a fragment a crash tore, see `TornFragment`).
struct TrackFragment {
    typealias No = MP4Finaliser.CopyInstead
    /// A track's sample defaults (from its `trex` box; a `tfhd` may override them).
    typealias Defaults = (descriptionIndex: UInt32, duration: UInt32, size: UInt32, flags: UInt32)

    struct Sample {
        var duration: UInt32
        var size: UInt32
        var flags: UInt32
        var compositionOffset: Int64
        /// Whether the sample can be decoded on its own (a sync sample).
        var isSync: Bool { flags & 0x0001_0000 == 0 }
    }

    /// One `trun`: samples whose data follow one another from `dataOffset`.
    struct Run {
        /// Where the run's 32-bit sample count lies, as an index into the `moof`'s bytes.
        var countPosition: Int
        /// Where the data of the first sample lies in the file.
        var dataOffset: Int64
        var samples: [Sample]
        /// The bytes of all its samples.
        var byteCount: Int64 { samples.reduce(0) { $0 + Int64($1.size) } }
    }

    var trackID: UInt32
    var descriptionIndex: UInt32
    /// The decode time of its first sample (`tfdt`), if given.
    var decodeTime: Int64?
    var runs: [Run] = []
    /// Where its data ends: the base of the next track fragment that gives none of its own.
    var dataEnd: Int64

    /// Reads `traf` (a box inside `bytes`, the `moof` that starts at `moofOffset` in the file).
    /// `previousEnd` is where the data of the previous track fragment ended; `defaults` gives
    /// a track's defaults by its ID (`nil`: no such track).
    init(_ traf: Box, in bytes: [UInt8], moofOffset: Int64, previousEnd: Int64, defaults: (UInt32) -> Defaults?) throws {
        let children = try Box.children(of: bytes, in: traf.payloadRange)
        for child in children where ![BoxType.tfhd, .tfdt, .trun].contains(child.type) {
            throw No("a track fragment holds an unexpected \(child.type) box")
        }
        guard let tfhd = children.first(.tfhd) else { throw No("a track fragment has no tfhd box") }
        var r = ByteReader(bytes, range: tfhd.payloadRange)
        try r.skip(1)
        let flags = try r.u24()
        trackID = try r.u32()
        guard var values = defaults(trackID) else { throw No("a fragment names an unknown track \(trackID)") }
        guard flags & 0x010000 == 0 else { throw No("a fragment is empty (duration-is-empty)") }
        let base: Int64
        if flags & 0x01 != 0 {
            base = Int64(bitPattern: try r.u64())
        } else if flags & 0x020000 != 0 {
            base = moofOffset
        } else {
            base = previousEnd
        }
        if flags & 0x02 != 0 { values.descriptionIndex = try r.u32() }
        if flags & 0x08 != 0 { values.duration = try r.u32() }
        if flags & 0x10 != 0 { values.size = try r.u32() }
        if flags & 0x20 != 0 { values.flags = try r.u32() }
        descriptionIndex = values.descriptionIndex

        if let tfdt = children.first(.tfdt) {
            var d = ByteReader(bytes, range: tfdt.payloadRange)
            let version = try d.u8()
            try d.skip(3)
            decodeTime = version == 1 ? Int64(bitPattern: try d.u64()) : Int64(try d.u32())
        }

        dataEnd = base
        for trun in children where trun.type == .trun {
            var s = ByteReader(bytes, range: trun.payloadRange)
            let version = try s.u8()
            let runFlags = try s.u24()
            let countPosition = s.position
            let count = try s.u32()
            guard count > 0 else { continue }
            var offset = dataEnd
            if runFlags & 0x01 != 0 { offset = base + Int64(Int32(bitPattern: try s.u32())) }
            var firstFlags: UInt32?
            if runFlags & 0x04 != 0 { firstFlags = try s.u32() }
            let perSample = [0x100, 0x200, 0x400, 0x800].filter { runFlags & UInt32($0) != 0 }.count * 4
            guard perSample == 0 || Int(count) <= s.remaining / perSample else {
                throw No("a trun box lists more samples than it holds")
            }
            guard perSample > 0 || count <= 1 << 24 else { throw No("a trun box lists an implausible number of samples") }
            var run = Run(countPosition: countPosition, dataOffset: offset, samples: [])
            run.samples.reserveCapacity(Int(count))
            for i in 0..<count {
                let duration = runFlags & 0x100 != 0 ? try s.u32() : values.duration
                let size = runFlags & 0x200 != 0 ? try s.u32() : values.size
                var sampleFlags = runFlags & 0x400 != 0 ? try s.u32() : values.flags
                if i == 0, let firstFlags { sampleFlags = firstFlags }
                var composition: Int64 = 0
                if runFlags & 0x800 != 0 {
                    let raw = try s.u32()
                    composition = version == 0 ? Int64(raw) : Int64(Int32(bitPattern: raw))
                }
                run.samples.append(Sample(duration: duration, size: size, flags: sampleFlags, compositionOffset: composition))
            }
            dataEnd = offset + run.byteCount
            runs.append(run)
        }
    }

    /// The track fragments of the `moof` whose bytes are `bytes` and which starts at
    /// `moofOffset` in the file, in order.
    static func all(inMoof bytes: [UInt8], at moofOffset: Int64, headerSize: Int64,
                    defaults: (UInt32) -> Defaults?) throws -> [TrackFragment] {
        var previousEnd = moofOffset
        var fragments: [TrackFragment] = []
        for traf in try Box.children(of: bytes, in: Int(headerSize)..<bytes.count) {
            switch traf.type {
            case .mfhd: continue
            case .traf:
                let fragment = try TrackFragment(traf, in: bytes, moofOffset: moofOffset, previousEnd: previousEnd, defaults: defaults)
                previousEnd = fragment.dataEnd
                fragments.append(fragment)
            default: throw No("a fragment holds an unexpected \(traf.type) box")
            }
        }
        return fragments
    }
}
