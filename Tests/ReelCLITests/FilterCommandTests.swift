import Foundation
import Testing
@testable import ReelCLI
import Reel
import ReelTestSupport

/// `--filter`'s values, checked when the command line is read.
@Suite struct FilterOptionTests: ParsesRecordOptions {
    @Test func parsesLooksGraphsAndTargets() throws {
        let o = try options(["--camera=test:red", "--camera=test:blue", "--filter", "mono", "--filter", "2:eq=contrast=1.3:brightness=0.1",
                             "--filter=1:crystal"])
        #expect(o.filters.count == 3)
        #expect(o.filters[0].source == nil && o.filters[0].filter == .look(.mono))
        #expect(o.filters[1].source == 2 && o.filters[1].filter.graph == "eq=contrast=1.3:brightness=0.1")
        #expect(o.filters[2].source == 1 && o.filters[2].filter == .look(.crystal))
        // A graph whose options hold a colon is not a source number.
        #expect(try options(["--test-pattern", "--filter", "pixelize=w=8:h=8"]).filters.first?.source == nil)
    }

    @Test(arguments: [
        (["--test-pattern", "--filter", "sepia"], "no filter named 'sepia'"),
        (["--test-pattern", "--filter", "eq=contrast=lots"], "'eq=contrast=lots' refused its options"),
        (["--test-pattern", "--filter", "2:mono"], "there is 1 video source, so N must be 1"),
        (["--test-pattern", "--camera=test", "--filter", "0:mono"], "N must be 1 to 2"),
        (["--test-pattern", "--filter", "mono", "--filter", "comic"], "--filter is given twice for the recorded picture"),
        (["--test-pattern", "--filter", "1:mono", "--filter", "1:comic"], "--filter is given twice for video source 1"),
        (["--tone", "--filter", "mono"], "--filter does nothing without a video source"),
        (["--test-pattern", "--filter", ""], "the filter is empty"),
    ])
    func rejectsNonsense(_ args: [String], _ message: String) {
        let error = usageError(args)
        #expect(error?.contains(message) == true, "got: \(error ?? "no error")")
    }
}

