internal import CFFmpeg
import Foundation
import ReelCore

/// A picture filter: one of the named looks a camera app offers, or any libavfilter graph.
///
/// ```swift
/// let mono = VideoFilter.look(.mono)
/// let custom = try VideoFilter(parsing: "eq=contrast=1.3,boxblur=4")
/// try session.setVideoFilter(custom, for: camera)
/// ```
///
/// A filter made with ``init(parsing:)`` or ``init(graph:)`` has been checked: every filter it
/// names exists in libavfilter and accepts its options, so a bad graph is refused when it is
/// configured, not in the middle of a recording. A filter keeps the picture's pixel format
/// (its output is converted back) but may change its size (`scale=1280:720`, `crop=640:360:0:0`,
/// `pad=…`): a filter set before a session starts sets the size its outputs see, so a
/// recording takes the size the filter makes (4:2:0 video needs an even width and height: of an
/// odd size the even part is recorded, and ``SessionEvent/filterResized(source:filter:size:recorded:resizing:)``
/// says so). A recorder with a size of its own (``VideoSettings/size``) scales the filter's
/// pictures to it, and fits them in with their aspect kept and black bars when their shape is
/// another (a 4:3 crop recorded at 1280x720), rather than stretch them: said by the same event,
/// which names the size the file has. Once the session runs, the size stays: the pictures of a filter set then that makes
/// another size are fitted into it, their aspect kept, and that is said by the same event. A
/// filter must give one picture for each picture it is given, in its turn: one that changes the frame rate (`fps`, `framestep`,
/// `select`, `minterpolate`) or gives pictures late is refused when it is made (the recording's
/// frame rate says how many pictures there are). One that needs a few pictures before its first
/// (`tblend`) records those black, never unfiltered. A filter that cannot be applied to a
/// source's pictures (a crop larger than they are) lets none of them through: a session whose
/// source's first pictures it cannot filter does not start, and one whose pictures change so
/// that it no longer can (a window resized) stops recording that source's pictures (see
/// ``SessionEvent/filterFailed(source:filter:error:)``). Whether a filter makes each picture from that
/// picture alone (``worksPictureByPicture``) decides whether frame modes that skip unchanged
/// pictures keep doing so through it.
public struct VideoFilter: Sendable, Hashable, CustomStringConvertible {
    /// The named looks, after a camera app's filter toggles.
    public enum Look: String, Sendable, CaseIterable {
        /// Black and white: the colour taken out, the brightness kept.
        case mono
        /// A comic-book look: flat, posterised brightness, stronger colour and dark inked edges.
        case comic
        /// A crystallise-like look: the picture broken into small cells of one colour each.
        case crystal

        /// The libavfilter graph that makes the look.
        var graph: String {
            switch self {
            case .mono:
                return "hue=s=0"
            case .comic:
                return "format=yuv420p,split[reel_fill][reel_ink];"
                    + "[reel_fill]lutyuv=y='clip(trunc(val/40)*40+24,16,235)',eq=saturation=1.6[reel_flat];"
                    + "[reel_ink]format=gray,edgedetect=low=0.08:high=0.2,negate,format=yuv420p[reel_lines];"
                    + "[reel_flat][reel_lines]blend=c0_mode=multiply:c1_mode=normal:c2_mode=normal"
            case .crystal:
                return "pixelize=w=14:h=14:mode=avg,eq=saturation=1.2"
            }
        }
    }

    /// The libavfilter graph description this filter runs.
    public let graph: String
    /// The named look, when the filter is one.
    public let look: Look?
    /// How the filter treats a stream of pictures (found when it is made).
    package let timing: FilterTiming

    /// Whether the filter makes each picture from that picture alone, one for one and at once:
    /// a picture that did not change stays unchanged through it, so ``FrameMode/variable`` and
    /// ``FrameMode/content`` still leave out unchanged pictures. A filter that is not (one
    /// that blends pictures over time, depends on the time, or holds pictures back) makes
    /// every picture a new one: with it those frame modes record every slot.
    public var worksPictureByPicture: Bool { timing == .pictureByPicture }

