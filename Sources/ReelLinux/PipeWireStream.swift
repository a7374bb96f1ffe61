import Foundation
import ReelCore
internal import CPipeWire

/// A PipeWire video stream from the node the ScreenCast portal granted, reached through the
/// portal's PipeWire connection: the ``ScreenStream`` of a real Wayland desktop.
///
/// Shared-memory buffers (MemFd, MemPtr: what a compositor without a GPU gives, and what
/// is asked for) in BGRx, BGRA, RGBx or RGBA at any size; libpipewire runs its own thread, which
/// keeps a copy of the newest picture for the capture thread. A producer offering only DMA-BUF
/// buffers fails to negotiate, and the stream ends with an error that says so.
package final class PipeWireStream: ScreenStream, @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`; nil once closed.
    private var stream: OpaquePointer?

    /// Connects through `descriptor` (taken over: closed with the stream, also when this throws)
    /// to `node`.
    ///
    /// - Throws: `.sourceUnavailable` when PipeWire cannot be reached through the connection.
    package init(descriptor: Int32, node: UInt32) throws(ReelError) {
        var message = [CChar](repeating: 0, count: 256)
        guard let stream = reel_pw_stream_open(descriptor, node, &message, message.count) else {
            throw ReelError(.sourceUnavailable, Self.text(message),
                            hint: "PipeWire must run in the desktop session for the portal's screen cast (systemctl --user status pipewire)")
        }
        self.stream = stream
    }

    deinit { close() }

    /// The version of libpipewire loaded.
    package static var libraryVersion: String { String(cString: reel_pw_library_version()) }

    package var state: ScreenStreamState {
        lock.lock()
        defer { lock.unlock() }
        guard let stream else { return .ended(ReelError(.notRunning, "the PipeWire stream is closed")) }
        var message = [CChar](repeating: 0, count: 256)
        let state = reel_pw_stream_state(stream, &message, message.count)
        switch state {
        case Int32(REEL_PW_CONNECTING.rawValue): return .connecting
        case Int32(REEL_PW_STREAMING.rawValue): return .streaming
        case Int32(REEL_PW_ENDED.rawValue):
            return .ended(ReelError(.sourceUnavailable, Self.text(message),
                                    hint: "screen sharing was stopped, or PipeWire ended"))
        default:
            let text = Self.text(message)
            return .ended(ReelError(text.contains("DMA-BUF") ? .unsupportedFormat : .sourceUnavailable, text,
                                    hint: text.contains("DMA-BUF") ? "Reel reads shared-memory screen casts only; this desktop gives GPU buffers"
                                                                   : "PipeWire went away or refused the stream; check that pipewire and wireplumber run"))
        }
    }

    package func withNewestPicture<R>(_ body: (ScreenPicture) -> R) -> R? {
        lock.lock()
        defer { lock.unlock() }
        guard let stream else { return nil }
        var picture = reel_pw_picture()
        guard reel_pw_stream_lock_picture(stream, &picture) != 0 else { return nil }
        defer { reel_pw_stream_unlock_picture(stream) }
        guard let pixels = picture.pixels, let layout = ScreenPixelLayout(rawValue: picture.format) else { return nil }
        return body(ScreenPicture(pixels: UnsafeRawPointer(pixels), size: PixelSize(width: Int(picture.width), height: Int(picture.height)),
                                  stride: Int(picture.stride), layout: layout, serial: picture.serial))
    }

    /// The text of a NUL-terminated C string in `buffer`.
    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    package func close() {
        lock.lock()
        defer { lock.unlock() }
        guard let stream else { return }
        reel_pw_stream_close(stream)
        self.stream = nil
    }
}
