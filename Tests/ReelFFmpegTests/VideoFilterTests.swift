import Foundation
import Synchronization
import Testing
@testable import ReelFFmpeg
import ReelCore

/// Filters are checked when they are made, and name what is wrong.
@Suite struct VideoFilterTests {
    @Test func looksAreKnownByNameAndGraphsAreChecked() throws {
        #expect(try VideoFilter(parsing: "mono") == .look(.mono))
        #expect(try VideoFilter(parsing: " Comic ").look == .comic)
        let graph = try VideoFilter(parsing: "eq=contrast=1.3,boxblur=4")
        #expect(graph.look == nil)
        #expect(graph.description == "eq=contrast=1.3,boxblur=4")
        // Labelled chains and a filter that changes the size (scaled back) are fine.
        _ = try VideoFilter(graph: "split[a][b];[a][b]hstack")
        for look in VideoFilter.Look.allCases { _ = try VideoFilter(graph: look.graph) }
        // As ffmpeg's -vf takes them: a labelled last output, a trailing semicolon.
        #expect(try VideoFilter(graph: "hue=s=0[out]").description == "hue=s=0")
        #expect(try VideoFilter(graph: "[in]hue=s=0 [out] ").description == "[in]hue=s=0")
        #expect(try VideoFilter(graph: "hue=s=0;").description == "hue=s=0")
        #expect(try VideoFilter(graph: "split[a][b];[a]negate[c];[b][c]hstack[out]").description == "split[a][b];[a]negate[c];[b][c]hstack")
    }

    @Test(arguments: [
        ("nosuchfilter", "no filter named 'nosuchfilter'"),
        ("hue=s=0,blurr=3", "no filter named 'blurr'"),
        ("eq=contrast=abc", "'eq=contrast=abc' refused its options"),
        ("hue=s=0,boxblur=luma_radius=x", "'boxblur=luma_radius=x' cannot be set up"),
        ("hue=s=0,,eq", "empty filter"),
        ("mono,comic", "'mono' is one of reel's looks, which stand alone"),
        ("volume=2", "'volume' is a filter of sound"),
        ("nullsrc", "'nullsrc' makes pictures of its own"),
        ("[x]hue=s=0", "cannot be linked to the picture"),
        ("split=2[a][b]", "cannot be linked to the picture"),
        ("   ", "empty"),
    ])
    func aBadGraphIsRefusedNamingTheFilter(graph: String, message: String) {
        do {
            _ = try VideoFilter(parsing: graph)
            Issue.record("'\(graph)' was accepted")
        } catch let error as ReelError {
            #expect(error.code == .invalidConfiguration)
            #expect(error.message.contains(message), "\(error.message)")
        } catch {
            Issue.record("\(error)")
        }
    }

    /// A graph that fits no picture is refused before any source's picture is known: its words
    /// name both sizes tried, not the large one as if it were the source's (s46 #7: a 320x240
    /// source was told "tried on a yuv420p 3840x2160 picture").
    @Test(arguments: [("crop=iw+2:ih", "'crop=iw+2:ih' cannot be set up"),
                      ("crop=160:120:0:0,crop=200:200", "'crop=200:200' cannot be set up")])
    func aGraphThatFitsNoPictureSaysSo(graph: String, culprit: String) throws {
        let error = try #require(throws: ReelError.self) { try VideoFilter(parsing: graph) }
        #expect(error.message.contains(culprit), "\(error.message)")
        #expect(error.message.contains("pictures of 3840x2160 and of 64x48 (no size fits)"), "\(error.message)")
        #expect(!error.message.contains("a yuv420p 3840x2160 picture"), "\(error.message)")
    }

