import ReelCore

/// What an X display offers a screen recording: whether it answers, the size of the screen its
/// name selects, and whether frames can come through shared memory (MIT-SHM). `reel doctor`
/// shows it.
public struct DisplayDiagnosis: Sendable, Hashable {
    /// Whether frames can be read straight into shared memory.
    public enum SharedMemory: Sendable, Hashable {
        /// A segment was attached and an image read into it.
        case usable
        /// The server has no MIT-SHM extension: frames are copied through the socket.
        case notOffered
        /// The server has MIT-SHM but could not use this process's memory (a server in
        /// another container or on another machine); the reason says what failed.
        case refused(String)
    }

    /// The display's name, e.g. `:0`.
    public var name: String
    /// The size of the screen the name selects.
    public var screenSize: PixelSize
    /// Whether frames can come through shared memory.
    public var sharedMemory: SharedMemory
    /// Whether the server has the Composite extension (0.2 or later), which window capture
    /// (``X11WindowSource``) needs.
    public var composite: Bool

    /// Describes a display.
    public init(name: String, screenSize: PixelSize, sharedMemory: SharedMemory, composite: Bool = true) {
        self.name = name
        self.screenSize = screenSize
        self.sharedMemory = sharedMemory
        self.composite = composite
    }
}

extension X11ScreenSource {
    /// Connects to `display` (`nil`: `$DISPLAY`) as a recording would, checks its screen and
    /// tries shared memory for real: attaches a segment and reads a small image into it.
    ///
    /// - Throws: what recording the screen would meet: `.sourceUnavailable` (no server, no
    ///   such screen), `.invalidConfiguration` (not a display name), `.unsupportedFormat` (a
    ///   screen that is not 32-bit BGRA).
    public static func diagnoseDisplay(_ display: String?) throws -> DisplayDiagnosis {
        try diagnoseDisplay(display, server: SystemX11Server())
    }

    /// ``diagnoseDisplay(_:)`` through `server`.
    package static func diagnoseDisplay(_ display: String?, server: any X11Server) throws -> DisplayDiagnosis {
        let connection = try server.connect(display: display, isCancelled: { false })
        let screen = try connection.screen()
        return DisplayDiagnosis(name: connection.name, screenSize: screen.size,
                                sharedMemory: sharedMemoryStatus(connection, root: screen.root, screenSize: screen.size),
                                composite: connection.enableComposite())
    }

    /// Attaches one shared segment and reads a small corner of the screen into it, as capture
    /// would; the attach is what fails across a container boundary.
    private static func sharedMemoryStatus(_ connection: any X11Display, root: UInt32, screenSize: PixelSize) -> DisplayDiagnosis.SharedMemory {
        guard connection.supportsSharedMemory() else { return .notOffered }
        let rect = PixelRect(x: 0, y: 0, width: min(16, screenSize.width), height: min(16, screenSize.height))
        let stride = rect.width * 4
        let buffer: FrameBuffer
        do { buffer = try connection.makeSharedFrameBuffer(byteCount: stride * rect.height) } catch {
            return .refused((error as? ReelError)?.message ?? "\(error)")
        }
        let frame = VideoFrame(format: .bgra, size: rect.size, strides: [stride], offsets: [0], buffer: buffer)
        switch connection.readImage(rect, of: root, into: frame, shared: true, withCursor: false) {
        case .captured:
            return .usable
        case .refused(let code):
            return .refused("the server refused to read an image into shared memory (X error \(code.map(String.init) ?? "?"))")
        }
    }
}
