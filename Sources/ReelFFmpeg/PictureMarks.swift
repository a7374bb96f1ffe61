import ReelCore

/// Draws translucent marks into a picture its owner is still filling (a stage's new picture):
/// discs, rings, boxes and text in the bitmap font, blended over what is there, in any pixel
/// format (YUV formats take the colour's luma at every pixel and its chroma at the chroma
/// samples). Everything outside the picture is clipped.
package struct PictureMarks {
    /// A colour with its BGRA bytes and its YUV components.
    package struct Color: Sendable {
        let red: UInt8, green: UInt8, blue: UInt8
        let yuv: YUVColor
        /// The colour of full-range RGB bytes.
        package init(red: UInt8, green: UInt8, blue: UInt8) {
            self.red = red
            self.green = green
            self.blue = blue
            yuv = YUVColor(red: red, green: green, blue: blue)
        }
    }

    private let frame: VideoFrame

    /// Marks on `frame`, which must not have been handed on yet.
    package init(on frame: VideoFrame) {
        self.frame = frame
    }

    /// A ring of `thickness` around (`x`, `y`) with `radius` to the middle of its line.
    package func ring(x: Double, y: Double, radius: Double, thickness: Double, color: Color, opacity: Double) {
        let outer = radius + thickness / 2 + 1
        area(x: x, y: y, reach: outer, color: color) { dx, dy in
            let distance = (dx * dx + dy * dy).squareRoot()
            return opacity * max(0, min(1, thickness / 2 - abs(distance - radius) + 0.5))
        }
    }

    /// A disc of `radius` around (`x`, `y`) whose edge fades over its outer third.
    package func softDisc(x: Double, y: Double, radius: Double, color: Color, opacity: Double) {
        area(x: x, y: y, reach: radius + 1, color: color) { dx, dy in
            let distance = (dx * dx + dy * dy).squareRoot()
            let edge = radius / 3
            return opacity * max(0, min(1, (radius - distance) / edge))
        }
    }

    /// `rect` filled with `color`.
    package func box(_ rect: PixelRect, color: Color, opacity: Double) {
        let alpha = Self.weight(opacity)
        guard alpha > 0 else { return }
        for row in max(0, rect.y)..<min(frame.height, rect.y + rect.height) {
            for column in max(0, rect.x)..<min(frame.width, rect.x + rect.width) {
                blend(column, row, color, alpha)
            }
        }
    }

    /// `text` in the bitmap font, each of its dots `scale` pixels square, from (`x`, `y`) its
    /// top left (marks over capitals reach two dots above it, marks under letters two below
    /// its seven rows); returns how wide it is.
    @discardableResult
    package func text(_ text: String, x: Int, y: Int, scale: Int, color: Color, opacity: Double) -> Int {
        let alpha = Self.weight(opacity)
        var pen = x
        for character in text {
            guard alpha > 0 else { break }
            let glyph = BitmapFont.glyph(character)
            for (row, bits) in glyph.rows.enumerated() {
                for column in 0..<5 where bits & (1 << (4 - column)) != 0 {
                    for dy in 0..<scale {
                        let py = y + (glyph.top + row) * scale + dy
                        guard py >= 0, py < frame.height else { continue }
                        for dx in 0..<scale {
                            let px = pen + column * scale + dx
                            if px >= 0, px < frame.width { blend(px, py, color, alpha) }
                        }
                    }
                }
            }
            pen += Self.advance(scale: scale)
        }
        return pen - x
    }

    /// How far the pen moves for one character at `scale`.
    package static func advance(scale: Int) -> Int { 6 * scale }

    /// Blends `color` over the square of `reach` around (`x`, `y`), each pixel by the
    /// opacity `coverage` gives for its offset from the centre.
    private func area(x: Double, y: Double, reach: Double, color: Color, coverage: (Double, Double) -> Double) {
        let top = max(0, Int((y - reach).rounded(.down))), bottom = min(frame.height - 1, Int((y + reach).rounded(.up)))
        let left = max(0, Int((x - reach).rounded(.down))), right = min(frame.width - 1, Int((x + reach).rounded(.up)))
        guard top <= bottom, left <= right else { return }
        for row in top...bottom {
            for column in left...right {
                let alpha = Self.weight(coverage(Double(column) + 0.5 - x, Double(row) + 0.5 - y))
                if alpha > 0 { blend(column, row, color, alpha) }
            }
        }
    }

    /// An opacity as a weight out of 256.
    private static func weight(_ opacity: Double) -> Int { Int((max(0, min(1, opacity)) * 256).rounded()) }

    private static func mix(_ under: UInt8, _ over: UInt8, _ alpha: Int) -> UInt8 {
        UInt8((Int(under) * (256 - alpha) + Int(over) * alpha) >> 8)
    }

    /// Blends `color` over the pixel at (`x`, `y`) with `alpha` out of 256.
    private func blend(_ x: Int, _ y: Int, _ color: Color, _ alpha: Int) {
        let format = frame.format
        frame.withUnsafeMutablePlane(0) { bytes, stride in
            let p = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
            switch format {
            case .bgra:
                let i = y * stride + x * 4
                p[i] = Self.mix(p[i], color.blue, alpha)
                p[i + 1] = Self.mix(p[i + 1], color.green, alpha)
                p[i + 2] = Self.mix(p[i + 2], color.red, alpha)
            case .yuyv:
                p[y * stride + x * 2] = Self.mix(p[y * stride + x * 2], color.yuv.y, alpha)
                if x & 1 == 0, x + 1 < frame.width {
                    let i = y * stride + x * 2
                    p[i + 1] = Self.mix(p[i + 1], color.yuv.cb, alpha)
                    p[i + 3] = Self.mix(p[i + 3], color.yuv.cr, alpha)
                }
            case .nv12, .yuv420p:
                p[y * stride + x] = Self.mix(p[y * stride + x], color.yuv.y, alpha)
            }
        }
        guard x & 1 == 0, y & 1 == 0 else { return }
        switch format {
        case .nv12:
            frame.withUnsafeMutablePlane(1) { bytes, stride in
                let p = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
                let i = (y / 2) * stride + x
                p[i] = Self.mix(p[i], color.yuv.cb, alpha)
                p[i + 1] = Self.mix(p[i + 1], color.yuv.cr, alpha)
            }
        case .yuv420p:
            for (plane, value) in [(1, color.yuv.cb), (2, color.yuv.cr)] {
                frame.withUnsafeMutablePlane(plane) { bytes, stride in
                    let p = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
                    let i = (y / 2) * stride + x / 2
                    p[i] = Self.mix(p[i], value, alpha)
                }
            }
        case .bgra, .yuyv:
            break
        }
    }
}
