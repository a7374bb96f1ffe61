/// A point or span on a media timeline: `value / timescale` seconds.
///
/// `MediaTime` is the one time type of Reel, in the spirit of `CMTime`: presentation times,
/// durations and clock readings all use it, so no raw integer timestamps or floating seconds
/// leak into signatures. Arithmetic between two times of different timescales is exact when
/// the result fits, using the finer of the two timescales.
public struct MediaTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The numerator: a count of `1/timescale` second ticks.
    public var value: Int64
    /// Ticks per second. Always positive.
    public private(set) var timescale: Int32

    /// Nanosecond timescale, used by the clocks.
    public static let nanosecondTimescale: Int32 = 1_000_000_000

    /// Creates a time of `value` ticks of `1/timescale` second. A timescale that is not
    /// positive (a damaged file's time base, say) counts as 1: ticks of one second.
    public init(value: Int64, timescale: Int32) {
        self.value = value
        self.timescale = max(timescale, 1)
    }

    /// Creates a time from seconds, rounded to the nearest tick of `timescale`.
    public init(seconds: Double, timescale: Int32 = 1_000_000) {
        self.init(value: Int64((seconds * Double(timescale)).rounded()), timescale: timescale)
    }

    /// Creates a time from nanoseconds.
    public init(nanoseconds: Int64) {
        self.init(value: nanoseconds, timescale: Self.nanosecondTimescale)
    }

    /// Zero seconds.
    public static let zero = MediaTime(value: 0, timescale: 1)

    /// The time in seconds, as a floating-point number (for display and statistics).
    public var seconds: Double { Double(value) / Double(timescale) }

    /// The time in nanoseconds, truncated toward negative infinity.
    public var nanoseconds: Int64 { convertedValue(to: Self.nanosecondTimescale, rounding: .down) }

    /// How to round when a time changes timescale.
    public enum Rounding: Sendable {
        /// To the nearest tick; a half tick rounds away from zero.
        case nearest
        /// Towards negative infinity.
        case down
        /// Towards positive infinity.
        case up
    }

    /// The value of this time expressed in ticks of `newTimescale`.
    public func convertedValue(to newTimescale: Int32, rounding: Rounding = .nearest) -> Int64 {
        if newTimescale == timescale { return value }
        // value * new / old, with a 128-bit intermediate so that nanosecond clocks never overflow.
        let (high, low) = value.multipliedFullWidth(by: Int64(newTimescale))
        let divisor = Int64(timescale)
        let (quotient, remainder) = divisor.dividingFullWidth((high, low))
        switch rounding {
        case .down:
            return remainder < 0 ? quotient - 1 : quotient
        case .up:
            return remainder > 0 ? quotient + 1 : quotient
        case .nearest:
            let twice = remainder.magnitude * 2
            if twice >= divisor.magnitude {
                return remainder > 0 ? quotient + 1 : quotient - 1
            }
            return quotient
        }
    }

    /// This time in another timescale.
    public func converted(to newTimescale: Int32, rounding: Rounding = .nearest) -> MediaTime {
        MediaTime(value: convertedValue(to: newTimescale, rounding: rounding), timescale: newTimescale)
    }

    private static func common(_ a: MediaTime, _ b: MediaTime) -> Int32 {
        if a.timescale == b.timescale { return a.timescale }
        if a.timescale % b.timescale == 0 { return a.timescale }
        if b.timescale % a.timescale == 0 { return b.timescale }
        return max(a.timescale, b.timescale, Self.nanosecondTimescale)
    }

    /// The sum, on the finer timescale when one divides the other (exact), else on the larger of
    /// the two and nanoseconds (rounded to the nearest tick).
    public static func + (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        let scale = common(lhs, rhs)
        return MediaTime(value: lhs.convertedValue(to: scale) + rhs.convertedValue(to: scale), timescale: scale)
    }

    /// The difference, on the timescale ``+(_:_:)`` would choose.
    public static func - (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        let scale = common(lhs, rhs)
        return MediaTime(value: lhs.convertedValue(to: scale) - rhs.convertedValue(to: scale), timescale: scale)
    }

    /// Adds `rhs` to `lhs`.
    public static func += (lhs: inout MediaTime, rhs: MediaTime) { lhs = lhs + rhs }
    /// Subtracts `rhs` from `lhs`.
    public static func -= (lhs: inout MediaTime, rhs: MediaTime) { lhs = lhs - rhs }

    /// Multiplies a span by a whole number.
    public static func * (lhs: MediaTime, rhs: Int64) -> MediaTime {
        MediaTime(value: lhs.value * rhs, timescale: lhs.timescale)
    }

    public static func < (lhs: MediaTime, rhs: MediaTime) -> Bool {
        let scale = common(lhs, rhs)
        return lhs.convertedValue(to: scale, rounding: .down) < rhs.convertedValue(to: scale, rounding: .down)
    }

    public static func == (lhs: MediaTime, rhs: MediaTime) -> Bool {
        let scale = common(lhs, rhs)
        return lhs.convertedValue(to: scale) == rhs.convertedValue(to: scale)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(convertedValue(to: Self.nanosecondTimescale))
    }

    public var description: String {
        let s = seconds
        return s.isFinite ? "\((s * 1000).rounded() / 1000)s" : "\(value)/\(timescale)"
    }
}

