import Foundation
import ReelCore
import Synchronization

/// The guard process of a recording: started with a pipe on its standard input whose write end
/// only this process holds (close-on-exec), so the pipe closes when this process ends, however
/// it ends.
final class RoutingGuard: @unchecked Sendable {
    let processID: Int32
    private let writeEnd = Mutex<Int32>(-1)

    init(command: [String], stateFile: URL) throws(ReelError) {
        guard let program = command.first else {
            throw ReelError(.invalidConfiguration, "the application-audio guard command is empty")
        }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw ReelError(.ioFailure, "cannot make a pipe for the application-audio guard", errno: errno)
        }
        // Neither end may leak into other programs this process starts (Glibc's Swift overlay
        // has no pipe2).
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the copy: the guard keeps the read end as stdin.
        posix_spawn_file_actions_adddup2(&actions, ends[0], 0)
        let arguments = command + [stateFile.path]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        // In a session of its own from the start: the terminal's Ctrl-C, meant for the
        // recorder, never reaches the guard (glibc's POSIX_SPAWN_SETSID, 0x80 in spawn.h, is
        // not imported into Swift).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(0x80))
        var pid: pid_t = 0
        let status = posix_spawn(&pid, program, &actions, &attributes, &argv, environ)
        close(ends[0])
        guard status == 0 else {
            close(ends[1])
            throw ReelError(.ioFailure, "cannot start the application-audio guard '\(program)'", errno: status)
        }
        processID = pid
        writeEnd.withLock { $0 = ends[1] }
    }

    /// Closes the pipe (the guard finds the state file gone and ends) and reaps the guard.
    func release() {
        let fd = writeEnd.withLock { fd in defer { fd = -1 }; return fd }
        guard fd >= 0 else { return }
        close(fd)
        var status: Int32 = 0
        for _ in 0..<200 {
            let reaped = waitpid(processID, &status, WNOHANG)
            if reaped != 0 { return }
            usleep(10_000)
        }
    }

    deinit { release() }
}
