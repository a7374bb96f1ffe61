import Foundation
import Testing
import Reel
import ReelTestSupport

/// `reel merge` and `reel recover` given files that are cut short, damaged, crafted to lie, or
/// not media files at all: each run ends within a bounded time with exit code 1 (never a signal)
/// and one line on stderr that names the file, and never changes or deletes what it was given.
@Suite(.serialized, .tags(.realTime)) struct HostileInputTests {
    /// What a damaged file may lead to.
    enum Expectation {
        /// Refused with exit code 1.
        case refused
        /// Damage a copy cannot notice (flipped bits in the media data, a file cut mid-fragment
        /// for `recover`): exit code 0 and a file ffprobe reads, or exit code 1.
        case readsOrRefused
        /// A file laid out as a complete one, damaged where only decoding would tell, given to
        /// `recover`: exit code 0 with the one note that there is nothing to do (nothing
        /// written), or exit code 1.
        case completeOrRefused
    }

    struct Variant {
        var name: String
        var bytes: [UInt8]
        var merge: Expectation
        var recover: Expectation
    }

    /// The result of one bounded run of `reel`.
    struct Run {
        var status: Int32
        var signalled: Bool
        var timedOut: Bool
        var stderr: String
        var seconds: Double
    }

    /// Runs `reel` with `arguments`, killing it after `limit` seconds.
    static func reel(_ arguments: [String], prefix: [String] = [], limit: Double = 30) throws -> Run {
        let process = Process()
        let command = prefix + [ReelBinary.url.path] + arguments
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        let errURL = FileManager.default.temporaryDirectory.appendingPathComponent("reel-hostile-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errURL) }
        let errHandle = try FileHandle(forWritingTo: errURL)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errHandle
        process.standardInput = FileHandle.nullDevice
        let started = Date()
        try process.run()
        var timedOut = false
        while process.isRunning {
            if Date().timeIntervalSince(started) > limit {
                timedOut = true
                kill(process.processIdentifier, SIGKILL)
                break
            }
            usleep(10_000)
        }
        process.waitUntilExit()
        try errHandle.close()
        return Run(status: process.terminationStatus, signalled: process.terminationReason == .uncaughtSignal,
                   timedOut: timedOut, stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "",
                   seconds: Date().timeIntervalSince(started))
    }

    /// Checks a run that must be refused: exit 1, one line naming `name` (or `alias`: "clip 1").
    static func expectRefused(_ run: Run, _ what: String, naming name: String, or alias: String? = nil) {
        #expect(!run.timedOut, "\(what): still running after \(run.seconds) s")
        #expect(!run.signalled, "\(what): killed by signal \(run.status)")
        #expect(run.status == 1, "\(what): exit \(run.status): \(run.stderr)")
        let lines = run.stderr.split(separator: "\n", omittingEmptySubsequences: true)
        #expect(lines.count == 1, "\(what): \(lines.count) lines on stderr: \(run.stderr)")
        #expect(run.stderr.hasPrefix("reel: error: "), "\(what): \(run.stderr)")
        #expect(run.stderr.contains(name) || alias.map { run.stderr.contains($0) } == true,
                "\(what): does not name \(name): \(run.stderr)")
    }

    /// Checks a run of `recover` that may find the file complete (a note, nothing written) or
    /// refuse it.
    static func expectCompleteOrRefused(_ run: Run, _ what: String, naming name: String, output: URL?) {
        guard run.status == 0 && !run.signalled && !run.timedOut else { return expectRefused(run, what, naming: name) }
        #expect(run.stderr.hasPrefix("reel: note: ") && run.stderr.contains("\(name) is complete; nothing to do")
                && run.stderr.split(separator: "\n").count == 1, "\(what): \(run.stderr)")
        if let output { #expect(!FileManager.default.fileExists(atPath: output.path), "\(what): wrote \(output.lastPathComponent)") }
    }

    /// Checks a run that may read the file or refuse it; a written `output` must be readable.
    static func expectReadsOrRefused(_ run: Run, _ what: String, naming name: String, or alias: String? = nil, output: URL) throws {
        if run.status == 0 && !run.signalled && !run.timedOut {
            #expect(run.stderr.isEmpty, "\(what): \(run.stderr)")
            let probe = try MediaProbe.probe(output)
            #expect(!probe.videoStreams.isEmpty || !probe.audioStreams.isEmpty, "\(what): the output holds no streams")
        } else {
            expectRefused(run, what, naming: name, or: alias)
        }
    }

    // MARK: Making damaged files

    /// The top-level boxes of an MP4: (type, offset, size).
    static func boxes(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) -> [(type: String, offset: Int, size: Int)] {
        var result: [(String, Int, Int)] = []
        var offset = start
        let end = end ?? bytes.count
        while offset + 8 <= end {
            var size = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            if size == 1 { size = bytes[offset + 8..<offset + 16].reduce(0) { $0 << 8 | Int($1) } }
            if size == 0 { size = end - offset }
            guard size >= 8 else { break }
            result.append((type, offset, size))
            offset += size
        }
        return result
    }

    /// Where the four bytes `type` first occur after `start` (a box's type field), or nil.
    static func find(_ type: String, in bytes: [UInt8], after start: Int = 0) -> Int? {
        let pattern = Array(type.utf8)
        guard bytes.count >= pattern.count else { return nil }
        for i in max(start, 4)...(bytes.count - pattern.count) where Array(bytes[i..<i + pattern.count]) == pattern {
            return i - 4  // the box starts at its size field
        }
        return nil
    }

    static func putUInt32(_ value: UInt32, at offset: Int, in bytes: inout [UInt8]) {
        for k in 0..<4 { bytes[offset + k] = UInt8(truncatingIfNeeded: value >> (24 - 8 * k)) }
    }

    static func flip(_ bytes: [UInt8], count: Int, in range: Range<Int>, seed: UInt64) -> [UInt8] {
        var copy = bytes
        var random = SeededRandom(seed: seed)
        for _ in 0..<count {
            let i = Int.random(in: range, using: &random)
            copy[i] ^= UInt8.random(in: 1...255, using: &random)
        }
        return copy
    }

    /// Damaged versions of `bytes`, an MP4 whose top-level boxes are `ftyp`, `moov`, then media
    /// data (`mdat`, or `moof`+`mdat` pairs when fragmented).
    static func variants(of bytes: [UInt8], fragmented: Bool) -> [Variant] {
        let top = boxes(bytes)
        let moov = top.first { $0.type == "moov" }!
        let firstData = top.first { $0.type == "mdat" || $0.type == "moof" }!
        let mdat = top.first { $0.type == "mdat" }!
        // Cut short anywhere, a clip is refused by merge. Recover refuses a file cut before its
        // first fragment begins (no fragments: nothing to recover) and otherwise keeps what it can.
        func cut(_ name: String, _ length: Int) -> Variant {
            Variant(name: "cut-\(name)", bytes: Array(bytes.prefix(length)), merge: .refused,
                    recover: fragmented && length >= firstData.offset + 8 ? .readsOrRefused : .refused)
        }
        var list: [Variant] = [
            cut("in-ftyp", 12),
            cut("after-ftyp", top[0].size),
            cut("moov-header", moov.offset + 8),
            cut("mid-moov", moov.offset + moov.size / 2),
            cut("late-moov", moov.offset + moov.size - 3),
            cut("after-moov", moov.offset + moov.size),
            cut("mid-first-data", firstData.offset + firstData.size / 2),
            cut("mid-mdat", mdat.offset + mdat.size / 3),
            cut("mid-file", bytes.count / 2),
        ]
        // The last byte: media data, unless the file ends in a `free` box (a file finalised in
        // place keeps its old fragment headers as free space), whose loss harms nothing.
        var lastByte = cut("last-byte", bytes.count - 1)
        if top.last?.type == "free" { lastByte.merge = .readsOrRefused }
        list.append(lastByte)
        // Random bytes flipped in the index are noticed (refused) or happen to be harmless;
        // in the media data they are carried along by a copy, which cannot tell.
        for seed in 1...4 as ClosedRange<UInt64> {
            list.append(Variant(name: "flipped-index-\(seed)", bytes: flip(bytes, count: 8, in: (moov.offset + 8)..<(moov.offset + moov.size), seed: seed),
                                merge: .readsOrRefused, recover: .readsOrRefused))
            list.append(Variant(name: "flipped-data-\(seed)", bytes: flip(bytes, count: 32, in: (mdat.offset + 8)..<(mdat.offset + mdat.size), seed: seed),
                                merge: .readsOrRefused, recover: .readsOrRefused))
        }
        // Box sizes that lie. Some lies are harmless: a size of 0 means "to the end of the file",
        // a box may not reach past its parent (libavformat cuts it there), the media data's own
        // size is not needed when the index (or a fragment's run) says where each sample is.
        // Those may be read; the rest must be refused. A file with fragments may be recovered.
        func crafted(_ name: String, merge: Expectation = .refused, recover: Expectation? = nil, _ change: (inout [UInt8]) -> Void) {
            var copy = bytes
            change(&copy)
            list.append(Variant(name: "crafted-\(name)", bytes: copy, merge: merge,
                                recover: recover ?? (fragmented ? .readsOrRefused : .refused)))
        }
        crafted("moov-size-0", merge: .readsOrRefused) { putUInt32(0, at: moov.offset, in: &$0) }
        crafted("moov-size-4G", merge: .readsOrRefused) { putUInt32(.max, at: moov.offset, in: &$0) }
        crafted("moov-size-2^64") { copy in
            // A 64-bit size of 2^64-1: size 1, then the large size in the next eight bytes.
            putUInt32(1, at: moov.offset, in: &copy)
            copy.replaceSubrange((moov.offset + 8)..<(moov.offset + 16), with: [UInt8](repeating: 0xFF, count: 8))
        }
        crafted("ftyp-size-2^64") { copy in
            putUInt32(1, at: 0, in: &copy)
            copy.replaceSubrange(8..<16, with: [UInt8](repeating: 0xFF, count: 8))
        }
        crafted("trak-past-end", merge: .refused) { copy in
            if let trak = find("trak", in: copy, after: moov.offset) { putUInt32(UInt32(copy.count), at: trak, in: &copy) }
        }
        crafted("mdhd-past-end") { copy in
            if let box = find("mdhd", in: copy, after: moov.offset) { putUInt32(0x7FFF_FFFF, at: box, in: &copy) }
        }
        crafted("mdat-claims-more", merge: .readsOrRefused) { putUInt32(0xFFFF_FFF0, at: mdat.offset, in: &$0) }
        crafted("mdat-size-2^64", merge: .readsOrRefused) { copy in
            putUInt32(1, at: mdat.offset, in: &copy)
            copy.replaceSubrange((mdat.offset + 8)..<(mdat.offset + 16), with: [UInt8](repeating: 0xFF, count: 8))
        }
        // A huge sample count: in the sample size table of a regular file, in the first
        // fragment's run of a fragmented one.
        crafted("huge-sample-count") { copy in
            let table = fragmented ? find("trun", in: copy, after: moov.offset + moov.size) : find("stsz", in: copy, after: moov.offset)
            guard let table else { return }
            // trun: size, type, version+flags, sample_count. stsz: size, type, version+flags, sample_size, sample_count.
            putUInt32(0xFFFF_FFF0, at: table + (fragmented ? 12 : 16), in: &copy)
        }
        crafted("huge-chunk-count") { copy in
            if let table = find("stco", in: copy, after: moov.offset) { putUInt32(0x3FFF_FFFF, at: table + 12, in: &copy) }
        }
        crafted("zero-size-every-box") { copy in
            for box in top { putUInt32(0, at: box.offset, in: &copy) }
        }
        return list
    }

    /// A clip as the recorder writes it when stopped cleanly (finalised) and one as it leaves
    /// it when killed (fragmented).
    static func makeRecordings(in dir: URL) throws -> (finalised: URL, cutOff: URL) {
        let finalised = dir.appendingPathComponent("good.mp4")
        let done = try ReelBinary.run(["record", "--test-pattern", "--tone", "--size", "160x120", "--preset", "ultrafast",
                                       "--duration", "1.5", "-o", finalised.path])
        #expect(done.status == 0, "\(done.stderr)")
        let cutOff = dir.appendingPathComponent("cut.mp4")
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--test-pattern", "--tone", "--size", "160x120", "--preset", "ultrafast", "-o", cutOff.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Long enough for a few fragments (one a second).
        Thread.sleep(forTimeInterval: 3.5)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(Recovery.isCutOff(cutOff))
        return (finalised, cutOff)
    }

    /// Every file in `dir` with its contents.
    static func snapshot(_ dir: URL) throws -> [String: Data] {
        var result: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) {
            let url = dir.appendingPathComponent(name)
            // Only regular files are read (reading a FIFO would wait for a writer).
            var info = stat()
            let regular = lstat(url.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
            result[name] = regular ? try Data(contentsOf: url) : Data()
        }
        return result
    }

    // MARK: The tests

    @Test func damagedClipsAreRefusedByMerge() throws {
        let dir = try TemporaryDirectory(prefix: "reel-hostile-merge")
        let (good, cutOff) = try Self.makeRecordings(in: dir.url)
        let inputs = dir.url.appendingPathComponent("inputs")
        try FileManager.default.createDirectory(at: inputs, withIntermediateDirectories: true)
        let variants = Self.variants(of: Array(try Data(contentsOf: good)), fragmented: false)
            + Self.variants(of: Array(try Data(contentsOf: cutOff)), fragmented: true).map {
                var v = $0
                v.name = "frag-" + v.name
                return v
            }
        for variant in variants {
            let url = inputs.appendingPathComponent("\(variant.name).mp4")
            try Data(variant.bytes).write(to: url)
        }
        let before = try Self.snapshot(inputs)
        for variant in variants {
            let clip = inputs.appendingPathComponent("\(variant.name).mp4")
            let out = dir.url.appendingPathComponent("out-\(variant.name).mp4")
            // The damaged clip first and second: probing and copying both meet it.
            for (position, order) in [(1, [clip.path, good.path]), (2, [good.path, clip.path])] {
                let run = try Self.reel(["merge"] + order + ["-o", out.path])
                let what = "merge \(order.map { URL(fileURLWithPath: $0).lastPathComponent })"
                switch variant.merge {
                case .refused:
                    Self.expectRefused(run, what, naming: clip.lastPathComponent, or: "clip \(position)")
                    #expect(!FileManager.default.fileExists(atPath: out.path), "\(what): left \(out.lastPathComponent)")
                case .readsOrRefused:
                    try Self.expectReadsOrRefused(run, what, naming: clip.lastPathComponent, or: "clip \(position)", output: out)
                case .completeOrRefused:
                    Issue.record("\(what): not an expectation for merge")
                }
                try? FileManager.default.removeItem(at: out)
            }
        }
        #expect(try Self.snapshot(inputs) == before, "the clips were changed")
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.url.path).filter { $0.hasPrefix(".") || $0.hasPrefix("out") }
        #expect(left.isEmpty, "left behind: \(left)")
    }

    @Test func damagedRecordingsAreRefusedOrRecoveredByRecover() throws {
        let dir = try TemporaryDirectory(prefix: "reel-hostile-recover")
        let (good, cutOff) = try Self.makeRecordings(in: dir.url)
        let inputs = dir.url.appendingPathComponent("inputs")
        try FileManager.default.createDirectory(at: inputs, withIntermediateDirectories: true)
        var variants = Self.variants(of: Array(try Data(contentsOf: cutOff)), fragmented: true)
        // A finalised file is no cut-off recording, damaged or not: complete as far as its
        // layout tells (nothing to do), or refused.
        variants += Self.variants(of: Array(try Data(contentsOf: good)), fragmented: false).map {
            Variant(name: "final-" + $0.name, bytes: $0.bytes, merge: $0.merge, recover: .completeOrRefused)
        }
        for variant in variants {
            try Data(variant.bytes).write(to: inputs.appendingPathComponent("\(variant.name).mp4"))
        }
        let before = try Self.snapshot(inputs)
        for variant in variants {
            let file = inputs.appendingPathComponent("\(variant.name).mp4")
            let out = dir.url.appendingPathComponent("out-\(variant.name).mp4")
            let run = try Self.reel(["recover", file.path, "-o", out.path])
            switch variant.recover {
            case .refused:
                Self.expectRefused(run, "recover \(variant.name)", naming: file.lastPathComponent)
                #expect(!FileManager.default.fileExists(atPath: out.path))
            case .readsOrRefused:
                try Self.expectReadsOrRefused(run, "recover \(variant.name)", naming: file.lastPathComponent, output: out)
            case .completeOrRefused:
                Self.expectCompleteOrRefused(run, "recover \(variant.name)", naming: file.lastPathComponent, output: out)
            }
            try? FileManager.default.removeItem(at: out)
        }
        #expect(try Self.snapshot(inputs) == before, "the recordings were changed")

        // In place, a refused (or complete) file is left exactly as it was, with nothing next to it.
        for variant in variants where variant.recover == .refused || variant.recover == .completeOrRefused {
            let file = inputs.appendingPathComponent("\(variant.name).mp4")
            let run = try Self.reel(["recover", file.path])
            if variant.recover == .refused {
                Self.expectRefused(run, "recover in place \(variant.name)", naming: file.lastPathComponent)
            } else {
                Self.expectCompleteOrRefused(run, "recover in place \(variant.name)", naming: file.lastPathComponent, output: nil)
            }
        }
        #expect(try Self.snapshot(inputs) == before, "a refused recording was changed in place")
    }

    /// Things that are not media files at all, for both commands.
    @Test func notMediaFilesAreRefused() throws {
        let dir = try TemporaryDirectory(prefix: "reel-hostile-kinds")
        let good = dir.url.appendingPathComponent("good.mp4")
        let made = try ReelBinary.run(["record", "--test-pattern", "--size", "160x120", "--preset", "ultrafast",
                                       "--duration", "0.5", "-o", good.path])
        #expect(made.status == 0, "\(made.stderr)")
        let empty = dir.url.appendingPathComponent("empty.mp4")
        _ = FileManager.default.createFile(atPath: empty.path, contents: Data())
        let text = dir.url.appendingPathComponent("notes.mp4")
        try Data("these are not the frames you are looking for\n".utf8).write(to: text)
        let noise = dir.url.appendingPathComponent("noise.mov")
        var random = SeededRandom(seed: 7)
        try Data((0..<65_536).map { _ in UInt8.random(in: 0...255, using: &random) }).write(to: noise)
        let folder = dir.url.appendingPathComponent("folder.mp4")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let fifo = dir.url.appendingPathComponent("pipe.mp4")
        #expect(mkfifo(fifo.path, 0o644) == 0)
        let missing = dir.url.appendingPathComponent("missing.mp4")

        let before = try Self.snapshot(dir.url)
        for file in [empty, text, noise, folder, fifo, missing] {
            let out = dir.url.appendingPathComponent("out.mp4")
            // A FIFO with no writer would block whoever opens it: each run has ten seconds.
            let merged = try Self.reel(["merge", file.path, good.path, "-o", out.path], limit: 10)
            Self.expectRefused(merged, "merge \(file.lastPathComponent)", naming: file.lastPathComponent)
            let recovered = try Self.reel(["recover", file.path, "-o", out.path], limit: 10)
            Self.expectRefused(recovered, "recover \(file.lastPathComponent)", naming: file.lastPathComponent)
            let inPlace = try Self.reel(["recover", file.path], limit: 10)
            Self.expectRefused(inPlace, "recover in place \(file.lastPathComponent)", naming: file.lastPathComponent)
            #expect(!FileManager.default.fileExists(atPath: out.path))
        }
        let after = try Self.snapshot(dir.url)
        #expect(after == before, "files were changed or left behind: \(Set(after.keys).symmetricDifference(before.keys))")
        var info = stat()
        #expect(lstat(fifo.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFIFO, "the FIFO is still there")
    }

    /// A file this user may not read. Root reads every file, so as root the commands run as
    /// `nobody` (through setpriv), for whom the file is unreadable.
    @Test func unreadableFilesAreRefused() throws {
        let dir = try TemporaryDirectory(prefix: "reel-hostile-perm")
        chmod(dir.url.path, 0o777)
        let good = dir.url.appendingPathComponent("good.mp4")
        let made = try ReelBinary.run(["record", "--test-pattern", "--size", "160x120", "--preset", "ultrafast",
                                       "--duration", "0.5", "-o", good.path])
        #expect(made.status == 0, "\(made.stderr)")
        chmod(good.path, 0o644)
        let secret = dir.url.appendingPathComponent("secret.mp4")
        try FileManager.default.copyItem(at: good, to: secret)
        let before = try Data(contentsOf: secret)
        chmod(secret.path, 0o000)
        var prefix: [String] = []
        if geteuid() == 0 {
            let setpriv = try #require(Subprocess.which("setpriv"), "setpriv (util-linux) runs the commands as nobody")
            prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
            // nobody must reach the binary; it does when the checkout is world-readable, as here.
            #expect(access(ReelBinary.url.path, X_OK) == 0)
        }
        let out = dir.url.appendingPathComponent("out.mp4")
        let merged = try Self.reel(["merge", secret.path, good.path, "-o", out.path], prefix: prefix)
        Self.expectRefused(merged, "merge an unreadable clip", naming: secret.lastPathComponent)
        #expect(merged.stderr.contains("Permission denied"), "\(merged.stderr)")
        let recovered = try Self.reel(["recover", secret.path], prefix: prefix)
        Self.expectRefused(recovered, "recover an unreadable file", naming: secret.lastPathComponent)
        #expect(recovered.stderr.contains("Permission denied"), "\(recovered.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.path))
        chmod(secret.path, 0o644)
        #expect(try Data(contentsOf: secret) == before)
    }
}
