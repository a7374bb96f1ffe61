import Foundation
import ReelCore

/// The last fragment of a recording that a crash, a kill or a full disk tore: its header
/// (`moof`) is whole, its media data (`mdat`) is cut short by the end of the file.
///
/// The header lists every sample of the fragment, and each run (`trun`) lists its samples in
/// the order their bytes follow one another; so the samples whose bytes are all on the disk
/// are, in each track, the first ones of its runs, and they decode (in decode order nothing is
/// missing before them). Recovery keeps those: ``patches`` make the fragment one that holds
/// only them — each run's sample count lowered to its whole samples (the entries after them
/// stay, unread), then the `mdat` ending at the end of the file (the bytes of a sample cut
/// short lie in it, unreferenced). Written in that order, each patch leaves a file that
/// ``RecordingStructure/inspect(_:)`` reads as the same torn fragment or as a whole one, so a
/// recovery interrupted between them finds the same samples again.
struct TornFragment: Equatable {
    /// The writes that make the fragment a whole one of its whole samples: sample counts first,
    /// then the size of the `mdat`.
    var patches: [FilePatch]
    /// Video frames the header lists, and of those the whole ones that are kept.
    var listedFrames: Int
    var keptFrames: Int
    /// All samples (every track) the header lists, and the whole ones that are kept.
    var listedSamples: Int
    var keptSamples: Int
    /// Where the last kept sample's bytes end.
    var keptEnd: Int64

    /// The torn fragment made of `moof` and `mdat` (whose header is on the disk, whose end is
    /// past `fileSize`) of the recording whose index is `moov`, or `nil` if none of its samples
    /// is whole or its header cannot be read.
    static func read(moof: Box, mdat: Box, moov: Box, in file: MP4File, fileSize: Int64) -> TornFragment? {
        guard mdat.type == .mdat, mdat.payloadOffset <= fileSize, mdat.end > fileSize, moof.end == mdat.offset,
              moof.size <= 64 << 20, moov.size <= 16 << 20,
              let moovBytes = try? file.read(at: moov.offset, count: Int(moov.size)), moovBytes.count == Int(moov.size),
              let movie = try? Movie(moov: moovBytes),
              let bytes = try? file.read(at: moof.offset, count: Int(moof.size)), bytes.count == Int(moof.size),
              let fragments = try? TrackFragment.all(inMoof: bytes, at: moof.offset, headerSize: moof.headerSize,
                                                     defaults: movie.defaults(ofTrack:)) else { return nil }
        let onDisk = mdat.payloadOffset..<fileSize
        var torn = TornFragment(patches: [], listedFrames: 0, keptFrames: 0, listedSamples: 0, keptSamples: 0, keptEnd: mdat.payloadOffset)
        for fragment in fragments {
            let isVideo = movie.tracks.first { $0.id == fragment.trackID }?.handler == "vide"
            // Once a sample of the track is missing, none after it (in decode order) is kept.
            var intact = true
            for run in fragment.runs {
                var kept = 0
                var offset = run.dataOffset
                for sample in run.samples {
                    let end = offset + Int64(sample.size)
                    guard intact, offset >= onDisk.lowerBound, end <= onDisk.upperBound else { intact = false; break }
                    kept += 1
                    torn.keptEnd = max(torn.keptEnd, end)
                    offset = end
                }
                torn.listedSamples += run.samples.count
                torn.keptSamples += kept
                if isVideo {
                    torn.listedFrames += run.samples.count
                    torn.keptFrames += kept
                }
                if kept < run.samples.count {
                    var count = ByteWriter()
                    count.u32(UInt32(kept))
                    torn.patches.append(FilePatch(offset: moof.offset + Int64(run.countPosition), bytes: count.bytes))
                }
            }
        }
        guard torn.keptSamples > 0 else { return nil }
        var size = ByteWriter()
        let whole = fileSize - mdat.offset
        if mdat.headerSize == 16 {
            size.u64(UInt64(whole))
            torn.patches.append(FilePatch(offset: mdat.offset + 8, bytes: size.bytes))
        } else {
            guard whole <= Int64(UInt32.max) else { return nil }
            size.u32(UInt32(whole))
            torn.patches.append(FilePatch(offset: mdat.offset, bytes: size.bytes))
        }
        return torn
    }

    /// Writes ``patches`` into the file at `url` (the sample counts, made durable, then the
    /// size of the media data): the fragment is then a whole one of the whole samples.
    func apply(to url: URL) throws {
        let file = try MP4File(url: url, writable: true)
        defer { file.close() }
        for (i, patch) in patches.enumerated() {
            if i == patches.count - 1 { try file.sync() }
            try file.write(patch.bytes, at: patch.offset)
        }
        try file.sync()
    }
}