    /// A filter that makes pictures out of the sizes reel records is refused as `--size` is
    /// (s44 #8d: `scale=9000:9000` recorded 9000x9000); one that passes through such a size on
    /// the way to a recordable one is not.
    @Test func aFilterMakingASizeOutOfRangeIsRefused() throws {
        let size = PixelSize(width: 320, height: 240)
        let refused = #expect(throws: ReelError.self) {
            try [VideoFilter(graph: "scale=9000:9000")].checkedOutputSize(for: size, format: .yuv420p, of: "camera", so: "nothing was recorded")
        }
        #expect(refused?.message == "the filter 'scale=9000:9000' makes 9000x9000 pictures of camera, out of the sizes reel records (16x16 to 8192x8192): nothing was recorded",
                "\(String(describing: refused))")
        #expect(throws: ReelError.self) {
            try [VideoFilter(graph: "hue=s=0"), VideoFilter(graph: "scale=8:8")].checkedOutputSize(for: size, format: .yuv420p, of: "camera", so: "")
        }
        let made = try [VideoFilter(graph: "scale=9000:9000"), VideoFilter(graph: "scale=640:360")]
            .checkedOutputSize(for: size, format: .yuv420p, of: "camera", so: "")
        #expect(made == PixelSize(width: 640, height: 360))
    }

    @Test func filterNamesSkipLabelsAndQuotedText() {
        #expect(FilterGraphText.filterNames(in: "[in]split[a][b];[a]drawtext=text='x,y;z'[c];[b][c]overlay") == ["split", "drawtext", "overlay"])
        #expect(FilterGraphText.filterNames(in: "scale@one=10:10") == ["scale"])
    }

    @Test func monoTakesTheColourOutOfEachFormat() throws {
        let size = PixelSize(width: 64, height: 48)
        for format in [PixelFormat.yuv420p, .nv12, .bgra] {
            let pool = FramePool(format: format, size: size, capacity: 2)
            let frame = try #require(pool.makeFrame())
            frame.fill(with: YUVColor(red: 200, green: 40, blue: 40))
            let out = try #require(pool.makeFrame())
            let graph = try FilterGraph(graph: VideoFilter.look(.mono).graph, format: format, size: size)
            #expect(graph.filter(frame, into: out))
            switch format {
            case .bgra:
                out.withUnsafePlane(0) { bytes, _ in
                    let (b, g, r) = (Int(bytes[0]), Int(bytes[1]), Int(bytes[2]))
                    #expect(abs(r - g) <= 3 && abs(g - b) <= 3, "BGRA \(b) \(g) \(r)")
                }
            case .nv12:
                out.withUnsafePlane(1) { bytes, _ in #expect(abs(Int(bytes[0]) - 128) <= 2 && abs(Int(bytes[1]) - 128) <= 2) }
            default:
                out.withUnsafePlane(1) { bytes, _ in #expect(abs(Int(bytes[0]) - 128) <= 2) }
                out.withUnsafePlane(2) { bytes, _ in #expect(abs(Int(bytes[0]) - 128) <= 2) }
            }
        }
    }

    /// Which filters make each picture from that picture alone, which remember, and which are
    /// not one picture for each (refused: they change the frame rate, or lag).
    @Test func aFiltersTimingIsFoundWhenItIsMade() throws {
        for graph in ["hue=s=0", "eq=contrast=1.3", "boxblur=4", "crop=100:80", "negate", "transpose=1", "split[a][b];[a][b]hstack"] {
            #expect(try VideoFilter(graph: graph).timing == .pictureByPicture, "\(graph)")
        }
        for look in VideoFilter.Look.allCases { #expect(VideoFilter.look(look).worksPictureByPicture, "\(look)") }
        #expect(try VideoFilter(graph: "tblend=all_mode=average").timing == .withMemory(heldBack: 1))
        for graph in ["hqdn3d", "tmix=frames=3", "hue=H=t"] {
            #expect(try VideoFilter(graph: graph).timing == .withMemory(heldBack: 0), "\(graph)")
            #expect(try !VideoFilter(graph: graph).worksPictureByPicture, "\(graph)")
        }
        for (graph, message) in [("fps=10", "changes how many pictures there are (4 for 12 given)"), ("framestep=2", "(6 for 12 given)"),
                                 ("minterpolate=fps=60", "changes how many pictures there are"), ("yadif", "gives each picture late")] {
            let error = #expect(throws: ReelError.self, "\(graph)") { try VideoFilter(graph: graph) }
            #expect(error?.message.contains(message) == true, "\(graph): \(error?.message ?? "")")
            #expect(error?.hint == LibraryHint.frameRateSetsPictures)
        }
    }

    /// Through a filter that works picture by picture a picture keeps its identity (an
    /// unchanged picture stays unchanged, and the encoder may leave it out); through one with
    /// memory every picture is new.
    @Test func aPictureByPictureFilterCarriesThePicturesIdentity() throws {
        let size = PixelSize(width: 64, height: 48)
        let pool = FramePool(format: .yuv420p, size: size, capacity: 4)
        var frame = try #require(pool.makeFrame())
        frame.identity = PictureIdentity(id: 42, base: 41, changedRows: [0..<2])
        for (graph, carried) in [("hue=s=0", true), ("hqdn3d", false)] {
            let control = VideoFilterControl()
            control.setFilter(try VideoFilter(graph: graph))
            let stage = FilterStage(control: control, realTime: false)
            let out = try #require(stage.apply(to: frame))
            #expect((out.identity == frame.identity) == carried, "\(graph): \(String(describing: out.identity))")
        }
    }

    /// A filter that no longer fits the pictures (they became smaller than its crop: a window
    /// made smaller) fails the stage: said once, naming the filter, the source and the size,
    /// and from then on no picture leaves the stage, not even one it would fit. Before, the
    /// pictures it could not filter left it unfiltered.
    @Test func aStageWhoseFilterFailsGivesNoPictureFromThenOn() throws {
        let big = try #require(FramePool(format: .yuv420p, size: PixelSize(width: 320, height: 240), capacity: 2).makeFrame())
        let small = try #require(FramePool(format: .yuv420p, size: PixelSize(width: 64, height: 48), capacity: 2).makeFrame())
        let control = VideoFilterControl()
        control.setFilter(try VideoFilter(graph: "crop=100:100:0:0"))
        let said = Mutex<[String]>([])
        let stage = FilterStage(control: control, realTime: false, source: "window") { _, error in said.withLock { $0.append(error.message) } }
        #expect(stage.apply(to: big)?.size == PixelSize(width: 100, height: 100))
        #expect(!stage.hasFailed)
        #expect(stage.apply(to: small) == nil, "not let through unfiltered")
        #expect(stage.hasFailed)
        #expect(stage.apply(to: big) == nil, "the source's pictures have ended")
        #expect(stage.apply(to: small) == nil)
        #expect(said.withLock { $0 } == ["the filter 'crop=100:100:0:0' cannot be applied to the 64x48 pictures of window (Invalid argument): "
                                         + "its pictures are no longer recorded, rather than recorded unfiltered"], "said once")
    }

    /// A change of filters checked on the pictures of the moment: one that cannot apply to them
    /// is refused, naming the filter, the pictures' size and the source, and the stage goes on
    /// through the filters it had (before, it was taken and the next picture failed the stage,
    /// ending the source's pictures); one that can is taken. Before any picture there is
    /// nothing to check it on (the session's start checks it).
    @Test func aChangeThatCannotApplyToThePicturesOfTheMomentIsRefused() throws {
        let frame = try #require(FramePool(format: .yuv420p, size: PixelSize(width: 320, height: 240), capacity: 2).makeFrame())
        let control = VideoFilterControl()
        let crop = try VideoFilter(graph: "crop=100:100:0:0")
        try control.setCheckedFilters([crop], of: "window")
        let stage = FilterStage(control: control, realTime: false, source: "window")
        #expect(stage.apply(to: frame)?.size == PixelSize(width: 100, height: 100))
        let tooLarge = try VideoFilter(graph: "crop=400:100")
        let refused = #expect(throws: ReelError.self) { try control.setCheckedFilters([.look(.mono), tooLarge], of: "window") }
        #expect(refused?.message.hasPrefix("the filter 'crop=400:100' cannot be applied to the 320x240 pictures the filters before it make of window (") == true,
                "\(String(describing: refused))")
        #expect(refused?.message.hasSuffix("): nothing was changed: the pictures go on through the filters they had") == true, "\(String(describing: refused))")
        #expect(control.filters == [crop])
        #expect(stage.apply(to: frame)?.size == PixelSize(width: 100, height: 100))
        #expect(!stage.hasFailed)
        try control.setCheckedFilters([.look(.mono)], of: "window")
        #expect(stage.apply(to: frame)?.size == PixelSize(width: 320, height: 240))
        #expect(!stage.hasFailed)
        // Once the session has stopped, the next start's pictures decide (they may be larger).
        control.forgetPictures()
        try control.setCheckedFilters([tooLarge], of: "window")
        #expect(control.filters == [tooLarge])
    }

    /// libavfilter says what size a filter makes once its graph is set up: a scale, crop or pad
    /// its own, a filter that keeps the size the picture's, an odd size as it is.
    @Test func aFiltersOutputSizeIsWhatLibavfilterMakes() throws {
        let size = PixelSize(width: 640, height: 360)
        for (graph, made) in [("scale=320:240", PixelSize(width: 320, height: 240)), ("crop=320:180:0:0", PixelSize(width: 320, height: 180)),
                              ("pad=iw+20:ih+40:10:20", PixelSize(width: 660, height: 400)), ("hue=s=0", size),
                              ("scale=iw/2:-2,hue=s=0", PixelSize(width: 320, height: 180)), ("transpose=1", PixelSize(width: 360, height: 640))] {
            #expect(try VideoFilter(graph: graph).outputSize(for: size) == made, "\(graph)")
            #expect(try VideoFilter(graph: graph).outputSize(for: size, format: .bgra) == made, "\(graph) (BGRA)")
        }
        for look in VideoFilter.Look.allCases { #expect(try VideoFilter.look(look).outputSize(for: size) == size, "\(look)") }
        // An odd size is what the filter makes (the encoder records its even part).
        #expect(try VideoFilter(graph: "scale=321:241").outputSize(for: size, format: .bgra) == PixelSize(width: 321, height: 241))
        #expect(try VideoFilter(graph: "scale=321:241").outputSize(for: size) == PixelSize(width: 321, height: 241))
        // A crop larger than the picture cannot be set up; in a chain it is passed over by the
        // size that is only said, and refused, naming it, the source and the size, by the size
        // a session starts with (nothing is recorded then).
        #expect(throws: ReelError.self) { try VideoFilter(graph: "crop=800:600").outputSize(for: size) }
        #expect([try VideoFilter(graph: "crop=800:600"), try VideoFilter(graph: "scale=320:240")].outputSize(for: size, format: .yuv420p)
                == PixelSize(width: 320, height: 240))
        #expect([VideoFilter]().outputSize(for: size, format: .yuv420p) == size)
        let refused = #expect(throws: ReelError.self) {
            try [try VideoFilter(graph: "scale=320:240"), try VideoFilter(graph: "crop=400:300")]
                .checkedOutputSize(for: size, format: .yuv420p, of: "camera", so: "nothing was recorded")
        }
        #expect(refused?.message == "the filter 'crop=400:300' cannot be applied to the 320x240 pictures the filters before it make of camera (Invalid argument): nothing was recorded",
                "\(String(describing: refused))")
        #expect(try [try VideoFilter(graph: "scale=320:240")].checkedOutputSize(for: size, format: .bgra, of: "camera", so: "")
                == PixelSize(width: 320, height: 240))
    }

    /// A stage keeps to the size it started with: a filter's pictures of another size are
    /// fitted into it, their aspect kept (said once for the filter), and with no filter the
    /// picture is fitted too; without sizes to keep to, pictures leave at the size made.
    @Test func aStageFitsPicturesOfAnotherSizeIntoItsOwnAndSaysSo() throws {
        let size = PixelSize(width: 320, height: 240)
        let pool = FramePool(format: .yuv420p, size: size, capacity: 4)
        var frame = try #require(pool.makeFrame())
        frame.fill(with: YUVColor(y: 200, cb: 128, cr: 128))
        frame.identity = PictureIdentity(id: 7, base: 6, changedRows: [10..<20])
        let control = VideoFilterControl()
        control.setFilter(try VideoFilter(graph: "scale=160:120"))
        let free = FilterStage(control: control, realTime: false)
        let scaled = try #require(free.apply(to: frame))
        #expect(scaled.size == PixelSize(width: 160, height: 120))
        #expect(scaled.identity == PictureIdentity(id: 7, base: 6, changedRows: [0..<120]), "rows no longer line up")

        let said = Mutex<[String]>([])
        let kept = FilterStage(control: control, realTime: false, sizes: (size, PixelSize(width: 160, height: 120))) { _, _ in } resized: { filter, made, fitted in
            said.withLock { $0.append("\(filter) \(made) \(fitted)") }
        }
        #expect(try #require(kept.apply(to: frame)).size == PixelSize(width: 160, height: 120))
        #expect(said.withLock { $0 }.isEmpty, "the size it started with is the filter's own")
        // A crop to a tall half, set later: fitted into 160x120 with bars left and right.
        control.setFilter(try VideoFilter(graph: "crop=160:240:0:0"))
        let fitted = try #require(kept.apply(to: frame))
        #expect(fitted.size == PixelSize(width: 160, height: 120))
        fitted.withUnsafePlane(0) { bytes, stride in
            #expect(bytes[60 * stride + 4] == 16, "a black bar on the left")
            #expect(bytes[60 * stride + 80] > 190, "the picture in the middle")
        }
        _ = try #require(kept.apply(to: frame))
        #expect(said.withLock { $0 } == ["crop=160:240:0:0 160x240 160x120"], "said once")
        // No filter: the source's picture is fitted into the size too.
        control.setFilter(nil)
        #expect(try #require(kept.apply(to: frame)).size == PixelSize(width: 160, height: 120))
        #expect(said.withLock { $0 }.count == 1)
    }

    @Test func aScheduledChangeTakesEffectAtItsTime() {
        let control = VideoFilterControl()
        control.setFilter(.look(.mono), at: MediaTime(value: 1, timescale: 1))
        #expect(control.filters(at: MediaTime(value: 29, timescale: 30)).isEmpty)
        #expect(control.filters(at: MediaTime(value: 30, timescale: 30)) == [.look(.mono)])
        control.setFilter(nil)
        #expect(control.filters(at: MediaTime(value: 31, timescale: 30)).isEmpty)
    }
}
