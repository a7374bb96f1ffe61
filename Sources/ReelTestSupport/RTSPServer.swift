import Foundation
import ReelCore

/// A real local RTSP server (GStreamer's gst-rtsp-server) streaming a solid colour as H.264 or
/// Motion JPEG over RTP, for tests of network cameras.
///
/// It runs as a small Python script with Debian's `/usr/bin/python3` and its GStreamer bindings
/// (`gir1.2-gst-rtsp-server-1.0`, `python3-gi`, the base, good and ugly plugins; see
/// `scripts/install-deps`), in its own process on 127.0.0.1, so ``kill()`` is a real server
/// dying mid-stream and ``restart()`` brings it back on the same port. Clients may ask for RTP
/// over TCP (interleaved) or UDP.
///
/// ```swift
/// let server = try RTSPServer(color: RGBColor(red: 255, green: 0, blue: 0), codec: .h264)
/// let camera = URLCameraSource(url: server.url)
/// ```
public final class RTSPServer: Sendable {
    /// How the server compresses the picture.
    public enum Codec: String, Sendable {
        /// H.264 (x264, zero latency, a key frame every second), RTP payload per RFC 6184.
        case h264
        /// Motion JPEG, RTP payload per RFC 2435.
        case mjpeg
    }

    /// The port on 127.0.0.1.
    public var port: Int { server.port }
    /// The stream's address, `rtsp://127.0.0.1:<port>/camera`.
    public var url: URL { URL(string: "rtsp://127.0.0.1:\(port)/camera")! }
    /// The colour of the picture.
    public let color: RGBColor
    /// The picture size.
    public let size: PixelSize
    /// Frames per second.
    public let frameRate: Int
    /// The compression.
    public let codec: Codec

    private let directory: TemporaryDirectory
    private let server: ScriptServer

    /// Starts a server of a solid `color`.
    public init(color: RGBColor, size: PixelSize = PixelSize(width: 320, height: 240), frameRate: Int = 30,
                codec: Codec = .h264) throws {
        precondition(size.width % 2 == 0 && size.height % 2 == 0, "even sizes")
        precondition(frameRate > 0, "a positive frame rate")
        self.color = color
        self.size = size
        self.frameRate = frameRate
        self.codec = codec
        directory = try TemporaryDirectory(prefix: "reel-rtsp")
        server = try ScriptServer(what: "RTSP test server", script: Self.script, directory: directory.url,
                                  arguments: ["{port}", "ff" + color.hex, codec.rawValue, String(size.width),
                                              String(size.height), String(frameRate)])
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

    private static let script = #"""
        import sys
        import gi
        gi.require_version("Gst", "1.0")
        gi.require_version("GstRtspServer", "1.0")
        from gi.repository import Gst, GstRtspServer, GLib

        port, argb, codec = int(sys.argv[1]), int(sys.argv[2], 16), sys.argv[3]
        width, height, fps = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
        Gst.init(None)
        if codec == "h264":
            encode = ("x264enc tune=zerolatency speed-preset=ultrafast key-int-max=%d "
                      "! rtph264pay name=pay0 pt=96 config-interval=1" % fps)
        else:
            encode = "jpegenc quality=90 ! rtpjpegpay name=pay0 pt=26"
        launch = ("( videotestsrc is-live=true pattern=solid-color foreground-color=%d "
                  "! video/x-raw,width=%d,height=%d,framerate=%d/1,format=I420 ! %s )"
                  % (argb, width, height, fps, encode))
        server = GstRtspServer.RTSPServer()
        server.set_address("127.0.0.1")
        server.set_service(str(port))
        factory = GstRtspServer.RTSPMediaFactory()
        factory.set_launch(launch)
        factory.set_shared(True)
        server.get_mount_points().add_factory("/camera", factory)
        if server.attach(None) == 0:
            sys.exit("cannot listen on port %d" % port)
        print(server.get_bound_port(), flush=True)
        GLib.MainLoop().run()
        """#
}
