internal import CSDL2
import Reel

/// Where the preview window goes on the screen: the whole window, and so the app's message in
/// its middle and the record button at its foot, on the screen's usable area.
enum PreviewPlacement {
    /// The widest a window sized to its picture opens.
    static let widestAutomatic = 960

    /// The window's place for a picture of `picture` (or the size asked for, `requested`) at
    /// `position` (`nil`: where it is now, `current`), on a screen whose usable area is
    /// `screen`: at most ``widestAutomatic`` wide unless a size was asked for, scaled down with
    /// its shape kept until it fits the screen, and moved until all of it is on the screen.
    static func place(picture: PixelSize, requested: PixelSize?, current: PixelRect, on screen: PixelRect) -> PixelRect {
        var width = requested?.width ?? min(widestAutomatic, picture.width)
        var height = requested?.height ?? picture.height * width / max(1, picture.width)
        if screen.width > 0, screen.height > 0, width > screen.width || height > screen.height {
            let scale = min(Double(screen.width) / Double(width), Double(screen.height) / Double(height))
            width = max(1, Int(Double(width) * scale))
            height = max(1, Int(Double(height) * scale))
        }
        guard screen.width > 0, screen.height > 0 else { return PixelRect(x: current.x, y: current.y, width: width, height: height) }
        let x = min(max(current.x, screen.x), screen.x + screen.width - width)
        let y = min(max(current.y, screen.y), screen.y + screen.height - height)
        return PixelRect(x: x, y: y, width: width, height: height)
    }

    /// Sizes and places `window` for a picture of `picture` (see ``place(picture:requested:current:on:)``).
    static func fit(_ window: OpaquePointer, picture: PixelSize, requested: PixelSize?) {
        var bounds = SDL_Rect()
        let display = SDL_GetWindowDisplayIndex(window)
        guard SDL_GetDisplayUsableBounds(max(0, display), &bounds) == 0 else { return }
        var x: Int32 = 0, y: Int32 = 0, w: Int32 = 0, h: Int32 = 0
        SDL_GetWindowPosition(window, &x, &y)
        SDL_GetWindowSize(window, &w, &h)
        let place = place(picture: picture, requested: requested,
                          current: PixelRect(x: Int(x), y: Int(y), width: Int(w), height: Int(h)),
                          on: PixelRect(x: Int(bounds.x), y: Int(bounds.y), width: Int(bounds.w), height: Int(bounds.h)))
        if place.width != Int(w) || place.height != Int(h) { SDL_SetWindowSize(window, Int32(place.width), Int32(place.height)) }
        if place.x != Int(x) || place.y != Int(y) { SDL_SetWindowPosition(window, Int32(place.x), Int32(place.y)) }
    }
}