    /// A named look.
    public static func look(_ look: Look) -> VideoFilter { VideoFilter(graph: look.graph, look: look) }

    private init(graph: String, look: Look?) {
        self.graph = graph
        self.look = look
        timing = FilterProbe.timing(of: graph)
    }

    /// A filter from a libavfilter graph description such as `hue=s=0` or
    /// `eq=contrast=1.3,boxblur=10`, checked now.
    ///
    /// - Throws: ``ReelError/Code/invalidConfiguration`` naming the filter that does not exist
    ///   or refuses its options; ``ReelError/Code/unsupportedFormat`` when libavfilter cannot
    ///   be loaded (it is loaded at the first filter).
    public init(graph: String) throws {
        let trimmed = FilterGraphText.withOpenEnds(graph)
        guard !trimmed.isEmpty else {
            throw ReelError(.invalidConfiguration, "the filter is empty", hint: "name a look (\(Self.lookNames)) or give a libavfilter graph such as hue=s=0")
        }
        try Self.check(trimmed)
        self.init(graph: trimmed, look: nil)
        if case .notOneForOne = timing {
            throw ReelError(.invalidConfiguration, "the filter '\(trimmed)' does not give one picture for each it is given: \(timing.explanation)",
                            hint: LibraryHint.frameRateSetsPictures)
        }
    }

    /// A filter from a look's name (`mono`, `comic`, `crystal`) or a libavfilter graph.
    ///
    /// - Throws: ``ReelError/Code/invalidConfiguration`` naming the bad filter;
    ///   ``ReelError/Code/unsupportedFormat`` when libavfilter cannot be loaded.
    public init(parsing text: String) throws {
        if let look = Look(rawValue: text.trimmingCharacters(in: .whitespaces).lowercased()) {
            self = .look(look)
        } else {
            try self.init(graph: text)
        }
    }

    /// The look's name, or the graph.
    public var description: String { look?.rawValue ?? graph }

    /// The size of the pictures this filter makes of `format` pictures of `size`, as libavfilter
    /// says once the graph is set up: `size` for a filter that keeps it (the looks, `hue`,
    /// `eq`), the new size for `scale`, `crop`, `pad`, `transpose`.
    ///
    /// - Throws: ``ReelError/Code/invalidConfiguration`` when the filter cannot be set up for
    ///   such pictures (a crop larger than them, say).
    package func outputSize(for size: PixelSize, format: PixelFormat = .yuv420p) throws -> PixelSize {
        try FilterGraph(graph: graph, format: format, size: size, keepsSize: false).outputSize
    }

    /// The looks' names, for messages.
    static var lookNames: String { Look.allCases.map(\.rawValue).joined(separator: ", ") }

