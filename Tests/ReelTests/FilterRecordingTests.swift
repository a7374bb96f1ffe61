import Foundation
import Testing
import Reel
import ReelTestSupport

/// Filters on the capture path, recorded on a manual clock and checked in the decoded file.
@Suite struct FilterRecordingTests {
    static let size = PixelSize(width: 320, height: 240)

    func camera(_ colour: YUVColor, _ name: String, size: PixelSize = Self.size) -> TestPatternSource {
        TestPatternSource(size: size, frameRate: FrameRate(30), beeps: .never, background: colour, name: name)
    }

    func recorderSettings(seconds: Int) -> Recorder.Settings {
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        settings.maxRecordedDuration = MediaTime(value: Int64(seconds), timescale: 1)
        return settings
    }

    /// The colour below the counter strip, in the middle of the picture.
    static func sample(_ rgb: [UInt8], width: Int = 320, height: Int = 240) -> RGBColor {
        RGBColor.average(of: rgb, width: width, x: width / 2, y: height * 2 / 3, radius: 4)
    }

    static func isGrey(_ c: RGBColor) -> Bool {
        abs(Int(c.red) - Int(c.green)) <= 6 && abs(Int(c.green) - Int(c.blue)) <= 6
    }

    @Test func aLiveChangeLandsOnItsFrameAndLosesNone() async throws {
        let dir = try TemporaryDirectory()
        let session = CaptureSession(clock: ManualClock())
        let cam = camera(.red, "red camera")
        try session.addInput(cam)
        let url = dir.url.appendingPathComponent("mono-from-1s.mp4")
        let recorder = Recorder(url: url, settings: recorderSettings(seconds: 2))
        try session.addOutput(recorder)
        // Mono from frame 30 (1 s), off again from frame 45.
        try session.setVideoFilter(.look(.mono), for: cam, at: MediaTime(value: 1, timescale: 1))
        try session.setVideoFilter(nil, for: cam, at: MediaTime(value: 45, timescale: 30))
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        #expect(summary.frames == 60)
        #expect(summary.droppedFrames == 0)

        let luma = try MediaProbe.decodeLuma(url, width: 320, height: 240)
        #expect(luma.map(\.counter) == (0..<60).map { Optional(Int64($0)) }, "every frame is there, in order")
        let rgb = try MediaProbe.decodeRGB(url, width: 320, height: 240)
        #expect(rgb.count == 60)
        for (i, frame) in rgb.enumerated() {
            let c = Self.sample(frame)
            if (30..<45).contains(i) {
                #expect(Self.isGrey(c), "frame \(i) should be mono: \(c)")
            } else {
                #expect(c.red > 150 && c.green < 90, "frame \(i) should be red: \(c)")
            }
        }
    }

    @Test func aGraphStringHasItsVisibleEffect() async throws {
        let dir = try TemporaryDirectory()
        let session = CaptureSession(clock: ManualClock())
        let cam = camera(.blue, "blue camera")
        try session.addInput(cam)
        try session.setVideoFilter(try VideoFilter(graph: "negate"), for: cam)
        #expect(session.videoFilter(for: cam)?.graph == "negate")
        let url = dir.url.appendingPathComponent("negated.mp4")
        let recorder = Recorder(url: url, settings: recorderSettings(seconds: 1))
        try session.addOutput(recorder)
        try await session.start()
        _ = try await recorder.result()
        await session.stop()
        let rgb = try MediaProbe.decodeRGB(url, width: 320, height: 240)
        #expect(rgb.count == 30)
        // Blue negated is yellow.
        for frame in rgb {
            let c = Self.sample(frame)
            #expect(c.red > 170 && c.green > 170 && c.blue < 90, "\(c)")
        }
    }

