#if canImport(Glibc)
import Glibc
#endif
internal import CXCB
import ReelCore

/// Window capture through XCB: listing top-level windows, the focus, Composite's redirection and
/// window pixmaps, and picking a window with a click.
extension X11Connection {
    func windows(of root: UInt32) -> [X11WindowInfo] {
        var ids = cardinals(of: root, property: atom("_NET_CLIENT_LIST"), type: XCB_ATOM_WINDOW.rawValue)
        if ids.isEmpty {
            let wmState = atom("WM_STATE")
            for child in children(of: root) {
                if hasProperty(child, wmState) {
                    ids.append(child)
                } else if let client = children(of: child).first(where: { hasProperty($0, wmState) }) {
                    ids.append(client)
                }
            }
        }
        if ids.isEmpty {
            // No window manager: the root's children that are shown and are an application's
            // windows (not a menu's or a tooltip's, which override redirection), with a title
            // or without.
            return children(of: root).compactMap { id in
                guard isApplicationWindow(id), let info = describe(id, root: root), info.isMapped else { return nil }
                return info
            }
        }
        return ids.compactMap { describe($0, root: root) }
    }

    func topLevelWindow(_ id: UInt32, of root: UInt32) -> X11WindowInfo? {
        guard id > 1, id != root else { return nil }
        if let listed = windows(of: root).first(where: { $0.id == id }) { return listed }
        // Unlisted: a child of the root that is an application's window (unmapped where no
        // window manager runs), or a client a window manager has withdrawn into a frame.
        let isTopLevel = parent(of: id) == root ? isApplicationWindow(id) : hasProperty(id, atom("WM_STATE"))
        return isTopLevel ? describe(id, root: root) : nil
    }

    func hiddenWindows(of root: UInt32) -> [X11WindowInfo] {
        let listed = Set(windows(of: root).map(\.id))
        return children(of: root).compactMap { id in
            guard !listed.contains(id), isApplicationWindow(id), let info = describe(id, root: root), !info.isMapped else { return nil }
            return info
        }
    }

    func focusedWindow(of root: UInt32) -> UInt32? {
        let clients = Set(windows(of: root).map(\.id))
        var candidate: UInt32 = cardinals(of: root, property: atom("_NET_ACTIVE_WINDOW"), type: XCB_ATOM_WINDOW.rawValue).first ?? 0
        if candidate == 0 {
            guard let reply = xcb_get_input_focus_reply(raw, xcb_get_input_focus(raw), nil) else { return nil }
            candidate = reply.pointee.focus
            free(reply)
        }
        // 0 is None and 1 PointerRoot: no window has the focus.
        var window = candidate
        while window > 1, window != root {
            if clients.contains(window) { return window }
            guard let parent = parent(of: window) else { return nil }
            window = parent
        }
        return nil
    }

    func enableComposite() -> Bool {
        guard hasExtension("Composite") else { return false }
        let cookie = xcb_composite_query_version(raw, 0, 4)
        guard let reply = xcb_composite_query_version_reply(raw, cookie, nil) else { return false }
        defer { free(reply) }
        return reply.pointee.major_version > 0 || reply.pointee.minor_version >= 2
    }

    func redirectWindow(_ window: UInt32) -> Bool {
        let cookie = xcb_composite_redirect_window_checked(raw, window, UInt8(XCB_COMPOSITE_REDIRECT_AUTOMATIC.rawValue))
        if let error = xcb_request_check(raw, cookie) {
            free(error)
            return false
        }
        return true
    }

