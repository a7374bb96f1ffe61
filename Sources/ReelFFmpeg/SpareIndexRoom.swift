import Foundation
import ReelCore
import Synchronization

/// The part of a fragmented MP4/MOV's index reservation that its final index will not need:
/// what the disk may have back when it fills, so that the recording's last part reaches the
/// disk instead of being lost (see ``FileWriteQueue``).
///
/// The reservation (a `free` box after the fragmented file's empty index) holds zeros that
/// nothing reads until the file is finalised, which writes the index into its start. The room
/// kept is what the index of the recording so far and of ``margin`` more needs, twice over
/// (the reservation's own estimate, see ``MP4Finaliser/reservation(duration:frameRate:audioPacketRates:fragmentInterval:keyframeInterval:baseIndexSize:)``,
/// counts 16 bytes a frame and 6 an audio packet, where the sample tables take at most 24 and
/// 12), with the chapters' list and 64 KiB besides; the rest, in whole 4 KiB blocks, is given
/// back. Given back, the room reads as zeros as before, so the file does not change.
///
/// The file's sink tells it what was recorded (``recorded(from:to:)``); the writer thread asks it
/// for the room to give back (``spareRange()``) when the disk fills. From then on the file
/// takes nothing past ``coveredUntil``: the recording ends well before (its owner ends it as
/// soon as the disk filled), and a writer that went on would make an index that no longer fits.
package final class SpareIndexRoom: Sendable {
    /// How the reservation was estimated (the same figures give the room to keep).
    struct Estimate: Sendable {
        var frameRate: FrameRate?
        var audioPacketRates: [Double]
        var fragmentInterval: MediaTime
        var keyframeInterval: Double?
        var headerSize: Int

        /// The reservation's estimate for a recording of `duration`.
        func bytes(for duration: MediaTime) -> Int64 {
            Int64(MP4Finaliser.reservation(duration: duration, frameRate: frameRate, audioPacketRates: audioPacketRates,
                                           fragmentInterval: fragmentInterval, keyframeInterval: keyframeInterval,
                                           baseIndexSize: headerSize))
        }
    }

    private struct State {
        var reservation: (offset: Int64, size: Int64)?
        var estimate: Estimate?
        var start: MediaTime?
        var end: MediaTime?
        var chapterBytes = 0
        var covered: MediaTime?
    }

    /// How much recording past what was recorded when the disk filled the room kept indexes:
    /// far more than it takes the recording to end and its encoder to give out what it holds.
    static let margin = MediaTime(value: 10, timescale: 1)
    private static let block: Int64 = 4096

    private let state = Mutex(State())

    package init() {}

    /// The reservation is `size` bytes at `offset`, estimated from `estimate`.
    func reserved(offset: Int64, size: Int64, estimate: Estimate) {
        state.withLock { $0.reservation = (offset, size); $0.estimate = estimate }
    }

    /// The file took media from `start` to `end` (on the packets' timeline).
    func recorded(from start: MediaTime, to end: MediaTime) {
        state.withLock { s in
            s.start = s.start.map { min($0, start) } ?? start
            s.end = s.end.map { max($0, end) } ?? end
        }
    }

    /// The file's chapters take `bytes` in its index.
    func chapters(taking bytes: Int) {
        state.withLock { $0.chapterBytes = bytes }
    }

    /// How long the file's media lasts so far.
    private static func recorded(_ s: State) -> MediaTime {
        guard let start = s.start, let end = s.end, end > start else { return .zero }
        return end - start
    }

    /// Whether media up to `end` still fits the room kept, once the rest was given back.
    func covers(_ end: MediaTime) -> Bool {
        state.withLock { s in
            guard let covered = s.covered, let start = s.start else { return true }
            return end - start <= covered
        }
    }

    /// The room the disk may have back now, in whole blocks (`nil`: none, the index may need
    /// it all). Asked when the disk fills: the room kept then covers the recording so far and
    /// ``margin`` more.
    package func spareRange() -> Range<Int64>? {
        state.withLock { s in
            guard let reservation = s.reservation, let estimate = s.estimate else { return nil }
            let covered = Self.recorded(s) + Self.margin
            let needed = 2 * estimate.bytes(for: covered) + Int64(s.chapterBytes) + 64 * 1024
            let from = (reservation.offset + 8 + needed + Self.block - 1) / Self.block * Self.block
            let to = (reservation.offset + reservation.size) / Self.block * Self.block
            guard from < to else { return nil }
            s.covered = covered
            return from..<to
        }
    }
}
