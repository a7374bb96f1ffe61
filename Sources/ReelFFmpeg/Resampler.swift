internal import CFFmpeg
import ReelCore

/// The one owner of a libswresample context in ReelFFmpeg: converts audio from one sample
/// format, rate and channel layout to another. ``SoundConverter`` and ``AudioEncoder`` each
/// hold one. Used from one thread at a time.
final class Resampler {
    private let context: OpaquePointer

    /// A resampler from audio of `inputLayout`, `inputFormat` and `inputRate` to `outputLayout`,
    /// `outputFormat` and `outputRate`. `what` names the conversion for errors.
    ///
    /// - Throws: `.encodingFailed` when libswresample cannot make that conversion.
    init(from inputLayout: UnsafeMutablePointer<AVChannelLayout>, _ inputFormat: AVSampleFormat, _ inputRate: Int32,
         to outputLayout: UnsafeMutablePointer<AVChannelLayout>, _ outputFormat: AVSampleFormat, _ outputRate: Int32, what: String) throws {
        var made: OpaquePointer?
        try FFmpeg.check(swr_alloc_set_opts2(&made, outputLayout, outputFormat, outputRate, inputLayout, inputFormat, inputRate, 0, nil),
                         "cannot set up audio conversion \(what)")
        guard let made else { throw ReelError(.encodingFailed, "cannot set up audio conversion \(what)") }
        let initialised = swr_init(made)
        if initialised < 0 {
            var s: OpaquePointer? = made
            swr_free(&s)
            throw FFmpeg.error(initialised, "cannot set up audio conversion \(what)")
        }
        context = made
    }

    deinit {
        var s: OpaquePointer? = context
        swr_free(&s)
    }

    /// The most sample frames ``convert(_:count:into:capacity:)`` can give for `count` more
    /// input frames (with what it holds back).
    func outputCapacity(forInput count: Int32) -> Int32 { swr_get_out_samples(context, count) }

    /// Converts `count` frames of `input` (`nil` with 0: flush what is held back) into at most
    /// `capacity` frames of `output`. Returns the frames written, or a negative AVERROR.
    func convert(_ input: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, count: Int32,
                 into output: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, capacity: Int32) -> Int32 {
        swr_convert(context, output, capacity, input, count)
    }
}