/// A frame rate as a rational number of frames per second.
public struct FrameRate: Sendable, Hashable, CustomStringConvertible {
    /// Frames counted over `per` seconds.
    public var frames: Int32
    /// The seconds over which `frames` are counted.
    public var per: Int32

    /// A rate of `frames` per `per` seconds (30000/1001 for NTSC). A rate that is not positive
    /// is kept as given, so that the settings that hold it can say so (`validate()` throws
    /// `invalidConfiguration`); until then it counts as one frame a second.
    public init(_ frames: Int32, per: Int32 = 1) {
        self.frames = frames
        self.per = per
    }

    /// Whether both numbers are positive.
    public var isValid: Bool { frames > 0 && per > 0 }

    /// `frames` and `per` as used in arithmetic: 1/1 for a rate that is not valid.
    private var ratio: (frames: Int32, per: Int32) { isValid ? (frames, per) : (1, 1) }

    /// The duration of one frame.
    public var frameDuration: MediaTime { MediaTime(value: Int64(ratio.per), timescale: ratio.frames) }

    /// The presentation time of frame `index` counted from zero.
    public func time(ofFrame index: Int64) -> MediaTime { MediaTime(value: index * Int64(ratio.per), timescale: ratio.frames) }

    /// The index of the frame whose slot contains `time` (slots start at `index / rate`).
    public func frameIndex(at time: MediaTime, rounding: MediaTime.Rounding = .down) -> Int64 {
        // time * frames / per
        let (frames, per) = ratio
        let ticks = time.convertedValue(to: frames, rounding: rounding)
        switch rounding {
        case .down: return ticks >= 0 ? ticks / Int64(per) : (ticks - Int64(per) + 1) / Int64(per)
        case .up: return ticks >= 0 ? (ticks + Int64(per) - 1) / Int64(per) : ticks / Int64(per)
        case .nearest: return (ticks + Int64(per) / 2) / Int64(per)
        }
    }

    /// Frames per second as a floating-point number.
    public var framesPerSecond: Double { isValid ? Double(frames) / Double(per) : 0 }

    /// The rate as people write it: `30`, `29.97`, `7.5` when a decimal with up to three places
    /// is exact, else the reduced fraction (`30000/1001`).
    public var description: String {
        guard isValid else { return "\(frames)/\(per)" }
        var (a, b) = (Int64(frames), Int64(per))
        while b != 0 { (a, b) = (b, a % b) }
        let (n, d) = (Int64(frames) / max(a, 1), Int64(per) / max(a, 1))
        if d == 1 { return "\(n)" }
        guard 1000 % d == 0 else { return "\(n)/\(d)" }
        let thousandths = n * (1000 / d)
        var decimals = String(thousandths % 1000)
        decimals = String(repeating: "0", count: 3 - decimals.count) + decimals
        while decimals.hasSuffix("0") { decimals.removeLast() }
        return "\(thousandths / 1000).\(decimals)"
    }
}
