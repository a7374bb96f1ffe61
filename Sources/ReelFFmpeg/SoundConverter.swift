import Foundation
internal import CFFmpeg
import ReelCore

/// Converts decoded audio, or an ``AudioBuffer``, of any format into interleaved 32-bit float
/// samples of one rate and channel count (libswresample). Owns one `Resampler`, remade when the
/// input changes.
final class SoundConverter {
    let format: AudioFormat
    private var resampler: Resampler?
    private var sourceKey: (Int32, Int32, String) = (0, -1, "")
    private var scratch: UnsafeMutablePointer<UInt8>?
    private var scratchFrames: Int32 = 0

    /// A converter to interleaved 32-bit float samples at `sampleRate` with `channels` channels.
    init(sampleRate: Int, channels: Int) {
        format = AudioFormat(sampleFormat: .f32, sampleRate: sampleRate, channels: channels)
    }

    deinit {
        av_free(scratch)
    }

    /// The audio in `frame`, converted; some samples may stay in the converter until ``flush()``.
    func convert(_ frame: UnsafeMutablePointer<AVFrame>) throws -> [Float] {
        var description = [CChar](repeating: 0, count: 64)
        _ = av_channel_layout_describe(&frame.pointee.ch_layout, &description, description.count)
        try prepare(from: &frame.pointee.ch_layout, frame.pointee.format, frame.pointee.sample_rate, layoutName: cString(description))
        guard let data = frame.pointee.extended_data else { return [] }
        let planes = UnsafeMutablePointer<UnsafePointer<UInt8>?>(OpaquePointer(data))
        return try run(planes, count: frame.pointee.nb_samples)
    }

    /// `buffer` converted to ``format``, at its time (the few samples a change of rate holds back
    /// come with the next buffer, well under a millisecond).
    func convert(_ buffer: AudioBuffer) throws -> AudioBuffer {
        var layout = AVChannelLayout()
        av_channel_layout_default(&layout, Int32(buffer.format.channels))
        defer { av_channel_layout_uninit(&layout) }
        let sampleFormat = buffer.format.sampleFormat == .s16 ? AV_SAMPLE_FMT_S16 : AV_SAMPLE_FMT_FLT
        try prepare(from: &layout, sampleFormat.rawValue, Int32(buffer.format.sampleRate), layoutName: "\(buffer.format.channels) channels")
        let samples = try buffer.withUnsafeBytes { bytes -> [Float] in
            var plane = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return try withUnsafeMutablePointer(to: &plane) { planes in
                try planes.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 1) {
                    try run($0, count: Int32(buffer.frameCount))
                }
            }
        }
        return AudioBuffer(format: format, presentationTime: buffer.presentationTime,
                           wholeFrames: samples.withUnsafeBytes { Array($0) })
    }

    /// Makes the resampler for input of `layout`, sample format `sampleFormat` and `rate`,
    /// unless it is made for that already. A change of format mid-stream drops what the old
    /// converter holds (a few ms).
    private func prepare(from layout: UnsafeMutablePointer<AVChannelLayout>, _ sampleFormat: Int32, _ rate: Int32, layoutName: String) throws {
        let key = (rate, sampleFormat, layoutName)
        guard resampler == nil || key != sourceKey else { return }
        resampler = nil
        var outLayout = AVChannelLayout()
        av_channel_layout_default(&outLayout, Int32(format.channels))
        defer { av_channel_layout_uninit(&outLayout) }
        resampler = try Resampler(from: layout, AVSampleFormat(rawValue: sampleFormat), rate,
                                  to: &outLayout, AV_SAMPLE_FMT_FLT, Int32(format.sampleRate), what: "to \(format)")
        sourceKey = key
    }

    /// What the converter still holds.
    func flush() throws -> [Float] {
        guard resampler != nil else { return [] }
        return try run(nil, count: 0)
    }

    private func run(_ input: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, count: Int32) throws -> [Float] {
        guard let resampler else { return [] }
        let capacity = resampler.outputCapacity(forInput: count) + 64
        if capacity > scratchFrames {
            av_free(scratch)
            scratch = av_malloc(Int(capacity) * format.bytesPerFrame)?.assumingMemoryBound(to: UInt8.self)
            scratchFrames = capacity
        }
        var out: UnsafeMutablePointer<UInt8>? = scratch
        let converted = resampler.convert(input, count: count, into: &out, capacity: capacity)
        try FFmpeg.check(converted, "audio conversion failed")
        let floats = UnsafeBufferPointer(start: UnsafeRawPointer(scratch!).assumingMemoryBound(to: Float.self),
                                         count: Int(converted) * format.channels)
        return Array(floats)
    }
}
