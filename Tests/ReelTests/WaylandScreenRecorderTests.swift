import Foundation
import Testing
import Reel
import ReelTestSupport

/// The ReplayKit-style screen recorder on a real headless Wayland desktop: the same calls as on
/// X11, with `screen: .wayland`.
@Suite(.serialized, .tags(.realTime)) struct WaylandScreenRecorderTests {
    @Test func recordsTheWaylandScreenLikeTheX11One() async throws {
        let desktop = try WaylandDesktop(background: "#00ff00")
        defer { desktop.terminate() }
        // The library finds the session bus and the state folder in the process's environment,
        // as in a desktop session; set them for this test and put them back after it.
        let names = ["DBUS_SESSION_BUS_ADDRESS", "XDG_STATE_HOME", "XDG_RUNTIME_DIR"]
        let saved = names.map { ProcessInfo.processInfo.environment[$0] }
        for name in names { setenv(name, desktop.environment[name]!, 1) }
        defer {
            for (name, value) in zip(names, saved) {
                if let value { setenv(name, value, 1) } else { unsetenv(name) }
            }
        }
        let frames = ManagedCounter()
        let screen = ScreenRecorder(configuration: .init(screen: .wayland))
        try await screen.startCapture { _, kind in if kind == .video { frames.add() } }
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("wayland.mp4")
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        try await screen.startRecording(to: url, settings: settings)
        // A new screen cast of a still screen may get its first picture only when the screen
        // changes (xdg-desktop-portal-wlr 0.7): change it, as a desktop in use does.
        try await Task.sleep(for: .seconds(0.5))
        try desktop.paint("#0000ff")
        try await Task.sleep(for: .seconds(1.5))
        _ = try await screen.stopRecording()
        await screen.stopCapture()
        #expect(frames.value > 30)
        let probe = try MediaProbe.probe(url)
        #expect(probe.videoStreams.first?.width == 640 && probe.videoStreams.first?.height == 480)
        let count = try #require(probe.videoStreams.first?.frameCount)
        #expect(count >= 40, "about 2 s at 30 fps: \(count)")
        let last = try #require(MediaProbe.decodeRGB(url, width: 640, height: 480).last)
        #expect(RGBColor.average(of: last, width: 640, x: 320, y: 240).name(in: RGBColor.primaries) == "blue")
        #expect(FileManager.default.fileExists(atPath: desktop.environment["XDG_STATE_HOME"]! + "/reel/screencast-restore-token"))
    }
}

/// A counter shared with the sample handler's thread.
final class ManagedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
