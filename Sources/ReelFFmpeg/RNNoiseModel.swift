import Foundation
import ReelCore

/// The shape of an RNNoise model in the `.rnnn` text format that libavfilter's `arnndn` reads
/// ("rnnoise-nu model file version 1", then six layers, each a line of its inputs, neurons and
/// activation followed by lines of integer weights and biases). `arnndn` takes the sizes as
/// they are written and would read past its arrays for a model whose layers do not fit
/// together, so a model is checked here, whole, before any filter is made with it.
struct RNNoiseModel: Equatable {
    /// The neurons of each layer: the input layer, the three recurrent ones (voice activity,
    /// noise, denoising).
    var inputNeurons: Int, voiceNeurons: Int, noiseNeurons: Int, denoiseNeurons: Int

    /// What the model's input layer takes: the 42 features RNNoise computes of each 10 ms.
    static let features = 42
    /// What the denoising output gives: a gain for each of 22 bands.
    static let bands = 22
    /// The most a size may be (`arnndn` refuses more).
    static let largest = 128
    /// The most a model file may weigh (the published models weigh a few hundred kilobytes).
    static let largestFile = 64 << 20

    /// The model in the file at `url`, checked.
    ///
    /// - Throws: `.invalidConfiguration` saying what is wrong: the file cannot be read, or is
    ///   not an RNNoise model whose layers fit together.
    init(contentsOf url: URL) throws {
        let path = url.path
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue {
            throw ReelError(.invalidConfiguration, "cannot read the RNNoise model \(path): it is a folder, not a model file", hint: Self.hint)
        }
        if !FileManager.default.fileExists(atPath: path) {
            throw ReelError(.invalidConfiguration, "cannot read the RNNoise model \(path): there is no such file", hint: Self.hint)
        }
        let data: Data
        do {
            let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
            guard size <= Self.largestFile else {
                throw ReelError(.invalidConfiguration, "\(path) is not an RNNoise model: it weighs \(size >> 20) MiB",
                                hint: Self.hint)
            }
            data = try Data(contentsOf: url)
        } catch let error as ReelError {
            throw error
        } catch {
            let reason = (error as NSError).localizedFailureReason ?? (error as NSError).localizedDescription
            throw ReelError(.invalidConfiguration, "cannot read the RNNoise model \(path): \(reason)", hint: Self.hint)
        }
        try self.init(text: String(decoding: data, as: UTF8.self), path: path)
    }

    /// The model written in `text` (the contents of the file at `path`), checked.
    init(text: String, path: String) throws {
        func refused(_ what: String) -> ReelError {
            ReelError(.invalidConfiguration, "\(path) is not an RNNoise model that arnndn can use: \(what)", hint: Self.hint)
        }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)[...]
        guard lines.first?.trimmingCharacters(in: .whitespaces) == "rnnoise-nu model file version 1" else {
            throw refused("it does not begin with 'rnnoise-nu model file version 1'")
        }
        lines = lines.dropFirst()
        /// The integers of the next line, exactly `count` of them.
        func numbers(_ count: Int, of what: String) throws -> [Int] {
            guard let line = lines.popFirst() else { throw refused("it ends before \(what)") }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            let values = fields.compactMap { Int($0) }
            guard values.count == fields.count, values.count == count else {
                throw refused("\(what) should be \(count) integers, not '\(line.prefix(60))'")
            }
            return values
        }
        /// One layer: its sizes (checked against `inputs`, and `neurons` when given), then
        /// its weights (three sets for a recurrent layer) and biases. Returns its neurons.
        func layer(_ name: String, inputs: Int, neurons wanted: Int? = nil, recurrent: Bool) throws -> Int {
            let head = try numbers(3, of: "the sizes of the \(name) layer")
            let (given, neurons) = (head[0], head[1])
            guard (1...Self.largest).contains(given), (1...Self.largest).contains(neurons), (0...Self.largest).contains(head[2]) else {
                throw refused("the \(name) layer's sizes (\(given) inputs, \(neurons) neurons) are not between 1 and \(Self.largest)")
            }
            guard given == inputs else { throw refused("the \(name) layer takes \(given) inputs where \(inputs) come") }
            if let wanted, neurons != wanted { throw refused("the \(name) layer gives \(neurons) values where \(wanted) are used") }
            let gates = recurrent ? 3 : 1
            _ = try numbers(inputs * neurons * gates, of: "the \(name) layer's input weights")
            if recurrent { _ = try numbers(neurons * neurons * gates, of: "the \(name) layer's recurrent weights") }
            _ = try numbers(neurons * gates, of: "the \(name) layer's biases")
            return neurons
        }
        inputNeurons = try layer("input", inputs: Self.features, recurrent: false)
        voiceNeurons = try layer("voice activity", inputs: inputNeurons, recurrent: true)
        noiseNeurons = try layer("noise", inputs: inputNeurons + voiceNeurons + Self.features, recurrent: true)
        denoiseNeurons = try layer("denoising", inputs: voiceNeurons + noiseNeurons + Self.features, recurrent: true)
        _ = try layer("denoising output", inputs: denoiseNeurons, neurons: Self.bands, recurrent: false)
        _ = try layer("voice activity output", inputs: voiceNeurons, neurons: 1, recurrent: false)
    }

    static let hint = "give a model file in the .rnnn text format (such as the models published for FFmpeg's arnndn filter); none ships with Debian"
}
