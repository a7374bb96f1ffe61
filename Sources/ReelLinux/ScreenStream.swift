import ReelCore

/// The pixel layouts a screen stream may carry, in memory byte order.
package enum ScreenPixelLayout: Int32, Sendable {
    /// Blue, green, red, unused.
    case bgrx = 1
    /// Blue, green, red, alpha.
    case bgra = 2
    /// Red, green, blue, unused.
    case rgbx = 3
    /// Red, green, blue, alpha.
    case rgba = 4
}

/// A picture of a screen stream, valid only inside the closure it is handed to.
package struct ScreenPicture {
    /// The first byte of the first row.
    package var pixels: UnsafeRawPointer
    /// Its size.
    package var size: PixelSize
    /// Bytes from one row to the next.
    package var stride: Int
    /// The pixel layout.
    package var layout: ScreenPixelLayout
    /// Grows by one with each new picture.
    package var serial: UInt64
}

/// Where a screen stream is.
package enum ScreenStreamState: Sendable {
    /// Negotiating; no picture yet.
    case connecting
    /// Pictures arrive (when the screen changes).
    case streaming
    /// The stream ended or failed; nothing more comes.
    case ended(ReelError)
}

/// A stream of screen pictures that arrive when the screen changes: ``PipeWireStream`` on a
/// real desktop, ``ScriptedScreenStream`` in tests.
package protocol ScreenStream: AnyObject, Sendable {
    /// Where the stream is.
    var state: ScreenStreamState { get }
    /// Calls `body` with the newest picture, or returns `nil` when none has come yet. The
    /// stream waits while `body` runs, so it must be quick.
    func withNewestPicture<R>(_ body: (ScreenPicture) -> R) -> R?
    /// Disconnects. Safe to call twice.
    func close()
}
