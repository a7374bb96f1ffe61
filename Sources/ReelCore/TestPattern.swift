/// When the synthetic tone beeps and the synthetic pattern flashes: both sources share one
/// schedule, so that a recording's audio/video sync can be measured.
public struct BeepSchedule: Sendable, Hashable {
    /// The time of the first beep.
    public var firstBeep: MediaTime
    /// Time from one beep to the next.
    public var interval: MediaTime
    /// How long each beep (and flash) lasts.
    public var length: MediaTime

    /// Creates a schedule; the default beeps for a tenth of a second every second from 0.5 s.
    public init(firstBeep: MediaTime = MediaTime(value: 1, timescale: 2),
                interval: MediaTime = MediaTime(value: 1, timescale: 1),
                length: MediaTime = MediaTime(value: 1, timescale: 10)) {
        self.firstBeep = firstBeep
        self.interval = interval
        self.length = length
    }

    /// A schedule that never beeps (a steady picture, a steady tone).
    public static let never = BeepSchedule(firstBeep: MediaTime(value: 1_000_000_000, timescale: 1))

    /// Whether `time` falls within a beep.
    public func isBeeping(at time: MediaTime) -> Bool {
        guard time >= firstBeep else { return false }
        let since = (time - firstBeep).nanoseconds
        let period = interval.nanoseconds
        return since % period < length.nanoseconds
    }

    /// The start of beep number `index` (from zero).
    public func beepTime(_ index: Int) -> MediaTime { firstBeep + interval * Int64(index) }
}

/// The synthetic test pattern: moving colour bars with the frame number burned into a strip
/// along the top, machine-readable after lossy compression, and a white flash at each beep.
public enum TestPattern {
    /// Bits of frame number in the strip.
    public static let counterBits = 24
    /// Cells in the strip: a start marker (white), the bits (most significant first) and an
    /// end marker (black).
    public static let cellCount = counterBits + 2
    private static let white: UInt8 = 235
    private static let black: UInt8 = 16

    /// The height of the counter strip for a frame of `height` rows.
    public static func stripHeight(forHeight height: Int) -> Int {
        max(8, (height / 10) & ~1)
    }

    /// Draws frame `index` into a YUV 4:2:0 frame (`yuv420p`), flashing white if `flash`.
    /// With a `background`, the area under the strip is that solid colour instead of bars
    /// (so that composed sources can be told apart).
    /// Throws `invalidConfiguration` for a frame in another format.
    public static func draw(index: Int64, flash: Bool, background: YUVColor? = nil, into frame: VideoFrame) throws {
        guard frame.format == .yuv420p else {
            throw ReelError(.invalidConfiguration, "the test pattern draws into yuv420p frames, not \(frame.format)")
        }
        let width = frame.width, height = frame.height
        let strip = stripHeight(forHeight: height)
        let cell = max(1, width / cellCount)
        // Eight bars; luma stays below 200 so a flash (235) is unmistakable.
        let barsY: [UInt8] = [180, 160, 130, 110, 90, 70, 50, 30]
        let barsU: [UInt8] = [128, 44, 156, 72, 184, 100, 212, 128]
        let barsV: [UInt8] = [128, 142, 44, 58, 198, 212, 114, 128]
        let shift = Int(index * 4 % Int64(max(width, 1)))
        let barWidth = max(1, width / 8)

        // Build one row of each kind, then copy rows: drawing costs a few memcpys per frame.
        var stripRow = [UInt8](repeating: black, count: width)
        var barRow = [UInt8](repeating: 0, count: width)
        for x in 0..<width {
            let c = x / cell
            if c == 0 { stripRow[x] = white }
            else if c <= counterBits { stripRow[x] = (index >> Int64(counterBits - c)) & 1 == 1 ? white : black }
            barRow[x] = background?.y ?? barsY[((x + shift) / barWidth) & 7]
        }
        frame.withUnsafeMutablePlane(0) { y, stride in
            for row in 0..<height {
                let line = y.baseAddress!.advanced(by: row * stride).assumingMemoryBound(to: UInt8.self)
                if row < strip {
                    stripRow.withUnsafeBufferPointer { line.update(from: $0.baseAddress!, count: width) }
                } else if flash {
                    line.update(repeating: white, count: width)
                } else {
                    barRow.withUnsafeBufferPointer { line.update(from: $0.baseAddress!, count: width) }
                }
            }
        }
        let cw = (width + 1) / 2, ch = (height + 1) / 2
        var chromaRow = [UInt8](repeating: 128, count: cw)
        for plane in 1...2 {
            let table = plane == 1 ? barsU : barsV
            let solid = plane == 1 ? background?.cb : background?.cr
            for x in 0..<cw { chromaRow[x] = solid ?? table[((x * 2 + shift) / barWidth) & 7] }
            frame.withUnsafeMutablePlane(plane) { c, stride in
                for row in 0..<ch {
                    let line = c.baseAddress!.advanced(by: row * stride).assumingMemoryBound(to: UInt8.self)
                    if row * 2 < strip || flash {
                        line.update(repeating: 128, count: cw)
                    } else {
                        chromaRow.withUnsafeBufferPointer { line.update(from: $0.baseAddress!, count: cw) }
                    }
                }
            }
        }
    }

    /// Reads the frame number from a decoded luma (grey) image, or `nil` if the strip is not
    /// readable.
    public static func readCounter(luma: UnsafeRawBufferPointer, width: Int, height: Int, stride: Int) -> Int64? {
        // Narrower than a pixel a cell, the strip holds only part of the counter.
        guard width >= cellCount else { return nil }
        let strip = stripHeight(forHeight: height)
        let cell = max(1, width / cellCount)
        func level(_ c: Int) -> Int {
            let x0 = c * cell + cell / 4, x1 = c * cell + (3 * cell) / 4
            let y0 = strip / 4, y1 = max(y0 + 1, (3 * strip) / 4)
            var sum = 0, n = 0
            for y in y0..<y1 {
                for x in x0..<max(x0 + 1, x1) {
                    sum += Int(luma[y * stride + x]); n += 1
                }
            }
            return sum / max(n, 1)
        }
        guard level(0) > 128, level(cellCount - 1) < 128 else { return nil }
        var value: Int64 = 0
        for c in 1...counterBits {
            value = (value << 1) | (level(c) > 128 ? 1 : 0)
        }
        return value
    }

    /// Whether a decoded luma image shows the flash (the area under the strip is near white).
    public static func isFlash(luma: UnsafeRawBufferPointer, width: Int, height: Int, stride: Int) -> Bool {
        let strip = stripHeight(forHeight: height)
        var sum = 0, n = 0
        var y = strip + 2
        while y < height {
            var x = 0
            while x < width { sum += Int(luma[y * stride + x]); n += 1; x += 7 }
            y += 5
        }
        return n > 0 && sum / n > 215
    }
}
