#if canImport(Glibc)
import Glibc
#endif
internal import CXCB
import ReelCore
import ReelSystem

/// One connection to an X server, the only owner of its `xcb_connection_t`.
///
/// libxcb is thread-safe, so the connection may be used from the capture thread and from
/// whichever thread releases the last frame of a shared-memory segment. It disconnects in
/// `deinit`; shared-memory frame buffers retain it, so it outlives every segment attached to it.
final class X11Connection: @unchecked Sendable {
    /// The `xcb_connection_t *`.
    let raw: OpaquePointer
    /// The display name, e.g. `:0`.
    let display: String
    /// The screen that the display name selects (`:0.1` selects screen 1).
    let defaultScreenIndex: Int
    /// The damage tracking of the capture that uses this connection, once started (touched by
    /// the capture thread only).
    var damageTracking: DamageTracking?

    /// A DAMAGE object on the root window and the XFixes region its damage is moved into.
    struct DamageTracking {
        let damage: UInt32
        let region: UInt32
        /// The code of a DamageNotify event.
        let notifyEvent: UInt8
        /// Whether damage may have been reported since it was last taken.
        var pending: Bool
    }

    /// Connects to `display`, or to `$DISPLAY` when it is `nil`.
    ///
    /// - Throws: `.sourceUnavailable` when no server answers, `.invalidConfiguration` when the
    ///   name is not a display name.
    init(display requested: String?) throws {
        let display = try Self.resolveDisplay(requested)
        var screen: Int32 = 0
        // xcb_connect never returns NULL: it returns an errored connection instead.
        guard let raw = xcb_connect(display, &screen) else {
            throw ReelError(.sourceUnavailable, "no X server at display \(display)",
                            hint: "start an X server or set DISPLAY")
        }
        let status = xcb_connection_has_error(raw)
        if status != 0 {
            xcb_disconnect(raw)
            switch status {
            case XCB_CONN_CLOSED_PARSE_ERR:
                throw ReelError(.invalidConfiguration, "\"\(display)\" is not an X display name",
                                hint: "use a name of the form :0 or :0.0")
            case XCB_CONN_CLOSED_INVALID_SCREEN:
                throw ReelError(.sourceUnavailable, "the X server at display \(display) has no such screen",
                                hint: "use screen 0, e.g. \(Self.withoutScreen(display)).0")
            default:
                throw ReelError(.sourceUnavailable, "no X server at display \(display)",
                                hint: "start an X server or set DISPLAY")
            }
        }
        self.raw = raw
        self.display = display
        self.defaultScreenIndex = Int(screen)
    }

    deinit {
        xcb_disconnect(raw)
    }

    /// The display to use for `requested`: itself (a bare number gains a colon) or `$DISPLAY`.
    static func resolveDisplay(_ requested: String?) throws -> String {
        if let requested, !requested.isEmpty {
            if requested.allSatisfy(\.isNumber) { return ":" + requested }
            return requested
        }
        if let env = getenv("DISPLAY"), env.pointee != 0 {
            return String(cString: env)
        }
        throw ReelError(.sourceUnavailable, "no X display given and DISPLAY is not set",
                        hint: "start an X server or set DISPLAY")
    }

    private static func withoutScreen(_ display: String) -> String {
        guard let colon = display.lastIndex(of: ":"), let dot = display[colon...].firstIndex(of: ".") else { return display }
        return String(display[..<dot])
    }

    /// Whether the connection has broken (the server went away or a protocol error ended it).
    var hasFailed: Bool { xcb_connection_has_error(raw) != 0 }

    /// The server's setup data.
    var setup: UnsafePointer<xcb_setup_t> { xcb_get_setup(raw) }

    /// The screens of the display, in order, as pointers into the setup data (valid while the
    /// connection lives; the allowed depths and visuals follow each screen there).
    var screens: [UnsafeMutablePointer<xcb_screen_t>] {
        var result: [UnsafeMutablePointer<xcb_screen_t>] = []
        var iterator = xcb_setup_roots_iterator(setup)
        while iterator.rem > 0 {
            result.append(iterator.data)
            xcb_screen_next(&iterator)
        }
        return result
    }

    /// The screen the display name selects.
    var defaultScreen: UnsafeMutablePointer<xcb_screen_t>? {
        let all = screens
        return all.indices.contains(defaultScreenIndex) ? all[defaultScreenIndex] : nil
    }

    /// Sends queued requests to the server.
    func flush() { _ = xcb_flush(raw) }

    /// Waits until the server has handled every request sent so far (one round trip).
    func sync() {
        let cookie = xcb_get_input_focus(raw)
        free(xcb_get_input_focus_reply(raw, cookie, nil))
    }

    /// Discards events and errors of unchecked requests that have arrived, so the queue
    /// never grows (a capture connection selects no events; damage reports are noted).
    func drainEvents() {
        while let event = xcb_poll_for_queued_event(raw) {
            // A damage report is kept: it says the screen changed.
            if let notify = damageTracking?.notifyEvent, event.pointee.response_type & 0x7F == notify {
                damageTracking?.pending = true
            }
            free(event)
        }
    }

