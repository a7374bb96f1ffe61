import Foundation
import ReelCore

/// The other end of an SRT stream for tests: the `ffmpeg` command receiving MPEG-TS over SRT on
/// the loopback into a file (`-c copy`), either as a listener that a sender calls
/// (``listening(into:)``) or as a caller of a sender that listens (``calling(port:into:)``).
/// It ends when the stream does (or at ``terminate()``); ``file`` then holds what arrived.
public final class SRTPeer: @unchecked Sendable {
    /// The UDP port on 127.0.0.1: the one listened on, or the one called.
    public let port: Int
    /// Where the received stream is written.
    public let file: URL
    private let process = Process()

    private init(port: Int, file: URL, address: String) throws {
        self.port = port
        self.file = file
        process.executableURL = URL(fileURLWithPath: Subprocess.which("ffmpeg") ?? "/usr/bin/ffmpeg")
        process.arguments = ["-v", "error", "-y", "-i", address, "-c", "copy", "-f", "mpegts", file.path]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// A listener on a free UDP port, waiting for a sender to call it; returns once the port is
    /// bound (within 10 s). With a `passphrase` it takes only callers that have the same one
    /// (SRT refuses the others in its handshake).
    public static func listening(into file: URL, passphrase: String? = nil) throws -> SRTPeer {
        let port = try RTMPServer.freePort()  // free for TCP now; UDP's range is the same and as empty
        let secret = passphrase.map { "&passphrase=\($0)" } ?? ""
        let peer = try SRTPeer(port: port, file: file, address: "srt://127.0.0.1:\(port)?mode=listener\(secret)")
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline && peer.process.isRunning {
            if Self.isBound(udpPort: port) { return peer }
            usleep(20_000)
        }
        peer.terminate()
        throw ReelError(.sourceUnavailable, "ffmpeg did not listen for SRT on port \(port)")
    }

    /// A caller of the SRT listener on `port`.
    public static func calling(port: Int, into file: URL) throws -> SRTPeer {
        try SRTPeer(port: port, file: file, address: "srt://127.0.0.1:\(port)?mode=caller")
    }

    /// Whether ffmpeg is still receiving.
    public var isRunning: Bool { process.isRunning }

    /// Waits until ffmpeg ends by itself or `seconds` pass (then it is stopped); returns whether it
    /// ended by itself.
    @discardableResult
    public func waitForEnd(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(50_000) }
        let ended = !process.isRunning
        terminate()
        return ended
    }

    /// Stops ffmpeg (`SIGINT`, so it closes its file properly) and reaps it.
    public func terminate() {
        if process.isRunning {
            kill(process.processIdentifier, SIGINT)
            let deadline = Date().addingTimeInterval(5)
            while process.isRunning && Date() < deadline { usleep(20_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
    }

    deinit { terminate() }

    /// Whether a UDP socket is bound to `udpPort` on this machine (from `/proc/net/udp`).
    static func isBound(udpPort: Int) -> Bool {
        let hex = String(format: ":%04X ", udpPort)
        for table in ["/proc/net/udp", "/proc/net/udp6"] {
            if let text = try? String(contentsOfFile: table, encoding: .utf8), text.split(separator: "\n").contains(where: {
                $0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.map { ($0 + " ").hasSuffix(hex) } ?? false
            }) { return true }
        }
        return false
    }
}
