import Foundation
import ReelCore
import ReelSystem
import Synchronization

/// A private PulseAudio daemon for one test, with a null sink as app audio and a FIFO as the
/// microphone.
///
/// Each server lives in a fresh temporary folder with its own socket, so tests run in parallel.
/// It has:
/// - a null sink ``sinkName`` (`apps`), the default sink: what tests play into it appears on its
///   monitor ``monitorName`` (`apps.monitor`), the app-audio source;
/// - a pipe source ``microphoneName`` (`mic`), the default source, reading s16le 48 kHz stereo
///   from a FIFO that ``feedMicrophone(frequency:seconds:amplitude:)`` writes a tone into. While
///   nothing is written, the microphone delivers nothing.
///
/// ```swift
/// let pulse = try PulseServer()
/// let mic = PulseAudioSource.microphone(server: pulse.server)
/// let feed = try pulse.feedMicrophone(frequency: 1000, seconds: 2)
/// ```
///
/// The daemon runs as the current user (root too) with `--system=no`, its home, runtime and
/// config folders pointed into the temporary folder, no shared memory, a raised priority but no
/// real-time scheduling, and never exits on its own (but with this process); ``terminate()`` (or `deinit`) stops it and removes the folder.
public final class PulseServer: Sendable {
    /// The null sink that plays nowhere; the default sink.
    public static let sinkName = "apps"
    /// The monitor of ``sinkName``: what applications play, as a source.
    public static let monitorName = "apps.monitor"
    /// The pipe source fed by ``feedMicrophone(frequency:seconds:amplitude:)``; the default source.
    public static let microphoneName = "mic"
    /// The sample rate of the sink and of the microphone FIFO (s16le, 2 channels).
    public static let sampleRate = 48_000

    /// The server's folder (socket, FIFO, script, log).
    public let directory: URL
    /// The server string to connect to, `"unix:<directory>/native"`.
    public let server: String
    /// The variables to add to a subprocess's environment so that its PulseAudio clients
    /// (`reel`, `pactl`) use this server: merge them into `ProcessInfo.processInfo.environment`.
    public var environment: [String: String] { ["PULSE_SERVER": server] }

    private let socketPath: String
    private let fifoPath: String
    private let logPath: String
    private let scriptPath: String
    private let timeout: Double
    /// Whether a keeper holds the sink at low latency (see ``init(timeout:keepsSinkLatencyLow:)``).
    private let keepsSinkLatencyLow: Bool
    private let state = Mutex(State())

    private struct State {
        /// The guarding shell, whose child is the daemon.
        var daemon: SpawnedProcess?
        /// The write end of the guard's stdin: closing it stops the daemon.
        var guardPipe: Int32 = -1
        /// The `pacat` that plays silence into the sink at low latency.
        var keeper: SpawnedProcess?
        var feeds: [ToneFeed] = []
        var removed = false
    }

