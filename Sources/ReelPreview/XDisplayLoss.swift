import Foundation
import Synchronization

/// What happens when the preview window's X display goes away under it (the X server killed,
/// the window destroyed by another program): Xlib's own handlers end the whole process with
/// `exit(1)`, which would leave the recording unfinished. These handlers tell the window
/// instead, which says stop (the recording is finalised as when the window is closed).
///
/// libX11 is the one SDL2 loaded; its handler setters are found at run time, so ReelPreview
/// links no X library of its own.
enum XDisplayLoss {
    private typealias ErrorHandler = @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32
    private typealias IOErrorHandler = @convention(c) (OpaquePointer?) -> Int32
    private typealias SetErrorHandler = @convention(c) (ErrorHandler?) -> ErrorHandler?
    private typealias SetIOErrorHandler = @convention(c) (IOErrorHandler?) -> IOErrorHandler?
    private typealias DisplayString = @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?
    private typealias OpenDisplay = @convention(c) (UnsafePointer<CChar>?) -> OpaquePointer?
    private typealias CloseDisplay = @convention(c) (OpaquePointer?) -> Int32
    /// libX11's calls that tell a server gone from a connection another program closed.
    private static let probe = Mutex<(name: DisplayString, open: OpenDisplay, close: CloseDisplay)?>(nil)

    /// The window told of a loss (one at a time has the display).
    private static let window = Mutex<WeakWindow?>(nil)
    /// Whether a preview's X connection broke, or its window was destroyed by another program,
    /// in this process. SDL is then left as it was (its thread parked in the handler, or its
    /// window not destroyed again), so no other window can be opened after it.
    static let connectionBroke = Atomic<Bool>(false)
    private final class WeakWindow: Sendable {
        nonisolated(unsafe) weak var window: PreviewWindow?
        init(_ window: PreviewWindow) { self.window = window }
    }

    /// Installs the handlers (once libX11 is loaded) and makes `window` the one they tell.
    static func watch(_ window: PreviewWindow) {
        self.window.withLock { $0 = WeakWindow(window) }
        guard let x11 = dlopen("libX11.so.6", RTLD_NOW | RTLD_NOLOAD) else { return }
        if let set = dlsym(x11, "XSetErrorHandler") {
            _ = unsafeBitCast(set, to: SetErrorHandler.self)(onError)
        }
        if let set = dlsym(x11, "XSetIOErrorHandler") {
            _ = unsafeBitCast(set, to: SetIOErrorHandler.self)(onIOError)
        }
        if let name = dlsym(x11, "XDisplayString"), let open = dlsym(x11, "XOpenDisplay"), let close = dlsym(x11, "XCloseDisplay") {
            probe.withLock { $0 = (unsafeBitCast(name, to: DisplayString.self), unsafeBitCast(open, to: OpenDisplay.self),
                                   unsafeBitCast(close, to: CloseDisplay.self)) }
        }
    }

    /// Whether the X server of the broken connection `display` still takes a new connection:
    /// then another program closed this one (`xkill`), and the display did not go away.
    private static func serverAnswers(_ display: OpaquePointer?) -> Bool {
        guard let (name, open, close) = probe.withLock({ $0 }), let text = name(display) else { return false }
        guard let fresh = open(text) else { return false }
        _ = close(fresh)
        return true
    }

    /// A protocol error. Those that mean the window is gone (BadWindow, BadDrawable) end the
    /// preview; the rest are ignored rather than end the process.
    private static let onError: ErrorHandler = { _, event in
        // XErrorEvent: int type; Display *display; XID resourceid; unsigned long serial;
        // unsigned char error_code; …
        let code = event.map { $0.load(fromByteOffset: 32, as: UInt8.self) } ?? 0
        if code == 3 || code == 9 { XDisplayLoss.window.withLock { $0?.window }?.displayLost(.windowDestroyed, parks: false) }
        return 0
    }

    /// The connection to the X server broke. Xlib ends the process if this returns, so the
    /// window's thread (the only one using Xlib) stays here for good once the window is told.
    private static let onIOError: IOErrorHandler = { display in
        XDisplayLoss.connectionBroke.store(true, ordering: .sequentiallyConsistent)
        let loss: PreviewWindow.Loss = serverAnswers(display) ? .connectionClosed : .displayGone
        XDisplayLoss.window.withLock { $0?.window }?.displayLost(loss, parks: true)
        while true { sleep(3600) }
    }
}
