import Foundation

/// A process started as a shell starts a command: every signal unblocked and at its default
/// action. Foundation's `Process` hands the child the signal mask of the thread that starts
/// it, and a test runner's threads block signals, which would hide what a signal does to a
/// program that has not caught it yet (in its first milliseconds, say).
public final class ShellSpawnedProcess {
    /// The process's ID.
    public let pid: pid_t
    private var ended: (status: Int32?, signal: Int32?)?

    /// Starts `executable` with `arguments`; standard input and output are /dev/null, standard
    /// error goes to `stderr` (else /dev/null).
    public init(_ executable: URL, arguments: [String], stderr: URL? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, stderr?.path ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([executable.path] + arguments).map { strdup($0) }
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable.path, &actions, &attributes, argv + [nil], environ)
        guard result == 0 else {
            throw NSError(domain: "ShellSpawn", code: Int(result),
                          userInfo: [NSLocalizedDescriptionKey: "cannot start \(executable.path): \(String(cString: strerror(result)))"])
        }
        self.pid = pid
    }

    /// Sends `signo`.
    public func send(_ signo: Int32) { kill(pid, signo) }

    /// Whether it has not ended yet.
    public var isRunning: Bool { poll(wait: false) == nil }

    /// Waits for the end, at most `seconds` (then kills it): its exit status, or the signal that
    /// ended it.
    public func finish(within seconds: Double) -> (status: Int32?, signal: Int32?, hung: Bool) {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let end = poll(wait: false) { return (end.status, end.signal, false) }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        let end = poll(wait: true)
        return (end?.status, end?.signal, true)
    }

    private func poll(wait: Bool) -> (status: Int32?, signal: Int32?)? {
        if let ended { return ended }
        var status: Int32 = 0
        guard waitpid(pid, &status, wait ? 0 : WNOHANG) == pid else { return nil }
        // WIFEXITED / WIFSIGNALED, spelled out (the macros do not reach Swift).
        let signal = status & 0x7f
        ended = signal == 0 ? ((status >> 8) & 0xff, nil) : (nil, signal)
        return ended
    }
}
