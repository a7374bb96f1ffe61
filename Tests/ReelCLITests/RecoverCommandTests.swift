import Foundation
import Testing
import Reel
import ReelTestSupport

/// `reel recover` as a new user meets it: recordings in progress, outputs that are the input,
/// full and read-only disks, files given twice, links, MKV, a recover killed half way.
@Suite(.serialized, .tags(.realTime)) struct RecoverCommandTests {
    /// A recording left as a crash leaves it: `reel record` killed with SIGKILL after about
    /// two seconds, its complete fragments (or clusters) on disk.
    static func cutOff(_ url: URL) async throws {
        let events = FileManager.default.temporaryDirectory.appendingPathComponent("reel-events-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: events) }
        let process = try await startRecording(url, events: events, seconds: 2.2)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(Recovery.isCutOff(url))
    }

    /// Starts `reel record` of the test pattern (and, unless `sound` is false, the tone) into
    /// `url` in real time; returns once it has recorded `seconds`.
    static func startRecording(_ url: URL, events: URL, seconds: Double, sound: Bool = true, size: String = "320x240",
                               options: [String] = []) async throws -> Process {
        _ = FileManager.default.createFile(atPath: events.path, contents: nil)
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--test-pattern"] + (sound ? ["--tone"] : []) + ["--size", size, "--preset", "ultrafast", "--json"] + options + ["-o", url.path]
        process.standardOutput = try FileHandle(forWritingTo: events)
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let text = try? String(contentsOf: events, encoding: .utf8), text.contains("\"started\"") { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        try await Task.sleep(for: .seconds(seconds))
        return process
    }

    static func decodeErrors(_ url: URL) throws -> String {
        let r = try Subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", url.path, "-f", "null", "-"])
        return r.status == 0 ? r.stderr : "exit \(r.status): \(r.stderr)"
    }

    static func frameCounters(_ url: URL) throws -> [Int64?] {
        try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter)
    }

    /// Hidden files in `folder` (temporary files left behind).
    /// The number of a process that has ended (a hidden copy's maker that is gone).
    static func numberOfAnEndedProcess() throws -> Int32 {
        let ended = Process()
        ended.executableURL = URL(fileURLWithPath: "/bin/true")
        try ended.run()
        ended.waitUntilExit()
        return ended.processIdentifier
    }

    /// A recording cut off by a kill (see ``cutOff(_:)``), under the hidden name `name` in
    /// `folder`, as an interrupted command leaves one.
    static func cutOff(hiddenAs name: String, in folder: URL) async throws -> URL {
        let cut = folder.appendingPathComponent("cut-\(UUID().uuidString).mp4")
        try await cutOff(cut)
        let hidden = folder.appendingPathComponent(name)
        try FileManager.default.moveItem(at: cut, to: hidden)
        return hidden
    }

    static func hiddenFiles(_ folder: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix(".") }.sorted()
    }

    // MARK: Recordings in progress

    /// While one `reel record` runs, another in the same folder does not call its file cut off,
    /// and `reel recover` refuses it, naming the recorder; the recording goes on unharmed.
    @Test func aRecordingInProgressIsNeitherOfferedNorRecovered() async throws {
        let dir = try TemporaryDirectory()
        let live = dir.url.appendingPathComponent("a.mp4")
        let eventsFile = dir.url.appendingPathComponent("events.jsonl")
        let process = try await Self.startRecording(live, events: eventsFile, seconds: 2.5)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        #expect(Recovery.isCutOff(live), "fragments are on disk")

        let next = try ReelBinary.run(["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "--duration", "0.5",
                                       "-o", dir.url.appendingPathComponent("b.mp4").path])
        #expect(next.status == 0, "\(next.stderr)")
        #expect(!next.stderr.contains("a.mp4"), "\(next.stderr)")

        for extra in [[], ["-o", dir.url.appendingPathComponent("copy.mp4").path]] {
            let recover = try ReelBinary.run(["recover", live.path] + extra)
            #expect(recover.status == 1)
            #expect(recover.stderr.contains("is being recorded right now"), "\(recover.stderr)")
            #expect(recover.stderr.contains("pid \(process.processIdentifier)"), "\(recover.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("copy.mp4").path))

        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(!Recovery.isCutOff(live))
        #expect(try Self.decodeErrors(live) == "")
        let counters = try Self.frameCounters(live).compactMap { $0 }
        #expect(counters.count >= 60, "\(counters.count) frames")
        // Every frame captured, as `finished` reports (a loaded machine may drop one: reported).
        let finished = (try String(contentsOf: eventsFile, encoding: .utf8)).split(separator: "\n")
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }.last { $0["event"] as? String == "finished" }
        EveryFrame.expect(counters, finished: finished)
    }

    // MARK: What recover is given

    @Test func theOutputIsNeverTheRecordingItself() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("cut.mp4")
        try await Self.cutOff(url)
        let before = try Data(contentsOf: url)
        let link = dir.url.appendingPathComponent("link.mp4")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: url)
        for output in [url.path, link.path, dir.url.path, "\(dir.url.path)/./cut.mp4"] {
            let r = try ReelBinary.run(["recover", url.path, "-o", output, "--overwrite"])
            #expect(r.status == 1, "-o \(output)")
            #expect(r.stderr.contains("is the recording cut.mp4 itself"), "-o \(output): \(r.stderr)")
            #expect(try Data(contentsOf: url) == before, "-o \(output)")
        }
        // Without --overwrite the advice does not lead into it either.
        let r = try ReelBinary.run(["recover", url.path, "-o", url.path])
        #expect(r.status == 1 && !r.stderr.contains("--overwrite"), "\(r.stderr)")
        #expect(try Data(contentsOf: url) == before)
    }

    @Test func completeFilesFilesGivenTwiceAndFolders() async throws {
        let dir = try TemporaryDirectory()
        let done = dir.url.appendingPathComponent("done.mp4")
        let recorded = try ReelBinary.run(["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast",
                                           "--faster-than-real-time", "--duration", "1", "-o", done.path])
        #expect(recorded.status == 0)
        let finished = try Data(contentsOf: done)
        let complete = try ReelBinary.run(["recover", done.path])
        #expect(complete.status == 0, "\(complete.stderr)")
        #expect(complete.stderr.contains("\(done.path) is complete; nothing to do"), "\(complete.stderr)")
        #expect(try Data(contentsOf: done) == finished)
        // With -o the file named is not made, and that is said (s46 #6: exit 0, nothing there, not a word).
        let other = dir.url.appendingPathComponent("other.mp4")
        let elsewhere = try ReelBinary.run(["recover", done.path, "-o", other.path])
        #expect(elsewhere.status == 0, "\(elsewhere.stderr)")
        #expect(elsewhere.stderr.contains("\(done.path) is complete; nothing to do; \(other.path) was not written: use the recording where it is"),
                "\(elsewhere.stderr)")
        #expect(!FileManager.default.fileExists(atPath: other.path))

        // The same file under three names is recovered once; recovering it again has nothing to do.
        let cut = dir.url.appendingPathComponent("cut.mp4")
        try await Self.cutOff(cut)
        let twice = try ReelBinary.run(["recover", cut.path, cut.path, "\(dir.url.path)/./cut.mp4"])
        #expect(twice.status == 0, "\(twice.stderr)")
        #expect(twice.output.components(separatedBy: "Recovered").count == 2, "\(twice.output)")
        #expect(try Self.decodeErrors(cut) == "")
        let again = try ReelBinary.run(["recover", cut.path])
        #expect(again.status == 0 && again.stderr.contains("is complete; nothing to do"), "\(again.stderr)")

        // A folder takes any number of recordings, under their own names.
        let x = dir.url.appendingPathComponent("x.mp4"), y = dir.url.appendingPathComponent("y.mkv")
        try await Self.cutOff(x)
        try await Self.cutOff(y)
        let folder = dir.url.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let both = try ReelBinary.run(["recover", x.path, y.path, "-o", folder.path])
        #expect(both.status == 0, "\(both.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["x.mp4", "y.mkv"])
        for name in ["x.mp4", "y.mkv"] { #expect(try Self.decodeErrors(folder.appendingPathComponent(name)) == "", "\(name)") }
        let notFolder = try ReelBinary.run(["recover", x.path, y.path, "-o", dir.url.appendingPathComponent("one.mp4").path])
        #expect(notFolder.status == 2, "\(notFolder.stderr)")

        // The extension of -o is the container.
        let mkv = dir.url.appendingPathComponent("x.mkv")
        let remuxed = try ReelBinary.run(["recover", x.path, "-o", mkv.path])
        #expect(remuxed.status == 0, "\(remuxed.stderr)")
        #expect(try MediaProbe.probe(mkv).formatName.contains("matroska"))
        #expect(try Self.decodeErrors(mkv) == "")
    }

    /// Two recordings of one name in different folders, recovered into one folder with
    /// --overwrite: the first replaces the file that was there before, the second does not
    /// replace the first's recovery (it is refused and left as it was).
    @Test func twoRecordingsOfOneNameIntoOneFolder() async throws {
        let dir = try TemporaryDirectory()
        let a = dir.url.appendingPathComponent("a/x.mp4"), b = dir.url.appendingPathComponent("b/x.mp4")
        let out = dir.url.appendingPathComponent("out")
        for folder in [a.deletingLastPathComponent(), b.deletingLastPathComponent(), out] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        try await Self.cutOff(a)
        try await Self.cutOff(b)
        try Data("an older file".utf8).write(to: out.appendingPathComponent("x.mp4"))
        let bBefore = try Data(contentsOf: b)
        let r = try ReelBinary.run(["recover", a.path, b.path, "-o", out.path, "--overwrite"])
        #expect(r.status == 1, "\(r.output)\(r.stderr)")
        #expect(r.output.components(separatedBy: "Recovered").count == 2, "\(r.output)")
        #expect(r.stderr.contains("\(b.path) would be recovered into") && r.stderr.contains("holds \(a.path) recovered just now"), "\(r.stderr)")
        // out/x.mp4 is a's recording (a recovered elsewhere the same way holds the same packets).
        let check = dir.url.appendingPathComponent("check.mp4")
        #expect(try ReelBinary.run(["recover", a.path, "-o", check.path]).status == 0)
        #expect(try MediaProbe.packetDigest(out.appendingPathComponent("x.mp4")) == MediaProbe.packetDigest(check))
        #expect(try Data(contentsOf: b) == bBefore)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path) == ["x.mp4"])
    }

    /// `kill -9` during `--hls DIR --hls-window 0` leaves an event playlist without its end,
    /// on which players wait for ever. While the stream runs, recover leaves its folder alone;
    /// once it is killed, `reel recover DIR` closes the playlist, and the stream plays to its
    /// end: every frame of the segments, in order.
    @Test func aKilledHLSEventIsClosed() async throws {
        let dir = try TemporaryDirectory()
        let hls = dir.url.appendingPathComponent("live")
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "--hls", hls.path,
                             "--hls-window", "0", "-o", dir.url.appendingPathComponent("file.mp4").path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let playlist = hls.appendingPathComponent("index.m3u8")
        // Until it lists two segments.
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, ((try? String(contentsOf: playlist, encoding: .utf8)) ?? "").components(separatedBy: "#EXTINF").count < 3 {
            try await Task.sleep(for: .milliseconds(50))
        }
        let busy = try ReelBinary.run(["recover", hls.path])
        #expect(busy.status == 1 && busy.stderr.contains("right now"), "\(busy.stderr)")
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let cut = try String(contentsOf: playlist, encoding: .utf8)
        #expect(cut.contains("#EXT-X-PLAYLIST-TYPE:EVENT") && !cut.contains("#EXT-X-ENDLIST"), "\(cut)")

        let r = try ReelBinary.run(["recover", hls.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.output.contains("Closed \(playlist.path)") && r.output.contains("marked as ended"), "\(r.output)")
        #expect(try String(contentsOf: playlist, encoding: .utf8).hasSuffix("#EXT-X-ENDLIST\n"))
        // Through the playlist, bounded: a playlist without its end would make ffmpeg wait.
        let decoded = try Subprocess.run(["timeout", "60", "ffmpeg", "-nostdin", "-v", "error", "-i", playlist.path,
                                          "-f", "null", "-"])
        #expect(decoded.status == 0, "\(decoded.stderr)")
        let frames = try MediaProbe.decodeLuma(playlist, width: 320, height: 240).map(\.counter)
        #expect(frames.count >= 60 && frames.allSatisfy { $0 != nil }, "\(frames.count)")
        // In order, without a gap but a frame or two a loaded machine may drop (killed: no
        // summary reports them).
        EveryFrame.expect(frames.compactMap { $0 }, frames: frames.count, dropped: 2)
        // Given the playlist itself: closed already.
        let again = try ReelBinary.run(["recover", playlist.path])
        #expect(again.status == 0 && again.stderr.contains("has its end already"), "\(again.stderr)")
    }

    /// Given a link, the file it points to is finalised and the link stays a link.
    @Test func aLinkToARecording() async throws {
        let dir = try TemporaryDirectory()
        let folder = dir.url.appendingPathComponent("real")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let real = folder.appendingPathComponent("cut.mp4")
        try await Self.cutOff(real)
        let frames = try Self.frameCounters(real)
        let link = dir.url.appendingPathComponent("link.mp4")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
        let r = try ReelBinary.run(["recover", link.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link.path)) == real.path, "still a link")
        #expect(!Recovery.isCutOff(real))
        #expect(try Self.frameCounters(real) == frames)
        #expect(try Self.hiddenFiles(folder).isEmpty && Self.hiddenFiles(dir.url).isEmpty)
    }

    @Test func anUnreadableRecordingIsRefusedClearly() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("cut.mp4")
        try await Self.cutOff(url)
        // As an ordinary user (the tests run as root, who reads everything).
        chmod(dir.url.path, 0o755)
        chmod(url.path, 0o600)
        let r = try Subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", ReelBinary.url.path, "recover", url.path])
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("cannot read \(url.path)") && r.stderr.contains("permission"), "\(r.stderr)")
        #expect(Recovery.isCutOff(url))
    }

    /// A stop killed as it finalised can leave the recording and the unfinished copy the
    /// finalise was making (`.NAME.finalising-PID-N.mp4`): a recovery removes that copy when
    /// its maker is gone (the recording it just found or made complete does not need it; s46
    /// #4: it was only named, 62 MB left), and names one whose maker still runs, whether the
    /// recording needed finalising or was complete already; `--json` lists them in
    /// `recovered` (`removedLeftovers`, `leftovers`).
    @Test func anUnfinishedCopyBesideTheRecordingIsRemovedWhenItsMakerIsGone() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("k.mp4")
        try await Self.cutOff(url)
        let ended = try Self.numberOfAnEndedProcess()
        let goneCopy = { (n: Int) in dir.url.appendingPathComponent(".k.finalising-\(ended)-ab1\(n).mp4") }
        let liveCopy = dir.url.appendingPathComponent(".k.finalising-\(getpid())-cd34.mp4")
        for copy in [goneCopy(1), liveCopy] { try Data(try Data(contentsOf: url).prefix(50_000)).write(to: copy) }
        let first = try ReelBinary.run(["recover", url.path])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains("removed \(goneCopy(1).path), an unfinished copy left by an interrupted finalise whose process is gone"),
                "\(first.stderr)")
        #expect(first.stderr.contains("\(liveCopy.path) is an unfinished copy"), "\(first.stderr)")
        #expect(!FileManager.default.fileExists(atPath: goneCopy(1).path) && FileManager.default.fileExists(atPath: liveCopy.path))
        // Now complete: said all the same.
        try Data(try Data(contentsOf: url).prefix(50_000)).write(to: goneCopy(2))
        let again = try ReelBinary.run(["recover", url.path])
        #expect(again.status == 0 && again.stderr.contains("is complete; nothing to do"), "\(again.stderr)")
        #expect(again.stderr.contains("removed \(goneCopy(2).path)"), "\(again.stderr)")
        #expect(again.stderr.contains("\(liveCopy.path) is an unfinished copy left by an interrupted finalise"), "\(again.stderr)")
        try Data(try Data(contentsOf: url).prefix(50_000)).write(to: goneCopy(3))
        let json = try ReelBinary.run(["recover", "--json", url.path])
        let recovered = json.output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .first { $0["event"] as? String == "recovered" } ?? [:]
        #expect(recovered["leftovers"] as? [String] == [liveCopy.path], "\(json.output)")
        #expect(recovered["removedLeftovers"] as? [String] == [goneCopy(3).path], "\(json.output)")
        #expect(FileManager.default.fileExists(atPath: liveCopy.path), "a live maker's copy is never deleted")
        #expect(!Recovery.isCutOff(url))
    }

    /// A `reel recover -o OUT` killed while it measured its copy leaves that measure beside the
    /// copy's hidden name (`..OUT.recovering-PID-N.measuring-PID-M.mp4`, as large as the copy):
    /// the next recovery into OUT removes it when its maker is gone, and says so. It was neither
    /// removed nor named (a black-box tester: 150 MB left hidden after three recoveries).
    @Test func aMeasureLeftByAKilledRecoveryIsRemovedByTheNext() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("k.mp4")
        let out = dir.url.appendingPathComponent("out.mp4")
        try await Self.cutOff(url)
        let ended = try Self.numberOfAnEndedProcess()
        let measure = dir.url.appendingPathComponent("..out.recovering-\(ended)-ab12.measuring-\(ended)-cd34.mp4")
        try Data(try Data(contentsOf: url).prefix(50_000)).write(to: measure)
        let r = try ReelBinary.run(["recover", url.path, "-o", out.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("removed \(measure.path)"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: measure.path))
        #expect(try MediaProbe.probe(out).videoStreams.first?.frameCount ?? 0 > 0)
    }

    /// A second `reel recover` of a file that another is recovering in place is refused, and
    /// says so: the file is being recovered. It said "being recorded right now by another
    /// program (reel, pid N)", naming the other recovery as a recording (a black-box tester).
    @Test func aRecoveryRefusedBecauseOfAnotherSaysItIsBeingRecovered() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("twice.mp4")
        try await Self.cutOff(url)
        let (strace, reel, _) = try AbortWaitingForAStepTests.heldInAnFsync(["-e", "trace=fsync", "-e", "inject=fsync:delay_enter=8000000:when=1"],
                                                                            reel: ["recover", url.path], errors: dir.url.appendingPathComponent("first.err"))
        defer { kill(reel, SIGKILL); kill(strace.processIdentifier, SIGKILL); strace.waitUntilExit() }
        let second = try ReelBinary.run(["recover", url.path])
        #expect(second.status != 0)
        #expect(second.stderr.contains("\(url.path) is being recovered right now by another program (reel, pid \(reel))"), "\(second.stderr)")
        #expect(!second.stderr.contains("recorded"), "\(second.stderr)")
    }

    /// A recording with `--overwrite` killed before it took the name leaves the old file as
    /// it was and its own under a hidden name (`.NAME.new-PID-N.mp4`): `reel recover NAME`
    /// points it out and how to give it a name (s47 #1: "complete; nothing to do" beside 15
    /// frames nobody was told of); it is never removed.
    @Test func aCutOffRecordingUnderAHiddenNameIsPointedOut() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("p.mp4")
        let done = try ReelBinary.run(["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast",
                                       "--faster-than-real-time", "--duration", "1", "-o", url.path])
        #expect(done.status == 0, "\(done.stderr)")
        let ended = try Self.numberOfAnEndedProcess()
        let hidden = try await Self.cutOff(hiddenAs: ".p.new-\(ended)-77.mp4", in: dir.url)
        let r = try ReelBinary.run(["recover", url.path])
        #expect(r.status == 0 && r.stderr.contains("is complete; nothing to do"), "\(r.stderr)")
        let named = dir.url.appendingPathComponent("p-recovered.mp4")
        #expect(r.stderr.contains("\(hidden.path) holds a recording cut off before it could replace p.mp4 (recorded with --overwrite); "
                                  + "recover it under a name of its own with: reel recover \"\(hidden.path)\" -o \"\(named.path)\""), "\(r.stderr)")
        let json = try ReelBinary.run(["recover", "--json", url.path])
        #expect(json.output.contains("\"hiddenRecordings\":[\"\(hidden.path.replacingOccurrences(of: "/", with: "\\/"))\"]"), "\(json.output)")
        let again = try ReelBinary.run(["recover", hidden.path, "-o", named.path])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try MediaProbe.probe(named).duration > 1.5)
        #expect(FileManager.default.fileExists(atPath: hidden.path), "never removed")
    }

    /// A hidden copy given as the recording to recover is never tidied away as a leftover of
    /// the output it is recovered into (the reviewer of stop 47).
    @Test func aHiddenCopyGivenAsInputIsNeverTidiedAway() async throws {
        let dir = try TemporaryDirectory()
        let ended = try Self.numberOfAnEndedProcess()
        let hidden = try await Self.cutOff(hiddenAs: ".x.recovering-\(ended)-4.mp4", in: dir.url)
        let before = try Data(contentsOf: hidden)
        let r = try ReelBinary.run(["recover", hidden.path, "-o", dir.url.appendingPathComponent("x.mp4").path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try Data(contentsOf: hidden) == before, "the input as it was")
        #expect(!Recovery.isCutOff(dir.url.appendingPathComponent("x.mp4")))
    }

    // MARK: Disks

    /// A recording killed, its last fragment torn (as a full disk tears it), on a full disk:
    /// recover keeps the complete fragments and nothing half-written, on the full disk too. (A
    /// disk that fills under `reel record` has the recording finalise its file in place itself:
    /// CrashTests.aFullDiskEndsWithAClearErrorAndAPlayableFile.)
    @Test func aTornRecordingOnAFullDiskIsRecovered() async throws {
        let mountPoint = try SmallDisk(size: "20M")
        let url = mountPoint.url.appendingPathComponent("full.mp4")
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast", "--min-free", "0", "-o", url.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try await Task.sleep(for: .seconds(3))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        // The last fragment torn, and the disk full.
        let size = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int)
        let handle = try FileHandle(forWritingTo: url)
        try handle.truncate(atOffset: UInt64(size - 3000))
        try handle.close()
        _ = try Subprocess.run(["sh", "-c", "cat /dev/zero > '\(mountPoint.url.appendingPathComponent("filler").path)'"])
        try #require(Recovery.isCutOff(url))

        // Recovered to another disk: a copy of the complete fragments, the original untouched.
        let full = try Data(contentsOf: url)
        let elsewhere = try TemporaryDirectory()
        let copy = try ReelBinary.run(["recover", url.path, "-o", elsewhere.url.path])
        #expect(copy.status == 0, "\(copy.stderr)")
        #expect(copy.output.contains("the last fragment was cut short") || copy.output.contains("a fragment cut short before anything"),
                "\(copy.output)")
        #expect(try Data(contentsOf: url) == full)
        let recovered = elsewhere.url.appendingPathComponent("full.mp4")
        #expect(try Self.decodeErrors(recovered) == "")
        let counters = try MediaProbe.decodeLuma(recovered, width: 320, height: 240).map(\.counter)
        #expect(!counters.isEmpty && counters.allSatisfy { $0 != nil }, "every frame readable")
        EveryFrame.expect(counters.compactMap { $0 }, frames: counters.count, dropped: 2, "killed: a frame or two may be dropped unreported")
        // Every frame whose bytes are all on the disk, those of the fragment the full disk tore
        // too (as ffmpeg -c copy keeps them); a frame cut short is not (it would not decode).
        let whole = try MediaProbe.videoPacketsEndingBeforeTheEnd(url)
        #expect(counters.count == whole || counters.count == whole + 1, "\(counters.count) frames recovered, \(whole) whole on the disk")

        // In place while the disk is still full: no room for a copy, so the fragment cut short
        // is cut off and the file finalised where it is (before, this needed as much free space
        // as the recording). The same frames as the copy.
        let inPlace = try ReelBinary.run(["recover", url.path])
        #expect(inPlace.status == 0, "\(inPlace.stderr)")
        #expect(inPlace.output.contains("finalised in place") && inPlace.output.contains("left out"), "\(inPlace.output)")
        #expect(try Self.decodeErrors(url) == "")
        #expect(try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter) == counters)
        #expect(try Self.hiddenFiles(mountPoint.url).isEmpty)
    }

    /// An MKV killed, its last cluster torn, on a full disk: recovered in place there, with no
    /// room for the copy a recovery makes of an MKV, it is ended where it is (its size and
    /// duration written, the torn end cut off, no cues) and plays to its end. It failed: "no
    /// space left to recover" (`-o` on another disk worked).
    @Test func aTornMKVOnAFullDiskIsRecoveredInPlace() async throws {
        let mountPoint = try SmallDisk(size: "20M")
        let url = mountPoint.url.appendingPathComponent("full.mkv")
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast", "--min-free", "0", "-o", url.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try await Task.sleep(for: .seconds(3))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let size = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int)
        let handle = try FileHandle(forWritingTo: url)
        try handle.truncate(atOffset: UInt64(size - 3000))
        try handle.close()
        _ = try Subprocess.run(["sh", "-c", "cat /dev/zero > '\(mountPoint.url.appendingPathComponent("filler").path)'"])
        try #require(Recovery.isCutOff(url))
        let r = try ReelBinary.run(["recover", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(Recovery.isFinished(url), "\(r.output)")
        #expect(try Self.decodeErrors(url) == "")
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).compactMap(\.counter)
        #expect(counters.count >= 30, "\(counters.count) frames")
        EveryFrame.expect(counters, frames: counters.count, dropped: 2, "killed: a frame or two may be dropped unreported")
        // The duration written is where its pictures end.
        #expect(abs(try MediaProbe.probe(url).duration - Double(counters.count) / 30) < 0.1, "\(counters.count) frames")
        #expect(try Self.hiddenFiles(mountPoint.url).isEmpty)
    }

    @Test func aReadOnlyFolder() async throws {
        let mountPoint = try SmallDisk(size: "512M")
        let url = mountPoint.url.appendingPathComponent("cut.mp4")
        try await Self.cutOff(url)
        let before = try Data(contentsOf: url)
        let readOnly = try Subprocess.run(["mount", "-o", "remount,ro", mountPoint.url.path])
        try #require(readOnly.status == 0, "\(readOnly.stderr)")
        let r = try ReelBinary.run(["recover", url.path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("Read-only file system") && r.stderr.contains("-o FOLDER"), "\(r.stderr)")
        #expect(try Data(contentsOf: url) == before)
        let elsewhere = try TemporaryDirectory()
        let copy = try ReelBinary.run(["recover", url.path, "-o", elsewhere.url.path])
        #expect(copy.status == 0, "\(copy.stderr)")
        #expect(try Self.decodeErrors(elsewhere.url.appendingPathComponent("cut.mp4")) == "")
    }

    /// On a file system without locks (some network and FUSE file systems answer flock with
    /// ENOLCK) recording and recovering work as before; only the sign of a recording in
    /// progress is missing.
    @Test func aFileSystemWithoutLocks() async throws {
        let dir = try TemporaryDirectory()
        let noLocks = ["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=flock", "-e", "inject=flock:error=ENOLCK", ReelBinary.url.path]
        let url = dir.url.appendingPathComponent("done.mp4")
        let recorded = try Subprocess.run(noLocks + ["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast",
                                                     "--faster-than-real-time", "--duration", "1", "-o", url.path])
        #expect(recorded.status == 0, "\(recorded.stderr)")
        #expect(try Self.decodeErrors(url) == "")
        let cut = dir.url.appendingPathComponent("cut.mp4")
        try await Self.cutOff(cut)
        let recovered = try Subprocess.run(noLocks + ["recover", cut.path])
        #expect(recovered.status == 0, "\(recovered.stderr)")
        #expect(!Recovery.isCutOff(cut))
    }

    // MARK: A recover cut off itself

    /// A recover killed just before its finished copy takes the recording's place leaves the
    /// recording as it was; the copy it leaves behind stands in nobody's way and is pointed
    /// out. Being a finished recording it is not removed (a copy left in the window of a swap
    /// by rename can be the only one); an unfinished one of a maker that is gone is (see
    /// ``anUnfinishedCopyBesideTheRecordingIsRemovedWhenItsMakerIsGone()``).
    @Test func aRecoverKilledHalfWayHarmsNothing() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("cut.mp4")
        try await Self.cutOff(url)
        let before = try Data(contentsOf: url)
        let killed = try Subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=rename,renameat,renameat2",
                                         "-e", "inject=rename,renameat,renameat2:signal=SIGKILL", ReelBinary.url.path, "recover", url.path])
        #expect(killed.status == SIGKILL, "\(killed.stderr)")
        #expect(try Data(contentsOf: url) == before, "the recording is as it was")
        let left = try Self.hiddenFiles(dir.url)
        #expect(left.count == 1, "\(left)")

        let r = try ReelBinary.run(["recover", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try Self.decodeErrors(url) == "")
        #expect(try Self.hiddenFiles(dir.url) == left, "the finished copy left behind is not removed")
        #expect(r.stderr.contains("\(dir.url.path)/\(left[0]) is an unfinished copy left by an interrupted finalise"), "and it is pointed out: \(r.stderr)")
    }

    // MARK: MKV

    /// An MKV cut off by a kill (a Segment of unknown size, no duration, no cues) is noticed by
    /// the next recording and recovered into a complete MKV.
    @Test func aKilledMKVIsRecovered() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("killed.mkv")
        let process = try await Self.startRecording(url, events: dir.url.appendingPathComponent("events.jsonl"), seconds: 4)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let frames = try Self.frameCounters(url)
        try #require(!frames.isEmpty)
        #expect(Recovery.isCutOff(url))
        let next = try ReelBinary.run(["record", "--test-pattern", "--size", "320x240", "--duration", "0.5",
                                       "-o", dir.url.appendingPathComponent("next.mkv").path])
        #expect(next.stderr.contains("reel recover \"\(url.path)\""), "\(next.stderr)")

        let r = try ReelBinary.run(["recover", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!Recovery.isCutOff(url))
        #expect(try Self.decodeErrors(url) == "")
        #expect(try Self.frameCounters(url) == frames)
        let probe = try MediaProbe.probe(url)
        // A frame a loaded machine dropped keeps its slot of time in the file.
        let slots = frames.count + EveryFrame.missing(in: frames.compactMap { $0 })
        #expect(abs(probe.duration - Double(slots) / 30) < 0.1, "a duration of \(probe.duration) for \(slots) slots")
    }

    /// An HLS folder whose playlist a full disk left empty (issue 26, F2), or that lost it, while
    /// its segments are there: `reel recover DIR` rebuilds the playlist from the whole segments,
    /// leaves out (and says) a torn last one, ends it, and says what it did; the stream plays
    /// every frame it played before. It said the stream had recorded nothing, and removed the
    /// empty playlist.
    @Test func anHLSFolderWithoutItsPlaylistIsRebuiltFromItsSegments() throws {
        let dir = try TemporaryDirectory()
        let hls = dir.url.appendingPathComponent("live")
        let made = try ReelBinary.run(["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "--duration", "6",
                                       "--faster-than-real-time", "--hls", hls.path, "--hls-window", "0",
                                       "-o", dir.url.appendingPathComponent("file.mp4").path])
        try #require(made.status == 0, "\(made.stderr)")
        let playlist = hls.appendingPathComponent("index.m3u8")
        let frames = try MediaProbe.decodeLuma(playlist, width: 320, height: 240).map(\.counter)
        try #require(frames.count == 180)
        let segments = try FileManager.default.contentsOfDirectory(atPath: hls.path).filter { $0.hasSuffix(".ts") }.sorted()
        // The segment the full disk cut off: its first 4096 bytes.
        let torn = hls.appendingPathComponent(String(format: "index-%05d.ts", segments.count))
        try Data(try Data(contentsOf: hls.appendingPathComponent(segments[0])).prefix(4096)).write(to: torn)
        // Given the folder, or the playlist by its name (s43: a missing one was "No such file").
        for (lost, given) in [("emptied", hls), ("missing", hls), ("missing", playlist)] {
            if lost == "emptied" { try Data().write(to: playlist) } else { try? FileManager.default.removeItem(at: playlist) }
            let r = try ReelBinary.run(["recover", given.path])
            #expect(r.status == 0, "\(lost): \(r.stderr)")
            #expect(r.output.contains("Rebuilt \(playlist.path) from \(segments.count) whole segments"), "\(lost): \(r.output)")
            #expect(r.output.contains("left out: \(torn.lastPathComponent) (cut short)"), "\(lost): \(r.output)")
            #expect(try String(contentsOf: playlist, encoding: .utf8).hasSuffix("#EXT-X-ENDLIST\n"))
            #expect(try MediaProbe.decodeLuma(playlist, width: 320, height: 240).map(\.counter) == frames, "\(lost)")
            #expect(try Data(contentsOf: torn).count == 4096, "the torn segment is left as it is")
        }
    }
}