    /// Starts a server and waits until it accepts connections.
    ///
    /// - Parameters:
    ///   - timeout: how long to wait for the daemon, in seconds.
    ///   - keepsSinkLatencyLow: whether a keeper plays silence into the sink at 20 ms latency
    ///     (see `startKeeper()`), as a sound card's sink behaves; without it the sink renders as
    ///     far ahead as its clients allow (2 s when they ask for nothing, as a desktop's null
    ///     sink or a player with a long buffer makes it).
    /// - Throws: a ``ReelError`` when `pulseaudio` is missing or does not come up in time (the
    ///   message carries the end of its log).
    public init(timeout: Double = 10, keepsSinkLatencyLow: Bool = true) throws {
        self.keepsSinkLatencyLow = keepsSinkLatencyLow
        // Writing to a FIFO or a pipe whose reader died must fail with EPIPE, not kill the tests.
        signal(SIGPIPE, SIG_IGN)
        // A short path: a socket path must fit in 108 bytes.
        var template = Array("/tmp/reel-pulse-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw ReelError(.ioFailure, "cannot create a folder for the PulseAudio test server", errno: errno)
        }
        let path = String(cString: made)
        directory = URL(fileURLWithPath: path, isDirectory: true)
        socketPath = "\(path)/native"
        fifoPath = "\(path)/mic.fifo"
        logPath = "\(path)/pulseaudio.log"
        scriptPath = "\(path)/reel.pa"
        server = "unix:\(socketPath)"
        self.timeout = timeout
        // The socket module comes last, so a connectable socket means every module is loaded.
        let script = """
            .fail
            load-module module-null-sink sink_name=\(Self.sinkName) rate=\(Self.sampleRate) channels=2
            load-module module-pipe-source source_name=\(Self.microphoneName) file=\(fifoPath) format=s16le rate=\(Self.sampleRate) channels=2
            set-default-sink \(Self.sinkName)
            set-default-source \(Self.microphoneName)
            suspend-sink \(Self.sinkName) 1
            load-module module-native-protocol-unix socket=\(socketPath) auth-anonymous=1

            """
        do {
            try script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
            for sub in ["runtime", "config", "state"] {
                try FileManager.default.createDirectory(atPath: "\(path)/\(sub)", withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            }
        } catch {
            try? FileManager.default.removeItem(atPath: path)
            throw ReelError(.ioFailure, "cannot prepare the PulseAudio test server in \(path): \(error)")
        }
        do {
            try startServer()
        } catch {
            try? FileManager.default.removeItem(atPath: path)
            state.withLock { $0.removed = true }
            throw error
        }
    }

    deinit {
        terminate()
    }

    /// Whether the daemon is running.
    public var isRunning: Bool { state.withLock { $0.daemon?.isRunning ?? false } }

    /// The daemon's log so far, for a failing test to show.
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// The arguments of `pulseaudio`.
    private var daemonArguments: [String] {
        ["-n", "-F", scriptPath,
         "--daemonize=no", "--system=no", "--use-pid-file=no", "--exit-idle-time=-1",
         "--disable-shm=yes", "--realtime=no", "--high-priority=yes",
         // Info: what a test may look for, as "Could not peek into queue" (a loopback that ran dry).
         "--log-target=stderr", "--log-level=info"]
    }

    /// Runs the daemon (`$@`) and ends it when its stdin closes, i.e. when ``stopServer()``
    /// closes the pipe or this process dies: a crashed test leaves no daemon behind. Exits with
    /// the daemon.
    private static let guardScript = """
        exec 3<&0
        "$@" </dev/null 3<&- &
        daemon=$!
        (read _ <&3; kill $daemon 2>/dev/null) &
        watcher=$!
        wait $daemon
        status=$?
        kill $watcher 2>/dev/null
        exit $status
        """

    /// Starts the daemon (again, after ``stopServer()``) on the same socket, and waits until it
    /// accepts connections. Does nothing if it is running.
    public func startServer() throws {
        guard let executable = Self.findExecutable("pulseaudio"), let shell = Self.findExecutable("sh") else {
            throw ReelError(.sourceUnavailable, "pulseaudio is not installed", hint: "apt-get install pulseaudio pulseaudio-utils")
        }
        try state.withLock { state in
            guard !state.removed else { throw ReelError(.notRunning, "the PulseAudio test server was terminated") }
            if state.daemon?.isRunning == true { return }
            // The daemon died by itself: let go of what belonged to it.
            state.daemon?.stop(timeout: 0)
            state.daemon = nil
            state.keeper?.stop(timeout: 0)
            state.keeper = nil
            if state.guardPipe >= 0 { close(state.guardPipe) }
            state.guardPipe = -1
            // A daemon that was killed leaves its socket and FIFO behind; the pipe source refuses
            // an existing FIFO.
            unlink(socketPath)
            unlink(fifoPath)
            let log = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            guard log >= 0 else { throw ReelError(.ioFailure, "cannot open \(logPath)", errno: errno) }
            defer { close(log) }
            var fds: [Int32] = [-1, -1]
            // A socket pair, because it can be made close-on-exec atomically: no other child may
            // inherit the end whose closing stops the daemon.
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
                throw ReelError(.ioFailure, "cannot make a socket pair", errno: errno)
            }
            defer { close(fds[0]) }

            let dir = directory.path
            // A minimal environment: no DISPLAY or D-Bus session to reach for, and a home of its own.
            let environment = [
                "PATH": "/usr/local/bin:/usr/bin:/bin",
                "HOME": dir,
                "XDG_RUNTIME_DIR": "\(dir)/runtime",
                "XDG_CONFIG_HOME": "\(dir)/config",
                "XDG_STATE_HOME": "\(dir)/state",
            ]
            let daemon: SpawnedProcess
            do {
                daemon = try SpawnedProcess(shell.path, ["-c", Self.guardScript, "reel-pulse", executable.path] + daemonArguments,
                                            environment: environment, stdin: fds[0], output: log)
            } catch {
                close(fds[1])
                throw error
            }
            let deadline = Date().addingTimeInterval(timeout)
            while !Self.canConnect(to: socketPath) {
                if !daemon.isRunning || Date() >= deadline {
                    let exited = !daemon.isRunning
                    close(fds[1])
                    daemon.stop(timeout: 3)
                    let tail = self.log.split(separator: "\n").suffix(8).joined(separator: "\n")
                    throw ReelError(.sourceUnavailable,
                                    exited ? "the PulseAudio test server exited at start"
                                           : "the PulseAudio test server did not come up within \(timeout) s",
                                    hint: "its log says:\n\(tail)")
                }
                usleep(10_000)
            }
            state.daemon = daemon
            state.guardPipe = fds[1]
            if keepsSinkLatencyLow {
                state.keeper = try? startKeeper()
            } else {
                _ = try? Self.run(["pactl", "--server=\(server)", "suspend-sink", Self.sinkName, "0"])
            }
        }
    }

