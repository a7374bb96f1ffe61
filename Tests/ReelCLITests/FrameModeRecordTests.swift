import Foundation
import Testing
import Reel
import ReelTestSupport

/// `reel record --screen --frame-mode` on a real X server: tiles painted one after another at
/// known moments. Every mode records every change and no stale tile (a frame that shows a
/// tile shows every tile painted before it), lasts as long as it was recorded, and plays in
/// a browser; vfr and content leave the repeated pictures out.
@Suite(.serialized, .tags(.realTime)) struct FrameModeRecordTests {
    static let size = PixelSize(width: 320, height: 240)
    /// The tiles, in the order they are painted, and their colours.
    static let tiles: [(rect: PixelRect, colour: RGBColor)] = [
        (PixelRect(x: 0, y: 0, width: 64, height: 48), RGBColor(red: 230, green: 20, blue: 20)),
        (PixelRect(x: 192, y: 96, width: 64, height: 48), RGBColor(red: 20, green: 200, blue: 20)),
        (PixelRect(x: 64, y: 176, width: 128, height: 64), RGBColor(red: 20, green: 20, blue: 230)),
        (PixelRect(x: 256, y: 0, width: 64, height: 240), RGBColor(red: 230, green: 230, blue: 20)),
    ]

    /// Records 3 s of the screen in `mode` while the tiles are painted, one every 0.5 s from
    /// 0.7 s on; returns the file.
    func record(_ mode: String, filter: String? = nil, extra: [String] = [], into dir: TemporaryDirectory) async throws -> URL {
        let xvfb = try XvfbServer(size: Self.size)
        let painter = try ScreenPainter(display: xvfb.display)
        let url = dir.url.appendingPathComponent("\(mode).mp4")
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--screen=\(xvfb.display)", "--no-cursor", "--frame-mode", mode, "--preset", "ultrafast",
                             "--duration", "3", "-o", url.path] + (filter.map { ["--filter", $0] } ?? []) + extra
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        try await Task.sleep(for: .milliseconds(700))
        for tile in Self.tiles {
            painter.fill(rect: tile.rect, red: tile.colour.red, green: tile.colour.green, blue: tile.colour.blue)
            try await Task.sleep(for: .milliseconds(500))
        }
        let deadline = Date(timeIntervalSinceNow: 30)
        while process.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL); Issue.record("reel did not finish") }
        process.waitUntilExit()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(stderr)")
        // Kept beside the file for a check that fails later (what reel said then).
        try? Data(stderr.utf8).write(to: url.appendingPathExtension("stderr"))
        return url
    }

    /// How many tiles each decoded frame shows, checking that they are the first ones painted.
    func tilesShown(_ url: URL) throws -> [Int] {
        let frames = try MediaProbe.decodeRGB(url, width: Self.size.width, height: Self.size.height)
        return frames.enumerated().map { index, frame in
            let shown = Self.tiles.map { tile in
                RGBColor.average(of: frame, width: Self.size.width, x: tile.rect.x + tile.rect.width / 2,
                                 y: tile.rect.y + tile.rect.height / 2).distance(to: tile.colour) <= 40
            }
            let count = shown.prefix { $0 }.count
            #expect(!shown.dropFirst(count).contains(true), "frame \(index) shows a tile without the ones painted before it: \(shown)")
            return count
        }
    }

    /// HLS from the same encode lasts as long as the file and shows the same pictures, in
    /// every mode: in vfr and content the last picture (the screen still for the last 0.8 s)
    /// lasted one frame, and the playlist ended that much early (issue 26 item 15).
    @Test(arguments: ["cfr", "vfr", "content"]) func hlsLastsAsLongAsTheFile(mode: String) async throws {
        let dir = try TemporaryDirectory()
        let hls = dir.url.appendingPathComponent("hls")
        let url = try await record(mode, extra: ["--hls", hls.path, "--hls-window", "0"], into: dir)
        let playlist = hls.appendingPathComponent("index.m3u8")
        let said = (try? String(contentsOf: url.appendingPathExtension("stderr"), encoding: .utf8)) ?? ""
        let folder = (try? FileManager.default.contentsOfDirectory(atPath: hls.path).sorted()) ?? []
        let text = try #require(try? String(contentsOf: playlist, encoding: .utf8), "\(mode): no playlist; the folder holds \(folder); reel said:\n\(said)")
        let listed = text.split(separator: "\n").filter { $0.hasPrefix("#EXTINF:") }
            .compactMap { Double($0.dropFirst("#EXTINF:".count).prefix { $0 != "," }) }.reduce(0, +)
        let file = try MediaProbe.probe(url).duration
        #expect(abs(listed - file) <= 1.0 / 30 + 0.001, "\(mode): the playlist lists \(listed) s, the file lasts \(file) s\n\(text)")
        #expect(try tilesShown(playlist) == tilesShown(url), "\(mode): the same pictures")
    }

    @Test(arguments: ["cfr", "vfr", "content"]) func everyChangeIsRecordedAndTheFileLastsTheRecording(mode: String) async throws {
        let dir = try TemporaryDirectory()
        let url = try await record(mode, into: dir)
        let check = try Subprocess.run(["ffmpeg", "-v", "error", "-i", url.path, "-f", "null", "-"])
        #expect(check.status == 0 && check.stderr.isEmpty, "decoding errors: \(check.stderr)")
        let probe = try MediaProbe.probe(url)
        #expect(abs(probe.duration - 3) <= 1.0 / 30 + 0.001, "\(mode) lasts the 3 s recorded, not \(probe.duration)")
        let times = try MediaProbe.packetTimes(url).sorted()
        let shown = try tilesShown(url)
        #expect(shown.last == Self.tiles.count, "the last frame shows every tile: \(shown)")
        #expect(Set(shown) == Set(0...Self.tiles.count), "a frame for each state of the screen: \(shown)")
        switch mode {
        case "cfr":
            #expect(times.count == 90, "a frame at every slot: \(times.count)")
        case "vfr":
            #expect(times.count < 30 && times.count >= 5, "changes and one a second: \(times.count)")
            let gaps = zip(times, times.dropFirst()).map { $1 - $0 }
            #expect(gaps.allSatisfy { $0 <= 1.0 + 0.001 }, "no more than a second without a frame: \(gaps)")
        default:
            // The first picture, one per tile, and the last picture again where the recording ends.
            #expect(times.count >= 6 && times.count <= 8, "changes only: \(times)")
        }
        #expect(times.allSatisfy { abs($0 * 30 - ($0 * 30).rounded()) < 0.01 }, "on the frame rate's grid: \(times)")
        // Keyframes every 2 s of time (the default interval), whatever the pictures: live
        // streams, replay buffers and a crash's recovery need them.
        let keys = try Self.keyframeTimes(url)
        let spans = zip([0.0] + keys, keys + [probe.duration]).map { $1 - $0 }
        #expect(keys.first == 0 && spans.allSatisfy { $0 <= 2 + 1.0 / 30 + 0.001 }, "keyframes at \(keys)")

        let site = dir.url.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: url, to: site.appendingPathComponent("v.mp4"))
        let playback = try HeadlessBrowser.play("v.mp4", servedFrom: site, work: dir.url)
        #expect(playback.event == "ended" && playback.size == "320x240", "\(playback.reports)")
        if let duration = playback.duration, let reached = playback.reached {
            #expect(abs(duration - 3) < 0.05, "the browser sees 3 s, not \(duration)")
            #expect(abs(reached - duration) < 0.05, "played to the end: \(reached) of \(duration)")
        }
    }

    /// A filter that makes each picture from that picture alone keeps content mode's promise:
    /// a picture that did not change is still left out (every slot was recorded before).
    @Test func contentModeLeavesOutUnchangedPicturesThroughAPictureByPictureFilter() async throws {
        let dir = try TemporaryDirectory()
        let url = try await record("content", filter: "eq=contrast=1.02", into: dir)
        let times = try MediaProbe.packetTimes(url)
        #expect(times.count >= 6 && times.count <= 8, "changes only: \(times.count) frames")
        let shown = try tilesShown(url)
        #expect(shown.last == Self.tiles.count && Set(shown) == Set(0...Self.tiles.count), "\(shown)")
    }

    /// A crop on the screen, alone or beside another picture-by-picture filter, records every
    /// change. Seen once (stop 41): every frame of `--filter crop=…` on an X11 screen was the
    /// first picture (also `hue=s=1,crop=…` and `crop=…,hue=s=1`; `hue=s=1` alone was right).
    /// Not reproduced since on a fresh machine, debug or release; kept so it cannot come back
    /// unseen. The crop keeps the whole screen, so every tile is in the picture.
    @Test(arguments: [("cfr", "crop=320:240:0:0"), ("cfr", "hue=s=1,crop=320:240:0:0"), ("content", "crop=320:240:0:0,hue=s=1")])
    func aCropOfTheScreenRecordsEveryChange(mode: String, filter: String) async throws {
        let dir = try TemporaryDirectory()
        let url = try await record(mode, filter: filter, into: dir)
        let shown = try tilesShown(url)
        #expect(shown.last == Self.tiles.count && Set(shown) == Set(0...Self.tiles.count), "\(filter): \(shown)")
        if mode == "content" {
            let times = try MediaProbe.packetTimes(url)
            #expect(times.count >= 6 && times.count <= 8, "changes only: \(times.count) frames")
        }
    }

    /// The presentation times of the video's keyframes.
    static func keyframeTimes(_ url: URL) throws -> [Double] {
        let r = try Subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,flags",
                                    "-of", "csv=p=0", url.path])
        return r.output.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ",")
            guard fields.count >= 2, fields[1].hasPrefix("K") else { return nil }
            return Double(fields[0])
        }.sorted()
    }

    /// A still screen in content mode writes almost nothing, yet a crash keeps what came
    /// before the last keyframe but one (a keyframe every 2 s, no picture held in the encoder,
    /// each fragment sent to the disk as the next begins), and the replay buffer saves its
    /// seconds.
    @Test func aStillScreenInContentModeSurvivesAKillAndSavesItsReplay() async throws {
        let xvfb = try XvfbServer(size: Self.size)
        let dir = try TemporaryDirectory()
        func start(_ args: [String]) throws -> Process {
            let process = Process()
            process.executableURL = ReelBinary.url
            process.arguments = ["record", "--screen=\(xvfb.display)", "--frame-mode", "content", "--preset", "ultrafast"] + args
            process.standardError = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            return process
        }
        let killed = dir.url.appendingPathComponent("killed.mp4")
        let victim = try start(["-o", killed.path])
        try await Task.sleep(for: .milliseconds(6500))
        kill(victim.processIdentifier, SIGKILL)
        victim.waitUntilExit()
        let recovered = dir.url.appendingPathComponent("recovered.mp4")
        let r = try ReelBinary.run(["recover", killed.path, "-o", recovered.path])
        #expect(r.status == 0, "\(r.stderr)")
        let kept = try MediaProbe.probe(recovered).duration
        // Keyframes at 0, 2, 4 and 6 s: a fragment ends at each, and is on the disk once the
        // next has begun; so the picture up to 4 s is kept (cfr keeps about what it did).
        #expect(kept >= 4, "a kill 6.5 s in keeps up to the keyframe before last: \(kept) s")

        let saves = dir.url.appendingPathComponent("saves")
        let replay = try start(["--replay", "2", "--replay-dir", saves.path, "-o", dir.url.appendingPathComponent("whole.mp4").path])
        try await Task.sleep(for: .milliseconds(5000))
        kill(replay.processIdentifier, SIGUSR1)
        try await Task.sleep(for: .milliseconds(1500))
        kill(replay.processIdentifier, SIGINT)
        replay.waitUntilExit()
        #expect(replay.terminationStatus == 0)
        let saved = try FileManager.default.contentsOfDirectory(at: saves, includingPropertiesForKeys: nil).filter { $0.pathExtension == "mp4" }
        #expect(saved.count == 1, "\(saved)")
        if let file = saved.first {
            let duration = try MediaProbe.probe(file).duration
            #expect(duration >= 1.9 && duration <= 4.1, "the replay's last 2 s (from a keyframe): \(duration) s")
        }
    }

    @Test func frameModesAreForTheScreenAlone() throws {
        let bad = try ReelBinary.run(["record", "--test-pattern", "--frame-mode", "content", "--duration", "1", "-o", "/tmp/never-written.mp4"])
        #expect(bad.status == 2 && bad.stderr.contains("--frame-mode needs --screen"), "\(bad.stderr)")
        let composed = try ReelBinary.run(["record", "--screen", "--test-pattern", "--frame-mode", "content", "--duration", "1", "-o", "/tmp/never-written.mp4"])
        #expect(composed.status == 2 && composed.stderr.contains("--frame-mode works for a recording of the screen alone"), "\(composed.stderr)")
        let nonsense = try ReelBinary.run(["record", "--screen", "--frame-mode", "sometimes", "-o", "/tmp/never-written.mp4"])
        #expect(nonsense.status == 2 && nonsense.stderr.contains("--frame-mode is cfr, vfr or content, not 'sometimes'"), "\(nonsense.stderr)")
        // A filter whose pictures depend on the ones before (or on the time) makes every
        // picture new: vfr and content could not leave any out, and say so.
        for (mode, filter) in [("content", "tblend=all_mode=average"), ("vfr", "hqdn3d"), ("content", "hue=H=t")] {
            let temporal = try ReelBinary.run(["record", "--screen", "--frame-mode", mode, "--filter", filter, "-o", "/tmp/never-written.mp4"])
            #expect(temporal.status == 2 && temporal.stderr.contains("--frame-mode \(mode) leaves out pictures that did not change, but through --filter \(filter)")
                    && temporal.stderr.contains("Use --frame-mode cfr with it"), "\(temporal.stderr)")
        }
        // A filter that changes the frame rate is refused whatever the mode: it is not one picture for each.
        let rate = try ReelBinary.run(["record", "--screen", "--filter", "fps=10", "-o", "/tmp/never-written.mp4"])
        #expect(rate.status == 2 && rate.stderr.contains("changes how many pictures there are") && rate.stderr.contains("--fps"), "\(rate.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "/tmp/never-written.mp4"))
    }
}
