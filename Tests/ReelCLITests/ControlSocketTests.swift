import Foundation
import Testing
import Reel
import ReelSystem
import ReelTestSupport

/// `reel record --control` and `reel control` against real recordings: every command through
/// the socket, several clients and one that never reads, garbage, a path that is taken, and
/// `reel control` finding the recording by itself.
@Suite(.serialized, .tags(.realTime)) struct ControlSocketTests {
    /// A `reel record` in the background, its private `XDG_RUNTIME_DIR`, its output in files.
    final class Recording {
        let process = Process()
        let errors: URL
        let runtime: URL

        /// `output`: where standard output goes (`--json`'s events), else nowhere.
        init(_ arguments: [String], in dir: URL, runtime: URL? = nil, output: URL? = nil) throws {
            self.runtime = runtime ?? dir.appendingPathComponent("run-\(UUID().uuidString.prefix(6))")
            try FileManager.default.createDirectory(at: self.runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            errors = dir.appendingPathComponent("stderr-\(UUID().uuidString.prefix(6)).txt")
            _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
            process.executableURL = ReelBinary.url
            process.arguments = ["record", "--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast"] + arguments
            process.environment = ProcessInfo.processInfo.environment.merging(["XDG_RUNTIME_DIR": self.runtime.path]) { $1 }
            if let output { _ = FileManager.default.createFile(atPath: output.path, contents: nil) }
            process.standardOutput = try output.map { try FileHandle(forWritingTo: $0) } ?? FileHandle.nullDevice
            process.standardError = try FileHandle(forWritingTo: errors)
            try process.run()
        }

        var environment: [String: String] { ["XDG_RUNTIME_DIR": runtime.path] }
        var defaultSocket: URL { runtime.appendingPathComponent("reel/\(process.processIdentifier).sock") }

        /// Connects once the socket answers with `state` (the recording has started).
        func connect(_ path: URL? = nil, state: String = "recording") async throws -> ControlClient {
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                if let client = try? ControlClient(path ?? defaultSocket),
                   let status = try? client.request("status").reply, status["state"] as? String == state { return client }
                try await Task.sleep(for: .milliseconds(20))
            }
            throw ReelError(.notRunning, "the control socket did not answer: \((try? String(contentsOf: errors, encoding: .utf8)) ?? "")")
        }

        func end() -> (status: Int32, stderr: String) {
            process.waitUntilExit()
            return (process.terminationStatus, (try? String(contentsOf: errors, encoding: .utf8)) ?? "")
        }
    }

    /// Waits until `status` says `frames` has grown past `count`.
    func waitForFrames(past count: Int, _ client: ControlClient) async throws -> Int {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let frames = try client.request("status").reply["frames"] as? Int ?? 0
            if frames > count { return frames }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ReelError(.busy, "the recording did not go on past \(count) frames")
    }

    @Test func everyCommandThroughTheSocketWithClientsThatMisbehave() async throws {
        let dir = try TemporaryDirectory()
        let file = dir.url.appendingPathComponent("driven.mp4")
        let socket = dir.url.appendingPathComponent("driven.sock")
        let recording = try Recording(["--pause-mode", "clips", "--control=\(socket.path)", "-o", file.path], in: dir.url)
        let client = try await recording.connect(socket)
        var info = stat()
        #expect(lstat(socket.path, &info) == 0 && info.st_mode & 0o777 == 0o600)

        let status = try client.request("status").reply
        #expect(status["ok"] as? Bool == true && status["file"] as? String == file.path)
        // Made elsewhere, found by its process number and alone all the same.
        let byNumber = try ReelBinary.run(["control", "\(recording.process.processIdentifier)", "status"], environment: recording.environment)
        #expect(byNumber.status == 0 && byNumber.output.contains("file      \(file.path)"), "\(byNumber.stderr)")
        #expect(try ReelBinary.run(["control", "status"], environment: recording.environment).status == 0)
        #expect((status["sources"] as? [String])?.count == 2)
        for key in ["elapsed", "bytes", "frames", "dropped", "streams"] { #expect(status[key] != nil, "status has \(key)") }

        // Several clients: one follows the events, one never reads anything it is sent.
        let follower = try ControlClient(socket)
        #expect(try follower.request("subscribe").reply["subscribed"] as? Bool == true)
        let deaf = try ControlClient(socket)
        try deaf.send(#"{"command":"subscribe","id":1}"# + "\n")
        // Garbage from others: random bytes, a 10 MB line, half a request and a hang-up.
        let rude = try ControlClient(socket)
        var random = SeededRandom(seed: 7)
        try rude.send((0..<5000).map { _ in UInt8.random(in: 11...255, using: &random) } + [10])
        #expect(try rude.readObject()?["ok"] as? Bool == false)
        try rude.send([UInt8](repeating: UInt8(ascii: "{"), count: 10_000_000) + [10])
        #expect((try rude.readObject()?["error"] as? String ?? "").contains("longer than"))
        #expect(try rude.request("status").reply["ok"] as? Bool == true, "the connection stays usable")
        let half = try ControlClient(socket)
        try half.send(#"{"command":"paus"#)
        half.close()

        let before = try await waitForFrames(past: 15, client)
        #expect(try client.request("marker", argument: "one").reply["marked"] as? Bool == true)
        // A few pictures before the pause: a marker in the same frame slot as the pause is at the
        // pause's recorded time and joins the markers made in it (by design), which made this
        // test fail once on a quiet machine ("one / p1 / p2").
        _ = try await waitForFrames(past: before + 5, client)
        #expect(try client.request("pause").reply["paused"] as? Bool == true)
        try await Task.sleep(for: .milliseconds(300))
        #expect(try client.request("status").reply["state"] as? String == "paused")
        // Two markers in one pause: one chapter, and the second's event says it joined the first.
        #expect(try client.request("marker", argument: "p1").reply["ok"] as? Bool == true)
        #expect(try client.request("marker", argument: "p2").reply["ok"] as? Bool == true)
        // The frames recorded at the pause (all written by now: a pause ends its clip), then 10
        // more after the resume: the next marker is after it, not at the pause's time.
        let atPause = try client.request("status").reply["frames"] as? Int ?? 0
        #expect(try client.request("resume").reply["paused"] as? Bool == false)
        let resumed = try await waitForFrames(past: atPause + 10, client)
        #expect(try client.request("marker").reply["ok"] as? Bool == true)
        #expect(try client.request("filter", argument: "mono").reply["filter"] as? String == "mono")
        #expect(try client.request("filter", argument: "1:none").reply["filter"] as? String == "none")
        let badFilter = try client.request("filter", argument: "9:mono").reply
        #expect(badFilter["ok"] as? Bool == false)
        #expect(try client.request("swap").reply["ok"] as? Bool == false, "one picture: nothing to swap")
        #expect(try client.request("save-replay").reply["ok"] as? Bool == false, "no --replay")
        _ = try await waitForFrames(past: resumed + 15, client)
        #expect(try client.request("marker", argument: "three").reply["ok"] as? Bool == true)
        // The follower saw progress and the markers as --json prints them.
        var seen: Set<String> = []
        while !seen.contains("marker:three"), let event = try follower.readObject() {
            if let name = event["event"] as? String { seen.insert(name) }
            if event["event"] as? String == "marker" {
                seen.insert("\(event["joined"] as? Bool == true ? "joined" : "marker"):\(event["title"] as? String ?? "")")
            }
        }
        #expect(seen.contains("progress") && seen.contains("paused") && seen.contains("marker:one"))
        #expect(seen.contains("marker:p1") && seen.contains("joined:p1 / p2") && !seen.contains("joined:one"), "\(seen.sorted())")
        #expect(try client.request("stop").reply["stopping"] as? Bool == true)
        let end = recording.end()
        #expect(end.status == 0, "\(end.stderr)")
        #expect(!FileManager.default.fileExists(atPath: socket.path), "the socket is removed at the end")
        let chapters = try MediaProbe.chapters(file)
        #expect(chapters.map(\.title) == ["one", "p1 / p2", "Chapter 3", "three"])
        _ = deaf
    }

    @Test func reelControlFindsTheRecordingAndAbortEndsIt() async throws {
        let dir = try TemporaryDirectory()
        let runtime = dir.url.appendingPathComponent("empty-run")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
        let none = try ReelBinary.run(["control", "status"], environment: ["XDG_RUNTIME_DIR": runtime.path])
        #expect(none.status == 1 && none.stderr.contains("no recording"))

        let file = dir.url.appendingPathComponent("found.mkv")
        let events = dir.url.appendingPathComponent("found.json")
        let recording = try Recording(["--control", "--json", "-o", file.path], in: dir.url, output: events)
        let client = try await recording.connect()
        // One pause in one file: no clips, one pause.
        #expect(try client.request("status").reply["pauses"] as? Int == 0)
        let frames = try await waitForFrames(past: 5, client)
        #expect(try client.request("pause").reply["ok"] as? Bool == true)
        try await Task.sleep(for: .milliseconds(300))
        #expect(try client.request("resume").reply["ok"] as? Bool == true)
        _ = try await waitForFrames(past: frames + 5, client)
        let afterPause = try client.request("status").reply
        #expect(afterPause["clips"] == nil && afterPause["pauses"] as? Int == 1, "\(afterPause)")
        let status = try ReelBinary.run(["control", "status"], environment: recording.environment)
        #expect(status.status == 0 && status.output.contains("state     recording"), "\(status.stderr)")
        let json = try ReelBinary.run(["control", "\(recording.process.processIdentifier)", "marker", "by pid", "--json"],
                                      environment: recording.environment)
        let reply = try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any]
        #expect(json.status == 0 && reply?["ok"] as? Bool == true)
        let refused = try ReelBinary.run(["control", "swap"], environment: recording.environment)
        #expect(refused.status == 1 && refused.stderr.contains("nothing to swap"))
        #expect(try ReelBinary.run(["control", "frobnicate"], environment: recording.environment).status == 2)

        // A second recording of this user: reel control asks which.
        let second = try Recording(["--control", "-o", dir.url.appendingPathComponent("second.mkv").path], in: dir.url,
                                   runtime: recording.runtime)
        _ = try await second.connect()
        let several = try ReelBinary.run(["control", "status"], environment: recording.environment)
        #expect(several.status == 2 && several.stderr.contains("several recordings"), "\(several.stderr)")
        #expect(try ReelBinary.run(["control", second.defaultSocket.path, "stop"], environment: [:]).status == 0)
        #expect(second.end().status == 0)
        #expect(!FileManager.default.fileExists(atPath: second.defaultSocket.path))

        let abort = try ReelBinary.run(["control", "abort"], environment: recording.environment)
        #expect(abort.status == 0)
        let end = recording.end()
        #expect(end.status == 130, "\(end.stderr)")
        #expect(!FileManager.default.fileExists(atPath: recording.defaultSocket.path), "the socket is removed at an abort too")
        // --json's progress counts the pause as status does; a file has no clips (it said "clips": 2).
        let progress = try String(contentsOf: events, encoding: .utf8).split(separator: "\n")
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .filter { $0["event"] as? String == "progress" }
        #expect(!progress.isEmpty && progress.allSatisfy { $0["clips"] == nil && $0["pauses"] is Int }, "\(progress.suffix(2))")
        #expect(progress.compactMap { $0["pauses"] as? Int }.max() == 1)
    }

    /// A second `stop` (a retry, an impatient script) while the first is finalising is answered
    /// as already under way and changes nothing: it once aborted the recording (130, the file
    /// left unfinalised, neither request answered).
    @Test func aSecondStopIsAnsweredAndTheFileFinalised() async throws {
        let dir = try TemporaryDirectory()
        let file = dir.url.appendingPathComponent("twice.mp4")
        let recording = try Recording(["--control", "-o", file.path], in: dir.url)
        let client = try await recording.connect()
        _ = try await waitForFrames(past: 15, client)
        // Both on one connection, in one write: the second reaches the recording while it stops.
        try client.send(#"{"command":"stop","id":1}"# + "\n" + #"{"command":"stop","id":2}"# + "\n")
        var replies: [Int: [String: Any]] = [:]
        while replies.count < 2, let line = try client.readObject() {
            if line["event"] == nil, let id = line["id"] as? Int { replies[id] = line }
        }
        #expect(replies[1]?["ok"] as? Bool == true && replies[1]?["already"] as? Bool == false, "\(replies)")
        #expect(replies[2]?["ok"] as? Bool == true && replies[2]?["already"] as? Bool == true, "\(replies)")
        let end = recording.end()
        #expect(end.status == 0, "\(end.stderr)")
        #expect(!Recovery.isCutOff(file), "the file is finalised")
        let probed = try MediaProbe.probe(file)
        #expect(probed.videoStreams.first?.frameCount ?? 0 > 15 && probed.audioStreams.count == 1)
    }

    /// A filter asked for while recording that does not fit the pictures (a crop larger than
    /// them) is refused (`ok: false`, naming the pictures' size) and the recording goes on
    /// through the filter it had: every picture recorded, all of them mono, exit 0. Before,
    /// the command answered ok and the filter then ended the picture's source (exit 3); a
    /// filter that stops fitting later (the pictures change size) still does that (see
    /// FilterRecordingTests), never recording a picture unfiltered.
    @Test func aFilterThatDoesNotFitIsRefusedAndTheRecordingGoesOnFiltered() async throws {
        let dir = try TemporaryDirectory()
        let file = dir.url.appendingPathComponent("cropped-late.mp4")
        let recording = try Recording(["--filter", "mono", "--control", "-o", file.path], in: dir.url)
        let client = try await recording.connect()
        let before = try await waitForFrames(past: 15, client)
        let graph = "hue=s=0,crop=2000:100"
        let reply = try client.request("filter", argument: graph).reply
        #expect(reply["ok"] as? Bool == false, "\(reply)")
        let error = reply["error"] as? String ?? ""
        #expect(error.contains("the filter '\(graph)' cannot be applied to the 320x240 pictures of test pattern"), "\(reply)")
        #expect(error.contains("nothing was changed"), "\(reply)")
        // The pictures go on, through mono.
        let after = try await waitForFrames(past: before + 30, client)
        #expect(try client.request("stop").reply["ok"] as? Bool == true)
        let end = recording.end()
        #expect(end.status == 0, "\(end.stderr)")
        #expect(!end.stderr.contains("lost"), "\(end.stderr)")
        let rgb = try MediaProbe.decodeRGB(file, width: 320, height: 240)
        #expect(rgb.count >= after, "\(rgb.count) frames in the file, \(after) said")
        // The test pattern's colour bars, mono: an unfiltered picture has colour there.
        RGBColor.expect(rgb, width: 320, at: [(20, 200), (100, 200), (180, 200), (260, 200)], "mono") {
            abs(Int($0.red) - Int($0.green)) <= 8 && abs(Int($0.green) - Int($0.blue)) <= 8
        }
    }

    @Test func aTakenPathIsRefusedAndADeadRecordingsSocketReused() async throws {
        let dir = try TemporaryDirectory()
        let taken = dir.url.appendingPathComponent("taken.sock")
        try Data("not a socket".utf8).write(to: taken)
        let refused = try ReelBinary.run(["record", "--test-pattern", "--duration", "1", "--control=\(taken.path)",
                                          "-o", dir.url.appendingPathComponent("no.mp4").path])
        #expect(refused.status == 1 && refused.stderr.contains("is not a socket"), "\(refused.stderr)")
        #expect(try String(contentsOf: taken, encoding: .utf8) == "not a socket")
        #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("no.mp4").path), "nothing recorded")

        // A recording killed with SIGKILL leaves its socket; the next one takes the path over.
        let stale = dir.url.appendingPathComponent("stale.sock")
        let killed = try Recording(["--control=\(stale.path)", "-o", dir.url.appendingPathComponent("killed.mp4").path], in: dir.url)
        _ = try await killed.connect(stale)
        kill(killed.process.processIdentifier, SIGKILL)
        _ = killed.end()
        #expect(UnixSocket.occupant(of: stale.path) == .stale)
        // Its link by process number is swept by the next look; reel control finds nothing.
        let link = killed.runtime.appendingPathComponent("reel/\(killed.process.processIdentifier).sock")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link.path)) == stale.path)
        let nothing = try ReelBinary.run(["control", "status"], environment: killed.environment)
        #expect(nothing.status == 1 && nothing.stderr.contains("no recording"), "\(nothing.stderr)")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link.path)) == nil)
        // A killed recording's default socket is swept too (its process has gone).
        let killedDefault = try Recording(["--control", "-o", dir.url.appendingPathComponent("killed2.mp4").path], in: dir.url)
        _ = try await killedDefault.connect()
        kill(killedDefault.process.processIdentifier, SIGKILL)
        _ = killedDefault.end()
        #expect(UnixSocket.occupant(of: killedDefault.defaultSocket.path) == .stale)
        let byNumber = try ReelBinary.run(["control", "\(killedDefault.process.processIdentifier)", "status"], environment: killedDefault.environment)
        #expect(byNumber.status == 1 && byNumber.stderr.contains("no recording"), "\(byNumber.stderr)")
        #expect(UnixSocket.occupant(of: killedDefault.defaultSocket.path) == .nothing)
        let next = try Recording(["--control=\(stale.path)", "--duration", "30", "-o", dir.url.appendingPathComponent("next.mp4").path], in: dir.url)
        let client = try await next.connect(stale)
        _ = try await waitForFrames(past: 5, client)
        #expect(try client.request("stop").reply["ok"] as? Bool == true)
        let end = next.end()
        #expect(end.status == 0, "\(end.stderr)")
        #expect(!FileManager.default.fileExists(atPath: stale.path))
    }

    /// The markers of a single file killed before it was finished are kept beside it, and
    /// `reel recover` puts them into the file.
    /// Records into `file` with the control socket at `socket`, places the markers "first"
    /// and "second" through it, records on past a fragment's end (so that an MP4 holds whole
    /// fragments after them) and kills reel with SIGKILL.
    func recordTwoMarkersAndKill(_ file: URL, socket: URL, in dir: URL, extra: [String] = []) async throws {
        let recording = try Recording(["--control=\(socket.path)"] + extra + ["-o", file.path], in: dir)
        let client = try await recording.connect(socket)
        var frames = try await waitForFrames(past: 10, client)
        #expect(try client.request("marker", argument: "first").reply["ok"] as? Bool == true)
        frames = try await waitForFrames(past: frames + 20, client)
        #expect(try client.request("marker", argument: "second").reply["ok"] as? Bool == true)
        _ = try await waitForFrames(past: frames + 60, client)
        kill(recording.process.processIdentifier, SIGKILL)
        _ = recording.end()
    }

    @Test(arguments: ["mp4", "mkv"])
    func markersOfAKilledRecordingAreRecovered(ext: String) async throws {
        let dir = try TemporaryDirectory()
        let file = dir.url.appendingPathComponent("killed.\(ext)")
        let socket = dir.url.appendingPathComponent("killed.sock")
        try await recordTwoMarkersAndKill(file, socket: socket, in: dir.url)
        #expect(try MediaProbe.chapters(file).isEmpty || ext == "mp4", "cut off: the file holds none of its own")
        let recovered = try ReelBinary.run(["recover", file.path])
        #expect(recovered.status == 0, "\(recovered.stderr)")
        let chapters = try MediaProbe.chapters(file)
        #expect(chapters.map(\.title) == ["first", "second"], "\(chapters)")
        #expect(chapters.count == 2 && chapters[0].start < chapters[1].start)
        #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent(".killed.\(ext).chapters").path),
                "the list beside it goes once the file holds them")
    }

    /// A killed recording's markers follow its file, not its name: renamed (`mv`), then a new
    /// recording made at the old name, it is recovered with both its markers. The list was
    /// looked up by the name only (the renamed file recovered with none) and the new recording
    /// deleted it, though the file it belongs to was still there.
    @Test func markersOfAKilledRecordingFollowItWhenRenamed() async throws {
        let dir = try TemporaryDirectory()
        let file = dir.url.appendingPathComponent("r.mp4")
        let renamed = dir.url.appendingPathComponent("renamed.mp4")
        try await recordTwoMarkersAndKill(file, socket: dir.url.appendingPathComponent("r.sock"), in: dir.url)
        try FileManager.default.moveItem(at: file, to: renamed)
        let again = try ReelBinary.run(["record", "--test-pattern", "--size", "160x120", "--preset", "ultrafast",
                                        "--faster-than-real-time", "--duration", "1", "-o", file.path])
        #expect(again.status == 0, "\(again.stderr)")
        let recovered = try ReelBinary.run(["recover", renamed.path])
        #expect(recovered.status == 0, "\(recovered.stderr)")
        #expect(try MediaProbe.chapters(renamed).map(\.title) == ["first", "second"], "\(recovered.output)")
        #expect(try MediaProbe.chapters(file).isEmpty, "the new recording has none of them")
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.url.path).filter { $0.hasSuffix(".chapters") }
        #expect(left.isEmpty, "the list goes once the file holds them: \(left)")
    }

    /// An MKV with markers killed, recovered in place on a disk that is full: with no room for
    /// the copy that would give it chapters, it is ended where it is, without them; the list of
    /// its markers stays beside it, and the words say the markers are kept there. The list was
    /// removed, and the words said "this kind of file holds no chapters": the markers were lost.
    @Test func markersOfAKilledMKVRecoveredOnAFullDiskStayInTheirList() async throws {
        let dir = try TemporaryDirectory()
        let disk = try SmallDisk(size: "20M")
        let file = disk.url.appendingPathComponent("full.mkv")
        let list = disk.url.appendingPathComponent(".full.mkv.chapters")
        let socket = dir.url.appendingPathComponent("full.sock")
        try await recordTwoMarkersAndKill(file, socket: socket, in: dir.url, extra: ["--min-free", "0"])
        try #require(FileManager.default.fileExists(atPath: list.path), "the killed recording's markers are kept")
        let kept = try Data(contentsOf: list)
        // Everything left on the disk taken by someone else's file.
        _ = try Subprocess.run(["sh", "-c", "cat /dev/zero > '\(disk.url.appendingPathComponent("filler").path)'"])
        let recovered = try ReelBinary.run(["recover", file.path])
        #expect(recovered.status == 0, "\(recovered.stderr)")
        #expect(Recovery.isFinished(file), "ended in place: \(recovered.output)")
        #expect(try MediaProbe.chapters(file).isEmpty, "no room for chapters")
        #expect(try RecoverCommandTests.decodeErrors(file) == "")
        #expect(FileManager.default.fileExists(atPath: list.path) && (try? Data(contentsOf: list)) == kept, "the list stays as it was")
        for title in ["first", "second"] {
            #expect(recovered.stderr.contains("marker '\(title)' at ") && recovered.stderr.contains("is not in the file, ended where it is with no room for chapters: it is kept in \(list.path)"),
                    "\(recovered.stderr)")
        }
    }

    /// A killed recording's list of markers belongs to that file: a recording made over it
    /// with --overwrite, killed in turn before any marker, recovers with no chapters (it got
    /// the old recording's), and one with a marker recovers with its own only.
    @Test(arguments: [[], ["new"]])
    func aRecordingOverAKilledOneRecoversOnlyItsOwnMarkers(markers: [String]) async throws {
        let dir = try TemporaryDirectory()
        let file = dir.url.appendingPathComponent("again.mp4")
        let list = dir.url.appendingPathComponent(".again.mp4.chapters")
        for (round, titles) in [["old one", "old two"], markers].enumerated() {
            let socket = dir.url.appendingPathComponent("again\(round).sock")
            let recording = try Recording(["--control=\(socket.path)", "--overwrite", "-o", file.path], in: dir.url)
            let client = try await recording.connect(socket)
            var frames = try await waitForFrames(past: 10, client)
            for title in titles {
                #expect(try client.request("marker", argument: title).reply["ok"] as? Bool == true)
                frames = try await waitForFrames(past: frames + 10, client)
            }
            // Past a fragment's end, so that the file at the name is this one and holds whole fragments.
            _ = try await waitForFrames(past: frames + 60, client)
            kill(recording.process.processIdentifier, SIGKILL)
            _ = recording.end()
            if round == 0 { #expect(FileManager.default.fileExists(atPath: list.path), "the killed recording's markers are kept") }
        }
        let recovered = try ReelBinary.run(["recover", file.path])
        #expect(recovered.status == 0, "\(recovered.stderr)")
        let chapters = try MediaProbe.chapters(file)
        #expect(chapters.map(\.title) == markers, "\(chapters)")
        #expect(!FileManager.default.fileExists(atPath: list.path))
    }

    @Test func saveReplayAnswersWithTheFile() async throws {
        let dir = try TemporaryDirectory()
        let socket = dir.url.appendingPathComponent("replay.sock")
        let recording = try Recording(["--replay", "10", "--replay-dir", dir.url.appendingPathComponent("replays").path,
                                       "--control=\(socket.path)"], in: dir.url)
        let client = try await recording.connect(socket)
        let follower = try ControlClient(socket)
        #expect(try follower.request("subscribe").reply["ok"] as? Bool == true)
        _ = try await waitForFrames(past: 30, client)
        let status = try client.request("status").reply
        #expect((status["replay"] as? [String: Any])?["bytes"] as? Int ?? 0 > 0)
        let saved = try client.request("save-replay", within: 60).reply
        let path = try #require(saved["file"] as? String, "\(saved)")
        #expect(FileManager.default.fileExists(atPath: path))
        var heardSave = false
        while !heardSave, let event = try follower.readObject() { heardSave = event["event"] as? String == "saved" && event["file"] as? String == path }
        #expect(heardSave, "subscribers hear the save as --json says it")
        #expect(try client.request("marker").reply["ok"] as? Bool == false, "no file to mark")
        #expect(try client.request("stop").reply["ok"] as? Bool == true)
        #expect(recording.end().status == 0)
    }
}