    /// Starts the keeper and resumes the sink once it is attached.
    ///
    /// A null sink renders blocks as long as the lowest latency its clients ask for (2 s when
    /// nobody asks) ahead of time, and only notices a new client when its current block ends, so
    /// a monitor stream would get its first data up to 2 s late. The script starts the sink
    /// suspended; a `pacat` playing silence at 20 ms latency attaches, and on resuming the sink
    /// starts over with small blocks, as a sound card's sink behaves. The keeper stays for the
    /// server's lifetime.
    private func startKeeper() throws -> SpawnedProcess {
        defer { _ = try? Self.run(["pactl", "--server=\(server)", "suspend-sink", Self.sinkName, "0"]) }
        guard let pacat = Self.findExecutable("pacat") else {
            throw ReelError(.sourceUnavailable, "pacat is not installed", hint: "apt-get install pulseaudio-utils")
        }
        let zero = open("/dev/zero", O_RDONLY | O_CLOEXEC)
        guard zero >= 0 else { throw ReelError(.ioFailure, "cannot open /dev/zero", errno: errno) }
        defer { close(zero) }
        let keeper = try SpawnedProcess(pacat.path, ["--playback", "--server=\(server)", "--device=\(Self.sinkName)", "--raw",
                                                     "--format=s16le", "--rate=\(Self.sampleRate)", "--channels=2",
                                                     "--latency-msec=20", "--client-name=reel-test-keeper"],
                                        environment: ProcessInfo.processInfo.environment, stdin: zero)
        let deadline = Date().addingTimeInterval(5)
        while keeper.isRunning && Date() < deadline {
            let inputs = try Self.run(["pactl", "--server=\(server)", "list", "short", "sink-inputs"])
            if !inputs.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { break }
            usleep(5_000)
        }
        return keeper
    }

