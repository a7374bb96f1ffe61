import Foundation
import Reel
internal import CSDL2

/// Where the preview draws, and its few drawing calls: fill a rectangle (opaque, or blended by
/// the colour's alpha), put the picture, show.
///
/// Two targets. With a GPU, SDL's renderer: the picture goes up as a texture and is copied into
/// the window. Without one (no DRI render node: what these machines and most servers have),
/// the window's own framebuffer (`SDL_GetWindowSurface`, shared memory with the X server):
/// libswscale makes the picture where it is shown, and nothing else touches its pixels — no
/// texture upload, no clearing of the whole window, no copy of the texture into the window,
/// which SDL's software renderer does for every picture (bench/preview.py). Lives on the
/// window's thread.
final class PreviewCanvas {
    enum Target {
        /// SDL's renderer for the window.
        case renderer(OpaquePointer)
        /// The window's framebuffer; only a window whose pixels are 4 bytes (see ``supportsSurface(of:)``).
        case surface(window: OpaquePointer)
    }

    let target: Target
    private var surface: UnsafeMutablePointer<SDL_Surface>?
    private var ink: (r: UInt8, g: UInt8, b: UInt8, a: UInt8) = (0, 0, 0, 255)
    private var blending = false
    /// The drawable size, as of the last ``begin()``.
    private(set) var size = PixelSize(width: 1, height: 1)

    init(_ target: Target) {
        self.target = target
    }

    /// Whether the window's pixels are packed 32-bit RGB, which the framebuffer path draws.
    static func supportsSurface(of window: OpaquePointer) -> Bool {
        packedOrder(SDL_GetWindowPixelFormat(window)) != nil
    }

    /// The byte order of a packed 32-bit RGB SDL pixel format (little-endian), `nil` for another.
    private static func packedOrder(_ format: UInt32) -> FrameScaler.PackedOrder? {
        switch format {
        case SDL_PIXELFORMAT_RGB888.rawValue, SDL_PIXELFORMAT_ARGB8888.rawValue: .bgra
        case SDL_PIXELFORMAT_BGR888.rawValue, SDL_PIXELFORMAT_ABGR8888.rawValue: .rgba
        default: nil
        }
    }

    /// Begins a drawing: reads the drawable's size (a resized window's framebuffer is made
    /// again). `false` when there is nothing to draw on.
    func begin() -> Bool {
        switch target {
        case .renderer(let renderer):
            var w: Int32 = 0, h: Int32 = 0
            SDL_GetRendererOutputSize(renderer, &w, &h)
            size = PixelSize(width: Int(max(1, w)), height: Int(max(1, h)))
            return true
        case .surface(let window):
            guard let s = SDL_GetWindowSurface(window), Self.packedOrder(s.pointee.format.pointee.format) != nil,
                  s.pointee.w > 0, s.pointee.h > 0 else {
                surface = nil
                return false
            }
            surface = s
            size = PixelSize(width: Int(s.pointee.w), height: Int(s.pointee.h))
            return true
        }
    }

    /// The colour of the next fills; `a` counts only while blending.
    func color(_ r: UInt8, _ g: UInt8, _ b: UInt8, _ a: UInt8 = 255) {
        ink = (r, g, b, a)
        if case .renderer(let renderer) = target { SDL_SetRenderDrawColor(renderer, r, g, b, a) }
    }

    /// Whether the next fills blend by the colour's alpha (`dst = src·a + dst·(1−a)`, as SDL's
    /// `SDL_BLENDMODE_BLEND`) or replace.
    func blend(_ on: Bool) {
        blending = on
        if case .renderer(let renderer) = target {
            SDL_SetRenderDrawBlendMode(renderer, on ? SDL_BLENDMODE_BLEND : SDL_BLENDMODE_NONE)
        }
    }

