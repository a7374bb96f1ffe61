import Foundation
internal import CFFmpeg
import ReelCore

/// Converts decoded audio of any format into interleaved 32-bit float samples of one rate and
/// channel count (libswresample). Owns one `SwrContext`, remade when the input changes.
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
        var layout = frame.pointee.ch_layout
        var description = [CChar](repeating: 0, count: 64)
        _ = av_channel_layout_describe(&layout, &description, description.count)
        let key = (frame.pointee.sample_rate, frame.pointee.format, cString(description))
        if resampler == nil || key != sourceKey {
            // A change of format mid-stream: what the old converter holds is dropped (a few ms).
            resampler = nil
            var outLayout = AVChannelLayout()
            av_channel_layout_default(&outLayout, Int32(format.channels))
            defer { av_channel_layout_uninit(&outLayout) }
            resampler = try Resampler(from: &frame.pointee.ch_layout, AVSampleFormat(rawValue: key.1), key.0,
                                      to: &outLayout, AV_SAMPLE_FMT_FLT, Int32(format.sampleRate), what: "to \(format)")
            sourceKey = key
        }
        guard let data = frame.pointee.extended_data else { return [] }
        let planes = UnsafeMutablePointer<UnsafePointer<UInt8>?>(OpaquePointer(data))
        return try run(planes, count: frame.pointee.nb_samples)
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
