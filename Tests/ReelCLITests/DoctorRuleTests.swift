import Foundation
import Testing
@testable import ReelCLI
import Reel
@testable import ReelLinux
import ReelTestSupport

/// The rules of `reel doctor` on facts given here: which findings are problems (and so the
/// exit status), which are warnings, and what the portal's answers mean.
@Suite struct DoctorRuleTests {
    static let server = AudioServerInfo(name: "pulseaudio", version: "16.1", defaultSource: "mic", defaultSink: "apps")
    static let mic = AudioDevice(name: "mic", description: "Microphone", isMonitor: false, isDefault: true, sampleRate: 48_000, channels: 2)
    static let monitor = AudioDevice(name: "apps.monitor", description: "Monitor of apps", isMonitor: true, isDefault: false,
                                     sampleRate: 48_000, channels: 2)
    static let sink = AudioDevice(name: "apps", description: "Apps", isMonitor: false, isDefault: true, sampleRate: 48_000, channels: 2)

    static func statuses(_ checks: [DoctorCheck]) -> [String: DoctorCheck.Status] {
        Dictionary(checks.map { ($0.name, $0.status) }, uniquingKeysWith: { a, _ in a })
    }

    @Test func exitStatusIsOneExactlyWhenAProblemIsFound() {
        let ok = DoctorCheck("a", .ok, "fine")
        let warning = DoctorCheck("b", .warning, "meh", fix: "do this")
        let problem = DoctorCheck("c", .problem, "broken", fix: "do that")
        #expect(DoctorCheck.exitStatus([]) == 0)
        #expect(DoctorCheck.exitStatus([ok, ok]) == 0)
        #expect(DoctorCheck.exitStatus([ok, warning, warning]) == 0)
        #expect(DoctorCheck.exitStatus([ok, warning, problem]) == 1)
        #expect(DoctorCheck.exitStatus([problem]) == 1)
    }

    @Test func displayFailureIsAProblemAndSharedMemoryOnlyAWarning() {
        let dead = DoctorChecks.display(.failure(ReelError(.sourceUnavailable, "no X server at display :5")), sockets: [":0"])
        #expect(dead.map(\.status) == [.problem])
        #expect(dead[0].fix?.contains(":0") == true, "the fix names the displays that have a socket")
        let size = PixelSize(width: 1920, height: 1080)
        for (shm, expected) in [(DisplayDiagnosis.SharedMemory.usable, DoctorCheck.Status.ok), (.notOffered, .warning),
                                (.refused("X error 10"), .warning)] {
            let checks = DoctorChecks.display(.success(DisplayDiagnosis(name: ":0", screenSize: size, sharedMemory: shm)), sockets: [])
            #expect(Self.statuses(checks) == ["display": .ok, "mit-shm": expected, "composite": .ok])
        }
        // No Composite: --window cannot work, a warning (the screen still records).
        let bare = DoctorChecks.display(.success(DisplayDiagnosis(name: ":0", screenSize: size, sharedMemory: .usable, composite: false)), sockets: [])
        #expect(Self.statuses(bare) == ["display": .ok, "mit-shm": .ok, "composite": .warning])
        #expect(bare.last?.fix?.contains("-extension Composite") == true)
        // A 16-bit screen connects but cannot be recorded.
        let depth16 = DoctorChecks.display(.failure(ReelError(.unsupportedFormat, "the screen of display :0 has depth 16", hint: "run at depth 24")), sockets: [])
        #expect(depth16.map(\.status) == [.problem] && depth16[0].fix == "run at depth 24")
    }

