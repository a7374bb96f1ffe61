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

    /// Paints `rect` in a solid colour, above everything painted before: on the screen, or
    /// inside `parent` (a window of ``openWindow(title:className:rect:red:green:blue:border:borderColour:)``,
    /// `rect` then relative to it).
    public func fill(rect: PixelRect, red: UInt8, green: UInt8, blue: UInt8, inside parent: UInt32? = nil) {
        lock.lock(); defer { lock.unlock() }
        let root = parent ?? self.root
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

    /// Paints `rect` pixel by pixel with the colour `color` gives for each (x, y) inside it, above
    /// everything painted before: a window whose background is a picture of them.
    public func paint(rect: PixelRect, color: (Int, Int) -> (red: UInt8, green: UInt8, blue: UInt8)) {
        lock.lock(); defer { lock.unlock() }
        let depth = xcb_setup_roots_iterator(xcb_get_setup(connection)).data.pointee.root_depth
        let pixmap = xcb_generate_id(connection)
        xcb_create_pixmap(connection, depth, pixmap, root, UInt16(rect.width), UInt16(rect.height))
        let gc = xcb_generate_id(connection)
        xcb_create_gc(connection, gc, pixmap, 0, nil)
        // In bands of rows that fit in a request (4-byte pixels, rows padded to 32 bits).
        let rowsPerBand = max(1, 60_000 / rect.width)
        for top in stride(from: 0, to: rect.height, by: rowsPerBand) {
            let rows = min(rowsPerBand, rect.height - top)
            var bytes = [UInt8](repeating: 0, count: rect.width * rows * 4)
            for y in 0..<rows {
                for x in 0..<rect.width {
                    let c = color(x, top + y), i = (y * rect.width + x) * 4
                    bytes[i] = c.blue; bytes[i + 1] = c.green; bytes[i + 2] = c.red
                }
            }
            xcb_put_image(connection, UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue), pixmap, gc, UInt16(rect.width), UInt16(rows),
                          0, Int16(top), 0, depth, UInt32(bytes.count), bytes)
        }
        xcb_free_gc(connection, gc)
        let window = xcb_generate_id(connection)
        let values: [UInt32] = [pixmap, 1]
        let mask = XCB_CW_BACK_PIXMAP.rawValue | XCB_CW_OVERRIDE_REDIRECT.rawValue
        xcb_create_window(connection, UInt8(XCB_COPY_FROM_PARENT), window, root, Int16(rect.x), Int16(rect.y),
                          UInt16(rect.width), UInt16(rect.height), 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue),
                          visual, mask, values)
        xcb_free_pixmap(connection, pixmap)
        xcb_map_window(connection, window)
        windows.append(window)
        sync()
    }

    /// Opens a top-level window titled `title` (`WM_NAME` and `_NET_WM_NAME`) of class
    /// `className` (`WM_CLASS`), filled with a colour, as an application's window is (not
    /// override-redirect); returns its id.
    @discardableResult
    ///
    /// With `border` > 0 the window has a border of that width in `borderColour` (`0xRRGGBB`);
    /// with a `processID`, the window says that process shows it (`_NET_WM_PID`).
    public func openWindow(title: String, className: String = "ReelTest", rect: PixelRect, red: UInt8, green: UInt8, blue: UInt8,
                           border: Int = 0, borderColour: UInt32 = 0x00FF00, processID: Int32? = nil) -> UInt32 {
        lock.lock(); defer { lock.unlock() }
        let window = xcb_generate_id(connection)
        // Values in the order of their mask bits: background pixel, then border pixel.
        let values: [UInt32] = [UInt32(red) << 16 | UInt32(green) << 8 | UInt32(blue), borderColour]
        xcb_create_window(connection, UInt8(XCB_COPY_FROM_PARENT), window, root, Int16(rect.x), Int16(rect.y),
                          UInt16(rect.width), UInt16(rect.height), UInt16(border), UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue),
                          visual, XCB_CW_BACK_PIXEL.rawValue | XCB_CW_BORDER_PIXEL.rawValue, values)
        let replace = UInt8(XCB_PROP_MODE_REPLACE.rawValue)
        xcb_change_property(connection, replace, window, XCB_ATOM_WM_NAME.rawValue, XCB_ATOM_STRING.rawValue, 8, UInt32(title.utf8.count), title)
        xcb_change_property(connection, replace, window, atom("_NET_WM_NAME"), atom("UTF8_STRING"), 8, UInt32(title.utf8.count), title)
        let wmClass = Array("reeltest\0\(className)\0".utf8)
        xcb_change_property(connection, replace, window, XCB_ATOM_WM_CLASS.rawValue, XCB_ATOM_STRING.rawValue, 8, UInt32(wmClass.count), wmClass)
        if let processID {
            let pid = [UInt32(processID)]
            xcb_change_property(connection, replace, window, atom("_NET_WM_PID"), XCB_ATOM_CARDINAL.rawValue, 32, 1, pid)
        }
        xcb_map_window(connection, window)
        windows.append(window)
        sync()
        return window
    }

    /// Opens a window as a reparenting window manager shows one: a frame (a plain top-level
    /// window in grey, with no title) holding at `offset` a client window titled `title`, in
    /// a colour, that carries `WM_STATE` (normal). Returns both ids.
    public func openFramedWindow(title: String, frame rect: PixelRect, offset: (x: Int, y: Int), clientSize: PixelSize,
                                 red: UInt8, green: UInt8, blue: UInt8) -> (frame: UInt32, client: UInt32) {
        let frame = openWindow(title: "", className: "", rect: rect, red: 128, green: 128, blue: 128)
        lock.lock(); defer { lock.unlock() }
        // A frame has no name: take away what openWindow gave it.
        xcb_delete_property(connection, frame, XCB_ATOM_WM_NAME.rawValue)
        xcb_delete_property(connection, frame, atom("_NET_WM_NAME"))
        xcb_delete_property(connection, frame, XCB_ATOM_WM_CLASS.rawValue)
        let client = xcb_generate_id(connection)
        let values: [UInt32] = [UInt32(red) << 16 | UInt32(green) << 8 | UInt32(blue)]
        xcb_create_window(connection, UInt8(XCB_COPY_FROM_PARENT), client, frame, Int16(offset.x), Int16(offset.y),
                          UInt16(clientSize.width), UInt16(clientSize.height), 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue),
                          visual, XCB_CW_BACK_PIXEL.rawValue, values)
        let replace = UInt8(XCB_PROP_MODE_REPLACE.rawValue)
        xcb_change_property(connection, replace, client, XCB_ATOM_WM_NAME.rawValue, XCB_ATOM_STRING.rawValue, 8, UInt32(title.utf8.count), title)
        let wmState = atom("WM_STATE")
        let state: [UInt32] = [1, 0]  // NormalState, no icon window
        xcb_change_property(connection, replace, client, wmState, wmState, 32, 2, state)
        xcb_map_window(connection, client)
        sync()
        return (frame, client)
    }

    /// Sets a window-list property of the root (`_NET_CLIENT_LIST`, `_NET_ACTIVE_WINDOW`), as
    /// an EWMH window manager keeps them.
    public func setRootWindows(_ property: String, _ windows: [UInt32]) {
        lock.lock(); defer { lock.unlock() }
        xcb_change_property(connection, UInt8(XCB_PROP_MODE_REPLACE.rawValue), root, atom(property), XCB_ATOM_WINDOW.rawValue, 32,
                            UInt32(windows.count), windows)
        sync()
    }

    /// Opens a top-level window titled `title` with a 32-bit (ARGB) visual, as compositing-aware
    /// applications (browsers, terminals) make them, filled with an opaque colour; returns its
    /// id, or `nil` when the server has no 32-bit TrueColor visual.
    public func openARGBWindow(title: String, rect: PixelRect, red: UInt8, green: UInt8, blue: UInt8) -> UInt32? {
        lock.lock(); defer { lock.unlock() }
        guard let screen = xcb_setup_roots_iterator(xcb_get_setup(connection)).data else { return nil }
        var argb: xcb_visualid_t?
        var depths = xcb_screen_allowed_depths_iterator(screen)
        while depths.rem > 0, argb == nil {
            if depths.data.pointee.depth == 32 {
                var visuals = xcb_depth_visuals_iterator(depths.data)
                while visuals.rem > 0 {
                    if visuals.data.pointee._class == UInt8(XCB_VISUAL_CLASS_TRUE_COLOR.rawValue) { argb = visuals.data.pointee.visual_id; break }
                    xcb_visualtype_next(&visuals)
                }
            }
            xcb_depth_next(&depths)
        }
        guard let argb else { return nil }
        let colormap = xcb_generate_id(connection)
        xcb_create_colormap(connection, UInt8(XCB_COLORMAP_ALLOC_NONE.rawValue), colormap, root, argb)
        let window = xcb_generate_id(connection)
        // Values in the order of their mask bits: background pixel, border pixel, colormap.
        let values: [UInt32] = [0xFF00_0000 | UInt32(red) << 16 | UInt32(green) << 8 | UInt32(blue), 0, colormap]
        xcb_create_window(connection, 32, window, root, Int16(rect.x), Int16(rect.y), UInt16(rect.width), UInt16(rect.height), 0,
                          UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), argb,
                          XCB_CW_BACK_PIXEL.rawValue | XCB_CW_BORDER_PIXEL.rawValue | XCB_CW_COLORMAP.rawValue, values)
        xcb_change_property(connection, UInt8(XCB_PROP_MODE_REPLACE.rawValue), window, XCB_ATOM_WM_NAME.rawValue, XCB_ATOM_STRING.rawValue, 8,
                            UInt32(title.utf8.count), title)
        xcb_map_window(connection, window)
        windows.append(window)
        sync()
        return window
    }

    /// Moves and resizes `window` to `rect`.
    public func place(window: UInt32, at rect: PixelRect) {
        lock.lock(); defer { lock.unlock() }
        let values: [UInt32] = [UInt32(bitPattern: Int32(rect.x)), UInt32(bitPattern: Int32(rect.y)), UInt32(rect.width), UInt32(rect.height)]
        let mask = XCB_CONFIG_WINDOW_X.rawValue | XCB_CONFIG_WINDOW_Y.rawValue | XCB_CONFIG_WINDOW_WIDTH.rawValue | XCB_CONFIG_WINDOW_HEIGHT.rawValue
        xcb_configure_window(connection, window, UInt16(mask), values)
        xcb_clear_area(connection, 0, window, 0, 0, 0, 0)
        sync()
    }

    /// Raises `window` above every other.
    public func raise(window: UInt32) {
        lock.lock(); defer { lock.unlock() }
        let values: [UInt32] = [XCB_STACK_MODE_ABOVE.rawValue]
        xcb_configure_window(connection, window, UInt16(XCB_CONFIG_WINDOW_STACK_MODE.rawValue), values)
        sync()
    }

    /// Hides (`false`) or shows (`true`) `window`, as minimising and restoring it does.
    public func show(window: UInt32, _ shown: Bool) {
        lock.lock(); defer { lock.unlock() }
        if shown { xcb_map_window(connection, window) } else { xcb_unmap_window(connection, window) }
        sync()
    }

    /// Destroys `window`, as closing its application does.
    public func close(window: UInt32) {
        lock.lock(); defer { lock.unlock() }
        xcb_destroy_window(connection, window)
        windows.removeAll { $0 == window }
        sync()
    }

    /// Sets the input focus on `window`.
    public func focus(window: UInt32) {
        lock.lock(); defer { lock.unlock() }
        xcb_set_input_focus(connection, UInt8(XCB_INPUT_FOCUS_POINTER_ROOT.rawValue), window, UInt32(XCB_CURRENT_TIME))
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

    /// The whole screen as it is now: packed RGB, `width` × `height` pixels.
    public func screenshot() -> (rgb: [UInt8], width: Int, height: Int) {
        lock.lock(); defer { lock.unlock() }
        guard let setup = xcb_setup_roots_iterator(xcb_get_setup(connection)).data else { return ([], 0, 0) }
        let width = Int(setup.pointee.width_in_pixels), height = Int(setup.pointee.height_in_pixels)
        let cookie = xcb_get_image(connection, UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue), root, 0, 0, UInt16(width), UInt16(height), ~0)
        guard let reply = xcb_get_image_reply(connection, cookie, nil) else { return ([], 0, 0) }
        defer { free(reply) }
        let bytes = Int(xcb_get_image_data_length(reply))
        guard let data = xcb_get_image_data(reply), bytes >= width * height * 4 else { return ([], 0, 0) }
        var rgb = [UInt8](repeating: 0, count: width * height * 3)
        for i in 0..<(width * height) {
            // 32 bits a pixel, blue first (a depth-24 screen of a little-endian server).
            rgb[i * 3] = data[i * 4 + 2]
            rgb[i * 3 + 1] = data[i * 4 + 1]
            rgb[i * 3 + 2] = data[i * 4]
        }
        return (rgb, width, height)
    }

    /// Where the top-level window titled `title` is on the screen, if there is one.
    public func frame(ofWindowTitled title: String) -> PixelRect? {
        lock.lock(); defer { lock.unlock() }
        guard let window = window(titled: title) else { return nil }
        guard let geometry = xcb_get_geometry_reply(connection, xcb_get_geometry(connection, window), nil) else { return nil }
        defer { free(geometry) }
        guard let place = xcb_translate_coordinates_reply(connection, xcb_translate_coordinates(connection, window, root, 0, 0), nil) else { return nil }
        defer { free(place) }
        return PixelRect(x: Int(place.pointee.dst_x), y: Int(place.pointee.dst_y), width: Int(geometry.pointee.width), height: Int(geometry.pointee.height))
    }

    /// Asks the top-level window titled `title` to close, as a window manager's close button
    /// does (a `WM_DELETE_WINDOW` message). Returns whether such a window was found.
    @discardableResult
    public func requestClose(windowTitled title: String) -> Bool {
        lock.lock(); defer { lock.unlock() }
        guard let window = window(titled: title) else { return false }
        let protocols = atom("WM_PROTOCOLS"), delete = atom("WM_DELETE_WINDOW")
        var event = xcb_client_message_event_t()
        event.response_type = UInt8(XCB_CLIENT_MESSAGE)
        event.format = 32
        event.window = window
        event.type = protocols
        event.data.data32.0 = delete
        event.data.data32.1 = UInt32(XCB_CURRENT_TIME)
        withUnsafePointer(to: &event) { pointer in
            pointer.withMemoryRebound(to: CChar.self, capacity: MemoryLayout<xcb_client_message_event_t>.size) { bytes in
                _ = xcb_send_event(connection, 0, window, XCB_EVENT_MASK_NO_EVENT.rawValue, bytes)
            }
        }
        sync()
        return true
    }

    private func atom(_ name: String) -> xcb_atom_t {
        let cookie = xcb_intern_atom(connection, 0, UInt16(name.utf8.count), name)
        guard let reply = xcb_intern_atom_reply(connection, cookie, nil) else { return 0 }
        defer { free(reply) }
        return reply.pointee.atom
    }

    /// The top-level window whose `WM_NAME` or `_NET_WM_NAME` is `title`.
    private func window(titled title: String) -> xcb_window_t? {
        let utf8 = atom("_NET_WM_NAME")
        guard let reply = xcb_query_tree_reply(connection, xcb_query_tree(connection, root), nil) else { return nil }
        defer { free(reply) }
        let count = Int(xcb_query_tree_children_length(reply))
        guard let children = xcb_query_tree_children(reply) else { return nil }
        for i in 0..<count {
            for property in [utf8, XCB_ATOM_WM_NAME.rawValue] {
                let cookie = xcb_get_property(connection, 0, children[i], property, XCB_ATOM_ANY.rawValue, 0, 256)
                guard let value = xcb_get_property_reply(connection, cookie, nil) else { continue }
                defer { free(value) }
                let length = Int(xcb_get_property_value_length(value))
                guard length > 0, let pointer = xcb_get_property_value(value) else { continue }
                if String(decoding: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self) == title { return children[i] }
            }
        }
        return nil
    }

    /// Waits until the server has handled every request (one round trip).
    private func sync() {
        let cookie = xcb_get_input_focus(connection)
        free(xcb_get_input_focus_reply(connection, cookie, nil))
    }
}
