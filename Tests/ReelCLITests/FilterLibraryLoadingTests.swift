import Foundation
import Testing
import ReelTestSupport

/// libavfilter is loaded when a filter is first made, not when reel starts (issue 32): linked,
/// it and the 29 libraries only it pulls in were loaded and relocated in every process, 10.7 MiB
/// of resident memory in a recording that filters nothing. Read from a `reel` of its own, not
/// from the test process, which other tests' filters have loaded it into.
@Suite struct FilterLibraryLoadingTests {
    /// What a `reel` run left: its exit status and error output, each reading of its `/proc/PID/maps` taken while it
    /// ran (the files mapped), and the dynamic loader's own list of the files it loaded
    /// (`LD_DEBUG=files`), which covers the whole run, its last moments too.
    struct Watched {
        var status: Int32
        var stderr: String
        var readings: [Set<String>]
        var loaderLog: String

        /// Whether a reading found a file named `prefix…` mapped.
        func mapped(_ prefix: String) -> Bool { readings.contains { $0.contains { $0.hasPrefix(prefix) } } }
        /// Whether the loader loaded a file named `prefix…`.
        func loaded(_ prefix: String) -> Bool { loaderLog.contains("file=\(prefix)") }
    }

    /// Runs `reel` with `arguments`, reading its maps every few milliseconds until it ends (at
    /// most a minute).
    func watch(_ arguments: [String], environment: [String: String] = [:], in dir: TemporaryDirectory) throws -> Watched {
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = arguments
        let log = dir.url.appendingPathComponent("loader")
        process.environment = ProcessInfo.processInfo.environment
            .merging(environment.merging(["LD_DEBUG": "files", "LD_DEBUG_OUTPUT": log.path]) { own, _ in own }) { _, new in new }
        let errURL = dir.url.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let err = try FileHandle(forWritingTo: errURL)
        let out = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        var readings: [Set<String>] = []
        let deadline = Date(timeIntervalSinceNow: 60)
        while process.isRunning && Date() < deadline {
            // A reading of a process that has just ended is empty, and not counted.
            let files = MappedFiles.of("/proc/\(process.processIdentifier)/maps")
            if !files.isEmpty { readings.append(Set(files.map { ($0 as NSString).lastPathComponent })) }
            usleep(5_000)
        }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        try err.close()
        // reel prints a line or two: the pipe holds them until it ends.
        _ = out.fileHandleForReading.readDataToEndOfFile()
        // LD_DEBUG_OUTPUT names its file after the process: loader.PID.
        let logs = try FileManager.default.contentsOfDirectory(atPath: dir.url.path).filter { $0.hasPrefix("loader.") }
        let loaderLog = try logs.map { try String(contentsOf: dir.url.appendingPathComponent($0), encoding: .utf8) }.joined()
        let stderr = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
        return Watched(status: process.terminationStatus, stderr: stderr, readings: readings, loaderLog: loaderLog)
    }

