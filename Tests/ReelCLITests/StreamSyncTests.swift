import Foundation
import Testing
import Reel
import ReelTestSupport

/// The test pattern's flashes and the tone's beeps line up in what each output of one run
/// holds: the file, what an RTMP server received and HLS (issue 26, item 7: RTMP's sound came
/// 64 ms ahead of its picture).
@Suite(.serialized, .tags(.realTime)) struct StreamSyncTests {
    /// Where the flashes and the beeps begin, on the file's timeline (as a player shows and
    /// plays them).
    static func onsets(_ url: URL) throws -> (flashes: [Double], beeps: [Double]) {
        let frames = try MediaProbe.decodeLuma(url, width: 320, height: 240)
        let times = try MediaProbe.frameTimes(url)
        var flashes: [Double] = []
        for i in frames.indices where i < times.count && frames[i].isFlash && (i == 0 || !frames[i - 1].isFlash) {
            flashes.append(times[i])
        }
        let beeps = MediaProbe.beepOnsets(try MediaProbe.decodeAudio(url, onTimeline: true))
        return (flashes, beeps)
    }

    /// The median of the beeps' starts minus the flashes', in seconds.
    static func offset(_ url: URL) throws -> (median: Double, all: [Double]) {
        let (flashes, beeps) = try onsets(url)
        let pairs = beeps.compactMap { beep in flashes.min { abs($0 - beep) < abs($1 - beep) }.map { beep - $0 } }
            .filter { abs($0) < 0.4 }.sorted()
        return (pairs.isEmpty ? .nan : pairs[pairs.count / 2], pairs)
    }

    /// In real time and on the virtual clock, with the default preset (B-frames: pictures
    /// shown after later ones are sent) and the fastest (none).
    @Test(arguments: [(["--preset", "ultrafast"], true), ([], true), ([], false)])
    func theFileRTMPAndHLSHoldTheBeepsWithTheirFlashes(encoding: [String], virtualClock: Bool) throws {
        let server = try RTMPServer()
        let dir = try TemporaryDirectory()
        let file = dir.url.appendingPathComponent("local.mp4")
        let hls = dir.url.appendingPathComponent("hls")
        let r = try ReelBinary.run(["record", "--test-pattern", "--tone", "--size", "320x240"] + encoding
                                   + ["--keyframe-interval", "1", "--duration", "6"] + (virtualClock ? ["--faster-than-real-time"] : [])
                                   + ["-o", file.path, "--stream", server.url(key: "sync").absoluteString, "--hls", hls.path, "--hls-window", "0"])
        #expect(r.status == 0, "\(r.stderr)")
        let recordings = server.recordings(count: 1) { ((try? MediaProbe.probe($0))?.videoStreams.first?.frameCount ?? 0) >= 170 }
        let received = try #require(recordings.first, "nginx log:\n\(server.log)")
        let playlist = hls.appendingPathComponent("index.m3u8")
        let folder = ((try? FileManager.default.contentsOfDirectory(atPath: hls.path)) ?? []).sorted().map { name in
            "\(name) \(((try? FileManager.default.attributesOfItem(atPath: hls.appendingPathComponent(name).path))?[.size] as? Int) ?? -1)"
        }
        try #require(!((try? String(contentsOf: playlist, encoding: .utf8)) ?? "").isEmpty,
                     "no playlist: the folder holds \(folder); reel said:\n\(r.stderr)")
        var said: [String] = []
        for (name, url) in [("file", file), ("rtmp", received), ("hls", playlist)] {
            let (median, all) = try Self.offset(url)
            said.append("\(name): beeps minus flashes \(String(format: "%+.1f", median * 1000)) ms (\(all.count) beeps)")
            let onsets = try Self.onsets(url)
            #expect(all.count >= 4, "\(name): \(onsets)")
            #expect(abs(median) <= 0.010, "\(name): the beeps are \(median * 1000) ms off their flashes")
        }
        print("\(encoding) \(virtualClock ? "virtual clock" : "real time"):\n" + said.joined(separator: "\n"))
    }
}
