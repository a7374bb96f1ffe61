import Foundation

/// Decoding times for packets that have none, from their presentation times and the stream's
/// reorder delay (what libavformat does for muxers).
struct DecodeTimeGuess {
    private var times: [Int64]
    private let delay: Int

    init(delay: Int) {
        self.delay = delay
        times = Array(repeating: FFmpeg.noPTS, count: delay + 1)
    }

    mutating func decodeTime(pts: Int64, duration: Int64) -> Int64 {
        times[0] = pts
        var i = 1
        while i <= delay && times[i] == FFmpeg.noPTS {
            times[i] = pts + Int64(i - delay - 1) * duration
            i += 1
        }
        i = 0
        while i < delay && times[i] > times[i + 1] {
            times.swapAt(i, i + 1)
            i += 1
        }
        return times[0]
    }
}
