import Foundation
import Testing
import Reel
import ReelTestSupport

/// `reel doctor` run as a user would, against machine states each test arranges with real
/// servers: no display, a dead display, Xvfb with and without MIT-SHM, PulseAudio running or
/// not, cameras that are absent or not permitted, a videos folder that cannot be written, a
/// Wayland session whose bus has no portal.
@Suite(.tags(.realTime)) struct DoctorCommandTests {
    /// What one run said: its exit status, its checks by name (from `--json`) in order.
    struct Run {
        var status: Int32
        var checks: [String: [String: String]]
        var names: [String]
        var stderr: String

        /// The status of the check `name` (`nil`: not printed).
        func status(_ name: String) -> String? { checks[name]?["status"] }
    }

    /// Runs `reel doctor --json ARGS` with the variables a desktop would have, overridden by
    /// `environment`: no Wayland, a fresh videos folder.
    static func doctor(_ arguments: [String] = [], environment: [String: String], prefix: [String] = []) throws -> Run {
        let videos = try TemporaryDirectory(prefix: "reel-doctor-videos")
        let base = ["WAYLAND_DISPLAY": "", "XDG_SESSION_TYPE": "", "XDG_VIDEOS_DIR": videos.url.path]
        let r = try Subprocess.run(prefix + [ReelBinary.url.path, "doctor", "--json"] + arguments,
                                   environment: base.merging(environment) { _, new in new })
        let object = try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any]
        let list = object?["checks"] as? [[String: String]] ?? []
        var checks: [String: [String: String]] = [:]
        for check in list { checks[check["name"] ?? ""] = check }
        #expect(object?["problems"] as? Int == list.filter { $0["status"] == "problem" }.count, "the count of problems matches the checks")
        return Run(status: r.status, checks: checks, names: list.compactMap { $0["name"] }, stderr: r.stderr)
    }

    /// Everything a recording of the screen with sound needs is there (cameras aside: there are
    /// none here, which is a warning): exit status 0, each part said with its figures.
    @Test func aWorkingMachinePasses() throws {
        let x = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let pulse = try PulseServer()
        let run = try Self.doctor(environment: ["DISPLAY": x.display].merging(pulse.environment) { $1 })
        #expect(run.status == 0, "\(run.checks)")
        #expect(run.status("display") == "ok")
        #expect(run.checks["display"]?["detail"]?.contains("\(x.display), screen 640x480") == true, "\(run.checks["display"] ?? [:])")
        #expect(run.status("mit-shm") == "ok", "\(run.checks["mit-shm"] ?? [:])")
        #expect(run.status("audio-server") == "ok")
        #expect(run.checks["audio-server"]?["detail"]?.lowercased().contains("pulseaudio") == true)
        #expect(run.status("microphone") == "ok")
        #expect(run.checks["microphone"]?["detail"]?.contains("'\(PulseServer.microphoneName)'") == true)
        #expect(run.status("app-audio") == "ok")
        #expect(run.checks["app-audio"]?["detail"]?.contains("'\(PulseServer.monitorName)'") == true)
        #expect(run.status("encoder h264") == "ok" && run.status("encoder aac") == "ok")
        #expect(run.status("videos-folder") == "ok")
        #expect(run.checks["wayland"] == nil, "not a Wayland session")
        // This machine has no /dev/video*: a warning, which does not fail.
        if (try? FileManager.default.contentsOfDirectory(atPath: "/dev"))?.contains(where: { $0.hasPrefix("video") }) == false {
            #expect(run.status("cameras") == "warning")
        }
        #expect(run.names.first == "display" && run.names.last == "videos-folder", "\(run.names)")
    }

    /// The text form: one line per check, the status first, fixes on the line, and a summary.
    @Test func textSaysEachCheckOnALine() throws {
        let pulse = try PulseServer()
        let videos = try TemporaryDirectory(prefix: "reel-doctor-videos")
        let r = try ReelBinary.run(["doctor"], environment: ["DISPLAY": "", "WAYLAND_DISPLAY": "", "XDG_SESSION_TYPE": "",
                                                             "XDG_VIDEOS_DIR": videos.url.path].merging(pulse.environment) { $1 })
        #expect(r.status == 1)
        let lines = r.output.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("PROBLEM  display ") && $0.contains("DISPLAY is not set") && $0.contains("— fix: ") }, "\(r.output)")
        #expect(lines.contains { $0.hasPrefix("ok       microphone ") }, "\(r.output)")
        #expect(lines.last?.hasPrefix("1 problem: recording would fail") == true, "\(r.output)")
        #expect(r.stderr.isEmpty, "\(r.stderr)")
    }

    /// No display at all (DISPLAY unset): the screen cannot be recorded, so exit status 1,
    /// with the fix; the audio checks go on.
    @Test func noDisplayIsAProblem() throws {
        let pulse = try PulseServer()
        let run = try Self.doctor(environment: ["DISPLAY": ""].merging(pulse.environment) { $1 })
        #expect(run.status == 1)
        #expect(run.status("display") == "problem")
        #expect(run.checks["display"]?["fix"]?.contains("DISPLAY") == true, "\(run.checks["display"] ?? [:])")
        #expect(run.checks["mit-shm"] == nil, "nothing to ask about shared memory")
        #expect(run.status("microphone") == "ok")
    }

    /// DISPLAY names a display where no server runs.
    @Test func deadDisplayIsAProblem() throws {
        let pulse = try PulseServer()
        let dead = XvfbServer.unusedDisplay()
        let run = try Self.doctor(environment: ["DISPLAY": dead].merging(pulse.environment) { $1 })
        #expect(run.status == 1)
        #expect(run.status("display") == "problem")
        #expect(run.checks["display"]?["detail"]?.contains("no X server at display \(dead)") == true, "\(run.checks["display"] ?? [:])")
        // --display checks another display than $DISPLAY.
        let x = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let named = try Self.doctor(["--display", x.display], environment: ["DISPLAY": dead].merging(pulse.environment) { $1 })
        #expect(named.status("display") == "ok", "\(named.checks["display"] ?? [:])")
        #expect(named.status == 0)
    }

    /// Xvfb started without MIT-SHM: frames would be copied, a warning that does not fail.
    @Test func xvfbWithoutSharedMemoryWarns() throws {
        let x = try XvfbServer(size: PixelSize(width: 320, height: 240), extraArguments: ["-extension", "MIT-SHM"])
        let pulse = try PulseServer()
        let run = try Self.doctor(environment: ["DISPLAY": x.display].merging(pulse.environment) { $1 })
        #expect(run.status("display") == "ok")
        #expect(run.status("mit-shm") == "warning")
        #expect(run.checks["mit-shm"]?["detail"]?.contains("no MIT-SHM extension") == true, "\(run.checks["mit-shm"] ?? [:])")
        #expect(run.checks["mit-shm"]?["fix"] != nil)
        #expect(run.status == 0, "a missing MIT-SHM does not fail: \(run.checks)")
        #expect(run.status("composite") == "ok")
    }

    /// Xvfb started without Composite: --window cannot record, a warning that does not fail.
    @Test func xvfbWithoutCompositeWarns() throws {
        let x = try XvfbServer(size: PixelSize(width: 320, height: 240), extraArguments: ["-extension", "Composite"])
        let pulse = try PulseServer()
        let run = try Self.doctor(environment: ["DISPLAY": x.display].merging(pulse.environment) { $1 })
        #expect(run.status("composite") == "warning")
        #expect(run.checks["composite"]?["detail"]?.contains("no Composite extension: --window cannot record a window") == true,
                "\(run.checks["composite"] ?? [:])")
        #expect(run.status == 0, "a missing Composite does not fail: \(run.checks)")
    }

    /// An X server that has MIT-SHM but cannot attach reel's memory — here one running as
    /// `nobody`, for whom root's segments are closed, as a server across a container boundary
    /// is: the attach is tried for real and the copying fallback is said, as a warning.
    @Test func sharedMemoryTheServerCannotAttachWarns() throws {
        try #require(geteuid() == 0, "the test runs Xvfb as nobody, which needs root")
        let setpriv = try #require(Subprocess.which("setpriv"), "setpriv (util-linux) runs Xvfb as nobody")
        let x = try XvfbServer(size: PixelSize(width: 320, height: 240),
                               launcher: [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        let pulse = try PulseServer()
        let run = try Self.doctor(environment: ["DISPLAY": x.display].merging(pulse.environment) { $1 })
        #expect(run.status("display") == "ok")
        #expect(run.status("mit-shm") == "warning")
        #expect(run.checks["mit-shm"]?["detail"]?.contains("offers MIT-SHM but cannot use this process's shared memory") == true,
                "\(run.checks["mit-shm"] ?? [:])")
        #expect(run.status == 0, "copying still records: \(run.checks)")
    }

    /// No PulseAudio where PULSE_SERVER points: --mic and --app-audio would fail.
    @Test func noPulseAudioIsAProblem() throws {
        let x = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let dir = try TemporaryDirectory(prefix: "reel-doctor-nopulse")
        let run = try Self.doctor(environment: ["DISPLAY": x.display, "PULSE_SERVER": "unix:\(dir.url.path)/native"])
        #expect(run.status == 1)
        #expect(run.status("audio-server") == "problem")
        #expect(run.checks["audio-server"]?["detail"]?.contains("not running") == true, "\(run.checks["audio-server"] ?? [:])")
        #expect(run.checks["audio-server"]?["fix"]?.contains("PULSE_SERVER") == true)
        #expect(run.checks["microphone"] == nil && run.checks["app-audio"] == nil)
        #expect(run.status("display") == "ok")
    }

    /// A named microphone that does not exist: a problem; a name with --app-audio that is
    /// neither a sink nor an application playing: a warning (a recording would wait for it).
    @Test func namedAudioDevicesThatDoNotExist() throws {
        let x = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let pulse = try PulseServer()
        let run = try Self.doctor(["--mic", "nosuchmic", "--app-audio", "nosuchsink"],
                                  environment: ["DISPLAY": x.display].merging(pulse.environment) { $1 })
        #expect(run.status == 1)
        #expect(run.status("microphone") == "problem" && run.checks["microphone"]?["detail"]?.contains("'nosuchmic'") == true)
        #expect(run.status("app-audio") == "warning", "\(run.checks)")
        #expect(run.checks["app-audio"]?["detail"]?.contains("no application 'nosuchsink' is playing now, and no sink has that name") == true)
    }

    /// A camera path that does not exist, named with --camera: a problem.
    @Test func absentCameraIsAProblemWhenNamed() throws {
        let x = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let pulse = try PulseServer()
        let dir = try TemporaryDirectory(prefix: "reel-doctor-cam")
        let path = dir.url.appendingPathComponent("video7").path
        let run = try Self.doctor(["--camera", path], environment: ["DISPLAY": x.display].merging(pulse.environment) { $1 })
        #expect(run.status == 1)
        #expect(run.status("camera \(path)") == "problem", "\(run.checks)")
        #expect(run.checks["camera \(path)"]?["detail"] == "there is no \(path)")
        #expect(run.checks["cameras"] == nil, "only the named camera is checked")
        // Something that is not a camera at all: opened, and said why it is no camera.
        let file = dir.url.appendingPathComponent("notes.txt")
        #expect(FileManager.default.createFile(atPath: file.path, contents: Data("x".utf8)))
        let notCamera = try Self.doctor(["--camera", file.path], environment: ["DISPLAY": x.display].merging(pulse.environment) { $1 })
        #expect(notCamera.status("camera \(file.path)") == "problem")
        #expect(notCamera.checks["camera \(file.path)"]?["detail"]?.contains("what it is failed") == true, "\(notCamera.checks)")
    }

    /// A camera node only root may open, checked as `nobody`: the fix is the video group.
    @Test func cameraNotPermittedNamesTheVideoGroup() throws {
        let dir = try TemporaryDirectory(prefix: "reel-doctor-perm")
        chmod(dir.url.path, 0o755)
        let node = dir.url.appendingPathComponent("video9")
        #expect(FileManager.default.createFile(atPath: node.path, contents: Data()))
        chmod(node.path, 0o600)
        var prefix: [String] = []
        if geteuid() == 0 {
            let setpriv = try #require(Subprocess.which("setpriv"), "setpriv (util-linux) runs reel as nobody")
            prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
            // nobody must reach the binary; it does when the checkout is world-readable, as here.
            #expect(access(ReelBinary.url.path, X_OK) == 0)
        }
        let run = try Self.doctor(["--camera", node.path], environment: ["DISPLAY": ""], prefix: prefix)
        let check = run.checks["camera \(node.path)"]
        #expect(check?["status"] == "problem", "\(run.checks) \(run.stderr)")
        #expect(check?["detail"]?.contains("may not open") == true)
        #expect(check?["fix"]?.contains("usermod -aG video") == true, "\(check ?? [:])")
        // (nobody has no display or audio here either, so the exit status says nothing of the
        // camera alone: absentCameraIsAProblemWhenNamed shows that a named camera fails it.)
    }

    /// The videos folder cannot be made (its parent is a file): reel record without -o would
    /// fail. A tiny disk under it: below the free-space guard, also a problem.
    @Test func videosFolderThatCannotBeWrittenIsAProblem() throws {
        let x = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let pulse = try PulseServer()
        let dir = try TemporaryDirectory(prefix: "reel-doctor-folder")
        let file = dir.url.appendingPathComponent("file")
        #expect(FileManager.default.createFile(atPath: file.path, contents: Data("x".utf8)))
        let videos = file.appendingPathComponent("Videos").path
        let run = try Self.doctor(environment: ["DISPLAY": x.display, "XDG_VIDEOS_DIR": videos].merging(pulse.environment) { $1 })
        #expect(run.status == 1)
        #expect(run.status("videos-folder") == "problem")
        #expect(run.checks["videos-folder"]?["detail"]?.contains("cannot be created") == true, "\(run.checks["videos-folder"] ?? [:])")

        let disk = try SmallDisk(size: "20M")
        let small = try Self.doctor(environment: ["DISPLAY": x.display, "XDG_VIDEOS_DIR": disk.url.path].merging(pulse.environment) { $1 })
        #expect(small.status("videos-folder") == "problem")
        #expect(small.checks["videos-folder"]?["detail"]?.contains("--min-free") == true, "\(small.checks["videos-folder"] ?? [:])")
        #expect(small.status == 1)
    }

    /// A Wayland session whose session bus has no portal: a problem (a plain --screen records
    /// Wayland through the portal), with the fix; and one with no session bus at all.
    @Test func waylandSessionWithoutPortal() throws {
        let x = try XvfbServer(size: PixelSize(width: 320, height: 240))
        let pulse = try PulseServer()
        let bus = try SessionBus()
        var environment = ["DISPLAY": x.display, "WAYLAND_DISPLAY": "wayland-9"].merging(pulse.environment) { $1 }
        let run = try Self.doctor(environment: environment.merging(bus.environment) { $1 })
        #expect(run.status("wayland") == "problem")
        let detail = run.checks["wayland"]?["detail"] ?? ""
        #expect(detail.contains("not on the session bus") && detail.contains("ServiceUnknown"), "\(detail)")
        #expect(run.checks["wayland"]?["fix"]?.contains("xdg-desktop-portal") == true)
        #expect(run.status == 1, "the default screen cannot be recorded: \(run.checks)")

        environment["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=/nonexistent/reel-doctor-bus"
        let noBus = try Self.doctor(environment: environment)
        #expect(noBus.checks["wayland"]?["detail"]?.contains("no D-Bus session bus") == true, "\(noBus.checks["wayland"] ?? [:])")
    }

    /// Bad options are usage errors (exit status 2), and --help lists the checks and options.
    @Test func usageAndHelp() throws {
        for args in [["doctor", "extra"], ["doctor", "--camera", "test"], ["doctor", "--camera", "rtsp://h/x"], ["doctor", "--display="],
                     ["doctor", "--nope"]] {
            let r = try ReelBinary.run(args)
            #expect(r.status == 2, "\(args): \(r.stderr)")
            #expect(r.stderr.hasPrefix("reel: "), "\(args): \(r.stderr)")
        }
        let help = try ReelBinary.run(["doctor", "--help"])
        #expect(help.status == 0)
        for word in ["--json", "--display", "--camera", "mit-shm", "composite", "videos-folder", "Exit status"] {
            #expect(help.output.contains(word), "\(word)")
        }
        #expect(try ReelBinary.run(["--help"]).output.contains("doctor"))
    }
}