    @Test func audioRules() {
        let facts = DoctorChecks.AudioFacts(server: Self.server, sources: [Self.mic, Self.monitor], sinks: [Self.sink])
        #expect(Self.statuses(DoctorChecks.audio(.success(facts), microphone: nil, sink: nil))
                == ["audio-server": .ok, "microphone": .ok, "app-audio": .ok])
        // No default source, no default sink: the defaults would fail.
        var none = facts
        none.server.defaultSource = nil
        none.server.defaultSink = nil
        #expect(Self.statuses(DoctorChecks.audio(.success(none), microphone: nil, sink: nil))
                == ["audio-server": .ok, "microphone": .problem, "app-audio": .problem])
        // A monitor as the default source records, but not a microphone.
        var monitorDefault = facts
        monitorDefault.server.defaultSource = "apps.monitor"
        #expect(Self.statuses(DoctorChecks.audio(.success(monitorDefault), microphone: nil, sink: nil))["microphone"] == .warning)
        // A sink without its monitor source.
        let noMonitor = DoctorChecks.AudioFacts(server: Self.server, sources: [Self.mic], sinks: [Self.sink])
        #expect(Self.statuses(DoctorChecks.audio(.success(noMonitor), microphone: nil, sink: nil))["app-audio"] == .problem)
        // Named devices.
        #expect(Self.statuses(DoctorChecks.audio(.success(facts), microphone: "apps.monitor", sink: "apps.monitor"))
                == ["audio-server": .ok, "microphone": .ok, "app-audio": .ok])
        // A name no sink has is an application, as reel record takes it: not playing is a
        // warning (a recording waits for it), playing is fine (issue 26, item 5).
        #expect(Self.statuses(DoctorChecks.audio(.success(facts), microphone: "usb", sink: "hdmi"))
                == ["audio-server": .ok, "microphone": .problem, "app-audio": .warning])
        #expect(Self.statuses(DoctorChecks.audio(.success(facts), microphone: nil, sink: "nosuch.monitor"))["app-audio"] == .problem)
        var playing = facts
        playing.applications = [PlayingStream(index: 3, applicationName: "Firefox", binary: "firefox", processID: 42, sinkName: "apps")]
        playing.applicationAudio = .linking(remote: nil)
        let firefox = DoctorChecks.audio(.success(playing), microphone: nil, sink: "firefox")
        #expect(Self.statuses(firefox) == ["audio-server": .ok, "microphone": .ok, "app-audio": .ok, "app-audio-method": .ok])
        #expect(firefox.first { $0.name == "app-audio" }?.detail.contains("application 'firefox' plays now ('Firefox' on 'apps')") == true)
        #expect(firefox.first { $0.name == "app-audio-method" }?.detail.contains("linked in PipeWire's graph") == true)
        playing.applicationAudio = .routing(reason: "the audio server is pulseaudio")
        #expect(DoctorChecks.audio(.success(playing), microphone: nil, sink: "42").first { $0.name == "app-audio-method" }?.detail
                == "one application's sound (--app-audio=APP) is routed through PulseAudio modules (the audio server is pulseaudio)")
        let down = DoctorChecks.audio(.failure(ReelError(.sourceUnavailable, "PulseAudio is not running", hint: "start it")), microphone: nil, sink: nil)
        #expect(down.map(\.status) == [.problem] && down[0].fix == "start it")
        let elsewhere = DoctorChecks.audio(.failure(ReelError(.sourceUnavailable, "PulseAudio is not running", hint: "start it")),
                                           microphone: nil, sink: nil, pulseServer: "/nonexistent")
        #expect(elsewhere.map(\.status) == [.problem] && elsewhere[0].detail.contains("PULSE_SERVER=/nonexistent")
                && elsewhere[0].fix?.contains("PULSE_SERVER") == true)
    }

    @Test func cameraRulesDependOnWhetherItWasNamed() {
        let denied = AuthorizationStatus.denied(hint: V4L2Devices.permissionHint)
        for (status, _) in [(AuthorizationStatus.absent, ""), (denied, ""), (.busy, "")] {
            #expect(DoctorChecks.camera("/dev/video0", status: status, description: nil, named: false).status == .warning)
            #expect(DoctorChecks.camera("/dev/video0", status: status, description: nil, named: true).status == .problem)
        }
        #expect(DoctorChecks.camera("/dev/video0", status: denied, description: nil, named: true).fix?.contains("usermod -aG video") == true)
        let camera = V4L2Device(path: "/dev/video0", card: "Webcam", driver: "uvcvideo", bus: "usb-1",
                                capabilities: [.videoCapture, .streaming], formats: [])
        let metadata = V4L2Device(path: "/dev/video1", card: "Webcam", driver: "uvcvideo", bus: "usb-1",
                                  capabilities: [.streaming], formats: [])
        #expect(DoctorChecks.camera("/dev/video0", status: .authorized, description: .success(camera), named: false).status == .ok)
        #expect(DoctorChecks.camera("/dev/video1", status: .authorized, description: .success(metadata), named: false).status == .ok)
        #expect(DoctorChecks.camera("/dev/video1", status: .authorized, description: .success(metadata), named: true).status == .problem)
        let broken = DoctorChecks.camera("/dev/video2", status: .authorized,
                                         description: .failure(ReelError(.sourceUnavailable, "asking /dev/video2 what it is failed")), named: false)
        #expect(broken.status == .warning)
        #expect(DoctorChecks.noCameras.status == .warning)
    }

    @Test func onlyTheDefaultEncodersAreProblems() {
        #expect(DoctorChecks.encoders(hasEncoder: { _ in true }).allSatisfy { $0.status == .ok })
        let none = Self.statuses(DoctorChecks.encoders(hasEncoder: { _ in false }))
        #expect(none == ["encoder h264": .problem, "encoder hevc": .warning, "encoder vp9": .warning, "encoder av1": .warning,
                         "encoder aac": .problem, "encoder opus": .warning, "encoder flac": .warning, "encoder pcm": .warning])
        // An FFmpeg with SVT-AV1 but not libaom: AV1 is a warning that names it.
        let svt = DoctorChecks.encoders(hasEncoder: { $0 != "libaom-av1" }).first { $0.name == "encoder av1" }
        #expect(svt?.status == .warning && svt?.detail.contains("libsvtav1") == true)
    }

    @Test func videosFolderRules() {
        let url = URL(fileURLWithPath: "/home/u/Videos")
        func check(_ kind: DoctorChecks.FolderFacts.Kind, writable: Bool, free: Int64?) -> DoctorCheck.Status {
            DoctorChecks.videosFolder(.init(url: url, kind: kind, writable: writable, freeBytes: free,
                                            existingParent: kind == .missing ? URL(fileURLWithPath: "/home/u") : nil)).status
        }
        #expect(check(.folder, writable: true, free: 50_000_000_000) == .ok)
        #expect(check(.missing, writable: true, free: 50_000_000_000) == .ok)
        #expect(check(.folder, writable: true, free: 500_000_000) == .warning)
        #expect(check(.folder, writable: true, free: 99_999_999) == .problem)
        #expect(check(.folder, writable: true, free: nil) == .ok)
        #expect(check(.folder, writable: false, free: 50_000_000_000) == .problem)
        #expect(check(.missing, writable: false, free: 50_000_000_000) == .problem)
        #expect(check(.notAFolder, writable: false, free: nil) == .problem)
    }

    @Test func waylandIsAProblemWithoutThePortal() {
        #expect(DoctorChecks.wayland(environment: ["DISPLAY": ":0"], portal: .screenCast(version: 5)) == nil)
        #expect(DoctorChecks.wayland(environment: ["WAYLAND_DISPLAY": ""], portal: .screenCast(version: 5)) == nil)
        let answers: [DoctorChecks.PortalAnswer] = [.screenCast(version: 5), .noScreenCast("x"), .noPortal("x"), .noSessionBus("x"), .cannotAsk("x")]
        let expected: [DoctorCheck.Status] = [.ok, .problem, .problem, .problem, .warning]
        for (answer, status) in zip(answers, expected) {
            let check = DoctorChecks.wayland(environment: ["XDG_SESSION_TYPE": "wayland"], portal: answer)
            #expect(check?.status == status, "\(answer)")
            #expect(check?.detail.contains("ScreenCast portal") == true)
            #expect(status == .ok || check?.fix?.contains("--screen=:0") == true || status == .warning)
        }
        #expect(DoctorChecks.wayland(environment: ["WAYLAND_DISPLAY": "wayland-0"], portal: .screenCast(version: 5))?.detail.contains("version 5") == true)
    }

    @Test func portalAnswersOfDbusSend() {
        let reply = "method return time=1764560000.123 sender=:1.4 -> destination=:1.9 serial=31 reply_serial=2\n   variant       uint32 5\n"
        #expect(PortalProbe.interpret(status: 0, output: reply) == .screenCast(version: 5))
        let unknown = "Error org.freedesktop.DBus.Error.ServiceUnknown: The name org.freedesktop.portal.Desktop was not provided by any .service files\n"
        #expect(PortalProbe.interpret(status: 1, output: unknown)
                == .noPortal("Error org.freedesktop.DBus.Error.ServiceUnknown: The name org.freedesktop.portal.Desktop was not provided by any .service files"))
        if case .noScreenCast = PortalProbe.interpret(status: 1, output: "Error org.freedesktop.DBus.Error.InvalidArgs: No such interface “org.freedesktop.portal.ScreenCast”") {
        } else { Issue.record("an interface the portal lacks is no ScreenCast") }
        if case .noSessionBus = PortalProbe.interpret(status: 1, output: "Failed to open connection to \"session\" message bus: Unable to autolaunch a dbus-daemon without a $DISPLAY for X11") {
        } else { Issue.record("no session bus") }
    }

    /// The cameras through the V4L2 seam, on recorded answers of real cameras: a camera, its
    /// metadata node, one this user may not open, one another program streams from.
    @Test func camerasThroughTheV4L2Seam() throws {
        let driver = V4L2ReplayDriver(devices: [
            "/dev/video0": try V4L2Recording(parsing: CameraRecordings.logitechC920),
            "/dev/video1": try V4L2Recording(parsing: CameraRecordings.uvcMetadataNode),
            "/dev/video2": try V4L2Recording(parsing: CameraRecordings.logitechC920),
            "/dev/video10": try V4L2Recording(parsing: CameraRecordings.logitechC920),
        ])
        driver.fail(.open, errno: EACCES, path: "/dev/video2")
        driver.fail(.requestBuffers, errno: EBUSY, path: "/dev/video10")
        let checks = DoctorCommand.cameraChecks(named: [], driver: driver)
        #expect(checks.map(\.name) == ["camera /dev/video0", "camera /dev/video1", "camera /dev/video2", "camera /dev/video10"])
        #expect(checks.map(\.status) == [.ok, .ok, .warning, .warning])
        #expect(checks[0].detail.hasPrefix("HD Pro Webcam C920 (uvcvideo): YUYV"), "\(checks[0].detail)")
        #expect(checks[1].detail.contains("not a video capture device"), "\(checks[1].detail)")
        #expect(checks[2].fix == V4L2Devices.permissionHint)
        #expect(checks[3].detail == "/dev/video10 is in use by another program")
        #expect(DoctorCheck.exitStatus(checks) == 0, "cameras nobody named do not fail")

        let named = DoctorCommand.cameraChecks(named: ["/dev/video2", "/dev/video10", "/dev/video5", "/dev/video0"], driver: driver)
        #expect(named.map(\.status) == [.problem, .problem, .problem, .ok])
        #expect(named[2].detail == "there is no /dev/video5")
        #expect(DoctorCommand.cameraChecks(named: [], driver: V4L2ReplayDriver(devices: [:])) == [DoctorChecks.noCameras])
    }
}