    /// Fills a rectangle (window coordinates; what lies outside the window is left out).
    func fill(_ x: Int, _ y: Int, _ w: Int, _ h: Int) {
        switch target {
        case .renderer(let renderer):
            var rect = SDL_Rect(x: Int32(x), y: Int32(y), w: Int32(w), h: Int32(h))
            SDL_RenderFillRect(renderer, &rect)
        case .surface:
            guard let surface else { return }
            let x0 = max(0, x), y0 = max(0, y), x1 = min(size.width, x + w), y1 = min(size.height, y + h)
            guard x1 > x0, y1 > y0 else { return }
            let mapped = SDL_MapRGB(surface.pointee.format, ink.r, ink.g, ink.b)
            if !blending || ink.a == 255 {
                var rect = SDL_Rect(x: Int32(x0), y: Int32(y0), w: Int32(x1 - x0), h: Int32(y1 - y0))
                SDL_FillRect(surface, &rect, mapped)
            } else if ink.a > 0 {
                blendFill(surface, x0: x0, y0: y0, x1: x1, y1: y1, mapped: mapped)
            }
        }
    }

    /// A blended fill into the framebuffer, byte by byte: every byte of a packed 32-bit pixel
    /// is one channel, so the mapped colour's bytes blend with the pixel's whatever their order.
    private func blendFill(_ surface: UnsafeMutablePointer<SDL_Surface>, x0: Int, y0: Int, x1: Int, y1: Int, mapped: UInt32) {
        guard let pixels = surface.pointee.pixels else { return }
        let alpha = UInt32(ink.a), keep = 255 - alpha
        let pitch = Int(surface.pointee.pitch)
        // The colour's four bytes, each weighted by alpha (no array: this runs every picture).
        let (s0, s1, s2, s3) = ((mapped & 0xFF) * alpha, ((mapped >> 8) & 0xFF) * alpha,
                                ((mapped >> 16) & 0xFF) * alpha, ((mapped >> 24) & 0xFF) * alpha)
        for y in y0..<y1 {
            let row = (pixels + y * pitch + x0 * 4).assumingMemoryBound(to: UInt8.self)
            for i in stride(from: 0, to: (x1 - x0) * 4, by: 4) {
                row[i] = UInt8((UInt32(row[i]) * keep + s0 + 127) / 255)
                row[i + 1] = UInt8((UInt32(row[i + 1]) * keep + s1 + 127) / 255)
                row[i + 2] = UInt8((UInt32(row[i + 2]) * keep + s2 + 127) / 255)
                row[i + 3] = UInt8((UInt32(row[i + 3]) * keep + s3 + 127) / 255)
            }
        }
    }

    /// Black where the picture at `place` does not cover the window (all of it without one).
    func clear(around place: PixelRect?) {
        color(0, 0, 0)
        blend(false)
        guard let place else { return fill(0, 0, size.width, size.height) }
        switch target {
        case .renderer(let renderer):
            SDL_RenderClear(renderer)
        case .surface:
            // Only the bands beside the picture: the picture covers the rest.
            fill(0, 0, size.width, place.y)
            fill(0, place.y + place.height, size.width, size.height - place.y - place.height)
            fill(0, place.y, place.x, place.height)
            fill(place.x + place.width, place.y, size.width - place.x - place.width, place.height)
        }
    }

    /// Makes `frame`, scaled to `place`, in the framebuffer; `false` if it could not be.
    /// (The renderer target puts pictures up as textures: ``PreviewPainter``.)
    func drawInPlace(_ frame: VideoFrame, at place: PixelRect, scaler: FrameScaler) -> Bool {
        guard case .surface = target, let surface, let pixels = surface.pointee.pixels,
              let order = Self.packedOrder(surface.pointee.format.pointee.format),
              place.x >= 0, place.y >= 0, place.x + place.width <= size.width, place.y + place.height <= size.height else { return false }
        let pitch = Int(surface.pointee.pitch)
        do {
            try scaler.draw(frame, intoPacked: pixels + place.y * pitch + place.x * 4, order: order, stride: pitch,
                            size: PixelSize(width: place.width, height: place.height))
            return true
        } catch {
            return false
        }
    }

    /// Shows what was drawn.
    func present() {
        switch target {
        case .renderer(let renderer): SDL_RenderPresent(renderer)
        case .surface(let window): if surface != nil { SDL_UpdateWindowSurface(window) }
        }
    }
}
