import Foundation
import ReelCore

/// What state a recording's file is in, told from its structure alone (box and element
/// headers; no media data is read): complete, cut off and how far it is complete, or not a
/// recording at all. Used by ``Recovery``.
enum RecordingStructure {
    enum State: Equatable {
        /// A regular MP4/MOV (index and media data) or an MKV whose Segment has its size.
        case complete
        /// A fragmented MP4/MOV, as a recording is while it is written and when it is cut off.
        case fragmented(Fragments)
        /// A fragmented MP4/MOV or an MKV cut off before anything was completely written.
        case emptyFragmented
        /// An MP4/MOV whose finalising in place was interrupted (see ``MP4Finaliser``).
        case interruptedFinalise
        /// An MKV whose Segment has no size, or ends past the end of the file.
        case cutOffMatroska
        /// Neither an MP4/MOV nor an MKV, or one without its index.
        case notARecording
        /// A finished (not fragmented) MP4/MOV/M4A cut short afterwards: its index points past
        /// the end of the file. Not a recording a crash cut off.
        case cutShortAfterFinishing
    }

    /// How much of a fragmented file is complete.
    struct Fragments: Equatable {
        /// Fragments (`moof` and its `mdat`) that are complete.
        var completeFragments: Int
        /// Where the last complete fragment ends: the file up to here is whole.
        var completeLength: Int64
        var fileSize: Int64
        /// The fragment after the complete ones that the end of the file tore, if some of its
        /// samples are whole (they are kept).
        var torn: TornFragment?
        /// Whether the file goes on past its last complete fragment (a fragment cut short).
        var isTruncated: Bool { completeLength < fileSize }
        /// The file as a recovery reads it: its complete fragments, and the whole samples of
        /// a torn one; `nil` when it is whole.
        var readingView: FileView? {
            if let torn { return FileView(length: fileSize, patches: torn.patches) }
            return isTruncated ? FileView(length: completeLength) : nil
        }
        /// The bytes at its end that a recovery leaves out: a fragment cut short, or the part of
        /// a torn fragment after its last whole sample.
        var leftOutBytes: Int64 { fileSize - (torn?.keptEnd ?? completeLength) }
    }

    static func inspect(_ url: URL) throws -> State {
        let file = try MP4File(url: url, writable: false)
        defer { file.close() }
        let size = try file.size()
        let head = try file.read(at: 0, count: 8)
        if head.count >= 4, head[0..<4].elementsEqual([0x1A, 0x45, 0xDF, 0xA3]) {
            return try matroska(file, size: size)
        }
        guard head.count == 8, head[4..<8].elementsEqual("ftyp".utf8) else { return .notARecording }
        if ((try? MP4Finaliser.interruptedIndex(in: file)) ?? nil) != nil { return .interruptedFinalise }
        return try isoMedia(file, size: size)
    }

    // MARK: MP4 and MOV

    private static func isoMedia(_ file: MP4File, size: Int64) throws -> State {
        let (boxes, truncated) = file.readableBoxes(in: 0..<size)
        var moov: Box?
        var complete = 0
        var completeLength: Int64 = 0
        var fragmentOpen = false
        var sawFragment = false
        for box in boxes {
            if box.type == .moof { sawFragment = true }
            // A box cut short by the end of the file ends what is whole.
            if box.end > size { break }
            switch box.type {
            case .moof:
                fragmentOpen = true
            case .mdat:
                if fragmentOpen { complete += 1 }
                fragmentOpen = false
                completeLength = box.end
            default:
                if box.type == .moov && moov == nil { moov = box }
                if !fragmentOpen { completeLength = box.end }
            }
        }
        guard let moov else { return .notARecording }
        guard hasMovieExtends(moov, in: file) else {
            // A regular file; one cut short has lost media data its index points to, and one with
            // fragments but an index that does not announce them is damaged.
            if sawFragment { return .notARecording }
            return truncated ? .cutShortAfterFinishing : .complete
        }
        // A fragment whose header is whole and whose media data the end of the file cut.
        var torn: TornFragment?
        if let i = boxes.firstIndex(where: { $0.end > size }), i > 0, boxes[i].type == .mdat,
           boxes[i - 1].type == .moof, boxes[i - 1].offset == completeLength {
            torn = TornFragment.read(moof: boxes[i - 1], mdat: boxes[i], moov: moov, in: file, fileSize: size)
        }
        guard complete > 0 || torn != nil else { return .emptyFragmented }
        return .fragmented(Fragments(completeFragments: complete, completeLength: completeLength, fileSize: size, torn: torn))
    }

    /// Whether the `moov` has an `mvex` box: the index of a fragmented file.
    private static func hasMovieExtends(_ moov: Box, in file: MP4File) -> Bool {
        file.readableBoxes(in: moov.payloadOffset..<moov.end).boxes.contains { $0.type == .mvex && $0.end <= moov.end }
    }

    // MARK: Matroska

    static let segmentID: UInt32 = 0x1853_8067
    static let clusterID: UInt32 = 0x1F43_B675

    /// An EBML element's header: its ID, where its data starts and its size (`nil`: unknown).
    struct Element {
        var id: UInt32
        var dataOffset: Int64
        var size: Int64?
    }

    static func element(at offset: Int64, in file: MP4File) throws -> Element? {
        let bytes = try file.read(at: offset, count: 12)
        guard let first = bytes.first, first != 0 else { return nil }
        let idLength = first.leadingZeroBitCount + 1
        guard idLength <= 4, bytes.count > idLength else { return nil }
        let id = bytes[0..<idLength].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let sizeFirst = bytes[idLength]
        guard sizeFirst != 0 else { return nil }
        let sizeLength = sizeFirst.leadingZeroBitCount + 1
        guard bytes.count >= idLength + sizeLength else { return nil }
        var value = UInt64(sizeFirst) & (0xFF >> UInt64(sizeLength))
        for byte in bytes[(idLength + 1)..<(idLength + sizeLength)] { value = value << 8 | UInt64(byte) }
        let unknown = value == (UInt64(1) << UInt64(7 * sizeLength)) - 1
        guard unknown || value <= UInt64(Int64.max / 2) else { return nil }
        return Element(id: id, dataOffset: offset + Int64(idLength + sizeLength), size: unknown ? nil : Int64(value))
    }

    private static func matroska(_ file: MP4File, size: Int64) throws -> State {
        guard let header = try element(at: 0, in: file), let headerSize = header.size,
              let segment = try element(at: header.dataOffset + headerSize, in: file), segment.id == segmentID else {
            return .notARecording
        }
        let cutOff = segment.size.map { segment.dataOffset + $0 > size } ?? true
        guard cutOff else { return .complete }
        // Cut off: is there a cluster (media data) among the Segment's first elements?
        var offset = segment.dataOffset
        for _ in 0..<256 {
            guard offset < size, let child = try element(at: offset, in: file) else { break }
            if child.id == clusterID { return .cutOffMatroska }
            guard let length = child.size else { break }
            offset = child.dataOffset + length
        }
        return .emptyFragmented
    }
}
