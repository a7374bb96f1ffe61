internal import CFFmpeg
import ReelCore

extension MediaTime {
    /// `ticks` of the time base `tb`. Times from files are kept within ±2^31 s (68 years), so
    /// that a damaged file's timestamps cannot overflow the arithmetic done with them later; a
    /// time base that is not positive counts as 1/1.
    init(ticks: Int64, _ tb: AVRational) {
        let num = tb.num > 0 && tb.den > 0 ? Int64(tb.num) : 1
        let den = tb.num > 0 && tb.den > 0 ? tb.den : 1
        let bound = (Int64(1) << 31) * Int64(den)
        let (value, overflow) = ticks.multipliedReportingOverflow(by: num)
        let clamped = overflow ? (ticks < 0 ? -bound : bound) : min(max(value, -bound), bound)
        self.init(value: clamped, timescale: den)
    }

    /// This time in ticks of `tb`, rounded to the nearest.
    func ticks(in tb: AVRational) -> Int64 {
        av_rescale_q(value, AVRational(num: 1, den: timescale), tb)
    }
}