    /// Builds the graph once on a small picture, so that a filter that does not exist, a
    /// syntax error or an option a filter refuses is found now and named.
    private static func check(_ graph: String) throws {
        let avfilter = try LibAVFilter.load()
        for name in FilterGraphText.filterNames(in: graph) {
            if let look = Look(rawValue: name.lowercased()), avfilter.avfilter_get_by_name(name) == nil {
                throw ReelError(.invalidConfiguration, "'\(look.rawValue)' is one of reel's looks, which stand alone: it cannot be part of a graph (in '\(graph)')",
                                hint: "\(LibraryHint.giveTheLookAlone(look.rawValue)): \(look.graph)")
            }
            guard !name.isEmpty, let filter = avfilter.avfilter_get_by_name(name) else { continue }
            // A filter of sound, or one that makes pictures of its own, cannot filter a picture.
            let inputs = avfilter.avfilter_filter_pad_count(filter, 0)
            if inputs > 0, avfilter.avfilter_pad_get_type(filter.pointee.inputs, 0) != AVMEDIA_TYPE_VIDEO {
                throw ReelError(.invalidConfiguration, "'\(name)' is a filter of sound, not of pictures (in '\(graph)')",
                                hint: LibraryHint.videoFiltersOnly)
            }
            if inputs == 0, filter.pointee.flags & AVFILTER_FLAG_DYNAMIC_INPUTS == 0 {
                throw ReelError(.invalidConfiguration, "'\(name)' makes pictures of its own and takes none: it cannot filter the recorded picture (in '\(graph)')",
                                hint: "a graph filters the picture it is given; `ffmpeg -filters` marks video filters V->V")
            }
        }
        for name in FilterGraphText.filterNames(in: graph) where name.isEmpty || avfilter.avfilter_get_by_name(name) == nil {
            let known = Look.allCases.map(\.rawValue)
            throw ReelError(.invalidConfiguration,
                            name.isEmpty ? "the filter graph '\(graph)' has an empty filter (two commas or semicolons in a row, or a comma at an end)"
                                         : "there is no filter named '\(name)' in libavfilter (in '\(graph)')",
                            hint: "the looks are \(known.joined(separator: ", ")); `ffmpeg -filters` lists libavfilter's filters")
        }
        // On a large picture, so that a crop meant for a real source is not refused, and else on
        // a small one, so that a pad to a size of its own is not (`pad=400:300` was refused: it
        // cannot pad 3840x2160 to less); the source's own pictures are tried when it starts (a
        // filter that cannot apply to them fails the start, and nothing is recorded).
        let large = PixelSize(width: 3840, height: 2160), small = PixelSize(width: 64, height: 48)
        do {
            _ = try FilterGraph(graph: graph, format: .yuv420p, size: large)
        } catch var error as ReelError {
            guard (try? FilterGraph(graph: graph, format: .yuv420p, size: small)) == nil else { return }
            // No source's picture is known: name both sizes tried (a 320x240 source was told "3840x2160").
            let sizes = "pictures of \(large) and of \(small) (no size fits)"
            error.message = error.message.replacingOccurrences(of: "a yuv420p \(large) picture", with: sizes).replacingOccurrences(of: "yuv420p \(large) pictures", with: sizes)
            throw error
        }
    }
}

/// Reading a filter graph description as libavfilter's parser will: the filters' names, in
/// order, and each filter's own text, so that an error can name the one at fault.
enum FilterGraphText {
    /// `graph` as Reel joins it to its picture: trimmed, without the semicolons that may end
    /// a graph, and without a label on its last output (`hue=s=0[out]`), which is Reel's to
    /// link to what follows. A label used elsewhere in the graph stays (the graph is then
    /// refused, as it cannot end there).
    static func withOpenEnds(_ graph: String) -> String {
        var text = graph.trimmingCharacters(in: .whitespacesAndNewlines)
        while text.hasSuffix(";") { text = String(text.dropLast()).trimmingCharacters(in: .whitespacesAndNewlines) }
        guard text.hasSuffix("]"), let open = text.lastIndex(of: "["), !text[open...].dropFirst().contains("[") else { return text }
        let label = text[open...]
        let before = text[..<open]
        // The label's name must appear nowhere else, and what precedes it must be a filter.
        guard !before.contains(label), let last = before.last, last != "]", last != ",", last != ";" else { return text }
        return String(before).trimmingCharacters(in: .whitespaces)
    }

    /// Each filter's text (`name=options`), in the order libavfilter creates them, without the
    /// pad labels around it. Quoted text (`'a,b'`) and backslash escapes are kept whole.
    static func filters(in graph: String) -> [String] {
        var filters: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        var inLabel = false
        for ch in graph {
            if escaped { current.append(ch); escaped = false; continue }
            if ch == "\\" { current.append(ch); escaped = true; continue }
            if ch == "'" { quoted.toggle(); current.append(ch); continue }
            if quoted { current.append(ch); continue }
            if inLabel { if ch == "]" { inLabel = false }; continue }
            switch ch {
            case "[": inLabel = true
            case ",", ";":
                filters.append(current.trimmingCharacters(in: .whitespacesAndNewlines))
                current = ""
            default: current.append(ch)
            }
        }
        filters.append(current.trimmingCharacters(in: .whitespacesAndNewlines))
        return filters
    }

