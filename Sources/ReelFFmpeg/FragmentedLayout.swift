import Foundation
import ReelCore

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
        typealias No = MP4Finaliser.CopyInstead
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
