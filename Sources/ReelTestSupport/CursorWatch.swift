import Foundation
import ReelCore
internal import CXCB

/// Tells when the cursor an X display shows changes (XFixes), without grabbing or drawing
/// anything: a program that grabs the pointer with a cursor of its own (the crosshair of a
/// region or window picked by hand) has its grab in place once it shows, so a test drives the
/// pointer only then.
///
/// It is a client of the server while it is open: ``close()`` it before a moment a test needs
/// the server without it (an Xvfb that resets when its last client leaves).
public final class CursorWatch: @unchecked Sendable {
    private var connection: OpaquePointer?
    private let first: UInt32

    /// Connects to `display` and notes the cursor shown now. A server resetting (its last
    /// client just left) cuts connections made meanwhile: it is tried again until one answers.
    ///
    /// - Throws: `.sourceUnavailable` when no X server with XFixes answers there within `timeout`
    ///   seconds.
    public init(display: String, timeout: Double = 10) throws {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            if let connection = xcb_connect(display, nil) {
                if xcb_connection_has_error(connection) == 0,
                   let version = xcb_xfixes_query_version_reply(connection, xcb_xfixes_query_version(connection, 4, 0), nil) {
                    free(version)
                    if let serial = Self.cursorSerial(connection) {
                        self.connection = connection
                        first = serial
                        return
                    }
                }
                xcb_disconnect(connection)
            }
            usleep(50_000)
        } while Date() < deadline
        throw ReelError(.sourceUnavailable, "no X server with XFixes answered at display \(display)")
    }

    deinit {
        close()
    }

    /// Waits until the cursor shown is another than when the watch began; false when it was
    /// not within `timeout` seconds (or the connection broke).
    public func waitForChange(timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline, let connection {
            guard let serial = Self.cursorSerial(connection) else { return false }
            if serial != first { return true }
            usleep(20_000)
        }
        return false
    }

    /// Disconnects. Safe to call twice.
    public func close() {
        if let connection { xcb_disconnect(connection) }
        connection = nil
    }

    private static func cursorSerial(_ connection: OpaquePointer) -> UInt32? {
        guard let reply = xcb_xfixes_get_cursor_image_reply(connection, xcb_xfixes_get_cursor_image(connection), nil) else { return nil }
        defer { free(reply) }
        return reply.pointee.cursor_serial
    }
}
