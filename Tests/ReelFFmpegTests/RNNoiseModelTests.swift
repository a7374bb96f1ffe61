import Foundation
import Testing
import ReelCore
import ReelTestSupport
@testable import ReelFFmpeg

/// `AudioFilter.rnnoise(model:)` takes an `.rnnn` model file that `arnndn` can run and refuses,
/// saying why, one it cannot read, one that is no model, and one whose layers do not fit
/// together (which `arnndn` would read past).
@Suite struct RNNoiseModelTests {
    @Test func aModelThatFitsMakesAnArnndnFilter() throws {
        let dir = try TemporaryDirectory(prefix: "reel rnnoise:models")
        let url = dir.url.appendingPathComponent("it's, [odd]=; name.rnnn")
        try RNNoiseModelText.write(to: url, gainBias: 2000)
        let filter = try AudioFilter.rnnoise(model: url)
        #expect(filter.graph.hasPrefix("arnndn=m="))
        // A name libavfilter would parse as syntax is escaped for it: the filter was set up
        // (by AudioFilter(graph:)) with the file, or it would have thrown.
        let model = try RNNoiseModel(contentsOf: url)
        let neurons: [Int] = [model.inputNeurons, model.voiceNeurons, model.noiseNeurons, model.denoiseNeurons]
        #expect(neurons == [4, 4, 4, 4])
    }

    @Test func whatIsNoModelIsRefusedSayingWhy() throws {
        let dir = try TemporaryDirectory()
        func refusal(_ url: URL) -> ReelError? {
            do { _ = try AudioFilter.rnnoise(model: url); return nil } catch { return error as? ReelError }
        }
        let missing = refusal(dir.url.appendingPathComponent("none.rnnn"))
        #expect(missing?.code == .invalidConfiguration && missing?.message.contains("cannot read the RNNoise model") == true, "\(String(describing: missing))")
        #expect(missing?.hint?.contains(".rnnn") == true)
        let text = dir.url.appendingPathComponent("notes.rnnn")
        try "hello\n".write(to: text, atomically: true, encoding: .utf8)
        #expect(refusal(text)?.message.contains("does not begin with 'rnnoise-nu model file version 1'") == true)
        let unfit = dir.url.appendingPathComponent("unfit.rnnn")
        try RNNoiseModelText.write(to: unfit, gainBias: 0, denoiseInputs: 40)
        let refused = refusal(unfit)
        #expect(refused?.message.contains("the denoising layer takes 40 inputs where 50 come") == true, "\(String(describing: refused))")
        let cut = dir.url.appendingPathComponent("cut.rnnn")
        try String(RNNoiseModelText.make(gainBias: 0).dropLast(200)).write(to: cut, atomically: true, encoding: .utf8)
        #expect(refusal(cut)?.message.contains("is not an RNNoise model") == true)
        let folder = refusal(dir.url)
        // Said in words, not as "NSCocoaErrorDomain error 256" (s4-31).
        #expect(folder?.message.hasSuffix("it is a folder, not a model file") == true, "\(String(describing: folder))")
        #expect(missing?.message.hasSuffix("there is no such file") == true, "\(String(describing: missing))")
    }
}