    @Test(arguments: [VideoFilter.Look.comic, .crystal])
    func theOtherLooksRecordEveryFrameAndChangeThePicture(look: VideoFilter.Look) async throws {
        let dir = try TemporaryDirectory()
        let session = CaptureSession(clock: ManualClock())
        let cam = camera(.green, "green camera")
        try session.addInput(cam)
        try session.setVideoFilter(.look(look), for: cam)
        let url = dir.url.appendingPathComponent("\(look).mp4")
        let plainURL = dir.url.appendingPathComponent("plain.mp4")
        let recorder = Recorder(url: url, settings: recorderSettings(seconds: 1))
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        #expect(summary.frames == 30)

        let plainSession = CaptureSession(clock: ManualClock())
        try plainSession.addInput(camera(.green, "green camera"))
        let plain = Recorder(url: plainURL, settings: recorderSettings(seconds: 1))
        try plainSession.addOutput(plain)
        try await plainSession.start()
        _ = try await plain.result()
        await plainSession.stop()

        let filtered = try MediaProbe.decodeLuma(url, width: 320, height: 240)
        let unfiltered = try MediaProbe.decodeLuma(plainURL, width: 320, height: 240)
        #expect(filtered.count == 30)
        // The test pattern is a flat colour with bars and a counter: the looks change their
        // edges (inked, or broken into cells), so a part of the picture differs clearly.
        let changed = zip(filtered[10].pixels, unfiltered[10].pixels).filter { abs(Int($0.0) - Int($0.1)) > 12 }.count
        #expect(changed * 100 >= filtered[10].pixels.count, "\(look) changed \(changed) of \(filtered[10].pixels.count) pixels")
    }

    /// A second of a red and a blue camera side by side, the composed picture through `filter`,
    /// recorded into `name`; with the filter the compositor says it has.
    func recordComposed(filtered filter: VideoFilter, as name: String, in dir: TemporaryDirectory) async throws -> (URL, RecordingSummary, VideoFilter?) {
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(camera(.red, "red camera"))
        try session.addInput(camera(.blue, "blue camera"))
        let compositor = Compositor(settings: .init(size: Self.size, frameRate: FrameRate(30), layout: .sideBySide))
        try compositor.setVideoFilter(filter)
        let said = compositor.videoFilter
        let url = dir.url.appendingPathComponent(name)
        let recorder = Recorder(url: url, settings: recorderSettings(seconds: 1))
        try compositor.addOutput(recorder)
        try session.addOutput(compositor)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        return (url, summary, said)
    }

    @Test func theComposedPictureIsFiltered() async throws {
        let dir = try TemporaryDirectory()
        let (url, summary, said) = try await recordComposed(filtered: .look(.mono), as: "composed-mono.mp4", in: dir)
        #expect(said == .look(.mono))
        #expect(summary.frames == 30)
        let rgb = try MediaProbe.decodeRGB(url, width: 320, height: 240)
        for frame in rgb {
            #expect(Self.isGrey(RGBColor.average(of: frame, width: 320, x: 80, y: 160, radius: 4)))
            #expect(Self.isGrey(RGBColor.average(of: frame, width: 320, x: 240, y: 160, radius: 4)))
        }
    }

