#if canImport(Glibc)
import Glibc
#endif
internal import CXCB
import ReelCore

/// The X server through XCB: the ``X11Server`` that screen recordings use.
package struct SystemX11Server: X11Server {
    /// The real server.
    package init() {}

    /// Connects through XCB (which connects at once or fails, so `isCancelled` is not needed).
    package func connect(display: String?, isCancelled: @escaping () -> Bool) throws -> any X11Display {
        try X11Connection(display: display)
    }
}

extension X11Connection: X11Display {
    var name: String { display }

    func screen() throws -> X11Screen {
        guard let screen = defaultScreen else {
            throw ReelError(.sourceUnavailable, "the X server at display \(display) has no screen \(defaultScreenIndex)")
        }
        try checkBGRA(screen: screen)
        return X11Screen(root: screen.pointee.root,
                         size: PixelSize(width: Int(screen.pointee.width_in_pixels), height: Int(screen.pointee.height_in_pixels)))
    }

    /// Asks for the XFixes version (required before any XFixes request); `false` without it.
    func enableCursorImages() -> Bool {
        guard hasExtension("XFIXES") else { return false }
        let cookie = xcb_xfixes_query_version(raw, 4, 0)
        guard let reply = xcb_xfixes_query_version_reply(raw, cookie, nil) else { return false }
        free(reply)
        return true
    }

    func readImage(_ rect: PixelRect, of root: UInt32, into frame: VideoFrame, atRow row: Int, shared: Bool,
                   withCursor: Bool) -> X11ImageReply {
        let c = raw
        let x = Int16(rect.x), y = Int16(rect.y), width = UInt16(rect.width), height = UInt16(rect.height)
        let format = UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue)
        // Ask for the image and the cursor together: one round trip for both.
        let shmCookie = shared
            ? xcb_shm_get_image(c, root, x, y, width, height, ~0, format, xcb_shm_seg_t(truncatingIfNeeded: frame.buffer.tag),
                                UInt32(frame.offsets[0] + row * frame.strides[0]))
            : nil
        let copyCookie = shared ? nil : xcb_get_image(c, format, root, x, y, width, height, ~0)
        let cursorCookie = withCursor ? xcb_xfixes_get_cursor_image(c) : nil

        var error: UnsafeMutablePointer<xcb_generic_error_t>?
        var captured = false
        if let shmCookie {
            if let reply = xcb_shm_get_image_reply(c, shmCookie, &error) {
                free(reply)
                captured = true
            }
        } else if let copyCookie {
            if let reply = xcb_get_image_reply(c, copyCookie, &error) {
                Self.copyImage(reply, rect: rect, into: frame, atRow: row)
                free(reply)
                captured = true
            }
        }
        let errorCode = error?.pointee.error_code
        free(error)

        var cursor: X11CursorImage?
        if let cursorCookie {
            if captured, let reply = xcb_xfixes_get_cursor_image_reply(c, cursorCookie, nil) {
                cursor = Self.cursorImage(reply)
                free(reply)
            } else {
                xcb_discard_reply(c, cursorCookie.sequence)
            }
        }
        return captured ? .captured(cursor: cursor) : .refused(errorCode: errorCode)
    }

    func startDamageTracking(of root: UInt32) -> Bool {
        guard damageTracking == nil else { return true }
        let c = raw
        // Regions need XFixes 2; ask for what the cursor asks for, so the two agree.
        let query = "DAMAGE".withCString { xcb_query_extension(c, UInt16(strlen($0)), $0) }
        guard let info = xcb_query_extension_reply(c, query, nil) else { return false }
        let present = info.pointee.present != 0, firstEvent = info.pointee.first_event
        free(info)
        guard present, enableCursorImages() else { return false }
        guard let version = xcb_damage_query_version_reply(c, xcb_damage_query_version(c, 1, 1), nil) else { return false }
        free(version)
        let damage = xcb_generate_id(c), region = xcb_generate_id(c)
        // NonEmpty: one event when damage appears after it was taken, not one per drawing.
        let created = xcb_damage_create_checked(c, damage, root, UInt8(XCB_DAMAGE_REPORT_LEVEL_NON_EMPTY.rawValue))
        if let error = xcb_request_check(c, created) {
            free(error)
            return false
        }
        xcb_xfixes_create_region(c, region, 0, nil)
        damageTracking = DamageTracking(damage: damage, region: region,
                                        notifyEvent: firstEvent &+ UInt8(XCB_DAMAGE_NOTIFY), pending: false)
        flush()
        return true
    }

    func takeDamage() -> [PixelRect]? {
        guard var tracking = damageTracking, !hasFailed else { return nil }
        // Read what has arrived (without blocking): a DamageNotify says there is damage to take.
        while let event = xcb_poll_for_event(raw) {
            if event.pointee.response_type & 0x7F == tracking.notifyEvent { tracking.pending = true }
            free(event)
        }
        guard tracking.pending else {
            damageTracking = tracking
            return []
        }
        tracking.pending = false
        damageTracking = tracking
        // Move the damage into the region (emptying the damage, so the next drawing is
        // reported again) and fetch it: one round trip.
        xcb_damage_subtract(raw, tracking.damage, 0, tracking.region)
        guard let reply = xcb_xfixes_fetch_region_reply(raw, xcb_xfixes_fetch_region(raw, tracking.region), nil) else { return nil }
        defer { free(reply) }
        let count = Int(xcb_xfixes_fetch_region_rectangles_length(reply))
        guard let rectangles = xcb_xfixes_fetch_region_rectangles(reply) else { return count == 0 ? [] : nil }
        return UnsafeBufferPointer(start: rectangles, count: count).map {
            PixelRect(x: Int($0.x), y: Int($0.y), width: Int($0.width), height: Int($0.height))
        }
    }

    func cursorImage() -> X11CursorImage? {
        guard let reply = xcb_xfixes_get_cursor_image_reply(raw, xcb_xfixes_get_cursor_image(raw), nil) else { return nil }
        defer { free(reply) }
        return Self.cursorImage(reply)
    }

    /// Copies a `GetImage` reply into `frame`, row by row (the frame's stride may be padded).
    private static func copyImage(_ reply: UnsafeMutablePointer<xcb_get_image_reply_t>, rect: PixelRect, into frame: VideoFrame,
                                  atRow row: Int) {
        guard let data = xcb_get_image_data(reply) else { return }
        let length = Int(xcb_get_image_data_length(reply))
        let rowBytes = rect.width * 4
        frame.withUnsafeMutablePlane(0) { plane, stride in
            guard let start = plane.baseAddress, row >= 0, row < frame.height else { return }
            let base = start + row * stride
            let rows = min(rect.height, length / rowBytes, frame.height - row)
            if stride == rowBytes {
                memcpy(base, data, rows * rowBytes)
            } else {
                for row in 0..<rows {
                    memcpy(base + row * stride, data + row * rowBytes, rowBytes)
                }
            }
        }
    }

    /// The cursor image of an XFixes reply.
    private static func cursorImage(_ reply: UnsafeMutablePointer<xcb_xfixes_get_cursor_image_reply_t>) -> X11CursorImage? {
        let info = reply.pointee
        guard let pixels = xcb_xfixes_get_cursor_image_cursor_image(reply) else { return nil }
        let count = Int(info.width) * Int(info.height)
        return X11CursorImage(pixels: Array(UnsafeBufferPointer(start: pixels, count: count)),
                              width: Int(info.width), height: Int(info.height), x: Int(info.x), y: Int(info.y),
                              xhot: Int(info.xhot), yhot: Int(info.yhot))
    }
}
