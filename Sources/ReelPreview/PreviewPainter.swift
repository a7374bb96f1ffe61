import Foundation
import Reel
internal import CSDL2

/// Draws the preview: the picture fitted into the window with its aspect kept, and over it the
/// status bar (indicator, elapsed time, size, dropped frames), the progress bar and the record
/// button. Lives on the window's thread.
struct PreviewPainter {
    private let renderer: OpaquePointer
    private let showsRecordButton: Bool
    private var texture: OpaquePointer?
    private var textureShape: (format: PixelFormat, size: PixelSize)?
    private var outputSize = PixelSize(width: 1, height: 1)
    /// Fast bilinear: the window is only looked at, and it is the cheapest scaling.
    private let scaler = FrameScaler(quality: .fastBilinear)
    private var pool: FramePool?
    /// Which picture the texture holds, so that a status change does not convert it again.
    private var uploaded: FrameKey?
    private struct FrameKey: Equatable {
        var time: MediaTime
        var sequence: Int64
        var size: PixelSize
    }

    /// The status bar's height.
    static let barHeight = 32
    /// The progress bar's height, at the bottom.
    static let progressHeight = 6
    /// The record button's radius.
    static let buttonRadius = 22

    init(renderer: OpaquePointer, showsRecordButton: Bool) {
        self.renderer = renderer
        self.showsRecordButton = showsRecordButton
    }

    mutating func release() {
        if let texture { SDL_DestroyTexture(texture) }
        texture = nil
    }

    /// The record button's centre in the window.
    private var buttonCentre: (x: Int, y: Int) {
        (outputSize.width / 2, outputSize.height - Self.progressHeight - Self.buttonRadius - 12)
    }

    /// Whether the point (window coordinates) is on the record button.
    func isOnRecordButton(x: Int, y: Int) -> Bool {
        guard showsRecordButton else { return false }
        let c = buttonCentre
        let dx = x - c.x, dy = y - c.y
        return dx * dx + dy * dy <= Self.buttonRadius * Self.buttonRadius
    }

    /// Where a picture of `size` goes in the window: as large as fits, aspect kept, centred.
    static func fit(_ size: PixelSize, in window: PixelSize) -> PixelRect {
        guard size.width > 0, size.height > 0 else { return PixelRect(x: 0, y: 0, width: window.width, height: window.height) }
        let scale = min(Double(window.width) / Double(size.width), Double(window.height) / Double(size.height))
        let w = max(1, Int((Double(size.width) * scale).rounded())), h = max(1, Int((Double(size.height) * scale).rounded()))
        return PixelRect(x: (window.width - w) / 2, y: (window.height - h) / 2, width: w, height: h)
    }

    /// ``fit(_:in:)`` with an even width and height, as libswscale wants for 4:2:0 input.
    static func evenFit(_ size: PixelSize, in window: PixelSize) -> PixelRect {
        var r = fit(size, in: window)
        r.width = max(2, r.width & ~1)
        r.height = max(2, r.height & ~1)
        return r
    }

    mutating func draw(_ frame: VideoFrame?, status: PreviewWindow.Status) {
        var w: Int32 = 0, h: Int32 = 0
        SDL_GetRendererOutputSize(renderer, &w, &h)
        outputSize = PixelSize(width: Int(max(1, w)), height: Int(max(1, h)))
        SDL_SetRenderDrawBlendMode(renderer, SDL_BLENDMODE_NONE)
        SDL_SetRenderDrawColor(renderer, 0, 0, 0, 255)
        SDL_RenderClear(renderer)
        if let frame, case let place = Self.evenFit(frame.size, in: outputSize), upload(frame, into: place) {
            var rect = SDL_Rect(x: Int32(place.x), y: Int32(place.y), w: Int32(place.width), h: Int32(place.height))
            SDL_RenderCopy(renderer, texture, nil, &rect)
        }
        drawBar(status)
        if let progress = status.progress { drawProgress(progress) }
        if showsRecordButton { drawRecordButton(status.state) }
        SDL_RenderPresent(renderer)
    }

    // MARK: The picture

    /// Scales and converts `frame` to BGRA at exactly `place`'s size with libswscale (one
    /// pass, SIMD; BT.709 as Reel records), and uploads that: the renderer then only copies
    /// pixels. Letting SDL convert YUV and scale costs several times more without a GPU.
    private mutating func upload(_ frame: VideoFrame, into place: PixelRect) -> Bool {
        let size = PixelSize(width: place.width, height: place.height)
        let key = FrameKey(time: frame.presentationTime, sequence: frame.sequenceNumber, size: size)
        if textureShape?.size != size || texture == nil {
            if let texture { SDL_DestroyTexture(texture) }
            texture = SDL_CreateTexture(renderer, SDL_PIXELFORMAT_ARGB8888.rawValue, Int32(SDL_TEXTUREACCESS_STREAMING.rawValue),
                                        Int32(size.width), Int32(size.height))
            textureShape = texture == nil ? nil : (.bgra, size)
            pool = FramePool(format: .bgra, size: size, capacity: 1)
            uploaded = nil
        }
        guard let texture else { return false }
        if uploaded == key { return true }
        guard let pool, let picture = pool.makeFrame() else { return false }
        do {
            try scaler.draw(frame, into: picture, at: PixelRect(x: 0, y: 0, width: size.width, height: size.height))
        } catch {
            return false
        }
        let done = picture.withUnsafePlane(0) { bytes, stride in
            SDL_UpdateTexture(texture, nil, bytes.baseAddress, Int32(stride)) == 0
        }
        uploaded = done ? key : nil
        return done
    }