    /// Runs a command to its end and returns its standard output.
    private static func run(_ arguments: [String]) throws -> String {
        guard let executable = findExecutable(arguments[0]) else {
            throw ReelError(.sourceUnavailable, "\(arguments[0]) is not installed", hint: "apt-get install pulseaudio-utils")
        }
        let path = NSTemporaryDirectory() + "/reel-pulse-\(UUID().uuidString).out"
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ReelError(.ioFailure, "cannot create \(path)", errno: errno) }
        defer { close(fd); unlink(path) }
        let process = try SpawnedProcess(executable.path, Array(arguments.dropFirst()),
                                         environment: ProcessInfo.processInfo.environment, output: fd)
        process.stop(timeout: 5)
        return (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    /// Stops the daemon but keeps its folder, so ``startServer()`` brings it back on the same
    /// socket: for tests of a server that goes away while recording. Running feeds end.
    public func stopServer() {
        let (daemon, pipe, feeds, keeper) = state.withLock { state -> (SpawnedProcess?, Int32, [ToneFeed], SpawnedProcess?) in
            defer { state.daemon = nil; state.guardPipe = -1; state.feeds = []; state.keeper = nil }
            return (state.daemon, state.guardPipe, state.feeds, state.keeper)
        }
        for feed in feeds { feed.stop() }
        keeper?.stop(timeout: 0)
        if pipe >= 0 { close(pipe) }
        daemon?.stop(timeout: 3)
    }

    /// Stops the daemon's every thread for `seconds` (SIGSTOP, then SIGCONT), as a machine too
    /// busy to run it does: once it runs again, each of its sinks catches up on its own thread,
    /// in no set order. A loopback from one sink's monitor into another runs dry when its sink
    /// catches up first by more than it holds (issue 26, N1).
    ///
    /// - Throws: when the daemon is not running.
    public func stall(seconds: Double) throws {
        guard let wrapper = state.withLock({ $0.daemon?.pid }),
              let children = try? String(contentsOfFile: "/proc/\(wrapper)/task/\(wrapper)/children", encoding: .utf8),
              let daemon = children.split(separator: " ").compactMap({ pid_t($0) }).first(where: { pid in
                  ((try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? "").hasPrefix("pulseaudio")
              }) else {
            throw ReelError(.notRunning, "the PulseAudio test server is not running: nothing to stall")
        }
        kill(daemon, SIGSTOP)
        usleep(useconds_t(seconds * 1_000_000))
        kill(daemon, SIGCONT)
    }

    /// Stops the daemon and the feeds and removes the folder. Safe to call twice.
    public func terminate() {
        stopServer()
        let remove = state.withLock { state -> Bool in
            defer { state.removed = true }
            return !state.removed
        }
        if remove { try? FileManager.default.removeItem(at: directory) }
    }

    /// Plays a sine tone into the sink ``sinkName`` (with `pacat`), so that it appears on the
    /// app-audio source.
    ///
    /// - Parameters:
    ///   - frequency: the tone's frequency in hertz.
    ///   - seconds: how long it plays.
    ///   - amplitude: its peak, 0...1.
    ///   - wait: whether to return only when it has played out.
    ///   - applicationName: the stream's `application.name` (by default pacat's, "reel-test-tone").
    ///   - sink: the sink to play into (by default ``sinkName``).
    ///   - latencyMilliseconds: the latency the player asks for (20 ms; a player with a long
    ///     buffer lets a sink render that far ahead).
    /// - Returns: the playback, to ``ToneFeed/stop()`` early or ``ToneFeed/wait()`` for.
    @discardableResult
    public func playTone(frequency: Double, seconds: Double, amplitude: Double = 0.5, wait: Bool = false,
                         applicationName: String? = nil, sink: String = PulseServer.sinkName,
                         latencyMilliseconds: Int = 20) throws -> ToneFeed {
        let feed = try Self.playTone(on: server, folder: directory, frequency: frequency, seconds: seconds, amplitude: amplitude,
                                     applicationName: applicationName, sink: sink, latencyMilliseconds: latencyMilliseconds)
        register(feed)
        if wait { feed.wait() }
        return feed
    }

    /// Plays a sine tone with `pacat` into `sink` of the server `server` (any server that speaks
    /// PulseAudio's protocol: pipewire-pulse too), the tone's file written into `folder`; as
    /// ``playTone(frequency:seconds:amplitude:wait:applicationName:sink:)`` does for this server.
    public static func playTone(on server: String, folder: URL, frequency: Double, seconds: Double, amplitude: Double,
                                applicationName: String?, sink: String, latencyMilliseconds: Int = 20) throws -> ToneFeed {
        guard let pacat = Self.findExecutable("pacat") else {
            throw ReelError(.sourceUnavailable, "pacat is not installed", hint: "apt-get install pulseaudio-utils")
        }
        let frames = Int(seconds * Double(Self.sampleRate))
        let pcm = Self.tone(frequency: frequency, amplitude: amplitude, frames: frames, startingAt: 0)
        let file = folder.appendingPathComponent("tone-\(UUID().uuidString.prefix(8)).raw")
        do {
            try Data(pcm).write(to: file)
        } catch {
            throw ReelError(.ioFailure, "cannot write the tone for pacat: \(error)")
        }
        let arguments = ["--playback", "--server=\(server)", "--device=\(sink)", "--raw",
                         "--format=s16le", "--rate=\(Self.sampleRate)", "--channels=2",
                         "--latency-msec=\(latencyMilliseconds)", "--client-name=reel-test-tone"]
            + (applicationName.map { ["--property=application.name=\($0)"] } ?? []) + [file.path]
        let player = try SpawnedProcess(pacat.path, arguments,
                                        environment: ProcessInfo.processInfo.environment.merging(["PULSE_SERVER": server]) { $1 })
        return ToneFeed { thread in
            // Wait for pacat to play out, or end it when asked to stop.
            while player.isRunning && !thread.isStopRequested { usleep(10_000) }
            player.stop(timeout: 0)
            try? FileManager.default.removeItem(at: file)
        }
    }

    /// Writes a sine tone into the microphone's FIFO on a background thread, as a microphone
    /// captures sound: 10 ms chunks, each written once its time has passed on the host clock,
    /// until `seconds` have passed or the feed is stopped.
    ///
    /// Like a real microphone, the feed never waits and never catches up for long: the pipe
    /// source reads the FIFO only while something records from it, so a chunk that does not fit
    /// into the FIFO is lost (a recording that starts later gets at most the FIFO's 85 ms of older
    /// sound first), and when the thread was not scheduled for more than 100 ms, the sound of
    /// that time is lost too. Run one feed at a time.
    ///
    /// - Parameters:
    ///   - frequency: the tone's frequency in hertz.
    ///   - seconds: how long to feed.
    ///   - amplitude: its peak, 0...1.
    /// - Returns: the feed, to ``ToneFeed/stop()`` early or ``ToneFeed/wait()`` for.
    @discardableResult
    public func feedMicrophone(frequency: Double, seconds: Double, amplitude: Double = 0.5) throws -> ToneFeed {
        // The pipe source holds the FIFO open for reading, so this open does not block.
        let fd = open(fifoPath, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            throw ReelError(.ioFailure, "cannot open the microphone FIFO \(fifoPath)", errno: errno)
        }
        // F_SETPIPE_SZ: keep little stale sound while nobody records (16 KiB, 85 ms).
        _ = fcntl(fd, 1031, 16_384)
        let total = Int64(seconds * Double(Self.sampleRate))
        let feed = ToneFeed { thread in
            defer { close(fd) }
            let rate = Int32(Self.sampleRate)
            let clock = HostClock()
            let start = clock.now()
            let chunk = Int64(Self.sampleRate / 100)
            var next: Int64 = 0
            while next < total && !thread.isStopRequested {
                // A chunk is written once its last sample's time has passed.
                clock.sleep(until: start + MediaTime(value: next + chunk, timescale: rate))
                if thread.isStopRequested { break }
                // A thread that was not scheduled for a while writes what it owes in a burst, as
                // a sound card's buffer would deliver it, but only up to 100 ms: older sound is lost.
                let due = (clock.now() - start).convertedValue(to: rate, rounding: .down)
                if due - next > 10 * chunk { next = (due / chunk - 1) * chunk }
                guard next < total else { break }
                let frames = min(chunk, total - next)
                let pcm = Self.tone(frequency: frequency, amplitude: amplitude, frames: Int(frames), startingAt: Int(next))
                // At most PIPE_BUF bytes: the write is all or nothing.
                let n = pcm.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
                if n < 0 && errno != EAGAIN && errno != EINTR { return }  // the server has gone
                next += frames
            }
        }
        register(feed)
        return feed
    }

    private func register(_ feed: ToneFeed) {
        state.withLock { state in
            state.feeds.removeAll { $0.isFinished }
            state.feeds.append(feed)
        }
    }

    // MARK: - Helpers

    /// `frames` frames of s16le stereo sine, sample `startingAt` onwards.
    private static func tone(frequency: Double, amplitude: Double, frames: Int, startingAt first: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: frames * 4)
        let step = 2 * Double.pi * frequency / Double(sampleRate)
        let peak = max(0, min(1, amplitude)) * 32767
        for i in 0..<frames {
            let value = Int16((sin(step * Double(first + i)) * peak).rounded())
            let le = UInt16(bitPattern: value).littleEndian
            let lo = UInt8(le & 0xff), hi = UInt8(le >> 8)
            bytes[i * 4] = lo; bytes[i * 4 + 1] = hi
            bytes[i * 4 + 2] = lo; bytes[i * 4 + 3] = hi
        }
        return bytes
    }

    /// Whether a client can connect to the unix socket at `path`.
    private static func canConnect(to path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return result == 0
    }

    private static func findExecutable(_ name: String) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") + ["/usr/bin"] {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return URL(fileURLWithPath: candidate) }
        }
        return nil
    }
}