    /// Whether the server has the extension `name` (e.g. `MIT-SHM`, `XFIXES`).
    ///
    /// Requests of an absent extension would close the connection, so ask this first.
    func hasExtension(_ name: String) -> Bool {
        let cookie = name.withCString { xcb_query_extension(raw, UInt16(strlen($0)), $0) }
        guard let reply = xcb_query_extension_reply(raw, cookie, nil) else { return false }
        defer { free(reply) }
        return reply.pointee.present != 0
    }

    // MARK: - Pixel layout

    /// Checks that images of `screen`'s root window are 32 bits per pixel in BGRA byte order.
    ///
    /// - Throws: `.unsupportedFormat` for 16-bit, 8-bit or 10-bit-per-channel screens.
    func checkBGRA(screen: UnsafeMutablePointer<xcb_screen_t>) throws {
        let depth = screen.pointee.root_depth
        var bitsPerPixel: UInt8 = 0
        var scanlinePad: UInt8 = 0
        if let formats = xcb_setup_pixmap_formats(setup) {
            for format in UnsafeBufferPointer(start: formats, count: Int(xcb_setup_pixmap_formats_length(setup)))
            where format.depth == depth {
                bitsPerPixel = format.bits_per_pixel
                scanlinePad = format.scanline_pad
            }
        }
        let hint = "run the X server at depth 24 (e.g. Xvfb -screen 0 1920x1080x24)"
        guard bitsPerPixel == 32, scanlinePad == 32 else {
            throw ReelError(.unsupportedFormat,
                            "the screen of display \(display) has depth \(depth) at \(bitsPerPixel) bits per pixel; Reel captures 32-bit screens only",
                            hint: hint)
        }
        guard Int32(setup.pointee.image_byte_order) == Int32(XCB_IMAGE_ORDER_LSB_FIRST.rawValue) else {
            throw ReelError(.unsupportedFormat, "the X server at display \(display) sends images in big-endian byte order",
                            hint: "capture a server running on a little-endian machine")
        }
        // The root visual must put red, green and blue in bytes 2, 1 and 0.
        var depths = xcb_screen_allowed_depths_iterator(screen)
        while depths.rem > 0 {
            var visuals = xcb_depth_visuals_iterator(depths.data)
            while visuals.rem > 0 {
                let visual = visuals.data.pointee
                if visual.visual_id == screen.pointee.root_visual {
                    guard visual.red_mask == 0xFF_0000, visual.green_mask == 0xFF00, visual.blue_mask == 0xFF else {
                        throw ReelError(.unsupportedFormat,
                                        "the screen of display \(display) is not an 8-bit-per-channel RGB screen",
                                        hint: hint)
                    }
                    return
                }
                xcb_visualtype_next(&visuals)
            }
            xcb_depth_next(&depths)
        }
    }

    // MARK: - Shared memory

    /// Whether the server offers MIT-SHM image transfers (asked once per connection).
    func supportsSharedMemory() -> Bool {
        guard hasExtension("MIT-SHM") else { return false }
        let cookie = xcb_shm_query_version(raw)
        guard let reply = xcb_shm_query_version_reply(raw, cookie, nil) else { return false }
        free(reply)
        return true
    }

    /// A frame buffer of `byteCount` bytes in a SysV shared-memory segment that the server has
    /// attached, tagged with the segment's XCB id.
    ///
    /// The segment is marked for removal as soon as both sides have attached it, so it vanishes
    /// with the process whatever happens. The buffer's release detaches it from the server and
    /// from us, and retains this connection until then.
    ///
    /// - Throws: when the system or the server refuses (a remote display cannot attach).
    func makeSharedFrameBuffer(byteCount: Int) throws -> FrameBuffer {
        let id = try Syscall.call("creating a shared-memory segment of \(byteCount) bytes",
                                  hint: "raise kernel.shmmax / kernel.shmall") {
            shmget(IPC_PRIVATE, byteCount, IPC_CREAT | 0o600)
        }
        let bytes: UnsafeMutableRawPointer
        do {
            bytes = try Syscall.pointer("attaching a shared-memory segment") { shmat(id, nil, 0) }
        } catch {
            _ = try? Syscall.call("removing a shared-memory segment") { shmctl(id, IPC_RMID, nil) }
            throw error
        }
        let segment = xcb_generate_id(raw)
        let cookie = xcb_shm_attach_checked(raw, segment, UInt32(id), 0)
        let failure = xcb_request_check(raw, cookie)
        // The server has now attached (or refused); either way the id is no longer needed.
        _ = try? Syscall.call("removing a shared-memory segment") { shmctl(id, IPC_RMID, nil) }
        if let failure {
            let code = failure.pointee.error_code
            free(failure)
            detach(bytes)
            throw ReelError(.sourceUnavailable, "the X server at display \(display) cannot attach shared memory (X error \(code))")
        }
        if hasFailed {
            detach(bytes)
            throw ReelError(.sourceUnavailable, "the X server at \(display) went away")
        }
        return FrameBuffer(bytes: bytes, byteCount: byteCount, tag: UInt64(segment)) { [self] bytes in
            xcb_shm_detach(raw, segment)
            flush()
            detach(bytes)
        }
    }

    /// Detaches a segment from our address space (it goes once the server has detached too).
    private func detach(_ bytes: UnsafeMutableRawPointer) {
        _ = try? Syscall.call("detaching a shared-memory segment") { shmdt(bytes) }
    }
}
