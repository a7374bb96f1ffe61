import Foundation
internal import CFFmpeg
import ReelCore

/// A libavfilter audio graph applied to the sound of one input (a microphone, an
/// application's sound): `highpass=f=80`, `loudnorm`, `afftdn`, or several separated by
/// commas. Whatever rate, layout or sample type the graph makes, its sound is brought back to
/// the input's format, and each sample keeps its time.
///
/// A filter that looks ahead (`loudnorm` holds about three seconds) gives its sound later; at
/// the end of the input's sound (the session stops, a recording reaches its maximum duration)
/// what it holds is drained, so every sample reaches the outputs with its time.
///
/// A filter made with ``init(graph:)`` has been checked: libavfilter set it up for 48 kHz
/// stereo sound, so a name it does not know, or options a filter refuses, are an error then,
/// not while recording.
///
/// ```swift
/// let connection = try #require(session.connection(for: microphone))
/// connection.audioFilters = [.denoise, try AudioFilter(graph: "highpass=f=80")]
/// ```
public struct AudioFilter: Sendable, Hashable, CustomStringConvertible {
    /// The graph, as libavfilter reads it: filters separated by `,` (one input, one output).
    public let graph: String

    private init(checked graph: String) {
        self.graph = graph
    }

    /// A filter of the libavfilter audio graph `graph`, checked by setting it up once.
    ///
    /// - Throws: `.invalidConfiguration` naming what libavfilter refused.
    public init(graph: String) throws {
        let trimmed = graph.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else {
            throw ReelError(.invalidConfiguration, "an audio filter needs a graph", hint: "give filters such as highpass=f=80,loudnorm")
        }
        self.init(checked: trimmed)
        // A graph that changes the sound's length (atempo, asetrate, atrim, apad) would pull
        // the sound away from the pictures, and the recording would end waiting for sound
        // that never comes: a second of quiet noise through it must come out a second long.
        let format = AudioFormat()
        let second = format.sampleRate
        let out = try AudioFilterGraph(filters: [self], format: format).framesOut(forQuietNoise: second, limit: 3 * second)
        guard abs(out - second) <= second / 20 else {
            let length = out >= 3 * second ? "endless" : String(format: "%.2f s long", Double(out) / Double(second))
            throw ReelError(.invalidConfiguration, "the audio filter '\(trimmed)' changes the sound's length (a second of sound comes out \(length)), which would pull it away from the pictures and the recording's clock",
                            hint: "use filters that keep the length, such as highpass, lowpass, volume, loudnorm, afftdn or acompressor; not atempo, asetrate, atrim, apad or aloop")
        }
    }

    /// Noise suppression for a microphone: libavfilter's `afftdn` (FFT denoising) following the
    /// noise floor as it changes, taking up to 30 dB off the steady hiss, hum and fan noise
    /// between and under the words. Measured on a 1 kHz tone at -23 dBFS in white noise,
    /// recorded through a session: with the noise at -25 dBFS the tone's signal-to-noise ratio
    /// rises by about 20 dB, with the noise at -19 dBFS (louder than the tone) by about 12 dB,
    /// and the tone keeps its level (within 3 %). Noise louder still (-13 dBFS) is
    /// beyond what it tells from sound and is hardly reduced.
    public static let denoise = AudioFilter(checked: "afftdn=nr=30:nf=-20:tn=1:fo=2")

    public var description: String { graph }
}

