/// The memory layout of a video frame's pixels.
public enum PixelFormat: String, Sendable, Hashable, CaseIterable {
    /// 8-bit blue, green, red, alpha, packed; what X11 screens deliver.
    case bgra
    /// 8-bit luma plane followed by an interleaved CbCr plane at half resolution.
    case nv12
    /// 8-bit planar Y, U, V with chroma at half resolution in both directions.
    case yuv420p
    /// 8-bit packed Y0 Cb Y1 Cr at half horizontal chroma resolution; what webcams deliver.
    case yuyv

    /// How many planes the format has.
    public var planeCount: Int {
        switch self {
        case .bgra, .yuyv: return 1
        case .nv12: return 2
        case .yuv420p: return 3
        }
    }

    /// The width in bytes of one row of plane `plane` for a frame `width` pixels wide.
    public func rowBytes(plane: Int, width: Int) -> Int {
        switch (self, plane) {
        case (.bgra, _): return width * 4
        case (.yuyv, _): return ((width + 1) / 2) * 4
        case (.nv12, 0), (.yuv420p, 0): return width
        case (.nv12, _): return ((width + 1) / 2) * 2
        case (.yuv420p, _): return (width + 1) / 2
        }
    }

    /// The number of rows of plane `plane` for a frame `height` pixels high.
    public func rows(plane: Int, height: Int) -> Int {
        switch (self, plane) {
        case (.bgra, _), (.yuyv, _), (.nv12, 0), (.yuv420p, 0): return height
        default: return (height + 1) / 2
        }
    }

    /// Where the pixel at (`x`, `y`) of plane `plane` starts, in bytes from the plane's start,
    /// for even `x` and `y` (the positions every format can address).
    public func byteOffset(plane: Int, x: Int, y: Int, stride: Int) -> Int {
        switch (self, plane) {
        case (.bgra, _): return y * stride + x * 4
        case (.yuyv, _): return y * stride + x * 2
        case (.nv12, 0), (.yuv420p, 0): return y * stride + x
        case (.nv12, _): return (y / 2) * stride + x
        case (.yuv420p, _): return (y / 2) * stride + x / 2
        }
    }

    /// Whether frames of this format need an even width and height.
    public var needsEvenDimensions: Bool { self != .bgra }
}

/// A width and a height in pixels.
public struct PixelSize: Sendable, Hashable, CustomStringConvertible {
    /// The width in pixels.
    public var width: Int
    /// The height in pixels.
    public var height: Int

    /// Creates a size of `width` by `height` pixels.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// Parses `WIDTHxHEIGHT`, e.g. `1280x720`.
    public init?(parsing text: String) {
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0 else { return nil }
        self.init(width: w, height: h)
    }

    public var description: String { "\(width)x\(height)" }
}

/// A rectangle in pixels, with its origin at the top left.
public struct PixelRect: Sendable, Hashable, CustomStringConvertible {
    /// The left edge, in pixels from the left of the picture.
    public var x: Int
    /// The top edge, in pixels from the top of the picture.
    public var y: Int
    /// The width in pixels.
    public var width: Int
    /// The height in pixels.
    public var height: Int

    /// Creates a rectangle whose top left corner is at (`x`, `y`).
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// The size of the rectangle.
    public var size: PixelSize { PixelSize(width: width, height: height) }

    /// Parses an X11 geometry `WxH+X+Y` (the offsets may be omitted and default to 0).
    public init?(geometry text: String) {
        var rest = Substring(text)
        var offsets: [Int] = []
        // Split off "+X+Y" from the end.
        let pieces = rest.split(separator: "+", omittingEmptySubsequences: false)
        guard let first = pieces.first else { return nil }
        rest = first
        for piece in pieces.dropFirst() {
            guard let n = Int(piece), n >= 0 else { return nil }
            offsets.append(n)
        }
        guard offsets.count == 0 || offsets.count == 2, let size = PixelSize(parsing: String(rest)) else { return nil }
        self.init(x: offsets.first ?? 0, y: offsets.last ?? 0, width: size.width, height: size.height)
    }

    /// Whether `other` lies wholly inside this rectangle.
    public func contains(_ other: PixelRect) -> Bool {
        other.x >= x && other.y >= y && other.x + other.width <= x + width && other.y + other.height <= y + height
    }

    public var description: String { "\(width)x\(height)+\(x)+\(y)" }

    /// Why this region cannot be taken from a screen of `size` at the origin, in words that say
    /// where the screen ends (and the part of the region on it, when there is one); `nil` when
    /// it lies on the screen.
    package func placement(on size: PixelSize) -> (problem: String, hint: String)? {
        let screen = PixelRect(x: 0, y: 0, width: size.width, height: size.height)
        guard !screen.contains(self) else { return nil }
        let left = max(x, 0), top = max(y, 0)
        let right = min(x + width, size.width), bottom = min(y + height, size.height)
        let bounds = "the \(size) screen (x from 0 to \(size.width - 1), y from 0 to \(size.height - 1))"
        guard right > left, bottom > top else {
            return ("region \(self) lies outside \(bounds)", "choose a region within \(screen)")
        }
        let onScreen = PixelRect(x: left, y: top, width: right - left, height: bottom - top)
        return ("region \(self) extends past \(bounds), to x \(x + width - 1) and y \(y + height - 1)",
                "choose a region within \(screen); the part of this one on the screen is \(onScreen)")
    }

    /// The rectangle at the same place with its width and height made even (a pixel less where
    /// one is odd): what a recording or a picture of it holds, 4:2:0 video needing even sizes.
    package var evenSized: PixelRect { PixelRect(x: x, y: y, width: width & ~1, height: height & ~1) }
}

/// A colour as 8-bit Y′CbCr in the limited range of BT.601 (Y 16–235, Cb/Cr 16–240), the way
/// the YUV formats store it.
public struct YUVColor: Sendable, Hashable, CustomStringConvertible {
    /// Luma (16 black – 235 white).
    public var y: UInt8
    /// Blue-difference chroma (16–240, 128 neutral).
    public var cb: UInt8
    /// Red-difference chroma (16–240, 128 neutral).
    public var cr: UInt8

    /// Creates a colour from its stored components.
    public init(y: UInt8, cb: UInt8, cr: UInt8) {
        self.y = y
        self.cb = cb
        self.cr = cr
    }

    /// The colour of 8-bit full-range RGB, with BT.709 coefficients (what Reel tags its
    /// video with).
    public init(red: UInt8, green: UInt8, blue: UInt8) {
        let r = Double(red) / 255, g = Double(green) / 255, b = Double(blue) / 255
        let luma = 0.2126 * r + 0.7152 * g + 0.0722 * b
        func byte(_ v: Double) -> UInt8 { UInt8(max(0, min(255, v.rounded()))) }
        y = byte(16 + 219 * luma)
        cb = byte(128 + 224 * (b - luma) / 1.8556)
        cr = byte(128 + 224 * (r - luma) / 1.5748)
    }

    /// Black.
    public static let black = YUVColor(y: 16, cb: 128, cr: 128)
    /// Pure red.
    public static let red = YUVColor(red: 255, green: 0, blue: 0)
    /// Pure green.
    public static let green = YUVColor(red: 0, green: 255, blue: 0)
    /// Pure blue.
    public static let blue = YUVColor(red: 0, green: 0, blue: 255)

    public var description: String { "Y\(y) Cb\(cb) Cr\(cr)" }
}