    func windowState(_ window: UInt32, root: UInt32) -> X11WindowState {
        let attributesCookie = xcb_get_window_attributes(raw, window)
        let geometryCookie = xcb_get_geometry(raw, window)
        let placeCookie = xcb_translate_coordinates(raw, window, root, 0, 0)
        let attributes = xcb_get_window_attributes_reply(raw, attributesCookie, nil)
        let geometry = xcb_get_geometry_reply(raw, geometryCookie, nil)
        let place = xcb_translate_coordinates_reply(raw, placeCookie, nil)
        defer { free(attributes); free(geometry); free(place) }
        guard let attributes, let geometry, let place else { return .gone }
        guard attributes.pointee.map_state == UInt8(XCB_MAP_STATE_VIEWABLE.rawValue) else { return .unmapped }
        return .viewable(frame: PixelRect(x: Int(place.pointee.dst_x), y: Int(place.pointee.dst_y),
                                          width: Int(geometry.pointee.width), height: Int(geometry.pointee.height)),
                         border: Int(geometry.pointee.border_width))
    }

    func nameWindowPixmap(_ window: UInt32) -> UInt32? {
        let pixmap = xcb_generate_id(raw)
        let cookie = xcb_composite_name_window_pixmap_checked(raw, window, pixmap)
        if let error = xcb_request_check(raw, cookie) {
            free(error)
            return nil
        }
        return pixmap
    }

    func pointerIsOver(_ window: UInt32, root: UInt32) -> Bool {
        guard let reply = xcb_query_pointer_reply(raw, xcb_query_pointer(raw, root), nil) else { return false }
        let child = reply.pointee.child
        free(reply)
        guard child != 0 else { return false }
        // The child of the root under the pointer is the window or one of its ancestors (a frame).
        var current = window
        while current != root {
            if current == child { return true }
            guard let parent = parent(of: current), parent != 0 else { return false }
            current = parent
        }
        return false
    }

    func freePixmap(_ pixmap: UInt32) {
        xcb_free_pixmap(raw, pixmap)
        flush()
    }

    func pickWindow(of root: UInt32, isCancelled: @escaping () -> Bool) -> X11PickResult {
        var clicked: UInt32?
        let events = XCB_EVENT_MASK_BUTTON_PRESS.rawValue | XCB_EVENT_MASK_BUTTON_RELEASE.rawValue
        let picked = pickUnderGrab(on: root, pointerEvents: events, isCancelled: isCancelled) { type, event -> X11PickResult? in
            if type == XCB_BUTTON_PRESS {
                clicked = event.assumingMemoryBound(to: xcb_button_press_event_t.self).pointee.child
            } else if type == XCB_BUTTON_RELEASE, let child = clicked {
                // The child of the root under the pointer: a client, or a window manager's frame.
                guard child != 0 else { return .root }
                let clients = Set(windows(of: root).map(\.id))
                if clients.contains(child) { return .window(child) }
                return .window(children(of: child).first(where: clients.contains) ?? child)
            }
            return nil
        }
        switch picked {
        case .answered(let window): return window
        case .givenUp: return .givenUp
        case .notGrabbed: return .notGrabbed
        case .cancelled: return .cancelled
        }
    }

    // MARK: - Helpers

    private func describe(_ window: UInt32, root: UInt32) -> X11WindowInfo? {
        guard let attributes = xcb_get_window_attributes_reply(raw, xcb_get_window_attributes(raw, window), nil) else { return nil }
        let mapped = attributes.pointee.map_state == UInt8(XCB_MAP_STATE_VIEWABLE.rawValue)
        free(attributes)
        var frame = PixelRect(x: 0, y: 0, width: 0, height: 0)
        if let geometry = xcb_get_geometry_reply(raw, xcb_get_geometry(raw, window), nil) {
            frame.width = Int(geometry.pointee.width)
            frame.height = Int(geometry.pointee.height)
            free(geometry)
        }
        if let place = xcb_translate_coordinates_reply(raw, xcb_translate_coordinates(raw, window, root, 0, 0), nil) {
            frame.x = Int(place.pointee.dst_x)
            frame.y = Int(place.pointee.dst_y)
            free(place)
        }
        var title = String(decoding: propertyBytes(of: window, property: atom("_NET_WM_NAME")), as: UTF8.self)
        if title.isEmpty {
            title = String(decoding: propertyBytes(of: window, property: XCB_ATOM_WM_NAME.rawValue), as: UTF8.self)
        }
        // WM_CLASS: the instance and the class, each ending with a NUL.
        let classParts = propertyBytes(of: window, property: XCB_ATOM_WM_CLASS.rawValue)
            .split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        let pid = cardinals(of: window, property: atom("_NET_WM_PID"), type: XCB_ATOM_CARDINAL.rawValue).first
        return X11WindowInfo(id: window, title: title, className: classParts.count > 1 ? classParts[1] : "",
                             instanceName: classParts.first ?? "", frame: frame, isMapped: mapped,
                             processID: pid.flatMap { $0 > 0 && $0 <= UInt32(Int32.max) ? Int32($0) : nil })
    }

