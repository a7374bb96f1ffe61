import Foundation
import ReelCore

/// A ``ScreenStream`` whose pictures a test shows: each ``show(_:size:layout:)`` is a new
/// picture of one colour, as a compositor sends when the screen changes; ``end(_:)`` ends it.
package final class ScriptedScreenStream: ScreenStream, @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`.
    private var pixels: [UInt32] = []
    private var size = PixelSize(width: 0, height: 0)
    private var layout = ScreenPixelLayout.bgrx
    private var serial: UInt64 = 0
    private var ending: ReelError?
    private var isClosed = false

    /// A stream with no picture yet.
    package init() {}

    /// Shows a picture of `size` filled with `pixel` (the four bytes in memory order of
    /// `layout`, read as a little-endian `UInt32`).
    package func show(_ pixel: UInt32, size: PixelSize, layout: ScreenPixelLayout = .bgrx) {
        lock.withLock {
            pixels = [UInt32](repeating: pixel, count: size.width * size.height)
            self.size = size
            self.layout = layout
            serial += 1
        }
    }

    /// Shows a picture given pixel by pixel (row after row).
    package func show(pixels: [UInt32], size: PixelSize, layout: ScreenPixelLayout = .bgrx) {
        lock.withLock {
            self.pixels = pixels
            self.size = size
            self.layout = layout
            serial += 1
        }
    }

    /// Ends the stream with `error` (the cast was stopped, PipeWire went away).
    package func end(_ error: ReelError) {
        lock.withLock { ending = error }
    }

    /// Whether ``close()`` was called.
    package var closed: Bool { lock.withLock { isClosed } }

    package var state: ScreenStreamState {
        lock.withLock {
            if let ending { return .ended(ending) }
            if isClosed { return .ended(ReelError(.notRunning, "closed")) }
            return serial == 0 ? .connecting : .streaming
        }
    }

    package func withNewestPicture<R>(_ body: (ScreenPicture) -> R) -> R? {
        lock.lock()
        defer { lock.unlock() }
        guard serial > 0, !isClosed else { return nil }
        return pixels.withUnsafeBytes { bytes in
            body(ScreenPicture(pixels: bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 4)!, size: size,
                               stride: size.width * 4, layout: layout, serial: serial))
        }
    }

    package func close() {
        lock.withLock { isClosed = true }
    }
}
