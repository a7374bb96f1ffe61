#if canImport(Glibc)
import Glibc
#endif
internal import CXCB
import ReelCore

/// Picking by hand, a window (a click) or a region (a drag): the pointer and the keyboard
/// grabbed, a crosshair, each pointer event handed to the picker until it has its answer, and
/// Escape or Ctrl-C to give up (a terminal under the grab gets no Ctrl-C). One loop for both.
extension X11Connection {
    /// How a pick under the grab ended.
    enum GrabbedPick<Answer> {
        /// The picker's answer.
        case answered(Answer)
        /// Escape or Ctrl-C gave up.
        case givenUp
        /// The pointer or the keyboard could not be grabbed (another program holds it).
        case notGrabbed
        /// Given up before an answer (the caller cancelled, or the connection failed).
        case cancelled
    }

    /// Grabs the pointer (reporting `pointerEvents`, a crosshair over it) and the keyboard on
    /// `root`, and hands each pointer event (its type and the event) to `handle` until it
    /// answers; Escape or Ctrl-C give up, and `isCancelled` is asked between events. Both grabs
    /// are released and the cursor freed however it ends.
    func pickUnderGrab<Answer>(on root: UInt32, pointerEvents: UInt32, isCancelled: () -> Bool,
                               handle: (_ type: Int32, _ event: UnsafeRawPointer) -> Answer?) -> GrabbedPick<Answer> {
        let mode = UInt8(XCB_GRAB_MODE_ASYNC.rawValue)
        let cursor = makeCrosshairCursor()
        defer { xcb_free_cursor(raw, cursor); flush() }
        let mask = UInt16(truncatingIfNeeded: pointerEvents)
        guard let pointer = xcb_grab_pointer_reply(raw, xcb_grab_pointer(raw, 0, root, mask, mode, mode, 0, cursor, UInt32(XCB_CURRENT_TIME)), nil)
        else { return .cancelled }
        let pointerStatus = pointer.pointee.status
        free(pointer)
        guard pointerStatus == UInt8(XCB_GRAB_STATUS_SUCCESS.rawValue) else { return .notGrabbed }
        defer { xcb_ungrab_pointer(raw, UInt32(XCB_CURRENT_TIME)); flush() }
        guard let keyboard = xcb_grab_keyboard_reply(raw, xcb_grab_keyboard(raw, 0, root, UInt32(XCB_CURRENT_TIME), mode, mode), nil)
        else { return .cancelled }
        let keyboardStatus = keyboard.pointee.status
        free(keyboard)
        guard keyboardStatus == UInt8(XCB_GRAB_STATUS_SUCCESS.rawValue) else { return .notGrabbed }
        defer { xcb_ungrab_keyboard(raw, UInt32(XCB_CURRENT_TIME)); flush() }
        let escape = keycodes(for: 0xFF1B), letterC = keycodes(for: 0x63)
        while !isCancelled(), !hasFailed {
            guard let event = xcb_poll_for_event(raw) else {
                usleep(10_000)
                continue
            }
            defer { free(event) }
            let type = Int32(event.pointee.response_type & 0x7F)
            if type == XCB_KEY_PRESS {
                let key = UnsafeRawPointer(event).assumingMemoryBound(to: xcb_key_press_event_t.self).pointee
                let control = key.state & UInt16(XCB_MOD_MASK_CONTROL.rawValue) != 0
                if escape.contains(key.detail) || (control && letterC.contains(key.detail)) { return .givenUp }
            } else if let answer = handle(type, UnsafeRawPointer(event)) {
                return .answered(answer)
            }
        }
        return .cancelled
    }

    /// A crosshair from the cursor font (34: XC_crosshair), as xwininfo and xprop show; the
    /// caller frees it.
    private func makeCrosshairCursor() -> UInt32 {
        let font = xcb_generate_id(raw)
        xcb_open_font(raw, font, 6, "cursor")
        let cursor = xcb_generate_id(raw)
        xcb_create_glyph_cursor(raw, cursor, font, font, 34, 35, 0, 0, 0, 0xFFFF, 0xFFFF, 0xFFFF)
        xcb_close_font(raw, font)
        return cursor
    }

