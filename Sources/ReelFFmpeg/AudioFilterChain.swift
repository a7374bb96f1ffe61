import Foundation
internal import CFFmpeg
import ReelCore

/// One libavfilter audio graph as libavfilter runs it, in a format and back to it: sound in at
/// sample positions, sound out at the positions the graph gives it, nothing corrected. The
/// owner of the `AVFilterGraph` of an audio filter; ``AudioFilterGraph`` times its sound, and
/// ``AudioFilterDelay`` measures it on a separate one. Used from one thread.
final class AudioFilterChain {
    /// One piece of the graph's sound: where it starts (in samples of the format's rate, from
    /// the first given) and its interleaved bytes.
    struct Piece {
        var position: Int64
        var bytes: [UInt8]
    }

    let format: AudioFormat
    /// The graph as given (without the conversion back to the format).
    let text: String
    /// libavfilter's functions (loaded by the first graph made).
    private let avfilter: LibAVFilter
    private var graph: UnsafeMutablePointer<AVFilterGraph>?
    private let source: UnsafeMutablePointer<AVFilterContext>
    private let sink: UnsafeMutablePointer<AVFilterContext>
    private let frame: UnsafeMutablePointer<AVFrame>

    /// The graph `text` for sound of `format`.
    ///
    /// - Throws: `.invalidConfiguration` naming the graph libavfilter refused;
    ///   `.unsupportedFormat` when libavfilter cannot be loaded.
    init(text: String, format: AudioFormat) throws {
        FFmpeg.silenceLibraryLogging()
        self.format = format
        self.text = text
        let avfilter = try LibAVFilter.load()
        self.avfilter = avfilter
        guard let made = avfilter.avfilter_graph_alloc() else { throw ReelError(.encodingFailed, "cannot allocate a filter graph: out of memory") }
        var graph: UnsafeMutablePointer<AVFilterGraph>? = made
        guard let frame = av_frame_alloc() else {
            avfilter.avfilter_graph_free(&graph)
            throw ReelError(.encodingFailed, "cannot allocate a filter graph: out of memory")
        }
        do {
            (source, sink) = try Self.build(made, text: text, format: format, avfilter: avfilter)
        } catch {
            avfilter.avfilter_graph_free(&graph)
            var f: UnsafeMutablePointer<AVFrame>? = frame
            av_frame_free(&f)
            throw error
        }
        self.graph = graph
        self.frame = frame
    }