/// The audio filters of one input, set up for its format: sound in, the filtered sound out in
/// the same format, each piece timed from the samples' times. Used from one thread (the
/// source's).
package final class AudioFilterGraph {
    package let format: AudioFormat
    private var graph: UnsafeMutablePointer<AVFilterGraph>?
    private let source: UnsafeMutablePointer<AVFilterContext>
    private let sink: UnsafeMutablePointer<AVFilterContext>
    private let frame: UnsafeMutablePointer<AVFrame>
    /// The time of sample zero of the graph's timeline (the first sound given).
    private var origin: MediaTime?
    private let description: String

    /// The graph of `filters` in order, for sound of `format`.
    ///
    /// - Throws: `.invalidConfiguration` naming the graph libavfilter refused.
    package init(filters: [AudioFilter], format: AudioFormat) throws {
        FFmpeg.silenceLibraryLogging()
        self.format = format
        description = filters.map(\.graph).joined(separator: ",")
        guard let made = avfilter_graph_alloc() else { throw ReelError(.encodingFailed, "cannot allocate a filter graph: out of memory") }
        var graph: UnsafeMutablePointer<AVFilterGraph>? = made
        guard let frame = av_frame_alloc() else {
            avfilter_graph_free(&graph)
            throw ReelError(.encodingFailed, "cannot allocate a filter graph: out of memory")
        }
        do {
            (source, sink) = try Self.build(made, text: description, format: format)
        } catch {
            avfilter_graph_free(&graph)
            var f: UnsafeMutablePointer<AVFrame>? = frame
            av_frame_free(&f)
            throw error
        }
        self.graph = graph
        self.frame = frame
    }

    deinit {
        avfilter_graph_free(&graph)
        var f: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&f)
    }

    private static func build(_ graph: UnsafeMutablePointer<AVFilterGraph>, text: String, format: AudioFormat) throws
        -> (UnsafeMutablePointer<AVFilterContext>, UnsafeMutablePointer<AVFilterContext>) {
        graph.pointee.nb_threads = 1
        let sampleFormat = format.sampleFormat == .f32 ? "flt" : "s16"
        let layout = format.channels == 1 ? "mono" : format.channels == 2 ? "stereo" : "\(format.channels)c"
        func make(_ name: String, _ label: String, _ args: String?) throws -> UnsafeMutablePointer<AVFilterContext> {
            var context: UnsafeMutablePointer<AVFilterContext>?
            let r = avfilter_graph_create_filter(&context, avfilter_get_by_name(name), label, args, nil, graph)
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
            let unknown = FilterGraphText.filterNames(in: text).first { avfilter_get_by_name($0) == nil }
            throw ReelError(.invalidConfiguration, unknown.map { "libavfilter has no audio filter '\($0)' (in '\(text)')" }
                                ?? "libavfilter cannot set up the audio graph '\(text)': \(FFmpeg.describe(status))",
                            hint: "`ffmpeg -filters` lists the filters (A->A for audio), `ffmpeg -h filter=NAME` their options")
        }
        return (source, sink)
    }

    /// Filters `buffer` (of the graph's format); returns the sound the graph gave out so far,
    /// timed on the session's timeline. A filter that holds sound back (to look ahead) gives
    /// it in a later call.
    package func process(_ buffer: AudioBuffer) throws -> [AudioBuffer] {
        guard buffer.format == format else {
            throw ReelError(.invalidConfiguration, "audio of \(buffer.format) reached a filter set up for \(format)")
        }
        let origin = self.origin ?? buffer.presentationTime
        self.origin = origin
        av_frame_unref(frame)
        frame.pointee.format = (format.sampleFormat == .f32 ? AV_SAMPLE_FMT_FLT : AV_SAMPLE_FMT_S16).rawValue
        frame.pointee.sample_rate = Int32(format.sampleRate)
        av_channel_layout_default(&frame.pointee.ch_layout, Int32(format.channels))
        frame.pointee.nb_samples = Int32(buffer.frameCount)
        frame.pointee.pts = (buffer.presentationTime - origin).ticks(in: AVRational(num: 1, den: Int32(format.sampleRate)))
        try FFmpeg.check(av_frame_get_buffer(frame, 0), "cannot allocate sound for the audio filter")
        buffer.data.withUnsafeBytes { bytes in
            if let base = bytes.baseAddress { frame.pointee.data.0?.update(from: base.assumingMemoryBound(to: UInt8.self), count: bytes.count) }
        }
        try FFmpeg.check(av_buffersrc_add_frame_flags(source, frame, 0), "the audio filter '\(description)' refused sound")
        return try pull(origin: origin)
    }

    /// Gives the end of the sound to the graph and returns everything it still held (a
    /// filter that looks ahead, such as `loudnorm`, holds seconds), timed on the session's
    /// timeline. The graph is spent afterwards: sound given to it later is an error, so its
    /// owner makes a new one.
    package func drain() throws -> [AudioBuffer] {
        guard let origin else { return [] }
        try FFmpeg.check(av_buffersrc_add_frame_flags(source, nil, 0), "the audio filter '\(description)' refused the end of the sound")
        return try pull(origin: origin)
    }

    /// How many frames of sound come out for `frames` frames of quiet noise in, with the end
    /// of the sound given (so that what a filter held back to look ahead comes out too); at
    /// most `limit` are counted. Uses up the graph.
    package func framesOut(forQuietNoise frames: Int, limit: Int) throws -> Int {
        var random = UInt32(1)
        var given = 0, out = 0
        while given < frames {
            let count = min(1024, frames - given)
            let samples = (0..<(count * format.channels)).map { _ -> Float in
                random = random &* 1_664_525 &+ 1_013_904_223
                return Float(Int32(bitPattern: random)) / Float(Int32.max) * 0.01
            }
            let bytes: [UInt8] = format.sampleFormat == .f32
                ? samples.withUnsafeBytes { Array($0) }
                : samples.map { Int16($0 * 32767) }.withUnsafeBytes { Array($0) }
            let time = MediaTime(value: Int64(given), timescale: Int32(format.sampleRate))
            out += try process(AudioBuffer(format: format, presentationTime: time, wholeFrames: bytes)).reduce(0) { $0 + $1.frameCount }
            given += count
            if out >= limit { return out }
        }
        try FFmpeg.check(av_buffersrc_add_frame_flags(source, nil, 0), "the audio filter '\(description)' refused the end of the sound")
        while out < limit {
            av_frame_unref(frame)
            let r = av_buffersink_get_frame(sink, frame)
            if r == FFmpeg.eagain || r == FFmpeg.eof { break }
            try FFmpeg.check(r, "the audio filter '\(description)' failed")
            out += Int(frame.pointee.nb_samples)
        }
        av_frame_unref(frame)
        return out
    }

    private func pull(origin: MediaTime) throws -> [AudioBuffer] {
        var out: [AudioBuffer] = []
        while true {
            av_frame_unref(frame)
            let r = av_buffersink_get_frame(sink, frame)
            if r == FFmpeg.eagain || r == FFmpeg.eof { break }
            try FFmpeg.check(r, "the audio filter '\(description)' failed")
            let count = Int(frame.pointee.nb_samples) * format.bytesPerFrame
            guard count > 0, let data = frame.pointee.data.0 else { continue }
            let time = origin + MediaTime(ticks: frame.pointee.pts, av_buffersink_get_time_base(sink))
            out.append(AudioBuffer(format: format, presentationTime: time, wholeFrames: Array(UnsafeBufferPointer(start: data, count: count))))
        }
        av_frame_unref(frame)
        return out
    }
}
