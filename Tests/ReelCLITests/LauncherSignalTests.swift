import Foundation
import Testing
import Reel
import ReelTestSupport

/// Installed, `reel` is the launcher scripts/launcher/reel.c (built by scripts/build-launcher,
/// shipped by scripts/build-release, scripts/install and scripts/package): it blocks the stop
/// signals and execs the real reel from lib/reel/reel. A signal sent while the real reel's
/// libraries load (20 ms and more before its `main`, during which every stop signal used to end
/// reel without a word) waits until reel answers it.
@Suite(.serialized, .tags(.realTime)) struct LauncherSignalTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// An installed layout in `dir`: bin/reel the launcher, lib/reel/reel this build's reel.
    static func install(in dir: URL) throws -> URL {
        let bin = dir.appendingPathComponent("bin"), lib = dir.appendingPathComponent("lib/reel")
        for folder in [bin, lib] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        try FileManager.default.createSymbolicLink(at: lib.appendingPathComponent("reel"), withDestinationURL: ReelBinary.url)
        let launcher = bin.appendingPathComponent("reel")
        let built = try Subprocess.run([Self.root.appendingPathComponent("scripts/build-launcher").path, launcher.path])
        try #require(built.status == 0, "\(built.stderr)")
        return launcher
    }

    /// Each signal reel answers, sent 0.5 to 30 ms after the launcher blocked the stop signals
    /// (its first statement; a signal before that does what it does by default, as for any
    /// program that has not run yet, and a loaded machine can take a millisecond to get there):
    /// none ends reel by its default action. A stop stops (a finalised file, or none and a message when
    /// it came before the recording started), USR2 is ignored with a note, USR1 is ignored with
    /// a note or pauses.
    @Test func aSignalWhileReelLoadsIsAnswered() throws {
        let dir = try TemporaryDirectory()
        let launcher = try Self.install(in: dir.url)
        let version = try Subprocess.run([launcher.path, "--version"])
        #expect(version.status == 0 && version.output.hasPrefix("reel "), "\(version.output)\(version.stderr)")
        for signo in [SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGINT, SIGQUIT] {
            for delay in [0.5, 1, 2, 4, 8, 15, 30] {
                let label = "\(ProcessSignalsName.of(signo)) after \(delay) ms"
                let url = dir.url.appendingPathComponent("s\(signo)-\(delay).mp4")
                let stderr = dir.url.appendingPathComponent("s\(signo)-\(delay).err")
                // Started as a shell starts it: signals unblocked, at their default action.
                let process = try ShellSpawnedProcess(launcher, arguments: ["record", "--test-pattern", "--size", "160x120", "--preset", "ultrafast",
                                                                            "--duration", "1", "-o", url.path], stderr: stderr)
                try #require(Self.waitUntilBlocking(signo, pid: process.pid), "\(label): the launcher never blocked the signal")
                usleep(useconds_t(delay * 1000))
                process.send(signo)
                // A USR1 that paused before the first frame holds the recording: stop it then.
                let stopAt = Date().addingTimeInterval(2)
                while process.isRunning && Date() < stopAt { usleep(10_000) }
                if process.isRunning { process.send(SIGINT) }
                let end = process.finish(within: 30)
                let said = (try? String(contentsOf: stderr, encoding: .utf8)) ?? ""
                #expect(!end.hung, "\(label): reel did not end")
                #expect(end.signal == nil, "\(label): ended by signal \(end.signal ?? 0)")
                let status = end.status ?? -1
                #expect(status == 0 || (status == 1 && said.contains("stopped before")), "\(label): exit \(status): \(said)")
                if status == 0 { #expect(!Recovery.isCutOff(url), "\(label): not finalised") }
                if signo == SIGUSR2 { #expect(said.contains("SIGUSR2 ignored"), "\(label): \(said)") }
            }
        }
    }

    /// Started in the background by a script (a non-interactive shell starts a background
    /// command with SIGINT and SIGQUIT ignored; reel answers them all the same), a SIGINT sent
    /// while reel loads stops it: the launcher left ignored signals unblocked, so one sent then
    /// was dropped and the recording went on (4 of 6 runs).
    @Test func anInterruptTheParentIgnoredIsAnsweredToo() throws {
        let dir = try TemporaryDirectory()
        let launcher = try Self.install(in: dir.url)
        for delay in [0.3, 1, 3] {
            let label = "SIGINT after \(delay) ms"
            let url = dir.url.appendingPathComponent("i-\(delay).mp4")
            let stderr = dir.url.appendingPathComponent("i-\(delay).err")
            let process = try ShellSpawnedProcess(URL(fileURLWithPath: "/bin/sh"), arguments: [
                "-c", "trap '' INT QUIT; exec \"$0\" \"$@\"", launcher.path,
                "record", "--test-pattern", "--size", "160x120", "--preset", "ultrafast", "--duration", "6", "-o", url.path,
            ], stderr: stderr)
            // Timed from the launcher's first statement (which blocks SIGTERM, and SIGINT with it),
            // not from reel's own blocking once it is loaded.
            try #require(Self.waitUntilBlocking(SIGTERM, pid: process.pid), "\(label): the launcher never blocked the stop signals")
            usleep(useconds_t(delay * 1000))
            process.send(SIGINT)
            let end = process.finish(within: 30)
            let said = (try? String(contentsOf: stderr, encoding: .utf8)) ?? ""
            #expect(!end.hung && end.signal == nil, "\(label): \(said)")
            let stoppedBefore = end.status == 1 && said.contains("stopped before")
            let stoppedEarly = end.status == 0 && ((try? MediaProbe.probe(url).duration) ?? 6) < 5
            #expect(stoppedBefore || stoppedEarly, "\(label): the interrupt was not answered (exit \(end.status ?? -1)): \(said)")
        }
    }

    /// Waits (at most 5 s) until process `pid` blocks `signo`, as the launcher's first statement
    /// does and reel keeps it until its handlers are in place; true when it does.
    static func waitUntilBlocking(_ signo: Int32, pid: pid_t) -> Bool {
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return false }
            if let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigBlk:") }),
               let mask = UInt64(line.dropFirst("SigBlk:".count).trimmingCharacters(in: .whitespaces), radix: 16),
               mask & (1 << UInt64(signo - 1)) != 0 { return true }
            usleep(50)
        }
        return false
    }

    /// Without the real reel beside it, the launcher says what is missing.
    @Test func aLauncherWithoutReelSaysSo() throws {
        let dir = try TemporaryDirectory()
        let launcher = dir.url.appendingPathComponent("reel")
        let built = try Subprocess.run([Self.root.appendingPathComponent("scripts/build-launcher").path, launcher.path])
        try #require(built.status == 0, "\(built.stderr)")
        let r = try Subprocess.run([launcher.path, "--version"])
        #expect(r.status == 127)
        #expect(r.stderr.contains("cannot start reel from \(dir.url.path)/../lib/reel/reel") && r.stderr.contains("install reel again"), "\(r.stderr)")
    }
}

/// A signal's name for a test's messages.
enum ProcessSignalsName {
    static func of(_ signo: Int32) -> String { String(cString: strsignal(signo)) }
}
