import Foundation
import ReelCore
import ReelSystem
import Synchronization

// The processes a PulseServer runs: tones fed on a thread, and children spawned without Foundation.

/// A tone being played or fed into a ``PulseServer`` on a background thread.
public final class ToneFeed: Sendable {
    private let worker: WorkerThread

    init(body: @escaping @Sendable (WorkerThread) -> Void) {
        self.worker = WorkerThread(name: "reel.test.tone", body: body)
    }

    /// Whether the tone has ended.
    public var isFinished: Bool { worker.isFinished }

    /// Waits until the tone has played out.
    public func wait() { worker.join() }

    /// Ends the tone now and waits for its thread. Safe to call twice.
    public func stop() {
        worker.requestStop()
        worker.join()
    }
}

/// A child process started with `posix_spawn` (Foundation's `Process` loses track of children
/// that close their inherited descriptors, as `pulseaudio` does), reaped by its owner.
final class SpawnedProcess: Sendable {
    let pid: pid_t
    /// Whether the process has been reaped; never wait for a pid twice.
    private let exited = Mutex(false)

    /// Starts `path` with `arguments` in its own process group, with default signal handling and
    /// mask, stdin from `stdin` (or /dev/null) and stdout and stderr to `output` (or /dev/null).
    init(_ path: String, _ arguments: [String], environment: [String: String],
         stdin: Int32 = -1, output: Int32 = -1) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if stdin >= 0 {
            posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        if output >= 0 {
            posix_spawn_file_actions_adddup2(&actions, output, 1)
            posix_spawn_file_actions_adddup2(&actions, output, 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Threads of this process block signals (Dispatch's do); the child must not inherit that,
        // nor the ignored SIGPIPE.
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw ReelError(.sourceUnavailable, "cannot start \(path)", errno: result)
        }
        self.pid = pid
    }

    deinit {
        stop(timeout: 0)
    }

    /// Whether the process is still running (reaps it if it has ended).
    var isRunning: Bool {
        exited.withLock { exited in
            if exited { return false }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { exited = true }
            return !exited
        }
    }

    /// Waits up to `timeout` seconds for the process to end by itself, then kills its process
    /// group, and reaps it.
    func stop(timeout: Double) {
        let deadline = Date().addingTimeInterval(timeout)
        while isRunning && Date() < deadline { usleep(5_000) }
        exited.withLock { exited in
            guard !exited else { return }
            kill(-pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            exited = true
        }
    }
}