    /// A filter that cannot be applied to the source's pictures (a crop larger than them) fails
    /// the start, nothing recorded, rather than record them unfiltered (before, they were, and
    /// a crop meant to keep part of a screen private recorded all of it); the words name the
    /// filter, the source and its pictures' size. What the start opened is let go: with a filter
    /// that fits, the same session starts and records.
    @Test func aFilterThatCannotApplyToTheSourceFailsTheStartAndRecordsNothing() async throws {
        let dir = try TemporaryDirectory()
        let session = CaptureSession(clock: ManualClock())
        // A crop that fits the check's large picture but not this 160x120 camera.
        let small = PixelSize(width: 160, height: 120)
        let cam = camera(.red, "small camera", size: small)
        try session.addInput(cam)
        try session.setVideoFilter(try VideoFilter(graph: "crop=300:200"), for: cam)
        let url = dir.url.appendingPathComponent("cropped.mp4")
        let recorder = Recorder(url: url, settings: recorderSettings(seconds: 1))
        try session.addOutput(recorder)
        var failure: ReelError?
        do { try await session.start() } catch let error as ReelError { failure = error }
        let error = try #require(failure, "the start fails")
        #expect(error.code == .invalidConfiguration)
        #expect(error.message.hasPrefix("the filter 'crop=300:200' cannot be applied to the 160x120 pictures of small camera ("), "\(error)")
        #expect(error.message.hasSuffix("): nothing was recorded"), "\(error)")
        #expect(!session.isRunning)
        #expect(!FileManager.default.fileExists(atPath: url.path), "no file")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).isEmpty, "nothing left beside it")

        try session.setVideoFilter(try VideoFilter(graph: "crop=80:60,hue=s=0"), for: cam)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        #expect(summary.frames == 30 && summary.isComplete)
        let rgb = try MediaProbe.decodeRGB(url, width: 80, height: 60)
        #expect(rgb.count == 30)
        RGBColor.expect(rgb, width: 80, at: [(40, 40)], "mono") { Self.isGrey($0) }
    }

    /// The composed picture's filter keeps the same promise: one that cannot be applied to the
    /// composed picture fails the start, before the recorder makes its file.
    @Test func aComposedPicturesFilterThatCannotApplyFailsTheStart() async throws {
        let dir = try TemporaryDirectory()
        var failure: ReelError?
        do {
            _ = try await recordComposed(filtered: try VideoFilter(graph: "crop=400:300"), as: "composed-crop.mp4", in: dir)
        } catch let error as ReelError { failure = error }
        let error = try #require(failure, "the start fails")
        #expect(error.message.hasPrefix("the filter 'crop=400:300' cannot be applied to the 320x240 pictures of composed ("), "\(error)")
        #expect(error.message.hasSuffix("): nothing was recorded"), "\(error)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).isEmpty, "no file")
    }

    /// A filter that no longer fits the source's pictures while recording (a window made
    /// smaller than its crop) ends that source's pictures, as a lost source ends them: the
    /// recording keeps what was filtered, none of the pictures it could not filter (before,
    /// they went on unfiltered), and is incomplete, its shortfall naming the filter and the
    /// pictures' new size.
    @Test func aFilterThatNoLongerFitsEndsTheSourcesPicturesAndNoneIsUnfiltered() async throws {
        let dir = try TemporaryDirectory()
        let session = CaptureSession(clock: ManualClock())
        let window = ShrinkingVideoSource(shrinksAt: 30)
        try session.addInput(window)
        // The top left 200x150, in mono: it fits the 320x240 pictures, not the 160x120 ones.
        try session.setVideoFilter(try VideoFilter(graph: "crop=200:150:0:0,hue=s=0"), for: window)
        let url = dir.url.appendingPathComponent("shrunk.mp4")
        let recorder = Recorder(url: url, settings: recorderSettings(seconds: 3))
        try session.addOutput(recorder)
        let events = Task {
            var said: [String] = []
            for await e in session.events {
                if case .sourceLost(let source, let error) = e { said.append("lost \(source): \(error.message)") }
                if case .filterFailed(let source, _, let error) = e { said.append("filter \(source): \(error.message)") }
            }
            return said
        }
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        #expect(summary.frames == 30, "the 30 filtered pictures, then none")
        #expect(summary.droppedFrames == 0, "the pictures not filtered are not dropped frames: the source ended")
        #expect(summary.ending == .sourcesGone)
        #expect(!summary.isComplete)
        let words = "the filter 'crop=200:150:0:0,hue=s=0' cannot be applied to the 160x120 pictures of shrinking window ("
        #expect(summary.shortfalls.map(\.kind) == [.lost], "\(summary.shortfalls)")
        let shortfall = try #require(summary.shortfalls.first)
        #expect(shortfall.source == "shrinking window")
        #expect(shortfall.error.message.hasPrefix(words), "\(shortfall.error)")
        #expect(shortfall.error.message.hasSuffix("): its pictures are no longer recorded, rather than recorded unfiltered"), "\(shortfall.error)")
        #expect(shortfall.at == MediaTime(value: 1, timescale: 1), "at the first picture it could not filter")

        let stream = try #require(try MediaProbe.probe(url).videoStreams.first)
        #expect(stream.width == 200 && stream.height == 150)
        let rgb = try MediaProbe.decodeRGB(url, width: 200, height: 150)
        #expect(rgb.count == 30)
        // An unfiltered picture would be red (the window's colour), fitted into 200x150.
        RGBColor.expect(rgb, width: 200, at: [(100, 75), (100, 120), (20, 140)], "mono, never the unfiltered red") { Self.isGrey($0) }
        try await Task.sleep(for: .milliseconds(100))
        events.cancel()
        let said = await events.value
        #expect(said.count == 1 && said.first?.hasPrefix("lost shrinking window: \(words)") == true, "said once, as the source lost: \(said)")
    }

