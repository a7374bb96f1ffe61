import ReelCore

extension X11ScreenSource {
    /// Lets the user choose a region of the screen of `display` (`$DISPLAY` when `nil`) by hand:
    /// the pointer and the keyboard are grabbed, the cursor becomes a crosshair, and the
    /// rectangle dragged with the first button (drawn as it goes) is the answer, in the screen's
    /// coordinates and inside it, for ``init(display:region:frameRate:drawsCursor:)``; its width
    /// and height are made even (a pixel less where the drag was odd), as a recording or a
    /// picture of it is, so that the region answered is the one they hold. Blocks
    /// until the button is released; Escape or Ctrl-C gives up. On Wayland the desktop portal's
    /// own dialog chooses what is shared instead (``WaylandScreenSource``).
    ///
    /// The connection the region was picked on closes when this returns: to record or take a
    /// picture of the region, ``pickingRegion(display:frameRate:drawsCursor:isCancelled:)``
    /// gives a source that keeps it (a bare X server, such as an Xvfb started without
    /// `-noreset`, resets when its last client leaves, and a connection made then fails).
    ///
    /// - Throws: `.sourceUnavailable` when no X server answers, when Escape or Ctrl-C gave up or
    ///   `isCancelled` turned true (nothing was picked), or another program holds the pointer
    ///   or the keyboard; `.invalidConfiguration` for a rectangle under 16x16 pixels.
    public static func pickRegion(display: String? = nil, isCancelled: @escaping @Sendable () -> Bool = { false }) throws -> PixelRect {
        try pickRegion(display: display, server: SystemX11Server(), isCancelled: isCancelled)
    }

    /// Lets the user choose a region by hand as ``pickRegion(display:isCancelled:)`` does, and
    /// returns a source for it (its ``region`` is the one picked) that captures on the
    /// connection the region was picked on: no moment passes without this program connected
    /// to the server between the pick and the capture, so an X server that resets when its
    /// last client leaves (an Xvfb without `-noreset`, whose other clients may be gone once
    /// the drag is over) is still there. The connection is let go by ``stop()``.
    ///
    /// - Throws: what ``pickRegion(display:isCancelled:)`` throws.
    public static func pickingRegion(display: String? = nil, frameRate: FrameRate = FrameRate(30), drawsCursor: Bool = true,
                                     isCancelled: @escaping @Sendable () -> Bool = { false }) throws -> X11ScreenSource {
        try pickingRegion(display: display, frameRate: frameRate, drawsCursor: drawsCursor, server: SystemX11Server(), isCancelled: isCancelled)
    }

    /// ``pickingRegion(display:frameRate:drawsCursor:isCancelled:)`` on a given server.
    package static func pickingRegion(display: String?, frameRate: FrameRate, drawsCursor: Bool, server: any X11Server,
                                      isCancelled: @escaping @Sendable () -> Bool) throws -> X11ScreenSource {
        let (region, connection) = try pick(display: display, server: server, isCancelled: isCancelled)
        let source = X11ScreenSource(display: display, region: region, frameRate: frameRate, drawsCursor: drawsCursor, server: server)
        source.keep(connection)
        return source
    }

    /// ``pickRegion(display:isCancelled:)`` on a given server (a ``ScriptedX11Server`` in tests).
    package static func pickRegion(display: String?, server: any X11Server, isCancelled: @escaping @Sendable () -> Bool) throws -> PixelRect {
        try pick(display: display, server: server, isCancelled: isCancelled).region
    }

    /// The region picked and the connection it was picked on.
    private static func pick(display: String?, server: any X11Server, isCancelled: @escaping @Sendable () -> Bool) throws
        -> (region: PixelRect, connection: any X11Display) {
        let connection = try server.connect(display: display, isCancelled: isCancelled)
        let screen = try connection.screen()
        switch connection.pickRegion(of: screen.root, isCancelled: isCancelled) {
        case .region(let dragged):
            // The pointer stays on the screen; a rectangle is kept inside it all the same.
            // Made even, as recordings and pictures are (4:2:0): the region said is the one they hold.
            let x = max(0, dragged.x), y = max(0, dragged.y)
            let rect = PixelRect(x: x, y: y, width: min(dragged.x + dragged.width, screen.size.width) - x,
                                 height: min(dragged.y + dragged.height, screen.size.height) - y).evenSized
            guard rect.width >= 16, rect.height >= 16 else {
                throw ReelError(.invalidConfiguration, "the region dragged on display \(connection.name) (\(rect)) is smaller than 16x16 pixels",
                                hint: "drag a larger rectangle")
            }
            return (rect, connection)
        case .givenUp:
            throw ReelError(.sourceUnavailable, "no region was picked on display \(connection.name): Escape or Ctrl-C gave up",
                            hint: "nothing was recorded; start again and drag a rectangle with the first button")
        case .notGrabbed:
            throw ReelError(.sourceUnavailable, "the pointer or the keyboard on display \(connection.name) could not be grabbed to pick a region",
                            hint: "another program holds it (a menu or a drag may be open); close it and start again, or give the region as WxH+X+Y")
        case .cancelled:
            throw ReelError(.sourceUnavailable, "no region was picked on display \(connection.name)",
                            hint: "it was stopped before a rectangle was dragged")
        }
    }
}