    /// The pad labels of `graph` that appear once only (so are left open), other than `in`.
    static func unmatchedLabels(in graph: String) -> [String] {
        var counts: [String: Int] = [:]
        var order: [String] = []
        var label: String?
        var quoted = false
        for ch in graph {
            if ch == "'" { quoted.toggle() }
            if quoted { continue }
            if ch == "[" { label = ""; continue }
            if ch == "]", let done = label {
                if counts[done] == nil { order.append(done) }
                counts[done, default: 0] += 1
                label = nil
                continue
            }
            label?.append(ch)
        }
        return order.filter { counts[$0] == 1 && $0 != "in" }
    }

    /// The filters' names (before `=` and any `@instance`).
    static func filterNames(in graph: String) -> [String] {
        filters(in: graph).map { text in
            let name = text.prefix { $0 != "=" && $0 != "@" }
            return name.trimmingCharacters(in: .whitespaces)
        }
    }
}

/// A configured libavfilter graph for pictures of one format and size: a picture in, the
/// filtered picture out, of the same format and of the same size (``keepsSize``) or of the
/// size the filter makes (``outputSize``). Used from one thread at a time.
final class FilterGraph {
    let graphText: String
    /// The pictures' format (`nil` for a layout that is not a ``PixelFormat``: a live frame's).
    let format: PixelFormat?
    /// libavfilter's name for the pictures' format.
    let pixelFormat: AVPixelFormat
    /// The size of the pictures put in.
    let size: PixelSize
    /// Whether the filtered picture is scaled back to ``size`` when the filter changes it.
    let keepsSize: Bool
    /// The size of the pictures taken out: ``size`` when the graph keeps it, otherwise what
    /// the filter makes of a picture of ``size`` (libavfilter says once the graph is set up).
    private(set) var outputSize: PixelSize
    /// libavfilter's functions (loaded by the first graph made).
    private let avfilter: LibAVFilter
    private var graph: UnsafeMutablePointer<AVFilterGraph>?
    let source: UnsafeMutablePointer<AVFilterContext>
    let sink: UnsafeMutablePointer<AVFilterContext>
    let input: UnsafeMutablePointer<AVFrame>
    let output: UnsafeMutablePointer<AVFrame>

    /// Builds and configures `graph` for `format` pictures of `size`.
    ///
    /// - Throws: ``ReelError/Code/invalidConfiguration`` naming the filter libavfilter refused;
    ///   ``ReelError/Code/unsupportedFormat`` when libavfilter cannot be loaded.
    convenience init(graph text: String, format: PixelFormat, size: PixelSize, keepsSize: Bool = true) throws {
        try self.init(graph: text, pixelFormat: VideoEncoder.avPixelFormat(format), format: format, size: size, keepsSize: keepsSize)
    }