    /// A filter that is not one picture for each (it changes the frame rate, or makes pictures
    /// without end) is refused when it is made; one that needs a picture before its first
    /// costs no frame and says, once and truly, that its first picture is recorded black: never
    /// unfiltered (before, it was, and a crop before it in a chain was not applied to it).
    @Test func aFilterThatMakesPicturesWithoutEndOrHoldsThemBackCostsNothing() async throws {
        for graph in ["loop=loop=-1:size=1", "hue=s=0,fps=5"] {
            #expect(throws: ReelError.self, "\(graph)") { try VideoFilter(graph: graph) }
        }
        let dir = try TemporaryDirectory()
        let session = CaptureSession(clock: ManualClock())
        let cam = camera(.red, "red camera")
        try session.addInput(cam)
        try session.setVideoFilter(try VideoFilter(graph: "tblend=all_mode=average"), for: cam)
        let url = dir.url.appendingPathComponent("odd.mp4")
        let recorder = Recorder(url: url, settings: recorderSettings(seconds: 1))
        try session.addOutput(recorder)
        let events = Task {
            var failed: [String] = []
            for await e in session.events { if case .filterFailed(_, _, let error) = e { failed.append(error.message) } }
            return failed
        }
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        #expect(summary.frames == 30)
        #expect(summary.droppedFrames == 0)
        try await Task.sleep(for: .milliseconds(100))
        events.cancel()
        let failed = await events.value
        #expect(failed == ["it needs 1 picture before its first, so the first is recorded black"], "\(failed)")
        let rgb = try MediaProbe.decodeRGB(url, width: 320, height: 240)
        #expect(rgb.count == 30)
        RGBColor.expect(Array(rgb.prefix(1)), width: 320, at: [(160, 160), (40, 200)], "black") { $0.red < 40 && $0.green < 40 && $0.blue < 40 }
        RGBColor.expect(Array(rgb.dropFirst()), width: 320, at: [(160, 160)], "red, blended with red") { $0.red > 150 && $0.green < 90 }
    }

    /// Records `graph` on the red camera (320x240, or `cameraSize`) from the start (or from
    /// `at`), for a second, at the recorder's `size` (or the pictures'); returns the summary and
    /// the filters' size events, as "filter size recorded resizing".
    func record(_ graph: String, at time: MediaTime? = nil, cameraSize: PixelSize = Self.size, size: PixelSize? = nil,
                into url: URL) async throws -> (RecordingSummary, [String]) {
        let session = CaptureSession(clock: ManualClock())
        let cam = camera(.red, "red camera", size: cameraSize)
        try session.addInput(cam)
        try session.setVideoFilter(try VideoFilter(graph: graph), for: cam, at: time)
        var settings = recorderSettings(seconds: 1)
        settings.video.size = size
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        let events = Task {
            var said: [String] = []
            for await e in session.events {
                if case .filterResized(_, let filter, let size, let recorded, let resizing) = e { said.append("\(filter) \(size) \(recorded) \(resizing)") }
            }
            return said
        }
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        try await Task.sleep(for: .milliseconds(100))
        events.cancel()
        return (summary, await events.value)
    }

