import Foundation
import Testing
import Reel
import ReelTestSupport

/// `reel record` writing to a disk that cannot keep up: an LD_PRELOAD shim (compiled here with
/// the system C compiler) makes every write to the recording's file take as long as it would on
/// a disk of a few KB/s, in the real `reel` binary, while it records in real time. The recorder
/// must keep its memory flat, drop video frames and count them (in the progress events and the
/// summary, matching the frames missing from the file), and keep the audio whole or say that it
/// could not. The file's writer thread has a small queue here (`--write-buffer 64k`): a disk this
/// slow fills any queue, and what is tested is what happens then (a stall shorter than the
/// queue costs nothing: see `FileWriteQueueTests`).
///
/// Only the recording's own file is slowed: the finalising copy at the clean stop (another
/// file) writes at full speed, so that the test takes seconds, not minutes.
@Suite(.serialized, .tags(.realTime)) struct SlowDiskTests {
    static let shimSource = #"""
    #define _GNU_SOURCE
    #include <dlfcn.h>
    #include <errno.h>
    #include <limits.h>
    #include <stdio.h>
    #include <stdlib.h>
    #include <string.h>
    #include <sys/types.h>
    #include <sys/uio.h>
    #include <time.h>
    #include <unistd.h>

    /* Writes to files whose path starts with $REEL_SLOW_PATH sleep as if the disk wrote
       $REEL_SLOW_RATE bytes a second (plus 2 ms a call, 20 ms a sync); everything else (the
       terminal, pipes, other files) is untouched. */
    static const char *dir(void) { return getenv("REEL_SLOW_PATH"); }

    static int slow_fd(int fd) {
        const char *d = dir();
        if (!d || !*d) return 0;
        char link[64], path[PATH_MAX];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, path, sizeof path - 1);
        if (n <= 0) return 0;
        path[n] = 0;
        return strncmp(path, d, strlen(d)) == 0;
    }

    static void pause_for(double seconds) {
        struct timespec t = { (time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9) };
        while (nanosleep(&t, &t) != 0 && errno == EINTR) {}
    }

    static void throttle(int fd, size_t bytes) {
        if (!slow_fd(fd)) return;
        const char *r = getenv("REEL_SLOW_RATE");
        double rate = r ? atof(r) : 200000.0;
        int saved = errno;
        pause_for(0.002 + (double)bytes / rate);
        errno = saved;
    }

    ssize_t write(int fd, const void *buf, size_t count) {
        static ssize_t (*real)(int, const void *, size_t);
        if (!real) real = dlsym(RTLD_NEXT, "write");
        throttle(fd, count);
        return real(fd, buf, count);
    }

    ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
        static ssize_t (*real)(int, const void *, size_t, off_t);
        if (!real) real = dlsym(RTLD_NEXT, "pwrite");
        throttle(fd, count);
        return real(fd, buf, count, offset);
    }

    ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) {
        static ssize_t (*real)(int, const void *, size_t, off_t);
        if (!real) real = dlsym(RTLD_NEXT, "pwrite64");
        throttle(fd, count);
        return real(fd, buf, count, offset);
    }

    ssize_t writev(int fd, const struct iovec *iov, int n) {
        static ssize_t (*real)(int, const struct iovec *, int);
        if (!real) real = dlsym(RTLD_NEXT, "writev");
        size_t total = 0;
        for (int i = 0; i < n; i++) total += iov[i].iov_len;
        throttle(fd, total);
        return real(fd, iov, n);
    }

    int fsync(int fd) {
        static int (*real)(int);
        if (!real) real = dlsym(RTLD_NEXT, "fsync");
        if (slow_fd(fd)) pause_for(0.02);
        return real(fd);
    }

    int fdatasync(int fd) {
        static int (*real)(int);
        if (!real) real = dlsym(RTLD_NEXT, "fdatasync");
        if (slow_fd(fd)) pause_for(0.02);
        return real(fd);
    }
    """#

    /// Compiles the shim into `dir`.
    static func buildShim(in dir: URL) throws -> URL {
        let source = dir.appendingPathComponent("slowdisk.c")
        let library = dir.appendingPathComponent("slowdisk.so")
        try shimSource.write(to: source, atomically: true, encoding: .utf8)
        let cc = try #require(Subprocess.which("gcc") ?? Subprocess.which("cc") ?? Subprocess.which("clang"), "a C compiler (gcc) builds the slow-disk shim")
        let built = try Subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", library.path, source.path, "-ldl"])
        try #require(built.status == 0, "the shim compiles: \(built.stderr)")
        return library
    }

    /// Memory figures of a running process, in KB.
    static func memory(of pid: Int32) -> (rss: Int, peak: Int)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        func field(_ name: String) -> Int? {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return nil }
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        guard let rss = field("VmRSS"), let peak = field("VmHWM") else { return nil }
        return (rss, peak)
    }

    /// What one throttled recording gave.
    struct Recording {
        var url: URL
        var status: Int32
        var exited: Bool
        var timedOut: Bool
        var stderr: String
        var events: [[String: Any]]
        /// (seconds since start, VmRSS KB, VmHWM KB), ten times a second.
        var memory: [(time: Double, rss: Int, peak: Int)]
        var finished: [String: Any]? { events.first { $0["event"] as? String == "finished" } }
        var progress: [[String: Any]] { events.filter { $0["event"] as? String == "progress" } }
    }

    static let size = (width: 640, height: 360)

    /// Records `duration` seconds of the test pattern and tone in real time into a file written
    /// at `rate` bytes a second.
    static func record(seconds duration: Double, rate: Int, in dir: URL) throws -> Recording {
        let shim = try buildShim(in: dir)
        let url = dir.appendingPathComponent("slow.mp4")
        let events = dir.appendingPathComponent("events.jsonl")
        _ = FileManager.default.createFile(atPath: events.path, contents: nil)
        let process = Process()
        process.executableURL = ReelBinary.url
        // The finest quality, so that video outweighs the disk by far.
        process.arguments = ["record", "--test-pattern", "--tone", "--size", "\(size.width)x\(size.height)", "--fps", "30",
                             "--preset", "ultrafast", "--crf", "10", "--duration", String(duration), "--json",
                             // A queue of 64 KB for the file's writer thread (the default 64 MB would take this
                             // disk's whole recording and then minutes to write out at the stop): what is
                             // tested is what happens once the queue is full.
                             "--write-buffer", "64k", "-o", url.path]
        process.environment = ProcessInfo.processInfo.environment.merging([
            "LD_PRELOAD": shim.path, "REEL_SLOW_PATH": url.path, "REEL_SLOW_RATE": String(rate),
        ]) { _, new in new }
        process.standardOutput = try FileHandle(forWritingTo: events)
        let errURL = dir.appendingPathComponent("stderr.txt")
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: errURL)
        let started = Date()
        try process.run()
        var memory: [(time: Double, rss: Int, peak: Int)] = []
        var timedOut = false
        while process.isRunning {
            let t = Date().timeIntervalSince(started)
            if t > duration + 90 {
                timedOut = true
                kill(process.processIdentifier, SIGKILL)
                break
            }
            if let m = Self.memory(of: process.processIdentifier) { memory.append((t, m.rss, m.peak)) }
            usleep(100_000)
        }
        process.waitUntilExit()
        let lines = try String(contentsOf: events, encoding: .utf8).split(separator: "\n")
        return Recording(url: url, status: process.terminationStatus, exited: process.terminationReason == .exit,
                         timedOut: timedOut, stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "",
                         events: lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] },
                         memory: memory)
    }

    /// The 50 ms stretches of the file's audio without the tone (seconds), and its length.
    static func silentStretches(_ url: URL) throws -> (silent: [Double], seconds: Double) {
        let mono = try MediaProbe.decodeAudio(url)
        let window = 48_000 / 20
        var quiet: [Double] = []
        for start in stride(from: 0, to: mono.count - window, by: window)
        where ToneAnalysis.rms(of: Array(mono[start..<start + window])) < 0.005 {
            quiet.append(Double(start) / 48_000)
        }
        return (quiet, Double(mono.count) / 48_000)
    }

    static func expectFlatMemory(_ r: Recording, duration: Double) {
        let early = r.memory.filter { $0.time > 1.5 && $0.time < 3.5 }.map(\.rss).max() ?? 0
        let late = r.memory.filter { $0.time > duration - 2 }.map(\.rss).max() ?? 0
        let peak = r.memory.map(\.peak).max() ?? 0
        print("slow disk: RSS \(early / 1024) MB early, \(late / 1024) MB late, peak \(peak / 1024) MB")
        #expect(r.memory.count > 20, "memory was sampled")
        #expect(peak < 400 * 1024, "peak RSS \(peak / 1024) MB")
        #expect(early > 0 && Double(late) < Double(early) * 1.25 + 10 * 1024, "RSS grew from \(early / 1024) MB to \(late / 1024) MB")
    }

    /// A disk at 15 KB/s: several times too slow for the video, fast enough for the audio.
    @Test func slowWritesDropCountedFramesKeepAudioAndMemoryFlat() throws {
        let dir = try TemporaryDirectory(prefix: "reel-slowdisk")
        let duration = 8.0
        let r = try Self.record(seconds: duration, rate: 15_000, in: dir.url)
        #expect(!r.timedOut, "reel record did not finish within \(duration + 90) s")
        #expect(r.exited && r.status == 0, "exit \(r.status): \(r.stderr)")
        let finished = try #require(r.finished, "a finished event: \(r.stderr)")
        let dropped = (finished["dropped"] as? NSNumber)?.intValue ?? -1
        let frames = (finished["frames"] as? NSNumber)?.intValue ?? -1
        let droppedInProgress = r.progress.compactMap { ($0["dropped"] as? NSNumber)?.intValue }
        print("slow disk: \(frames) frames written, \(dropped) dropped; progress drops \(droppedInProgress)")
        #expect(dropped > 0, "the disk could not keep up, so frames were dropped")
        #expect(droppedInProgress.dropLast().contains { $0 > 0 }, "drops show in the progress events while recording")
        #expect(zip(droppedInProgress, droppedInProgress.dropFirst()).allSatisfy { $0 <= $1 })

        // The file: frames in order; the frame counter's gaps are the drops.
        let decoded = try MediaProbe.decodeLuma(r.url, width: Self.size.width, height: Self.size.height)
        let counters = decoded.compactMap(\.counter)
        #expect(counters.count == decoded.count, "every frame's counter reads")
        #expect(counters.count == frames, "the summary's frames are in the file")
        #expect(zip(counters, counters.dropFirst()).allSatisfy { $1 > $0 }, "frames in order, none twice")
        let first = Int(counters.first ?? 0), last = Int(counters.last ?? 0)
        let expected = Int(duration * 30)
        // Frames count from the source's start; the recording begins a few frames later.
        // Frames count from the source's start; the recording begins a few frames later (on a
        // slow disk up to a second later: the file's header is written before sources start).
        #expect(first <= 40 && last < first + expected, "frames \(first)…\(last) for \(expected) frames")
        let missing = expected - counters.count
        // Every frame missing from the file is reported, and only those.
        #expect(abs(missing - dropped) <= 2, "\(missing) frames missing from the file, \(dropped) reported dropped")

        // The audio: there for the whole duration, no stretch without the tone, beeps a second apart.
        let (silent, seconds) = try Self.silentStretches(r.url)
        #expect(abs(seconds - duration) < 0.1, "audio lasts \(seconds) s of \(duration) s")
        #expect(silent.filter { $0 > 0.1 }.isEmpty, "silent 50 ms stretches at \(silent) s")
        let onsets = MediaProbe.beepOnsets(try MediaProbe.decodeAudio(r.url))
        #expect(onsets.count >= Int(duration) - 1, "beeps at \(onsets)")
        #expect(zip(onsets, onsets.dropFirst()).allSatisfy { abs($1 - $0 - 1) < 0.03 }, "beeps a second apart: \(onsets)")

        Self.expectFlatMemory(r, duration: duration)
    }

    /// A disk at 3 KB/s, too slow even for the audio: audio that cannot be written must not
    /// vanish silently. Either it is all in the file, or the recording says it dropped some.
    @Test func audioThatCannotBeWrittenIsReportedNotSilentlyDropped() throws {
        let dir = try TemporaryDirectory(prefix: "reel-slowdisk-audio")
        let duration = 8.0
        let r = try Self.record(seconds: duration, rate: 3_000, in: dir.url)
        #expect(!r.timedOut, "reel record did not finish within \(duration + 90) s")
        let finished = try #require(r.finished, "a finished event: \(r.stderr)")
        // The disk holds up the frames' buffers, so the picture may stop coming before the
        // duration has passed on the clock (issue 26 item 19): then the recording ends on the
        // clock and says it is incomplete (exit 3), with the shortfall.
        let shortfalls = finished["shortfalls"] as? [[String: Any]] ?? []
        #expect(r.exited && (r.status == 0 || (r.status == 3 && !shortfalls.isEmpty)), "exit \(r.status): \(r.stderr) \(finished)")
        #expect(((finished["dropped"] as? NSNumber)?.intValue ?? 0) > 0)
        let (silent, seconds) = try Self.silentStretches(r.url)
        let gaps = silent.filter { $0 > 0.1 }
        let whole = gaps.isEmpty && seconds >= duration - 0.05
        print("slow disk (3 KB/s): audio \(seconds) s of \(duration) s, \(gaps.count) silent 50 ms stretches from \(gaps.first ?? 0) s; events \(r.events.compactMap { $0["event"] as? String }.uniqued())")
        // Reported: a number of seconds of dropped audio above zero (the key is in every
        // finished event), or an event or message about audio.
        let reported = r.events.contains { ($0["event"] as? String)?.lowercased().contains("audio") == true || (($0["droppedAudio"] as? NSNumber)?.doubleValue ?? 0) > 0 }
            || r.stderr.lowercased().contains("audio")
        #expect(whole || reported, "audio \(seconds) s of \(duration) s, silent from \(gaps.first ?? seconds) s, and nothing said so")
        if !whole, let finished = r.events.last(where: { $0["event"] as? String == "finished" }),
           let droppedAudio = finished["droppedAudio"] as? Double {
            // What was reported is what is silent (to within the 50 ms windows measured).
            let silentSeconds = Double(gaps.count) * 0.05 + max(0, duration - seconds)
            #expect(abs(droppedAudio - silentSeconds) < 0.3, "reported \(droppedAudio) s of audio dropped, \(silentSeconds) s silent")
        }
        Self.expectFlatMemory(r, duration: duration)
    }
}

private extension Array where Element: Hashable {
    func uniqued() -> [Element] {
        var seen = Set<Element>()
        return filter { seen.insert($0).inserted }
    }
}
