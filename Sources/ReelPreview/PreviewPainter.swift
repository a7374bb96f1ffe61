import Foundation
import Reel
internal import CSDL2

/// Draws the preview: the picture fitted into the window with its aspect kept, and over it the
/// status bar (indicator, elapsed time, size, dropped frames) and the progress bar when there
/// is a status, the record button, and the app's message. Lives on the window's thread.
struct PreviewPainter {
    private let canvas: PreviewCanvas
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

    init(canvas: PreviewCanvas, showsRecordButton: Bool) {
        self.canvas = canvas
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

    /// ``evenFit(_:in:)`` a multiple of 16 wide (its height following, aspect kept), which
    /// libswscale can make in the window's framebuffer directly; another width is made apart
    /// and copied in.
    static func framebufferFit(_ size: PixelSize, in window: PixelSize) -> PixelRect {
        var r = evenFit(size, in: window)
        guard r.width > 16, r.width % 16 != 0, size.width > 0 else { return r }
        let width = r.width / 16 * 16
        let height = min(r.height, max(2, Int((Double(width) * Double(size.height) / Double(size.width)).rounded()) & ~1))
        r = PixelRect(x: (window.width - width) / 2, y: (window.height - height) / 2, width: width, height: height)
        return r
    }

    mutating func draw(_ frame: VideoFrame?, status: PreviewWindow.Status?, message: String?) {
        guard canvas.begin() else { return }
        outputSize = canvas.size
        let place = frame.map { frame -> PixelRect in
            if case .surface = canvas.target { return Self.framebufferFit(frame.size, in: outputSize) }
            return Self.evenFit(frame.size, in: outputSize)
        }
        canvas.clear(around: place)
        if let frame, let place {
            switch canvas.target {
            case .renderer(let renderer):
                if upload(frame, into: place, renderer: renderer) {
                    var rect = SDL_Rect(x: Int32(place.x), y: Int32(place.y), w: Int32(place.width), h: Int32(place.height))
                    SDL_RenderCopy(renderer, texture, nil, &rect)
                }
            case .surface:
                // Made in the window where it is shown; black if it cannot be.
                if !canvas.drawInPlace(frame, at: place, scaler: scaler) { canvas.fill(place.x, place.y, place.width, place.height) }
            }
        }
        if let status {
            drawBar(status)
            if let progress = status.progress { drawProgress(progress) }
        }
        if showsRecordButton { drawRecordButton(status?.state ?? .idle) }
        if let message, !message.isEmpty { drawMessage(message) }
        canvas.present()
    }

    // MARK: The picture

    /// Scales and converts `frame` to BGRA at exactly `place`'s size with libswscale (one
    /// pass, SIMD; BT.709 as Reel records), and uploads that: the renderer then only copies
    /// pixels. Letting SDL convert YUV and scale costs several times more without a GPU.
    private mutating func upload(_ frame: VideoFrame, into place: PixelRect, renderer: OpaquePointer) -> Bool {
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
        canvas.color(r, g, b, a)
    }

    private func fill(_ x: Int, _ y: Int, _ w: Int, _ h: Int) {
        canvas.fill(x, y, w, h)
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
        canvas.blend(true)
        color(0, 0, 0, 150)
        fill(0, 0, outputSize.width, Self.barHeight)
        canvas.blend(false)
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

    /// A message over the middle of the picture: white capitals on a dark box, wrapped at
    /// spaces to the window's width (at most 8 lines).
    private func drawMessage(_ message: String) {
        let scale = 2, advance = 6 * scale, lineHeight = 10 * scale, margin = 16
        let lines = Self.wrap(message, width: max(1, (outputSize.width - 2 * margin) / advance), maxLines: 8)
        guard let longest = lines.map(\.count).max(), longest > 0 else { return }
        let boxWidth = min(outputSize.width, longest * advance + 2 * margin - scale)
        let boxHeight = lines.count * lineHeight + 2 * margin - 3 * scale
        let x = (outputSize.width - boxWidth) / 2, y = (outputSize.height - boxHeight) / 2
        canvas.blend(true)
        color(0, 0, 0, 190)
        fill(x, y, boxWidth, boxHeight)
        canvas.blend(false)
        color(255, 255, 255)
        for (row, line) in lines.enumerated() {
            let left = (outputSize.width - (line.count * advance - scale)) / 2
            _ = text(line, x: left, y: y + margin + row * lineHeight)
        }
    }

    /// `text` in capitals, broken at spaces (and inside words longer than a line) into lines
    /// of at most `width` characters; the last of `maxLines` lines ends with "..." if cut.
    static func wrap(_ text: String, width: Int, maxLines: Int) -> [String] {
        var lines: [String] = []
        for paragraph in text.uppercased().split(separator: "\n", omittingEmptySubsequences: false) {
            var line = ""
            for word in paragraph.split(separator: " ") {
                var word = Substring(word)
                while word.count > width {
                    if !line.isEmpty { lines.append(line); line = "" }
                    lines.append(String(word.prefix(width)))
                    word = word.dropFirst(width)
                }
                if line.isEmpty {
                    line = String(word)
                } else if line.count + 1 + word.count <= width {
                    line += " " + word
                } else {
                    lines.append(line)
                    line = String(word)
                }
            }
            lines.append(line)
        }
        if lines.count > maxLines {
            lines = Array(lines.prefix(maxLines))
            lines[maxLines - 1] = String(lines[maxLines - 1].prefix(max(0, width - 3))) + "..."
        }
        return lines
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
            let glyph = BitmapFont.glyph(ch)
            for (row, bits) in glyph.rows.enumerated() {
                for col in 0..<5 where bits & (1 << (4 - col)) != 0 {
                    fill(pen + col * scale, y + (glyph.top + row) * scale, scale, scale)
                }
            }
            pen += 6 * scale
        }
        return pen
    }
}