    deinit {
        avfilter.avfilter_graph_free(&graph)
        var f: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&f)
    }

    private static func build(_ graph: UnsafeMutablePointer<AVFilterGraph>, text: String, format: AudioFormat, avfilter: LibAVFilter) throws
        -> (UnsafeMutablePointer<AVFilterContext>, UnsafeMutablePointer<AVFilterContext>) {
        graph.pointee.nb_threads = 1
        let sampleFormat = format.sampleFormat == .f32 ? "flt" : "s16"
        let layout = format.channels == 1 ? "mono" : format.channels == 2 ? "stereo" : "\(format.channels)c"
        func make(_ name: String, _ label: String, _ args: String?) throws -> UnsafeMutablePointer<AVFilterContext> {
            var context: UnsafeMutablePointer<AVFilterContext>?
            let r = avfilter.avfilter_graph_create_filter(&context, avfilter.avfilter_get_by_name(name), label, args, nil, graph)
            guard r >= 0, let context else { throw FFmpeg.error(min(r, -1), "libavfilter cannot make an audio graph's \(name)") }
            return context
        }
        let source = try make("abuffer", "in", "sample_rate=\(format.sampleRate):sample_fmt=\(sampleFormat):channel_layout=\(layout):time_base=1/\(format.sampleRate)")
        let sink = try make("abuffersink", "out", nil)
        // Back to the input's format, whatever the graph made (loudnorm works at 192 kHz).
        let described = "\(text),aresample=\(format.sampleRate),aformat=sample_fmts=\(sampleFormat):channel_layouts=\(layout)"
        let status = try FilterGraphLinks.parseAndConfigure(graph, "[in]\(described)[out]", sources: [(label: "in", context: source)],
                                                            sink: (label: "out", context: sink))
        guard status >= 0 else {
            let unknown = FilterGraphText.filterNames(in: text).first { avfilter.avfilter_get_by_name($0) == nil }
            throw ReelError(.invalidConfiguration, unknown.map { "libavfilter has no audio filter '\($0)' (in '\(text)')" }
                                ?? "libavfilter cannot set up the audio graph '\(text)': \(FFmpeg.describe(status))",
                            hint: "`ffmpeg -filters` lists the filters (A->A for audio), `ffmpeg -h filter=NAME` their options")
        }
        return (source, sink)
    }

    /// Gives the graph `bytes` (whole interleaved frames of the format) starting at sample
    /// `position`.
    func push(_ bytes: [UInt8], at position: Int64) throws {
        av_frame_unref(frame)
        frame.pointee.format = (format.sampleFormat == .f32 ? AV_SAMPLE_FMT_FLT : AV_SAMPLE_FMT_S16).rawValue
        frame.pointee.sample_rate = Int32(format.sampleRate)
        av_channel_layout_default(&frame.pointee.ch_layout, Int32(format.channels))
        frame.pointee.nb_samples = Int32(bytes.count / format.bytesPerFrame)
        frame.pointee.pts = position
        try FFmpeg.check(av_frame_get_buffer(frame, 0), "cannot allocate sound for the audio filter")
        bytes.withUnsafeBytes { raw in
            if let base = raw.baseAddress { frame.pointee.data.0?.update(from: base.assumingMemoryBound(to: UInt8.self), count: raw.count) }
        }
        try FFmpeg.check(avfilter.av_buffersrc_add_frame_flags(source, frame, 0), "the audio filter '\(text)' refused sound")
    }

    /// Gives the graph the end of the sound: what it holds comes out in the next ``pull(limit:)``.
    func end() throws {
        try FFmpeg.check(avfilter.av_buffersrc_add_frame_flags(source, nil, 0), "the audio filter '\(text)' refused the end of the sound")
    }

    /// The sound the graph gave out so far, in order; at most about `limit` frames (a graph
    /// that pads without end gives sound for as long as it is asked).
    func pull(limit: Int = .max) throws -> [Piece] {
        var pieces: [Piece] = []
        var frames = 0
        let timeBase = avfilter.av_buffersink_get_time_base(sink)
        let rate = AVRational(num: 1, den: Int32(format.sampleRate))
        defer { av_frame_unref(frame) }
        while frames < limit {
            av_frame_unref(frame)
            let r = avfilter.av_buffersink_get_frame(sink, frame)
            if r == FFmpeg.eagain || r == FFmpeg.eof { break }
            try FFmpeg.check(r, "the audio filter '\(text)' failed")
            let count = Int(frame.pointee.nb_samples)
            guard count > 0, let data = frame.pointee.data.0 else { continue }
            pieces.append(Piece(position: av_rescale_q(frame.pointee.pts, timeBase, rate),
                                bytes: Array(UnsafeBufferPointer(start: data, count: count * format.bytesPerFrame))))
            frames += count
        }
        return pieces
    }

    /// How many frames of sound come out for `frames` frames of quiet noise in, with the end
    /// of the sound given (so that what a filter held back to look ahead comes out too); at
    /// most `limit` are counted. Uses up the graph.
    func framesOut(forQuietNoise frames: Int, limit: Int) throws -> (streamed: Int, total: Int) {
        var random = UInt32(1)
        var given = 0, out = 0
        while given < frames {
            let count = min(1024, frames - given)
            let samples = (0..<(count * format.channels)).map { _ -> Float in
                random = random &* 1_664_525 &+ 1_013_904_223
                return Float(Int32(bitPattern: random)) / Float(Int32.max) * 0.01
            }
            try push(format.bytes(of: samples), at: Int64(given))
            out += try pull(limit: limit - out).reduce(0) { $0 + $1.bytes.count / format.bytesPerFrame }
            given += count
            if out >= limit { return (out, out) }
        }
        try end()
        return (out, out + (try pull(limit: limit - out).reduce(0) { $0 + $1.bytes.count / format.bytesPerFrame }))
    }
}

extension AudioFormat {
    /// `samples` (interleaved, in -1...1) as bytes of this format.
    func bytes(of samples: [Float]) -> [UInt8] {
        sampleFormat == .f32
            ? samples.withUnsafeBytes { Array($0) }
            : samples.map { Int16(max(-1, min(1, $0)) * 32767) }.withUnsafeBytes { Array($0) }
    }
}