    /// Builds and configures `graph` for pictures of libavfilter's `pixelFormat` (`format`,
    /// when it is one of Reel's) and `size`; with `keepsSize` its pictures are scaled back to
    /// `size` if the filter changes it, otherwise they come out at the size the filter makes.
    init(graph text: String, pixelFormat: AVPixelFormat, format: PixelFormat?, size: PixelSize, keepsSize: Bool = true) throws {
        FFmpeg.silenceLibraryLogging()
        graphText = text
        self.format = format
        self.pixelFormat = pixelFormat
        self.size = size
        self.keepsSize = keepsSize
        outputSize = size
        let avfilter = try LibAVFilter.load()
        self.avfilter = avfilter
        guard var graph = avfilter.avfilter_graph_alloc(), let input = av_frame_alloc(), let output = av_frame_alloc() else {
            throw ReelError(.encodingFailed, "cannot allocate a filter graph: out of memory")
        }
        self.graph = graph
        self.input = input
        self.output = output
        graph.pointee.nb_threads = 1
        let formatName = String(cString: av_get_pix_fmt_name(pixelFormat))
        let sourceArgs = "video_size=\(size.width)x\(size.height):pix_fmt=\(pixelFormat.rawValue):time_base=1/1000000:pixel_aspect=1/1"
        var src: UnsafeMutablePointer<AVFilterContext>?
        var snk: UnsafeMutablePointer<AVFilterContext>?
        var status = avfilter.avfilter_graph_create_filter(&src, avfilter.avfilter_get_by_name("buffer"), "reel_in", sourceArgs, nil, graph)
        if status >= 0 { status = avfilter.avfilter_graph_create_filter(&snk, avfilter.avfilter_get_by_name("buffersink"), "reel_out", nil, nil, graph) }
        guard status >= 0, let src, let snk else {
            Self.free(&graph, input, output, avfilter)
            self.graph = nil
            throw ReelError(.encodingFailed, "libavfilter cannot make a filter graph's ends: \(FFmpeg.describe(status))")
        }
        source = src
        sink = snk
        // The graph's unlabelled input is fed by `source`; its output is converted back to the
        // picture's format (and, when the size is kept, scaled back to the picture's size: no
        // work when the filter kept them) before `sink`.
        let described = keepsSize ? "\(text),scale=w=\(size.width):h=\(size.height),format=\(formatName)" : "\(text),format=\(formatName)"
        var outputs = avfilter.avfilter_inout_alloc()
        var inputs = avfilter.avfilter_inout_alloc()
        defer {
            avfilter.avfilter_inout_free(&outputs)
            avfilter.avfilter_inout_free(&inputs)
        }
        guard let o = outputs, let i = inputs else {
            Self.free(&graph, input, output, avfilter)
            self.graph = nil
            throw ReelError(.encodingFailed, "cannot allocate a filter graph: out of memory")
        }
        o.pointee.name = av_strdup("in")
        o.pointee.filter_ctx = src
        o.pointee.pad_idx = 0
        o.pointee.next = nil
        i.pointee.name = av_strdup("out")
        i.pointee.filter_ctx = snk
        i.pointee.pad_idx = 0
        i.pointee.next = nil
        status = avfilter.avfilter_graph_parse_ptr(graph, described, &inputs, &outputs, nil)
        if status < 0 {
            Self.free(&graph, input, output, avfilter)
            self.graph = nil
            if !FilterGraphText.unmatchedLabels(in: text).isEmpty {
                throw ReelError(.invalidConfiguration, "the filter graph '\(text)' cannot be linked to the picture: \(FFmpeg.describe(status))",
                                hint: "a graph needs one unlabelled input and one unlabelled output (labels only between its own filters)", averror: status)
            }
            if let culprit = Self.filterRefusingItsOptions(in: text) {
                throw ReelError(.invalidConfiguration, "the filter '\(culprit)' refused its options: \(FFmpeg.describe(status)) (in '\(text)')",
                                hint: "`ffmpeg -h filter=\(FilterGraphText.filterNames(in: culprit).first ?? "")` lists its options", averror: status)
            }
            throw ReelError(.invalidConfiguration, "libavfilter cannot read the filter graph '\(text)': \(FFmpeg.describe(status))",
                            hint: "filters are separated by ',', chains by ';'; pads are named in [brackets]", averror: status)
        }
        status = avfilter.avfilter_graph_config(graph, nil)
        if status < 0 {
            Self.free(&graph, input, output, avfilter)
            self.graph = nil
            // In one chain, the first filter whose prefix of the chain cannot be set up is
            // the one at fault.
            let filters = FilterGraphText.filters(in: text)
            // A pad named once only is left open, and Reel links one open input and one open
            // output, unlabelled (or `[in]`).
            if !FilterGraphText.unmatchedLabels(in: text).isEmpty {
                throw ReelError(.invalidConfiguration, "the filter graph '\(text)' cannot be linked to the picture: \(FFmpeg.describe(status))",
                                hint: "a graph needs one unlabelled input and one unlabelled output (labels only between its own filters)", averror: status)
            }
            if !text.contains(";"), filters.count > 1 {
                let firstFailing = (1..<filters.count).first { n in
                    (try? FilterGraph(graph: filters[0..<n].joined(separator: ","), pixelFormat: pixelFormat, format: format, size: size)) == nil
                }
                let culprit = filters[(firstFailing ?? filters.count) - 1]
                throw ReelError(.invalidConfiguration, "the filter '\(culprit)' cannot be set up: \(FFmpeg.describe(status)) (in '\(text)', tried on a \(formatName) \(size) picture)",
                                hint: "`ffmpeg -h filter=\(FilterGraphText.filterNames(in: culprit).first ?? "")` lists its options", averror: status)
            }
            if filters.count == 1 {
                throw ReelError(.invalidConfiguration, "the filter '\(text)' cannot be set up: \(FFmpeg.describe(status)) (tried on a \(formatName) \(size) picture)",
                                hint: "`ffmpeg -h filter=\(FilterGraphText.filterNames(in: text).first ?? "")` lists its options", averror: status)
            }
            throw ReelError(.invalidConfiguration, "the filter graph '\(text)' cannot be set up for \(formatName) \(size) pictures: \(FFmpeg.describe(status))",
                            hint: "a graph needs one unlabelled input and one unlabelled output", averror: status)
        }
        outputSize = PixelSize(width: Int(avfilter.av_buffersink_get_w(sink)), height: Int(avfilter.av_buffersink_get_h(sink)))
    }

