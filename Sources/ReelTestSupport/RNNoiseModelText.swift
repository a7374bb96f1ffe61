import Foundation

/// An RNNoise model in the `.rnnn` text format that libavfilter's `arnndn` reads, written by a
/// test: no model ships with Debian, so tests make small ones whose every weight is zero and
/// whose band gains come from the output layer's bias alone (`gainBias`: large and positive,
/// every band passes; large and negative, every band is silenced), which shows that the file
/// given is the one the filter runs.
public enum RNNoiseModelText {
    /// The model's text: layers of `neurons` each (the input layer takes RNNoise's 42
    /// features, the denoising output gives its 22 band gains). `denoiseInputs` replaces the
    /// denoising layer's input count (to write a model whose layers do not fit together).
    public static func make(neurons: Int = 4, gainBias: Int, denoiseInputs: Int? = nil) -> String {
        let features = 42, bands = 22
        var text = "rnnoise-nu model file version 1\n"
        func zeros(_ count: Int) -> String { Array(repeating: "0", count: count).joined(separator: " ") + "\n" }
        func dense(_ inputs: Int, _ outputs: Int, activation: Int, bias: Int = 0) {
            text += "\(inputs) \(outputs) \(activation)\n" + zeros(inputs * outputs)
            text += Array(repeating: String(bias), count: outputs).joined(separator: " ") + "\n"
        }
        func gru(_ inputs: Int, _ outputs: Int) {
            text += "\(inputs) \(outputs) 0\n" + zeros(inputs * outputs * 3) + zeros(outputs * outputs * 3) + zeros(outputs * 3)
        }
        dense(features, neurons, activation: 0)
        gru(neurons, neurons)
        gru(2 * neurons + features, neurons)
        gru(denoiseInputs ?? 2 * neurons + features, neurons)
        dense(neurons, bands, activation: 1, bias: gainBias)
        dense(neurons, 1, activation: 1)
        return text
    }

    /// Writes `make(...)`'s text into `url`.
    public static func write(to url: URL, neurons: Int = 4, gainBias: Int, denoiseInputs: Int? = nil) throws {
        try make(neurons: neurons, gainBias: gainBias, denoiseInputs: denoiseInputs).write(to: url, atomically: true, encoding: .utf8)
    }
}