    /// A filter that changes the size, set before the start, sets the recording's size (as
    /// `ffmpeg -vf` does): a scale is not scaled back, a crop not stretched back; an odd size
    /// is recorded as its even part, and that is said.
    @Test(arguments: [("scale=160:120", PixelSize(width: 160, height: 120), nil as String?),
                      ("crop=320:120:0:0", PixelSize(width: 320, height: 120), nil),
                      ("pad=iw+32:ih+16:16:0", PixelSize(width: 352, height: 256), nil),
                      ("scale=161:121", PixelSize(width: 160, height: 120), "scale=161:121 161x121 160x120 evenPart"),
                      // libavfilter rounds a crop of 4:2:0 pictures to even itself: said too (s26 F5).
                      ("crop=iw-1:121:0:0", PixelSize(width: 318, height: 120), "crop=iw-1:121:0:0 319x121 318x120 evenPart"),
                      ("crop=iw-1:ih", PixelSize(width: 318, height: 240), "crop=iw-1:ih 319x240 318x240 evenPart")])
    func aFilterThatChangesTheSizeSetsTheRecordingsSize(graph: String, recorded: PixelSize, said: String?) async throws {
        // The counter is read across the whole width: a pad moves it off the cells it is read at.
        let readsCounter = !graph.hasPrefix("pad")
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("resized.mp4")
        let (summary, events) = try await record(graph, into: url)
        #expect(summary.frames == 30)
        #expect(summary.videoSize == recorded)
        let stream = try #require(try MediaProbe.probe(url).videoStreams.first)
        #expect(stream.width == recorded.width && stream.height == recorded.height, "\(graph): \(String(describing: stream.width))x\(String(describing: stream.height))")
        let luma = try MediaProbe.decodeLuma(url, width: recorded.width, height: recorded.height)
        #expect(luma.count == 30)
        if readsCounter {
            #expect(luma.map(\.counter) == (0..<30).map { Optional(Int64($0)) }, "\(graph): every frame is there, whole, in order")
        }
        #expect(events == (said.map { [$0] } ?? []))
    }

