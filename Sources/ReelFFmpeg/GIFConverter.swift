import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

/// Makes the video of a recording into an animated GIF, in two passes over it: the first fits
/// one palette of 256 colours to every picture (libavfilter's `palettegen`), the second maps
/// each picture onto it with dithering (`paletteuse`), redrawing only the part that changed
/// (so a still screen does not shimmer; what changed by no more than the intermediate's coding
/// noise is held as it was, ``GIFStillHold``), and writes the GIF, each picture as the
/// rectangle that changed with the rest transparent. Each picture keeps its time.
///
/// Two passes rather than one graph that holds every picture until the palette is known: a
/// minute of a 1080p screen would be gigabytes of memory.
///
/// The GIF is written under a hidden name beside `output` and takes the name only once it is
/// complete and on the disk: a crash leaves the old file or none, never half a GIF.
package enum GIFConverter {
    /// What a conversion wrote.
    package struct Summary: Sendable, Hashable {
        /// The GIF.
        package var url: URL
        /// The pictures it holds.
        package var frames: Int64
        /// Its size in bytes.
        package var bytes: Int64
    }

    /// How the palette is fitted: to every picture alike.
    static let paletteFilter = "palettegen=max_colors=256:stats_mode=full"
    /// How pictures are mapped onto it: error diffusion, only where the picture changed.
    static let mappingFilter = "paletteuse=dither=sierra2_4a:diff_mode=rectangle"

    /// Writes the video of `input` as a GIF at `output`, never over a file there unless
    /// `overwrite` (nor one another program is writing). `meter` hears bytes of `input` read,
    /// over both passes (its total should be twice the file's size).
    ///
    /// - Throws: `ReelError` with `.fileExists`, `.nothingRecorded` (no picture), `.invalidMedia`
    ///   (no video, or damaged), the file system's errors. Nothing is left at `output` then.
    /// Throws, as ``convert(_:to:overwrite:meter:)`` would at the stop, when no GIF can be made
    /// here (libavfilter cannot be loaded): a GIF recording is refused at its start rather
    /// than recorded to the end and then not made.
    package static func checkCanConvert() throws {
        _ = try LibAVFilter.load()
    }

    package static func convert(_ input: URL, to output: URL, overwrite: Bool, meter: ProgressMeter? = nil) throws -> Summary {
        FFmpeg.silenceLibraryLogging()
        // Through a link, the file it leads to is replaced (the link stays), as a recording's is.
        let output = overwrite ? FileIdentity.followingLinks(output) : output
        if FileIdentity.isRegularFile(output) || FileManager.default.fileExists(atPath: output.path) {
            guard overwrite else { throw Syscall.fileError(EEXIST, creating: output, action: "create") }
            try RecordingLock.checkNotBeingWritten(output)
        }
        let size = FileIdentity.size(of: input) ?? 0
        let (palette, start) = try fitPalette(input, meter: meter)
        defer { var p: UnsafeMutablePointer<AVFrame>? = palette; av_frame_free(&p) }
        let temporary = FilePlacement.temporaryURL(beside: output, purpose: "converting")
        let tracked = UnfinishedCopies.track(temporary)  // a copy: an interrupted command removes it
        defer { tracked.done() }
        let frames: Int64
        do {
            frames = try writePictures(input, palette: palette, start: start, to: temporary, meter: meter, readBefore: size)
            try FilePlacement.place(temporary, at: output, replacing: overwrite, what: "the GIF")
        } catch var error as ReelError {
            unlink(temporary.path)
            // The user knows the file they named, not the hidden one it is written as.
            error.message = error.message.replacingOccurrences(of: temporary.path, with: output.path)
                .replacingOccurrences(of: temporary.lastPathComponent, with: output.lastPathComponent)
            throw error
        } catch {
            unlink(temporary.path)
            throw error
        }
        return Summary(url: output, frames: frames, bytes: FileIdentity.size(of: output) ?? 0)
    }

    // MARK: The passes

    /// The first pass: the palette (a 16×16 picture of its colours), and the time of the first
    /// picture (the palette is given there in the second pass).
    private static func fitPalette(_ url: URL, meter: ProgressMeter?) throws -> (UnsafeMutablePointer<AVFrame>, Int64) {
        let reader = try VideoReader(url)
        var graph: Graph?
        var start: Int64?
        let out = try frame()
        defer { var f: UnsafeMutablePointer<AVFrame>? = out; av_frame_free(&f) }
        var palette: UnsafeMutablePointer<AVFrame>?
        func drain(_ graph: Graph) throws {
            while try graph.pull(into: out) {
                var old = palette
                av_frame_free(&old)
                palette = av_frame_clone(out)
                av_frame_unref(out)
            }
        }
        try reader.forEachPicture(meter: meter, readBefore: 0) { picture in
            if graph == nil { graph = try Graph(text: paletteFilter, main: picture, timeBase: reader.timeBase, palette: false) }
            if start == nil { start = picture.pointee.pts }
            try graph!.push(picture)
            try drain(graph!)
        }
        guard let graph, let start else { throw nothingToConvert(url) }
        try graph.end()
        try drain(graph)
        guard let palette else {
            throw ReelError(.encodingFailed, "libavfilter fitted no palette to \(url.lastPathComponent)")
        }
        return (palette, start)
    }

    /// The second pass: each picture mapped onto `palette` and written into a GIF at `url`;
    /// returns the pictures written.
    /// A disk that fills says how much of the GIF it took and about how much room the GIF
    /// needs in all (from the pictures written), so that a user knows what to free.
    private static func writePictures(_ input: URL, palette: UnsafeMutablePointer<AVFrame>, start: Int64, to url: URL,
                                      meter: ProgressMeter?, readBefore: Int64) throws -> Int64 {
        var pictures: Int64 = 0, written: Int64 = 0
        do {
            return try writePictures(input, palette: palette, start: start, to: url, meter: meter, readBefore: readBefore,
                                     counting: &pictures, bytes: &written)
        } catch var error as ReelError where error.code == .insufficientStorage {
            let total = (try? InputFile(url: input)).flatMap { file -> Int64? in
                let index = av_find_best_stream(file.context, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
                return index >= 0 ? file.context.pointee.streams[Int(index)]!.pointee.nb_frames : nil
            } ?? 0
            let megabytes = { (bytes: Int64) in String(format: "%.1f MB", Double(bytes) / 1_000_000) }
            error.message += "; the GIF took \(megabytes(written)) for its first \(pictures) pictures"
            if pictures > 0, total > pictures {
                error.message += " of \(total): it needs about \(megabytes(written * total / pictures)) free"
            }
            throw error
        }
    }

    private static func writePictures(_ input: URL, palette: UnsafeMutablePointer<AVFrame>, start: Int64, to url: URL,
                                      meter: ProgressMeter?, readBefore: Int64, counting pictures: inout Int64, bytes: inout Int64) throws -> Int64 {
        let reader = try VideoReader(input)
        let muxer = try Muxer(url: url, container: .gif, overwrite: false)
        // What the GIF took, written or not (a full disk's buffer holds some).
        defer { bytes = muxer.payloadBytes }
        var finished = false
        defer { if !finished { muxer.abandon() } }
        var graph: Graph?
        var encoder: GIFEncoder?
        let out = try frame()
        defer { var f: UnsafeMutablePointer<AVFrame>? = out; av_frame_free(&f) }
        func drain(_ graph: Graph) throws {
            while try graph.pull(into: out) {
                if encoder == nil {
                    encoder = try GIFEncoder(width: out.pointee.width, height: out.pointee.height,
                                             timeBase: reader.timeBase, frameRate: reader.frameRate, muxer: muxer)
                }
                try encoder!.encode(out)
                av_frame_unref(out)
            }
        }
        let hold = GIFStillHold()
        try reader.forEachPicture(meter: meter, readBefore: readBefore) { picture in
            pictures += 1
            try hold.apply(to: picture)
            if graph == nil {
                let made = try Graph(text: mappingFilter, main: picture, timeBase: reader.timeBase, palette: true)
                palette.pointee.pts = start
                try made.push(palette, into: made.paletteSource)
                try made.end(made.paletteSource)
                graph = made
            }
            try graph!.push(picture)
            try drain(graph!)
        }
        guard let graph else { throw nothingToConvert(input) }
        try graph.end()
        try drain(graph)
        guard let encoder else { throw nothingToConvert(input) }
        try encoder.finish()
        try muxer.finish()
        finished = true
        return encoder.frames
    }

    private static func nothingToConvert(_ url: URL) -> ReelError {
        ReelError(.nothingRecorded, "\(url.lastPathComponent) holds no picture to make a GIF of")
    }

    private static func frame() throws -> UnsafeMutablePointer<AVFrame> {
        guard let f = av_frame_alloc() else { throw ReelError(.encodingFailed, "cannot allocate a picture: out of memory") }
        return f
    }

    // MARK: Parts

    /// The video stream of a file, decoded picture by picture.
    private final class VideoReader {
        let input: InputFile
        let decoder: Decoder
        let stream: Int
        var timeBase: AVRational { decoder.timeBase }
        let frameRate: AVRational

        init(_ url: URL) throws {
            input = try InputFile(url: url)
            let index = av_find_best_stream(input.context, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
            guard index >= 0 else {
                throw ReelError(.invalidMedia, "\(url.lastPathComponent) has no video to make a GIF of")
            }
            stream = Int(index)
            decoder = try Decoder(input: input, stream: stream)
            frameRate = input.context.pointee.streams[stream]!.pointee.avg_frame_rate
        }

        /// Calls `body` with each decoded picture (its `pts` its best-effort time), telling
        /// `meter` the bytes read (plus `readBefore`).
        func forEachPicture(meter: ProgressMeter?, readBefore: Int64, _ body: (UnsafeMutablePointer<AVFrame>) throws -> Void) throws {
            func receive() throws -> Bool {
                while true {
                    switch try decoder.receive() {
                    case .frame:
                        decoder.frame.pointee.pts = decoder.frameTimestamp ?? decoder.frame.pointee.pts
                        try body(decoder.frame)
                        av_frame_unref(decoder.frame)
                    case .needsInput: return true
                    case .endOfStream: return false
                    }
                }
            }
            while let packet = input.nextReadable() {
                if packet.pointee.pos >= 0 { meter?.update(completed: readBefore + packet.pointee.pos + Int64(packet.pointee.size)) }
                guard packet.pointee.stream_index == stream else { continue }
                try decoder.send(packet)
                _ = try receive()
            }
            try decoder.send(nil)
            _ = try receive()
        }
    }

    /// A libavfilter graph from one picture source (and, for the mapping, a palette source)
    /// to a sink.
    private final class Graph {
        /// libavfilter's functions (loaded by the first graph made).
        private let avfilter: LibAVFilter
        private var graph: UnsafeMutablePointer<AVFilterGraph>?
        let source: UnsafeMutablePointer<AVFilterContext>
        let paletteSource: UnsafeMutablePointer<AVFilterContext>?
        let sink: UnsafeMutablePointer<AVFilterContext>

        /// `text` between a source of pictures like `main` (labelled `in`) and, if `palette`, a
        /// source of 16×16 palettes (`palette`), and a sink (`out`).
        init(text: String, main: UnsafePointer<AVFrame>, timeBase: AVRational, palette: Bool) throws {
            let avfilter = try LibAVFilter.load()
            self.avfilter = avfilter
            guard let made = avfilter.avfilter_graph_alloc() else { throw ReelError(.encodingFailed, "cannot allocate a filter graph: out of memory") }
            var graph: UnsafeMutablePointer<AVFilterGraph>? = made
            do {
                (source, paletteSource, sink) = try Self.build(made, text: text, main: main, timeBase: timeBase, palette: palette, avfilter: avfilter)
            } catch {
                avfilter.avfilter_graph_free(&graph)
                throw error
            }
            self.graph = graph
        }

        private static func build(_ graph: UnsafeMutablePointer<AVFilterGraph>, text: String, main: UnsafePointer<AVFrame>,
                                  timeBase: AVRational, palette: Bool, avfilter: LibAVFilter) throws
            -> (UnsafeMutablePointer<AVFilterContext>, UnsafeMutablePointer<AVFilterContext>?, UnsafeMutablePointer<AVFilterContext>) {
            graph.pointee.nb_threads = 1
            let tb = "time_base=\(timeBase.num)/\(max(1, timeBase.den))"
            let sar = main.pointee.sample_aspect_ratio
            let aspect = sar.num > 0 && sar.den > 0 ? "\(sar.num)/\(sar.den)" : "1/1"
            func make(_ name: String, _ label: String, _ args: String?) throws -> UnsafeMutablePointer<AVFilterContext> {
                var context: UnsafeMutablePointer<AVFilterContext>?
                let r = avfilter.avfilter_graph_create_filter(&context, avfilter.avfilter_get_by_name(name), label, args, nil, graph)
                guard r >= 0, let context else {
                    throw FFmpeg.error(min(r, -1), "libavfilter cannot make the \(name) of a GIF's filter graph")
                }
                return context
            }
            let source = try make("buffer", "in", "video_size=\(main.pointee.width)x\(main.pointee.height):pix_fmt=\(main.pointee.format):\(tb):pixel_aspect=\(aspect)")
            let paletteSource = palette ? try make("buffer", "palette", "video_size=16x16:pix_fmt=\(AV_PIX_FMT_BGRA.rawValue):\(tb):pixel_aspect=1/1") : nil
            let sink = try make("buffersink", "out", nil)
            let described = palette ? "[in][palette]\(text)[out]" : "[in]\(text)[out]"
            let ends = [("in", source)] + (paletteSource.map { [("palette", $0)] } ?? [])
            try FFmpeg.check(FilterGraphLinks.parseAndConfigure(graph, described, sources: ends.map { (label: $0.0, context: $0.1) },
                                                                sink: (label: "out", context: sink)),
                             "libavfilter cannot set up '\(described)'")
            return (source, paletteSource, sink)
        }

        deinit {
            avfilter.avfilter_graph_free(&graph)
        }

        func push(_ frame: UnsafeMutablePointer<AVFrame>, into target: UnsafeMutablePointer<AVFilterContext>? = nil) throws {
            try FFmpeg.check(avfilter.av_buffersrc_add_frame_flags(target ?? source, frame, Int32(AV_BUFFERSRC_FLAG_KEEP_REF)),
                             "libavfilter refused a picture of the GIF")
        }

        /// No more pictures (or palettes) come into `target` (the picture source if `nil`).
        func end(_ target: UnsafeMutablePointer<AVFilterContext>? = nil) throws {
            try FFmpeg.check(avfilter.av_buffersrc_add_frame_flags(target ?? source, nil, 0), "libavfilter refused the end of the GIF's pictures")
        }

        /// Takes the next filtered picture into `frame`; `false` if there is none yet (or any more).
        func pull(into frame: UnsafeMutablePointer<AVFrame>) throws -> Bool {
            let r = avfilter.av_buffersink_get_frame(sink, frame)
            if r == FFmpeg.eagain || r == FFmpeg.eof { return false }
            try FFmpeg.check(r, "libavfilter failed to make a picture of the GIF")
            return true
        }
    }

    /// libavcodec's GIF encoder, writing into a muxer.
    private final class GIFEncoder {
        private var context: UnsafeMutablePointer<AVCodecContext>?
        private let muxer: Muxer
        private let stream: EncodedStream
        private let packet: Packet
        private(set) var frames: Int64 = 0

        init(width: Int32, height: Int32, timeBase: AVRational, frameRate: AVRational, muxer: Muxer) throws {
            guard let codec = avcodec_find_encoder(AV_CODEC_ID_GIF) else {
                throw ReelError(.unsupportedFormat, "this FFmpeg has no GIF encoder")
            }
            guard let made = avcodec_alloc_context3(codec) else { throw ReelError(.encodingFailed, "cannot allocate a GIF encoder") }
            var context: UnsafeMutablePointer<AVCodecContext>? = made
            made.pointee.width = width
            made.pointee.height = height
            made.pointee.pix_fmt = AV_PIX_FMT_PAL8
            made.pointee.time_base = timeBase
            if frameRate.num > 0 && frameRate.den > 0 { made.pointee.framerate = frameRate }
            do {
                try FFmpeg.check(avcodec_open2(made, codec, nil), "cannot open the GIF encoder")
                stream = try EncodedStream(encoder: made, index: 0)
                packet = try Packet()
            } catch {
                avcodec_free_context(&context)
                throw error
            }
            self.context = context
            self.muxer = muxer
            // Fully made: deinit frees the encoder if these fail.
            try muxer.addStream(stream)
            try muxer.writeHeader(fastStart: false)
        }

        deinit {
            avcodec_free_context(&context)
        }

        func encode(_ frame: UnsafeMutablePointer<AVFrame>?) throws {
            let r = avcodec_send_frame(context, frame)
            if r != FFmpeg.eof { try FFmpeg.check(r, "the GIF encoder refused a picture") }
            while true {
                let got = avcodec_receive_packet(context, packet.pointer)
                if got == FFmpeg.eagain || got == FFmpeg.eof { return }
                try FFmpeg.check(got, "the GIF encoder failed")
                try muxer.write(EncodedPacket(taking: packet.pointer, stream: stream), stream: 0)
                frames += 1
            }
        }

        func finish() throws { try encode(nil) }
    }
}