    /// The first filter of `graph` that libavfilter will not create with its options, tried
    /// one at a time (the parser frees what it made when one fails, so it cannot tell).
    private static func filterRefusingItsOptions(in graph: String) -> String? {
        guard let avfilter = try? LibAVFilter.load(), let scratch = avfilter.avfilter_graph_alloc() else { return nil }
        defer { var g: UnsafeMutablePointer<AVFilterGraph>? = scratch; avfilter.avfilter_graph_free(&g) }
        for text in FilterGraphText.filters(in: graph) {
            let name = FilterGraphText.filterNames(in: text).first ?? ""
            guard let filter = avfilter.avfilter_get_by_name(name) else { return text }
            var options: String? = nil
            if let equals = text.firstIndex(of: "=") { options = String(text[text.index(after: equals)...]) }
            var context: UnsafeMutablePointer<AVFilterContext>?
            if avfilter.avfilter_graph_create_filter(&context, filter, nil, options, nil, scratch) < 0 { return text }
        }
        return nil
    }

    deinit {
        if var graph { Self.free(&graph, input, output, avfilter) }
    }

    private static func free(_ graph: inout UnsafeMutablePointer<AVFilterGraph>, _ input: UnsafeMutablePointer<AVFrame>, _ output: UnsafeMutablePointer<AVFrame>,
                             _ avfilter: LibAVFilter) {
        var g: UnsafeMutablePointer<AVFilterGraph>? = graph
        avfilter.avfilter_graph_free(&g)
        var i: UnsafeMutablePointer<AVFrame>? = input
        av_frame_free(&i)
        var o: UnsafeMutablePointer<AVFrame>? = output
        av_frame_free(&o)
    }

    /// The most pictures taken out of the graph for one put in.
    static let maximumPicturesPerPicture = 8

    /// Filters `frame` and writes the result into `destination` (a frame of the graph's format
    /// and ``outputSize``). Returns `false` when the graph gave no picture for this one (it holds
    /// pictures back, or failed): `destination` is then untouched.
    func filter(_ frame: VideoFrame, into destination: VideoFrame) -> Bool {
        filterCounting(frame, into: destination).pictures > 0
    }