    /// Whether `window` is an InputOutput window that does not override redirection (a menu,
    /// a tooltip or a drag icon does).
    private func isApplicationWindow(_ window: UInt32) -> Bool {
        guard let attributes = xcb_get_window_attributes_reply(raw, xcb_get_window_attributes(raw, window), nil) else { return false }
        defer { free(attributes) }
        return attributes.pointee.override_redirect == 0 && attributes.pointee._class == UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue)
    }

    func atom(_ name: String) -> UInt32 {
        let cookie = name.withCString { xcb_intern_atom(raw, 1, UInt16(strlen($0)), $0) }
        guard let reply = xcb_intern_atom_reply(raw, cookie, nil) else { return 0 }
        defer { free(reply) }
        return reply.pointee.atom
    }

    private func propertyBytes(of window: UInt32, property: UInt32) -> [UInt8] {
        guard property != 0 else { return [] }
        let cookie = xcb_get_property(raw, 0, window, property, XCB_ATOM_ANY.rawValue, 0, 1024)
        guard let reply = xcb_get_property_reply(raw, cookie, nil) else { return [] }
        defer { free(reply) }
        let length = Int(xcb_get_property_value_length(reply))
        guard length > 0, let value = xcb_get_property_value(reply) else { return [] }
        return Array(UnsafeRawBufferPointer(start: value, count: length))
    }

    private func cardinals(of window: UInt32, property: UInt32, type: UInt32) -> [UInt32] {
        guard property != 0 else { return [] }
        let cookie = xcb_get_property(raw, 0, window, property, type, 0, 4096)
        guard let reply = xcb_get_property_reply(raw, cookie, nil) else { return [] }
        defer { free(reply) }
        guard reply.pointee.format == 32, let value = xcb_get_property_value(reply) else { return [] }
        let count = Int(xcb_get_property_value_length(reply))
        return Array(UnsafeBufferPointer(start: value.assumingMemoryBound(to: UInt32.self), count: count))
    }

    private func hasProperty(_ window: UInt32, _ property: UInt32) -> Bool {
        guard property != 0 else { return false }
        let cookie = xcb_get_property(raw, 0, window, property, XCB_ATOM_ANY.rawValue, 0, 0)
        guard let reply = xcb_get_property_reply(raw, cookie, nil) else { return false }
        defer { free(reply) }
        return reply.pointee.type != 0
    }

    private func children(of window: UInt32) -> [UInt32] {
        guard let reply = xcb_query_tree_reply(raw, xcb_query_tree(raw, window), nil) else { return [] }
        defer { free(reply) }
        guard let children = xcb_query_tree_children(reply) else { return [] }
        return Array(UnsafeBufferPointer(start: children, count: Int(xcb_query_tree_children_length(reply))))
    }

    private func parent(of window: UInt32) -> UInt32? {
        guard let reply = xcb_query_tree_reply(raw, xcb_query_tree(raw, window), nil) else { return nil }
        defer { free(reply) }
        return reply.pointee.parent
    }
}