    // MARK: The overlay

    private func color(_ r: UInt8, _ g: UInt8, _ b: UInt8, _ a: UInt8 = 255) {
        SDL_SetRenderDrawColor(renderer, r, g, b, a)
    }

    private func fill(_ x: Int, _ y: Int, _ w: Int, _ h: Int) {
        var rect = SDL_Rect(x: Int32(x), y: Int32(y), w: Int32(w), h: Int32(h))
        SDL_RenderFillRect(renderer, &rect)
    }

    private func disc(cx: Int, cy: Int, r: Int) {
        for dy in -r...r {
            let dx = Int(Double(r * r - dy * dy).squareRoot())
            fill(cx - dx, cy + dy, 2 * dx + 1, 1)
        }
    }

    private func ring(cx: Int, cy: Int, r: Int, thickness: Int) {
        for dy in -r...r {
            let outer = Int(Double(r * r - dy * dy).squareRoot())
            let innerR = r - thickness
            if abs(dy) > innerR {
                fill(cx - outer, cy + dy, 2 * outer + 1, 1)
            } else {
                let inner = Int(Double(innerR * innerR - dy * dy).squareRoot())
                fill(cx - outer, cy + dy, outer - inner, 1)
                fill(cx + inner + 1, cy + dy, outer - inner, 1)
            }
        }
    }

    private func drawBar(_ status: PreviewWindow.Status) {
        SDL_SetRenderDrawBlendMode(renderer, SDL_BLENDMODE_BLEND)
        color(0, 0, 0, 150)
        fill(0, 0, outputSize.width, Self.barHeight)
        SDL_SetRenderDrawBlendMode(renderer, SDL_BLENDMODE_NONE)
        // The indicator: a red dot, two bars, or a hollow circle.
        switch status.state {
        case .recording:
            color(230, 30, 30)
            disc(cx: 20, cy: 16, r: 9)
        case .paused:
            color(255, 255, 255)
            fill(12, 7, 6, 18)
            fill(22, 7, 6, 18)
        case .idle:
            color(200, 200, 200)
            ring(cx: 20, cy: 16, r: 9, thickness: 2)
        }
        var x = 40
        color(255, 255, 255)
        x = text(Self.clock(status.elapsed), x: x, y: 9) + 16
        x = text(Self.size(status.bytes), x: x, y: 9) + 16
        if status.droppedFrames > 0 {
            color(255, 200, 0)
            _ = text("\(status.droppedFrames) DROPPED", x: x, y: 9)
        }
    }

    private func drawProgress(_ progress: Double) {
        color(60, 60, 60)
        fill(0, outputSize.height - Self.progressHeight, outputSize.width, Self.progressHeight)
        color(230, 30, 30)
        fill(0, outputSize.height - Self.progressHeight, Int(Double(outputSize.width) * progress), Self.progressHeight)
    }

    private func drawRecordButton(_ state: PreviewWindow.RecordingState) {
        let c = buttonCentre
        color(255, 255, 255)
        ring(cx: c.x, cy: c.y, r: Self.buttonRadius, thickness: 3)
        color(230, 30, 30)
        if state == .recording {
            fill(c.x - 9, c.y - 9, 18, 18)   // a square: press to pause
        } else {
            disc(cx: c.x, cy: c.y, r: 15)     // a dot: press to record
        }
    }

    /// `hh:mm:ss`.
    static func clock(_ time: MediaTime) -> String {
        let s = max(0, Int(time.seconds))
        return String(format: "%02d:%02d:%02d", s / 3600, s / 60 % 60, s % 60)
    }

    /// `12.3MB`, `850KB`, `1.20GB`.
    static func size(_ bytes: Int64) -> String {
        let b = Double(max(0, bytes))
        if b >= 1e9 { return String(format: "%.2fGB", b / 1e9) }
        if b >= 1e6 { return String(format: "%.1fMB", b / 1e6) }
        return String(format: "%.0fKB", b / 1e3)
    }

    /// Draws `string` in the small bitmap font, twice its size; returns the x after it.
    private func text(_ string: String, x: Int, y: Int) -> Int {
        var pen = x
        let scale = 2
        for ch in string {
            if let rows = Glyphs.rows[ch] {
                for (row, bits) in rows.enumerated() {
                    for col in 0..<5 where bits & (1 << (4 - col)) != 0 {
                        fill(pen + col * scale, y + row * scale, scale, scale)
                    }
                }
            }
            pen += 6 * scale
        }
        return pen
    }
}

/// A 5x7 bitmap font for what the status bar says: digits, `:`, `.`, and the letters of
/// "KB MB GB DROPPED". Each row's five bits, the leftmost the highest.
enum Glyphs {
    static let rows: [Character: [UInt8]] = [
        "0": [0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E],
        "1": [0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E],
        "2": [0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F],
        "3": [0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E],
        "4": [0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02],
        "5": [0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E],
        "6": [0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E],
        "7": [0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08],
        "8": [0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E],
        "9": [0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C],
        ":": [0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00],
        ".": [0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C],
        " ": [0, 0, 0, 0, 0, 0, 0],
        "B": [0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E],
        "D": [0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C],
        "E": [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F],
        "G": [0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F],
        "K": [0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11],
        "M": [0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11],
        "O": [0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E],
        "P": [0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10],
        "R": [0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11],
    ]
}