    /// A filter set while recording that makes another size cannot change the file's: its
    /// pictures are fitted into the size the recording has, their aspect kept, and that is said.
    @Test func aFilterOfAnotherSizeSetWhileRecordingIsFittedAndSaid() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("fitted.mp4")
        // From 0.5 s, the left half (a tall picture): pillarboxed in 320x240.
        let (summary, events) = try await record("crop=160:240:0:0", at: MediaTime(value: 15, timescale: 30), into: url)
        #expect(summary.frames == 30)
        #expect(summary.videoSize == Self.size)
        #expect(events == ["crop=160:240:0:0 160x240 320x240 fittedToStartingSize"], "said once")
        let rgb = try MediaProbe.decodeRGB(url, width: 320, height: 240)
        #expect(rgb.count == 30)
        for (i, frame) in rgb.enumerated() {
            let edge = RGBColor.average(of: frame, width: 320, x: 20, y: 200, radius: 3)
            let middle = Self.sample(frame)
            #expect(middle.red > 150 && middle.green < 90, "frame \(i): \(middle)")
            if i >= 15 { #expect(edge.red < 30 && edge.green < 30 && edge.blue < 30, "frame \(i): a black bar, not a stretched picture: \(edge)") }
            else { #expect(edge.red > 150, "frame \(i): \(edge)") }
        }
    }

    /// A filter that makes another shape than the recorder's own size (issue 26, F3: a 4:3
    /// crop recorded at 16:9): its pictures are fitted in with their aspect kept and black
    /// bars, not stretched, and the event names the file's size (it named the filter's, or
    /// said nothing of an even crop). `bars` is where a bar is and `picture` where the picture
    /// is, (x, y) in the 640x360 file.
    @Test(arguments: [("crop=320:240", "crop=320:240 320x240 640x360 fitted", [(30, 240), (610, 240)], [(100, 240), (540, 240)]),
                      // 32:9: bars above and below.
                      ("crop=640:180", "crop=640:180 640x180 640x360 fitted", [(320, 40), (320, 320)], [(20, 140), (620, 220)]),
                      // An odd crop libavfilter makes even: the size asked and the file's.
                      ("crop=321:241", "crop=321:241 321x241 640x360 fitted", [(30, 240), (610, 240)], [(100, 240), (540, 240)])])
    func aFilterOfAnotherShapeThanTheRecordersSizeIsFittedWithBars(graph: String, said: String, bars: [(Int, Int)], picture: [(Int, Int)]) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("fitted.mp4")
        let wide = PixelSize(width: 640, height: 360)
        let (summary, events) = try await record(graph, cameraSize: wide, size: wide, into: url)
        #expect(events == [said], "said once, naming the file's size")
        #expect(summary.frames == 30 && summary.videoSize == wide)
        let stream = try #require(try MediaProbe.probe(url).videoStreams.first)
        #expect(stream.width == 640 && stream.height == 360)
        let rgb = try MediaProbe.decodeRGB(url, width: 640, height: 360)
        #expect(rgb.count == 30)
        RGBColor.expect(rgb, width: 640, at: bars, "a black bar, not a stretched picture") { $0.red < 30 && $0.green < 30 && $0.blue < 30 }
        RGBColor.expect(rgb, width: 640, at: picture, "the picture") { $0.red > 150 && $0.green < 90 }
    }

    /// A filter that makes the shape of the recorder's own size is scaled to it, filling it
    /// (what was asked), and the note names both sizes.
    @Test func aFilterOfTheRecordersShapeIsScaledToItsSize() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("scaled.mp4")
        let wide = PixelSize(width: 640, height: 360)
        let (summary, events) = try await record("crop=320:180", cameraSize: wide, size: wide, into: url)
        #expect(events == ["crop=320:180 320x180 640x360 scaled"])
        #expect(summary.frames == 30 && summary.videoSize == wide)
        let stream = try #require(try MediaProbe.probe(url).videoStreams.first)
        #expect(stream.width == 640 && stream.height == 360)
        let rgb = try MediaProbe.decodeRGB(url, width: 640, height: 360)
        #expect(rgb.count == 30)
        RGBColor.expect(rgb, width: 640, at: [(6, 240), (634, 240), (320, 354)], "the picture to the edge, no bar") { $0.red > 150 && $0.green < 90 }
    }

    /// The composed picture's filter sets the composition's recorded size too.
    @Test func theComposedPicturesFilterSetsTheRecordingsSize() async throws {
        let dir = try TemporaryDirectory()
        let (url, summary, _) = try await recordComposed(filtered: try VideoFilter(graph: "crop=160:240:0:0"), as: "composed-left.mp4", in: dir)
        #expect(summary.frames == 30)
        #expect(summary.videoSize == PixelSize(width: 160, height: 240))
        let rgb = try MediaProbe.decodeRGB(url, width: 160, height: 240)
        #expect(rgb.count == 30)
        for frame in rgb {
            let left = RGBColor.average(of: frame, width: 160, x: 80, y: 160, radius: 4)
            #expect(left.red > 150 && left.blue < 90, "only the red camera's half: \(left)")
        }
    }

    @Test func aCropMeantForALargeSourceIsAccepted() throws {
        _ = try VideoFilter(graph: "crop=640:480")
    }

    /// A pad to a size of its own, larger than the source's pictures and smaller than the
    /// largest a source gives, is accepted and sets the recording's size (s43: `pad=400:300`
    /// was refused, tried on a 3840x2160 picture only); one no picture can take is refused.
    @Test func aPadToASizeOfItsOwnIsAcceptedAndRecorded() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("padded.mp4")
        let (summary, _) = try await record("pad=400:300", into: url)
        #expect(summary.videoSize == PixelSize(width: 400, height: 300))
        let stream = try #require(try MediaProbe.probe(url).videoStreams.first)
        #expect(stream.width == 400 && stream.height == 300)
        #expect(throws: ReelError.self) { try VideoFilter(graph: "pad=40000:30000") }
    }

    /// Between the start and a source's first picture a change of filter is checked on the
    /// pictures the source said it would give: one that cannot apply is refused (it was taken,
    /// then ended the pictures when they came). Once stopped, the next start decides.
    @Test func aChangeBeforeTheFirstPictureIsCheckedOnThePicturesToCome() async throws {
        let session = CaptureSession(clock: ManualClock())
        let slow = SilentStartVideoSource()
        try session.addInput(slow)
        try await session.start()
        let refused = #expect(throws: ReelError.self) { try session.setVideoFilter(try VideoFilter(graph: "crop=400:100"), for: slow) }
        #expect(refused?.message.contains("320x240") == true && refused?.message.contains("slow camera") == true, "\(String(describing: refused))")
        #expect(session.videoFilter(for: slow) == nil)
        try session.setVideoFilter(try VideoFilter(graph: "crop=100:100"), for: slow)
        #expect(session.videoFilter(for: slow)?.graph == "crop=100:100")
        await session.stop()
        try session.setVideoFilter(try VideoFilter(graph: "crop=400:100"), for: slow)
        #expect(session.videoFilter(for: slow)?.graph == "crop=400:100", "stopped: the next start checks it")
    }

    @Test func onlyAnInputsPicturesCanBeFiltered() throws {
        let session = CaptureSession(clock: ManualClock())
        let stranger = camera(.red, "not added")
        #expect(throws: ReelError.self) { try session.setVideoFilter(.look(.mono), for: stranger) }
        let tone = ToneSource()
        try session.addInput(tone)
        #expect(throws: ReelError.self) { try session.setVideoFilter(.look(.mono), for: tone) }
    }
}

