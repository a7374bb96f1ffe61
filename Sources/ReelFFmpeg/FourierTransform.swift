internal import CFFmpeg

/// A discrete Fourier transform of complex values of one length (libavutil's `av_tx`): the one
/// owner of an `AVTXContext`. Used from one thread.
final class FourierTransform {
    /// How many values a transform takes and gives.
    let length: Int
    private var context: OpaquePointer?
    private let function: av_tx_fn

    /// A transform of `length` values, or `nil` when libavutil has none of that length.
    init?(length: Int) {
        var context: OpaquePointer?
        var function: av_tx_fn?
        var scale: Float = 1
        guard length > 0, length <= Int(Int32.max),
              av_tx_init(&context, &function, AV_TX_FLOAT_FFT, 0, Int32(length), &scale, UInt64(AV_TX_UNALIGNED.rawValue)) >= 0,
              let context, let function else {
            av_tx_uninit(&context)
            return nil
        }
        self.length = length
        self.context = context
        self.function = function
    }

    deinit { av_tx_uninit(&context) }

    /// The transform of `real` + i·`imaginary` (each `length` long, or shorter and padded with
    /// zeros): its real and imaginary parts.
    func forward(real: [Float], imaginary: [Float]) -> (real: [Float], imaginary: [Float]) {
        var input = [AVComplexFloat](repeating: AVComplexFloat(re: 0, im: 0), count: length)
        for i in 0..<min(length, real.count) { input[i].re = real[i] }
        for i in 0..<min(length, imaginary.count) { input[i].im = imaginary[i] }
        var output = [AVComplexFloat](repeating: AVComplexFloat(re: 0, im: 0), count: length)
        input.withUnsafeMutableBytes { inBytes in
            output.withUnsafeMutableBytes { outBytes in
                function(context, outBytes.baseAddress, inBytes.baseAddress, MemoryLayout<AVComplexFloat>.stride)
            }
        }
        return (output.map(\.re), output.map(\.im))
    }

    /// How much `y` is like `x` moved later by each lag `0..<lags`: the sum of x[i]·y[i + lag],
    /// by transforms (both padded with zeros; `length` must be at least `x.count + lags` so
    /// that earlier lags do not wrap around into them).
    func crossCorrelation(_ x: [Float], _ y: [Float], lags: Int) -> [Float] {
        let xs = forward(real: x, imaginary: [])
        let ys = forward(real: y, imaginary: [])
        // Y·conj(X), transformed back: the inverse is the conjugate of the forward transform
        // of the conjugate, divided by the length.
        var re = [Float](repeating: 0, count: length), im = re
        for k in 0..<length {
            re[k] = ys.real[k] * xs.real[k] + ys.imaginary[k] * xs.imaginary[k]
            im[k] = -(ys.imaginary[k] * xs.real[k] - ys.real[k] * xs.imaginary[k])
        }
        let back = forward(real: re, imaginary: im)
        let scale = 1 / Float(length)
        return back.real.prefix(min(lags, length)).map { $0 * scale }
    }
}