    /// The keycodes that give `keysym` (unshifted or shifted) on this server's keyboard.
    private func keycodes(for keysym: UInt32) -> Set<UInt8> {
        let first = setup.pointee.min_keycode, count = UInt8(clamping: Int(setup.pointee.max_keycode) - Int(first) + 1)
        guard let reply = xcb_get_keyboard_mapping_reply(raw, xcb_get_keyboard_mapping(raw, first, count), nil) else { return [] }
        defer { free(reply) }
        let perCode = Int(reply.pointee.keysyms_per_keycode)
        guard perCode > 0, let symbols = xcb_get_keyboard_mapping_keysyms(reply) else { return [] }
        let total = Int(xcb_get_keyboard_mapping_keysyms_length(reply))
        var found: Set<UInt8> = []
        for index in 0..<total where symbols[index] == keysym {
            found.insert(UInt8(clamping: Int(first) + index / perCode))
        }
        return found
    }

    // MARK: A region

    /// A rectangle dragged with the first button on `root`, drawn as it goes (inverted on the
    /// root window and its children, so it shows on any picture and leaves nothing behind).
    func pickRegion(of root: UInt32, isCancelled: @escaping () -> Bool) -> X11RegionPickResult {
        // XOR with white over the children too: drawn twice, a rectangle is gone.
        let gc = xcb_generate_id(raw)
        let valueMask = XCB_GC_FUNCTION.rawValue | XCB_GC_FOREGROUND.rawValue | XCB_GC_LINE_WIDTH.rawValue | XCB_GC_SUBWINDOW_MODE.rawValue
        let values: [UInt32] = [XCB_GX_XOR.rawValue, 0xFFFFFF, 2, XCB_SUBWINDOW_MODE_INCLUDE_INFERIORS.rawValue]
        xcb_create_gc(raw, gc, root, valueMask, values)
        defer { xcb_free_gc(raw, gc) }
        var anchor: (x: Int, y: Int)?
        var drawn: PixelRect?
        func draw(_ rect: PixelRect) {
            var r = xcb_rectangle_t(x: Int16(clamping: rect.x), y: Int16(clamping: rect.y),
                                    width: UInt16(clamping: max(0, rect.width - 1)), height: UInt16(clamping: max(0, rect.height - 1)))
            xcb_poly_rectangle(raw, root, gc, 1, &r)
        }
        func show(_ rect: PixelRect?) {
            if let drawn { draw(drawn) }
            if let rect { draw(rect) }
            drawn = rect
            flush()
        }
        defer { show(nil) }
        let events = XCB_EVENT_MASK_BUTTON_PRESS.rawValue | XCB_EVENT_MASK_BUTTON_RELEASE.rawValue | XCB_EVENT_MASK_BUTTON_MOTION.rawValue
        let picked = pickUnderGrab(on: root, pointerEvents: events, isCancelled: isCancelled) { type, event -> PixelRect? in
            switch type {
            case XCB_BUTTON_PRESS:
                let press = event.assumingMemoryBound(to: xcb_button_press_event_t.self).pointee
                if press.detail == 1 { anchor = (Int(press.root_x), Int(press.root_y)) }
            case XCB_MOTION_NOTIFY:
                let motion = event.assumingMemoryBound(to: xcb_motion_notify_event_t.self).pointee
                if let anchor { show(Self.rectangle(from: anchor, to: (Int(motion.root_x), Int(motion.root_y)))) }
            case XCB_BUTTON_RELEASE:
                let release = event.assumingMemoryBound(to: xcb_button_release_event_t.self).pointee
                guard release.detail == 1, let start = anchor else { return nil }
                let rect = Self.rectangle(from: start, to: (Int(release.root_x), Int(release.root_y)))
                // A click without a drag is no rectangle: drag again.
                guard rect.width > 1 && rect.height > 1 else {
                    anchor = nil
                    show(nil)
                    return nil
                }
                return rect
            default:
                break
            }
            return nil
        }
        switch picked {
        case .answered(let rect): return .region(rect)
        case .givenUp: return .givenUp
        case .notGrabbed: return .notGrabbed
        case .cancelled: return .cancelled
        }
    }

    /// The rectangle between two corners, both inside it.
    private static func rectangle(from a: (x: Int, y: Int), to b: (x: Int, y: Int)) -> PixelRect {
        PixelRect(x: min(a.x, b.x), y: min(a.y, b.y), width: abs(a.x - b.x) + 1, height: abs(a.y - b.y) + 1)
    }
}
