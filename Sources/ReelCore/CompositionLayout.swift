/// How a ``Compositor`` arranges several video sources on one canvas: the layout math, free of
/// any pixel work.
public enum CompositionLayout: Sendable, Hashable, CustomStringConvertible {
    /// The first source fills the canvas; the others are small pictures in a corner, stacked
    /// away from it. `size` is the inset's width as a fraction of the canvas width; `margin`
    /// the gap to the edges and between insets, in pixels.
    case pictureInPicture(corner: Corner = .bottomRight, size: Double = 0.25, margin: Int = 16)
    /// The sources in one row, each in an equal column.
    case sideBySide
    /// The sources in a grid of equal cells, as square as the count allows, row by row.
    case grid

    /// A corner of the canvas.
    public enum Corner: String, Sendable, Hashable, CaseIterable {
        /// The top left corner.
        case topLeft = "top-left"
        /// The top right corner.
        case topRight = "top-right"
        /// The bottom left corner.
        case bottomLeft = "bottom-left"
        /// The bottom right corner.
        case bottomRight = "bottom-right"
    }

    public var description: String {
        switch self {
        case .pictureInPicture(let corner, let size, let margin): return "picture-in-picture (\(corner.rawValue), \(size), \(margin) px)"
        case .sideBySide: return "side by side"
        case .grid: return "grid"
        }
    }

    /// Checks the layout's numbers.
    public func validate() throws {
        if case .pictureInPicture(_, let size, let margin) = self {
            guard size.isFinite, size > 0.02, size <= 0.9 else {
                throw ReelError(.invalidConfiguration, "a picture-in-picture size of \(size) is not usable",
                                hint: "give the inset's width as a fraction of the picture's, from 0.02 to 0.9 (e.g. 0.25)")
            }
            guard margin >= 0, margin < 10_000 else {
                throw ReelError(.invalidConfiguration, "a picture-in-picture margin of \(margin) pixels is not usable")
            }
        }
    }

    /// Where each of the sources goes on a canvas of `canvas`, in drawing order (the first is
    /// drawn first: in picture-in-picture it is the large picture).
    ///
    /// `sizes` are the sources' frame sizes; each picture keeps its aspect ratio and is centred
    /// in its area (letterboxed). Rectangles have even origins and sizes, so 4:2:0 frames can
    /// be drawn into them, and lie inside the canvas.
    public func rects(for sizes: [PixelSize], canvas: PixelSize) -> [PixelRect] {
        let n = sizes.count
        guard n > 0 else { return [] }
        let full = PixelRect(x: 0, y: 0, width: canvas.width, height: canvas.height)
        switch self {
        case .pictureInPicture(let corner, let size, let margin):
            var rects = [Self.fit(sizes[0], in: full)]
            let insetWidth = Double(canvas.width) * min(0.9, max(0.02, size))
            var offset = margin
            for source in sizes.dropFirst() {
                let aspect = Double(source.height) / Double(max(1, source.width))
                var w = Self.even(insetWidth)
                var h = Self.even(insetWidth * aspect)
                // Keep insets inside the canvas, however tall they are.
                if h > canvas.height - 2 * margin {
                    h = Self.even(Double(canvas.height - 2 * margin))
                    w = Self.even(Double(h) / aspect)
                }
                w = max(2, min(w, canvas.width)); h = max(2, min(h, canvas.height))
                let left = corner == .topLeft || corner == .bottomLeft
                let top = corner == .topLeft || corner == .topRight
                let x = left ? margin : canvas.width - margin - w
                // Later insets stack away from the corner, vertically.
                let y = top ? offset : canvas.height - offset - h
                offset += h + margin
                rects.append(Self.clampEven(PixelRect(x: x, y: y, width: w, height: h), in: canvas))
            }
            return rects
        case .sideBySide:
            return (0..<n).map { i in
                let x0 = canvas.width * i / n, x1 = canvas.width * (i + 1) / n
                let cell = PixelRect(x: x0 & ~1, y: 0, width: (x1 & ~1) - (x0 & ~1), height: canvas.height)
                return Self.fit(sizes[i], in: cell)
            }
        case .grid:
            var columns = 1
            while columns * columns < n { columns += 1 }
            let rows = (n + columns - 1) / columns
            return (0..<n).map { i in
                let c = i % columns, r = i / columns
                let x0 = (canvas.width * c / columns) & ~1, x1 = (canvas.width * (c + 1) / columns) & ~1
                let y0 = (canvas.height * r / rows) & ~1, y1 = (canvas.height * (r + 1) / rows) & ~1
                return Self.fit(sizes[i], in: PixelRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0))
            }
        }
    }

    /// The largest rectangle of `size`'s aspect ratio inside `area`, centred, with even numbers.
    public static func fit(_ size: PixelSize, in area: PixelRect) -> PixelRect {
        guard size.width > 0, size.height > 0, area.width >= 2, area.height >= 2 else {
            return PixelRect(x: area.x & ~1, y: area.y & ~1, width: max(2, area.width & ~1), height: max(2, area.height & ~1))
        }
        let scale = min(Double(area.width) / Double(size.width), Double(area.height) / Double(size.height))
        let w = max(2, min(area.width & ~1, even(Double(size.width) * scale)))
        let h = max(2, min(area.height & ~1, even(Double(size.height) * scale)))
        let x = (area.x + (area.width - w) / 2) & ~1
        let y = (area.y + (area.height - h) / 2) & ~1
        return PixelRect(x: x, y: y, width: w, height: h)
    }

    private static func even(_ v: Double) -> Int { max(2, Int(v.rounded()) & ~1) }

    private static func clampEven(_ r: PixelRect, in canvas: PixelSize) -> PixelRect {
        let x = min(max(0, r.x), canvas.width - r.width) & ~1
        let y = min(max(0, r.y), canvas.height - r.height) & ~1
        return PixelRect(x: max(0, x), y: max(0, y), width: r.width, height: r.height)
    }
}
