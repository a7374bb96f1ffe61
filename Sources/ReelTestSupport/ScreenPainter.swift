import Foundation
import ReelCore
import Synchronization
internal import CXCB

/// Draws known content on an X display for tests: solid rectangles, a solid square cursor and
/// the pointer position.
///
/// Each rectangle is an override-redirect window with a background colour, so no window
/// manager moves it and the server paints it by itself. Every call returns once the server has
/// handled it, so a capture started afterwards sees the result.
public final class ScreenPainter: @unchecked Sendable {
    /// The display painted on.
    public let display: String
    private let connection: OpaquePointer
    private let root: xcb_window_t
    private let visual: xcb_visualid_t
    private let lock = NSLock()
    private var windows: [xcb_window_t] = []
    private var cursor: xcb_cursor_t = 0

    /// Connects to `display`.
    ///
    /// - Throws: `.sourceUnavailable` when no X server answers there.
    public init(display: String) throws {
        guard let connection = xcb_connect(display, nil) else {
            throw ReelError(.sourceUnavailable, "no X server at display \(display)")
        }
        guard xcb_connection_has_error(connection) == 0,
              let screen = xcb_setup_roots_iterator(xcb_get_setup(connection)).data else {
            xcb_disconnect(connection)
            throw ReelError(.sourceUnavailable, "no X server at display \(display)")
        }
        self.display = display
        self.connection = connection
        self.root = screen.pointee.root
        self.visual = screen.pointee.root_visual
    }

    deinit {
        xcb_disconnect(connection)
    }

    /// Paints `rect` in a solid colour, above everything painted before.
    public func fill(rect: PixelRect, red: UInt8, green: UInt8, blue: UInt8) {
        lock.lock(); defer { lock.unlock() }
        let window = xcb_generate_id(connection)
        // Values in the order of their mask bits: background pixel, then override-redirect.
        let pixel = UInt32(red) << 16 | UInt32(green) << 8 | UInt32(blue)
        let values: [UInt32] = [pixel, 1]
        let mask = XCB_CW_BACK_PIXEL.rawValue | XCB_CW_OVERRIDE_REDIRECT.rawValue
        xcb_create_window(connection, UInt8(XCB_COPY_FROM_PARENT), window, root, Int16(rect.x), Int16(rect.y),
                          UInt16(rect.width), UInt16(rect.height), 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue),
                          visual, mask, values)
        xcb_map_window(connection, window)
        windows.append(window)
        sync()
    }

    /// Removes everything painted, leaving the black root window.
    public func clear() {
        lock.lock(); defer { lock.unlock() }
        for window in windows { xcb_destroy_window(connection, window) }
        windows.removeAll()
        sync()
    }

    /// Moves the mouse pointer to `(x, y)` on the screen.
    public func movePointer(x: Int, y: Int) {
        lock.lock(); defer { lock.unlock() }
        xcb_warp_pointer(connection, 0, root, 0, 0, 0, 0, Int16(x), Int16(y))
        sync()
    }

    /// Makes the cursor a solid opaque square of `size` pixels in one colour, with its hot
    /// spot at the top left corner, everywhere on the screen.
    public func setSquareCursor(size: Int, red: UInt8, green: UInt8, blue: UInt8) {
        lock.lock(); defer { lock.unlock() }
        let pixmap = xcb_generate_id(connection)
        xcb_create_pixmap(connection, 1, pixmap, root, UInt16(size), UInt16(size))
        let gc = xcb_generate_id(connection)
        let foreground: [UInt32] = [1]
        xcb_create_gc(connection, gc, pixmap, XCB_GC_FOREGROUND.rawValue, foreground)
        var all = xcb_rectangle_t(x: 0, y: 0, width: UInt16(size), height: UInt16(size))
        xcb_poly_fill_rectangle(connection, pixmap, gc, 1, &all)
        let newCursor = xcb_generate_id(connection)
        // 8-bit channels spread over the protocol's 16 bits (0xAB -> 0xABAB).
        func wide(_ v: UInt8) -> UInt16 { UInt16(v) << 8 | UInt16(v) }
        xcb_create_cursor(connection, newCursor, pixmap, pixmap, wide(red), wide(green), wide(blue), 0, 0, 0, 0, 0)
        xcb_free_gc(connection, gc)
        xcb_free_pixmap(connection, pixmap)
        let values: [UInt32] = [newCursor]
        xcb_change_window_attributes(connection, root, XCB_CW_CURSOR.rawValue, values)
        for window in windows { xcb_change_window_attributes(connection, window, XCB_CW_CURSOR.rawValue, values) }
        if cursor != 0 { xcb_free_cursor(connection, cursor) }
        cursor = newCursor
        sync()
    }

    /// Waits until the server has handled every request (one round trip).
    private func sync() {
        let cookie = xcb_get_input_focus(connection)
        free(xcb_get_input_focus_reply(connection, cookie, nil))
    }
}