    /// ``filter(_:into:)`` that says how many pictures the graph gave for `frame` (the newest
    /// is in `destination`) and the time the newest carries (a filter that lags gives an
    /// earlier picture's).
    func filterCounting(_ frame: VideoFrame, into destination: VideoFrame) -> (pictures: Int, time: MediaTime?) {
        guard let format, frame.format == format, frame.size == size, destination.format == format, destination.size == outputSize else { return (0, nil) }
        let planes = (0..<format.planeCount).map { plane in
            frame.withUnsafePlane(plane) { bytes, stride in (bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), stride) }
        }
        return withExtendedLifetime(frame) {
            filterCounting(planes: planes, time: frame.presentationTime) { plane, rows in
                guard plane < format.planeCount else { return }
                let rowBytes = format.rowBytes(plane: plane, width: outputSize.width)
                destination.withUnsafeMutablePlane(plane) { bytes, stride in
                    guard let to = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
                    for row in 0..<format.rows(plane: plane, height: outputSize.height) {
                        (to + row * stride).update(from: rows(row), count: rowBytes)
                    }
                }
            }
        }
    }

    /// Filters the picture whose planes are `planes` (start and bytes per row, in the graph's
    /// layout) at `time`; for the picture the graph gives, calls `deliver` for each of its
    /// planes with a function that gives the start of a row. Returns `false` when the graph
    /// gave no picture for this one (it holds pictures back, or failed).
    func filter(planes: [(UnsafePointer<UInt8>?, Int)], time: MediaTime,
                deliver: (_ plane: Int, _ row: (Int) -> UnsafePointer<UInt8>) -> Void) -> Bool {
        filterCounting(planes: planes, time: time, deliver: deliver).pictures > 0
    }

    /// ``filter(planes:time:deliver:)`` that says how many pictures the graph gave (`deliver`
    /// is called for each) and the time the newest carries.
    func filterCounting(planes: [(UnsafePointer<UInt8>?, Int)], time: MediaTime,
                        deliver: (_ plane: Int, _ row: (Int) -> UnsafePointer<UInt8>) -> Void) -> (pictures: Int, time: MediaTime?) {
        av_frame_unref(input)
        input.pointee.format = pixelFormat.rawValue
        input.pointee.width = Int32(size.width)
        input.pointee.height = Int32(size.height)
        input.pointee.pts = time.convertedValue(to: 1_000_000)
        withUnsafeMutablePointer(to: &input.pointee.data) { data in
            data.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { pointers in
                withUnsafeMutablePointer(to: &input.pointee.linesize) { lines in
                    lines.withMemoryRebound(to: Int32.self, capacity: 8) { strides in
                        for (plane, (start, stride)) in planes.enumerated() where plane < 8 {
                            pointers[plane] = UnsafeMutablePointer(mutating: start)
                            strides[plane] = Int32(stride)
                        }
                    }
                }
            }
        }
        // KEEP_REF: libavfilter copies a picture that is not its own, so nothing keeps a
        // pointer into the caller's planes once this returns.
        let pushed = avfilter.av_buffersrc_add_frame_flags(source, input, Int32(AV_BUFFERSRC_FLAG_KEEP_REF))
        av_frame_unref(input)
        guard pushed >= 0 else { return (0, nil) }
        var got = 0
        var newest: MediaTime?
        // A filter may make several pictures of one (or, like `loop`, without end): the newest
        // of a few is kept, so a picture's work is bounded.
        for _ in 0..<Self.maximumPicturesPerPicture {
            av_frame_unref(output)
            guard avfilter.av_buffersink_get_frame(sink, output) >= 0 else { break }
            guard output.pointee.width == Int32(outputSize.width), output.pointee.height == Int32(outputSize.height),
                  output.pointee.format == pixelFormat.rawValue else { continue }
            withUnsafePointer(to: &output.pointee.data) { data in
                data.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { pointers in
                    withUnsafePointer(to: &output.pointee.linesize) { lines in
                        lines.withMemoryRebound(to: Int32.self, capacity: 8) { strides in
                            for plane in 0..<planes.count {
                                guard let start = pointers[plane] else { continue }
                                let stride = Int(strides[plane])
                                deliver(plane) { UnsafePointer(start + $0 * stride) }
                            }
                        }
                    }
                }
            }
            got += 1
            newest = output.pointee.pts == FFmpeg.noPTS ? nil : MediaTime(value: output.pointee.pts, timescale: 1_000_000)
        }
        av_frame_unref(output)
        return (got, newest)
    }
}
