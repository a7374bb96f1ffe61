import Foundation
import ReelCore

/// A real local HTTP server that streams Motion JPEG as `multipart/x-mixed-replace`, the way
/// IP cameras serve `/video.mjpg`, for tests of network cameras.
///
/// Every frame is a solid colour; with `counter`, the ``TestPattern`` frame counter is burned
/// into a strip along the top (the pictures repeat every ``cycleLength`` frames). The server is a
/// Python script (standard library only, POSIX sockets on 127.0.0.1, a thread per client) in
/// its own process, so ``kill()`` is a real server dying mid-stream, and ``restart()`` brings it
/// back on the same port.
///
/// ```swift
/// let server = try MJPEGServer(color: RGBColor(red: 0, green: 0, blue: 255))
/// let camera = URLCameraSource(url: server.url)
/// ```
public final class MJPEGServer: Sendable {
    /// The port on 127.0.0.1.
    public var port: Int { server.port }
    /// The stream's address, `http://127.0.0.1:<port>/video.mjpg`.
    public var url: URL { URL(string: "http://127.0.0.1:\(port)/video.mjpg")! }
    /// The colour of the frames.
    public let color: RGBColor
    /// The picture size.
    public let size: PixelSize
    /// Frames per second.
    public let frameRate: Int
    /// How many distinct pictures are served in turn (1 without a counter).
    public let cycleLength: Int

    private let directory: TemporaryDirectory
    private let server: ScriptServer

    /// Encodes the pictures (with the `ffmpeg` command) and starts serving them.
    ///
    /// - Parameters:
    ///   - color: the colour of every frame.
    ///   - size: the picture size (even).
    ///   - frameRate: frames per second.
    ///   - counter: whether to burn the test pattern's frame counter into each frame.
    ///   - cycleLength: with a counter, how many numbered pictures there are before the count
    ///     starts over.
    ///   - port: the port to listen on; 0 for a free one (another server's port, once that one
    ///     is killed, stands for a camera that comes back changed).
    public init(color: RGBColor, size: PixelSize = PixelSize(width: 320, height: 240), frameRate: Int = 30,
                counter: Bool = false, cycleLength: Int = 90, port: Int = 0) throws {
        precondition(size.width % 2 == 0 && size.height % 2 == 0 && size.width >= 32 && size.height >= 16, "even sizes of at least 32x16")
        precondition(frameRate > 0, "a positive frame rate")
        self.color = color
        self.size = size
        self.frameRate = frameRate
        self.cycleLength = counter ? max(1, cycleLength) : 1
        directory = try TemporaryDirectory(prefix: "reel-mjpeg")
        let frames = directory.url.appendingPathComponent("frames", isDirectory: true)
        try FileManager.default.createDirectory(at: frames, withIntermediateDirectories: true)
        try Self.encodeFrames(color: color.yuv, size: size, count: self.cycleLength, counter: counter, into: frames)
        server = try ScriptServer(what: "MJPEG test server", script: Self.script, directory: directory.url,
                                  arguments: ["{port}", String(frameRate), frames.path], port: port)
    }

    /// Whether the server process is running.
    public var isRunning: Bool { server.isRunning }

    /// The server's log, for a failing test to show.
    public var log: String { server.log }

    /// Kills the server process at once (`SIGKILL`): clients see their connection drop.
    public func kill() { server.kill() }

    /// Starts the server again on the same port.
    public func restart() throws { try server.restart() }

    /// Freezes the server process (`SIGSTOP`): connections stay open but go quiet, as when a
    /// camera hangs or the network stalls.
    public func freeze() { server.freeze() }

    /// Lets a frozen server go on.
    public func thaw() { server.thaw() }

    /// Stops the server. Safe to call twice.
    public func terminate() { server.kill() }

    /// Draws the pictures as `yuv420p` and has `ffmpeg` turn them into numbered JPEG files.
    private static func encodeFrames(color: YUVColor, size: PixelSize, count: Int, counter: Bool, into folder: URL) throws {
        let raw = folder.appendingPathComponent("frames.yuv")
        let pool = FramePool(format: .yuv420p, size: size, capacity: 1)
        var bytes = Data()
        for index in 0..<count {
            guard let frame = pool.makeFrame() else { throw ReelError(.ioFailure, "no frame to draw into") }
            if counter {
                try TestPattern.draw(index: Int64(index), flash: false, background: color, into: frame)
            } else {
                let values = [color.y, color.cb, color.cr]
                for plane in 0..<3 {
                    _ = frame.withUnsafeMutablePlane(plane) { buffer, _ in buffer.initializeMemory(as: UInt8.self, repeating: values[plane]) }
                }
            }
            for plane in 0..<3 {
                let width = plane == 0 ? size.width : size.width / 2
                let rows = plane == 0 ? size.height : size.height / 2
                frame.withUnsafeMutablePlane(plane) { buffer, stride in
                    for row in 0..<rows {
                        bytes.append(UnsafeRawBufferPointer(rebasing: buffer[(row * stride)..<(row * stride + width)])
                            .bindMemory(to: UInt8.self))
                    }
                }
            }
        }
        try bytes.write(to: raw)
        let result = try Subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "yuv420p",
                                         "-s", "\(size.width)x\(size.height)", "-i", raw.path,
                                         "-c:v", "mjpeg", "-q:v", "2", folder.appendingPathComponent("%05d.jpg").path])
        guard result.status == 0 else {
            throw ReelError(.sourceUnavailable, "ffmpeg could not make the MJPEG test frames: \(result.stderr)",
                            hint: "apt-get install ffmpeg")
        }
        try? FileManager.default.removeItem(at: raw)
    }

    /// Serves the JPEG files of a folder in turn, paced at a rate, to every client.
    private static let script = #"""
        import os, socket, sys, threading, time

        port, fps, folder = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
        frames = [open(os.path.join(folder, n), "rb").read() for n in sorted(os.listdir(folder)) if n.endswith(".jpg")]
        if not frames:
            sys.exit("no frames in " + folder)
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(16)
        print(listener.getsockname()[1], flush=True)

        def serve(conn):
            try:
                conn.settimeout(10)
                request = b""
                while b"\r\n\r\n" not in request:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    request += chunk
                conn.sendall(b"HTTP/1.0 200 OK\r\nCache-Control: no-cache\r\nConnection: close\r\n"
                             b"Content-Type: multipart/x-mixed-replace; boundary=reelframe\r\n\r\n")
                start = time.monotonic()
                index = 0
                while True:
                    delay = start + index / fps - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                    data = frames[index % len(frames)]
                    conn.sendall(b"--reelframe\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n" % len(data)
                                 + data + b"\r\n")
                    index += 1
            except OSError:
                pass
            finally:
                conn.close()

        while True:
            conn, _ = listener.accept()
            threading.Thread(target=serve, args=(conn,), daemon=True).start()
        """#
}