@Suite(.tags(.realTime)) struct FilterCommandTests {
    /// Key `f` steps through the looks on top of the user's own graph, which never goes: it may
    /// be what keeps part of the screen private (it went: the cycle passed through none).
    @Test func theFilterKeyNeverTakesOffTheUsersOwnGraph() throws {
        let own = try VideoFilter(graph: "crop=320:240:0:0")
        var seen: [String] = []
        var current: [VideoFilter] = [own]
        for _ in 0..<5 {
            current = KeyControls.looks(after: current, own: own)
            #expect(current.first == own, "the user's own graph stays first: \(current)")
            seen.append(KeyControls.describe(current))
        }
        #expect(seen == ["crop=320:240:0:0, then mono", "crop=320:240:0:0, then comic", "crop=320:240:0:0, then crystal",
                         "crop=320:240:0:0", "crop=320:240:0:0, then mono"])
        // A chain set otherwise (the control socket's `filter none`) steps back to the user's own.
        #expect(KeyControls.looks(after: [], own: own) == [own])
        // Without a graph of one's own (or with a look), the cycle is the looks and none.
        #expect(KeyControls.looks(after: []) == [.look(.mono)])
        #expect(KeyControls.looks(after: [.look(.crystal)], own: .look(.comic)) == [])
        #expect(KeyControls.describe([]) == "none")
    }

    @Test func filtersTheRecordedPictureAndOneSourceOfAComposition() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("filtered.mp4")
        // Side by side: red on the left (source 1, negated to cyan), blue on the right; then the
        // whole picture in mono.
        let r = try ReelBinary.run(["record", "--camera=test:red", "--camera=test:blue", "--layout", "side-by-side", "--size", "320x240",
                                    "--preset", "ultrafast", "--duration", "1", "--faster-than-real-time",
                                    "--filter", "1:negate", "-o", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        let frames = try MediaProbe.decodeRGB(url, width: 320, height: 240)
        #expect(frames.count == 30)
        // The test cameras flash white for 3 frames each second (their beep's picture): the
        // right one is white then, and the left, negated, black.
        var flashes = 0
        for rgb in frames {
            let left = RGBColor.average(of: rgb, width: 320, x: 80, y: 140, radius: 3)
            let right = RGBColor.average(of: rgb, width: 320, x: 240, y: 140, radius: 3)
            if right.red > 200 && right.green > 200 && right.blue > 200 {
                flashes += 1
                #expect(left.red < 60 && left.green < 60 && left.blue < 60, "white negated is black: \(left)")
                continue
            }
            #expect(left.red < 90 && left.green > 150 && left.blue > 150, "red negated is cyan: \(left)")
            #expect(right.blue > 150 && right.red < 90, "blue is untouched: \(right)")
        }
        #expect(flashes <= 3)

        let mono = dir.url.appendingPathComponent("mono.mp4")
        let m = try ReelBinary.run(["record", "--camera=test:red", "--size", "320x240", "--preset", "ultrafast", "--duration", "1",
                                    "--faster-than-real-time", "--filter", "mono", "-o", mono.path])
        #expect(m.status == 0, "\(m.stderr)")
        let luma = try MediaProbe.decodeLuma(mono, width: 320, height: 240)
        #expect(luma.map(\.counter) == (0..<30).map { Optional(Int64($0)) }, "every frame, in order")
        for (rgb, l) in zip(try MediaProbe.decodeRGB(mono, width: 320, height: 240), luma) where !l.isFlash {
            let c = RGBColor.average(of: rgb, width: 320, x: 160, y: 170, radius: 3)
            #expect(abs(Int(c.red) - Int(c.green)) <= 6 && abs(Int(c.green) - Int(c.blue)) <= 6, "\(c)")
        }
    }

    /// The tester's case: a crop larger than the source's pictures (2000 wide, of the 1280x720
    /// test pattern; it passes the check on a large picture when the command line is read)
    /// fails the start as a source that cannot start does: exit status 1, the words naming the
    /// filter, the source and its pictures' size, and no file. Before, a `filterFailed` event
    /// came and the whole picture was recorded unfiltered, exit status 0.
    @Test func aFilterThatCannotApplyToTheSourceFailsTheStartAndLeavesNoFile() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("x.mp4")
        let args = ["record", "--test-pattern", "--filter", "crop=2000:100", "--duration", "3", "-o", url.path]
        let r = try ReelBinary.run(args)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("reel: error: the filter 'crop=2000:100' cannot be applied to the 1280x720 pictures of test pattern"), "\(r.stderr)")
        #expect(r.stderr.contains("): nothing was recorded"), "\(r.stderr)")
        #expect(!r.stderr.contains("unfiltered") && !r.stderr.contains("warning"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: url.path), "no file")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).isEmpty, "nothing left: \(r.stderr)")

        let j = try ReelBinary.run(args + ["--json"])
        #expect(j.status == 1, "\(j.stderr)")
        let events = j.output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(events.map { $0["event"] as? String } == ["failed"], "\(events)")
        #expect(events.last?["code"] as? String == "invalidConfiguration")
        #expect((events.last?["message"] as? String)?.contains("cannot be applied to the 1280x720 pictures of test pattern") == true, "\(events)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).isEmpty)
    }

    /// `--filter scale=…` or `crop=…` records at the size the filter makes, as `ffmpeg -vf`
    /// does, every frame whole (a crop is not stretched back); an odd size is recorded as its
    /// even part, and that is said on stderr and, with --json, as an event.
    @Test func aFilterThatChangesTheSizeSetsTheFilesSize() throws {
        let dir = try TemporaryDirectory()
        func record(_ graph: String, _ name: String, json: Bool = false) throws -> (URL, CommandResult) {
            let url = dir.url.appendingPathComponent(name)
            let r = try ReelBinary.run(["record", "--test-pattern", "--preset", "ultrafast", "--duration", "1", "--faster-than-real-time",
                                        "--filter", graph, "-o", url.path] + (json ? ["--json"] : []))
            #expect(r.status == 0, "\(graph): \(r.stderr)")
            return (url, r)
        }
        // The counter's cells are read at whole pixels of the width: a width that does not
        // shrink them by a whole factor (1280 to 320) blurs the last ones, so there only the
        // frames are counted.
        for (graph, width, height, readsCounter) in [("scale=320:240", 320, 240, false), ("scale=1280:360", 1280, 360, true),
                                                     ("crop=1280:360:0:0", 1280, 360, true)] {
            let (url, r) = try record(graph, "\(graph).mp4")
            #expect(!r.stderr.contains("reel: note") && !r.stderr.contains("reel: warning"), "nothing to say: \(r.stderr)")
            let stream = try #require(try MediaProbe.probe(url).videoStreams.first)
            #expect(stream.width == width && stream.height == height, "\(graph)")
            let luma = try MediaProbe.decodeLuma(url, width: width, height: height)
            #expect(luma.count == 30, "\(graph)")
            if readsCounter { #expect(luma.compactMap(\.counter) == Array(0..<30), "\(graph): every frame, whole and in order") }
        }
        let (odd, r) = try record("scale=1281:361", "odd.mp4")
        #expect(r.stderr.contains("reel: note: the filter 'scale=1281:361' makes 1281x361 pictures of"), "\(r.stderr)")
        #expect(r.stderr.contains("so they are recorded as 1280x360 (their last column and row are left out"), "\(r.stderr)")
        let stream = try #require(try MediaProbe.probe(odd).videoStreams.first)
        #expect(stream.width == 1280 && stream.height == 360)
        #expect(try MediaProbe.decodeLuma(odd, width: 1280, height: 360).compactMap(\.counter) == Array(0..<30))
        let (_, j) = try record("scale=1281:361", "odd-json.mp4", json: true)
        let events = j.output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let resized = events.first { $0["event"] as? String == "filterResized" }
        #expect(resized?["filter"] as? String == "scale=1281:361")
        #expect(resized?["size"] as? String == "1281x361" && resized?["recorded"] as? String == "1280x360", "\(events)")
        #expect(!j.stderr.contains("reel: note: the filter"), "--json says it once, as an event: \(j.stderr)")
    }

    /// `--filter` making another shape than `--size` (issue 26, F3: `crop=320:240` with
    /// `--size 640x360` gave a stretched picture, and the note named 320x240 as recorded or,
    /// for this even crop, said nothing): the picture is fitted into --size with its aspect
    /// kept and black bars, said once, and --json's event names the sizes the file has. One of
    /// --size's shape is scaled to it, with a note naming both sizes. The composed picture's
    /// filter is fitted into --size the same way.
    @Test func aFilterOfAnotherShapeThanSizeIsFittedWithBarsAndSaidTruly() throws {
        let dir = try TemporaryDirectory()
        func record(_ sources: [String], _ graph: String, _ name: String, json: Bool) throws -> (URL, CommandResult, [[String: Any]]) {
            let url = dir.url.appendingPathComponent(name)
            let r = try ReelBinary.run(["record"] + sources + ["--size", "640x360", "--preset", "ultrafast", "--duration", "1",
                                        "--faster-than-real-time", "--filter", graph, "-o", url.path] + (json ? ["--json"] : []))
            #expect(r.status == 0, "\(graph): \(r.stderr)")
            let events = r.output.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            return (url, r, events.filter { $0["event"] as? String == "filterResized" })
        }
        /// The file's size, as ffprobe reads it.
        func fileSize(_ url: URL) throws -> String {
            let stream = try #require(try MediaProbe.probe(url).videoStreams.first)
            return "\(stream.width ?? 0)x\(stream.height ?? 0)"
        }
        /// Every frame: black at `bars`, not black at `picture` ((x, y) in the 640x360 file).
        func checkFrames(_ url: URL, bars: [(Int, Int)], picture: [(Int, Int)]) throws {
            let frames = try MediaProbe.decodeRGB(url, width: 640, height: 360)
            #expect(frames.count == 30)
            RGBColor.expect(frames, width: 640, at: bars, "a black bar, not a stretched picture") { $0.red < 30 && $0.green < 30 && $0.blue < 30 }
            RGBColor.expect(frames, width: 640, at: picture, "the red picture (or its white flash)") { $0.red > 150 }
        }
        // The tester's case: a 4:3 crop of the 16:9 camera, recorded at 16:9.
        let (json, j, jsonEvents) = try record(["--camera=test:red"], "crop=320:240", "fitted.mp4", json: true)
        #expect(jsonEvents.count == 1, "said once: \(jsonEvents)")
        let event = try #require(jsonEvents.first)
        #expect(event["size"] as? String == "320x240" && event["resizing"] as? String == "fitted", "\(event)")
        let jsonSize = try fileSize(json)
        #expect(event["recorded"] as? String == jsonSize, "the event names the file's size: \(event)")
        #expect(jsonSize == "640x360")
        #expect(!j.stderr.contains("reel: warning: the filter"), "--json says it once, as an event: \(j.stderr)")
        try checkFrames(json, bars: [(30, 240), (610, 240)], picture: [(100, 240), (540, 240)])
        let (text, t, _) = try record(["--camera=test:red"], "crop=320:240", "fitted-text.mp4", json: false)
        #expect(t.stderr.contains("reel: warning: the filter 'crop=320:240' makes 320x240 pictures of"), "\(t.stderr)")
        #expect(t.stderr.contains("they are recorded at 640x360 with their aspect kept, black bars at the left and right"), "\(t.stderr)")
        #expect(t.stderr.components(separatedBy: "the filter 'crop=320:240'").count == 2, "said once: \(t.stderr)")
        #expect(try fileSize(text) == "640x360")

        // The shape of --size: scaled to fill it, and a note names both sizes.
        let (scaled, s, scaledEvents) = try record(["--camera=test:red"], "crop=320:180", "scaled.mp4", json: true)
        #expect(scaledEvents.count == 1 && scaledEvents.first?["size"] as? String == "320x180"
                && scaledEvents.first?["resizing"] as? String == "scaled", "\(scaledEvents)")
        let scaledSize = try fileSize(scaled)
        #expect(scaledEvents.first?["recorded"] as? String == scaledSize && scaledSize == "640x360", "\(scaledEvents)")
        #expect(s.status == 0)
        try checkFrames(scaled, bars: [], picture: [(6, 240), (634, 240), (320, 354)])

        // The composed picture's filter, recorded at --size.
        let (composed, _, composedEvents) = try record(["--camera=test:red", "--camera=test:red", "--layout", "side-by-side"],
                                                       "crop=320:240", "composed.mp4", json: true)
        #expect(composedEvents.count == 1 && composedEvents.first?["resizing"] as? String == "fitted", "\(composedEvents)")
        let composedSize = try fileSize(composed)
        #expect(composedEvents.first?["recorded"] as? String == composedSize && composedSize == "640x360", "\(composedEvents)")
        try checkFrames(composed, bars: [(30, 240), (610, 240)], picture: [(100, 240), (540, 240)])
    }

    static let terminalDriver = TerminalScript.start(["\"record\"", "\"--camera=test:red\"", "\"--size\"", "\"320x240\"", "\"--preset\"", "\"ultrafast\"", "\"-o\"", "path"]) + """
        steps = {"recording": read_until(rb"00:00:01")}
        os.write(fd, b"f")
        steps["mono"] = read_until(rb"filter: mono")
        read_until(rb"00:00:03")
        os.write(fd, b"q")
        """ + TerminalScript.finish

    @Test func keyFStepsThroughTheLooksWhileRecording() throws {
        let dir = try TemporaryDirectory()
        let script = dir.url.appendingPathComponent("terminal.py")
        try Self.terminalDriver.write(to: script, atomically: true, encoding: .utf8)
        let url = dir.url.appendingPathComponent("keys.mp4")
        let run = try Subprocess.run(["python3", script.path, ReelBinary.url.path, url.path])
        let result = try JSONSerialization.jsonObject(with: run.stdout) as? [String: Any] ?? [:]
        let output = result["output"] as? String ?? run.stderr
        let steps = result["steps"] as? [String: Bool] ?? [:]
        #expect(steps["recording"] == true, "\(output)")
        #expect(steps["mono"] == true, "f said which look: \(output)")
        #expect(result["status"] as? Int == 0, "\(output)")
        #expect(output.contains("[f] filter"), "the line names the key")
        let frames = try MediaProbe.decodeRGB(url, width: 320, height: 240)
        func isGrey(_ rgb: [UInt8]) -> Bool {
            let c = RGBColor.average(of: rgb, width: 320, x: 160, y: 170, radius: 3)
            return abs(Int(c.red) - Int(c.green)) <= 6 && abs(Int(c.green) - Int(c.blue)) <= 6
        }
        // Red at first; mono from the key on, to the end, with no red frame after a grey one.
        #expect(frames.count >= 60)
        #expect(!isGrey(frames[0]))
        #expect(isGrey(frames[frames.count - 1]))
        // A white flash (the test camera's beep picture) is grey in either look: left out.
        let flashes = try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.isFlash)
        let grey = zip(frames, flashes).filter { !$0.1 }.map { isGrey($0.0) }
        let firstGrey = grey.firstIndex(of: true) ?? grey.count
        let redAfterGrey = grey[firstGrey...].filter { !$0 }.count
        #expect(redAfterGrey == 0, "\(redAfterGrey) frames not mono after the first mono one (frame \(firstGrey) of \(grey.count))")
    }
}