/// A window made smaller while it is recorded: the red test pattern at 320x240 for its first
/// `shrinksAt` pictures, then 160x120 pictures of its red.
/// A camera slow to start: it says what pictures it will give, and gives none.
final class SilentStartVideoSource: CaptureSource, @unchecked Sendable {
    let name = "slow camera"
    var kind: SampleKind { .video }
    func prepare() throws -> SourceFormat { .video(size: PixelSize(width: 320, height: 240), pixelFormat: .yuv420p, frameRate: FrameRate(30)) }
    func start(_ context: SourceContext) throws {}
    func stop() {}
}

final class ShrinkingVideoSource: CaptureSource, @unchecked Sendable {
    let name = "shrinking window"
    var kind: SampleKind { .video }
    let shrinksAt: Int64
    private let pattern = TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(30), beeps: .never,
                                            background: .red, name: "shrinking window")
    private let smaller = FramePool(format: .yuv420p, size: PixelSize(width: 160, height: 120), capacity: 4)

    init(shrinksAt: Int64) { self.shrinksAt = shrinksAt }

    func prepare() throws -> SourceFormat { try pattern.prepare() }

    func start(_ context: SourceContext) throws {
        let (shrinksAt, smaller) = (self.shrinksAt, self.smaller)
        try pattern.start(SourceContext(id: context.id, clock: context.clock, origin: context.origin, deliver: { sample in
            guard case .video(let frame) = sample, frame.sequenceNumber >= shrinksAt,
                  let small = smaller.makeFrameWaiting(presentationTime: frame.presentationTime, sequenceNumber: frame.sequenceNumber) else {
                return context.deliver(sample)
            }
            small.fill(with: .red)
            context.deliver(.video(small))
        }, report: context.report))
    }

    func stop() { pattern.stop() }
}