    @Test func aRecordingWithoutAFilterNeverLoadsLibavfilter() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("plain.mp4")
        let run = try watch(["record", "--test-pattern", "--size", "640x360", "--duration", "1", "--faster-than-real-time", "-o", url.path], in: dir)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try MediaProbe.probe(url).videoStreams.count == 1)
        // The readings saw the recording's libraries (so they were taken while it ran), and
        // the loader's list is the one that names every library: it holds libavcodec.
        let (readings, codecs) = (run.readings.count, run.mapped("libavcodec.so.") && run.mapped("libx264.so."))
        #expect(readings >= 5 && codecs, "\(readings) readings")
        let codecLoaded = run.loaded("libavcodec.so.")
        #expect(codecLoaded, "\(run.loaderLog.prefix(2000))")
        let (mapped, loaded) = (run.mapped("libavfilter.so."), run.loaded("libavfilter.so."))
        #expect(!mapped && !loaded, "\(run.loaderLog.split(separator: "\n").filter { $0.contains("avfilter") }.prefix(5))")
        // Nor the libraries only libavfilter pulls in (flite's voices, libplacebo).
        let (flite, placebo) = (run.mapped("libflite"), run.mapped("libplacebo"))
        #expect(!flite && !placebo)
    }

    @Test func aRecordingWithAFilterLoadsItAndFiltersThePicture() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("grey.mp4")
        let run = try watch(["record", "--test-pattern", "--size", "320x240", "--duration", "1", "--faster-than-real-time", "--filter", "hue=s=0", "-o", url.path], in: dir)
        #expect(run.status == 0, "\(run.stderr)")
        let mapped = run.mapped("libavfilter.so.8")
        #expect(mapped)
        let byDlopen = run.loaderLog.contains("file=libavfilter.so.8 [0];  dynamically loaded by")
        #expect(byDlopen, "loaded by dlopen, not at start: \(run.loaderLog.split(separator: "\n").filter { $0.contains("avfilter") }.prefix(5))")
        // The test pattern's colours, with the saturation taken out: every picture grey.
        let frames = try MediaProbe.decodeRGB(url, width: 320, height: 240)
        #expect(frames.count >= 25)
        for rgb in frames {
            for (x, y) in [(40, 60), (160, 120), (280, 180)] {
                let c = RGBColor.average(of: rgb, width: 320, x: x, y: y, radius: 3)
                #expect(abs(Int(c.red) - Int(c.green)) < 12 && abs(Int(c.green) - Int(c.blue)) < 12, "grey: \(c)")
            }
        }
    }

    /// A libavfilter that cannot be used (here a file of that name that is another library:
    /// the loader finds it first on LD_LIBRARY_PATH) is an error of the filter, said as one,
    /// and nothing is recorded; a recording without a filter does not need it.
    @Test func anUnusableLibavfilterIsAFilterErrorNotACrash() throws {
        let dir = try TemporaryDirectory()
        let libs = dir.url.appendingPathComponent("libs")
        try FileManager.default.createDirectory(at: libs, withIntermediateDirectories: true)
        let avutil = try #require(MappedFiles.loaded("libavutil.so."))
        try FileManager.default.createSymbolicLink(atPath: libs.appendingPathComponent("libavfilter.so.8").path, withDestinationPath: avutil)
        let environment = ["LD_LIBRARY_PATH": libs.path]
        let filtered = dir.url.appendingPathComponent("filtered.mp4")
        for filter in ["hue=s=0", "mono"] {
            let run = try watch(["record", "--test-pattern", "--size", "320x240", "--duration", "1", "--faster-than-real-time", "--filter", filter, "-o", filtered.path],
                                environment: environment, in: dir)
            #expect(run.status != 0 && run.status < 128, "an error, not a crash: \(run.status)")
            #expect(run.stderr.contains("cannot use libavfilter, which filters and GIFs need: libavfilter.so.8 has no function avfilter_graph_alloc"),
                    "\(filter): \(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: filtered.path))
        }
        // A GIF is made at the stop: refused at the start, not recorded to the end first.
        let gif = dir.url.appendingPathComponent("anim.gif")
        let refused = try watch(["record", "--test-pattern", "--size", "320x240", "--duration", "1", "--faster-than-real-time", "-o", gif.path],
                                environment: environment, in: dir)
        #expect(refused.status != 0 && refused.status < 128, "\(refused.status)")
        #expect(refused.stderr.contains("cannot use libavfilter"), "\(refused.stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.url.path).filter { $0.contains("anim") }
        #expect(left.isEmpty, "nothing recorded for a GIF that cannot be made: \(left)")
        let plain = dir.url.appendingPathComponent("plain.mp4")
        let run = try watch(["record", "--test-pattern", "--size", "320x240", "--duration", "1", "--faster-than-real-time", "-o", plain.path], environment: environment, in: dir)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(FileManager.default.fileExists(atPath: plain.path))
    }
}

/// The files a process maps, from its `maps` file (read to its end: `/proc` gives no size, and
/// `String(contentsOfFile:)` read only its first part).
private enum MappedFiles {
    static func of(_ maps: String) -> [String] {
        guard let handle = FileHandle(forReadingAtPath: maps) else { return [] }
        defer { try? handle.close() }
        let text = String(decoding: (try? handle.readToEnd()) ?? Data(), as: UTF8.self)
        return text.split(separator: "\n").compactMap { line in line.firstIndex(of: "/").map { String(line[$0...]) } }
    }

    /// The file of a library this test process has loaded whose name starts with `prefix`.
    static func loaded(_ prefix: String) -> String? {
        of("/proc/self/maps").first { ($0 as NSString).lastPathComponent.hasPrefix(prefix) }
    }
}
