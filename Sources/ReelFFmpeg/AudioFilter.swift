import Foundation
import ReelCore

/// A libavfilter audio graph applied to the sound of one input (a microphone, an
/// application's sound): `highpass=f=80`, `loudnorm`, `afftdn`, or several separated by
/// commas. Whatever rate, layout or sample type the graph makes, its sound is brought back to
/// the input's format, and each sample keeps its time.
///
/// A filter that looks ahead (`loudnorm` holds about three seconds) gives its sound later; at
/// the end of the input's sound (the session stops, a recording reaches its maximum duration)
/// what it holds is drained, so every sample reaches the outputs with its time. A filter that
/// delays its sound (`alimiter` by its attack, `afftdn` and `afftfilt` by their windows) is
/// measured once, when its graph is first set up for an input's format (a burst of noise
/// through a separate copy of it, a fraction of a second), and its sound is moved back by
/// that much: as many samples come out as went in, each at the time of the one it came from.
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
    /// - Throws: `.invalidConfiguration` naming what libavfilter refused; `.unsupportedFormat`
    ///   when libavfilter cannot be loaded (it is loaded at the first filter).
    public init(graph: String) throws {
        let trimmed = graph.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else {
            throw ReelError(.invalidConfiguration, "an audio filter needs a graph", hint: "give filters such as highpass=f=80,loudnorm")
        }
        self.init(checked: trimmed)
        // A graph that changes the sound's length (atempo, asetrate, atrim, apad) would pull
        // the sound away from the pictures, and the recording would end waiting for sound
        // that never comes: a second of quiet noise through it must come out a second long,
        // no more while it streams (a tail given only at the end, an echo's, is no change of
        // length), no less once ended, and not endless. Filters made to cut or stretch the
        // sound are refused by name too: cut at exactly a second, atrim=0:1 passed the test.
        if let named = Self.lengthChangingFilters(in: trimmed).first {
            throw ReelError(.invalidConfiguration, "the audio filter '\(trimmed)' changes the sound's length (\(named) cuts, stretches or pads it), which would pull it away from the pictures and the recording's clock",
                            hint: "use filters that keep the length, such as highpass, lowpass, volume, loudnorm, afftdn, aecho or acompressor; not atempo, asetrate, atrim, apad or aloop")
        }
        let format = AudioFormat()
        let second = format.sampleRate
        let (streamed, out) = try AudioFilterChain(text: trimmed, format: format).framesOut(forQuietNoise: second, limit: 3 * second)
        guard streamed <= second + second / 20, out >= second - second / 20, out < 3 * second else {
            let length = out >= 3 * second ? "endless" : String(format: "%.2f s long", Double(max(out, streamed)) / Double(second))
            throw ReelError(.invalidConfiguration, "the audio filter '\(trimmed)' changes the sound's length (a second of sound comes out \(length)), which would pull it away from the pictures and the recording's clock",
                            hint: "use filters that keep the length, such as highpass, lowpass, volume, loudnorm, afftdn or acompressor; not atempo, asetrate, atrim, apad or aloop")
        }
    }

    /// The filters of `graph` (its `,` and `;` separated parts, by name) made to cut, stretch,
    /// pad or reorder the sound.
    static func lengthChangingFilters(in graph: String) -> [String] {
        let changing: Set<String> = ["atrim", "atempo", "asetrate", "apad", "aloop", "areverse", "asetpts", "silenceremove",
                                     "aselect", "asegment"]
        return graph.split(whereSeparator: { $0 == "," || $0 == ";" }).compactMap { part -> String? in
            var name = part.trimmingCharacters(in: .whitespaces)
            // Pads' labels before the name: [in]atrim=…
            while name.hasPrefix("["), let close = name.firstIndex(of: "]") { name = String(name[name.index(after: close)...]) }
            name = String(name.prefix { $0 != "=" && $0 != "@" && $0 != "[" }).trimmingCharacters(in: .whitespaces)
            return changing.contains(name) ? name : nil
        }
    }

    /// Noise suppression for a microphone: libavfilter's `afftdn` (FFT denoising) taking up to
    /// 30 dB off the steady hiss, hum and fan noise under a noise floor of -20 dB a band, between
    /// and under the words. Measured through a session on a tone at -23 dBFS (steady, or beeps
    /// with the noise alone between them) in white noise: noise at -25 dBFS comes down by about
    /// 30 dB and noise at -19 dBFS (louder than the tone) by about 12 dB, and the tone keeps its
    /// level within 10 %. afftdn's tracking of the noise floor is left off: on steady noise it
    /// drifted down to about -60 dB within seconds, after which it took nothing off (a hiss at
    /// -31 dBFS stayed at -31 dBFS).
    public static let denoise = AudioFilter(checked: "afftdn=nr=30:nf=-20")

    /// Noise suppression for a voice by RNNoise, a small recurrent neural network trained on
    /// speech and noise (libavfilter's `arnndn`), with the model in the file at `model`: the
    /// `.rnnn` text format that `arnndn` reads ("rnnoise-nu model file version 1"). No model
    /// ships with Reel or with Debian: the models published for FFmpeg's `arnndn` filter (a
    /// few hundred kilobytes each, for speech or voice in general or recorded noise) are such
    /// files. The filter runs at 48 kHz (other rates are resampled around it); what it does to
    /// the sound is the model's.
    ///
    /// The file is read and checked now (its layers must fit together, or `arnndn` would read
    /// past them), and read again by the filter whenever its graph is set up: keep it there
    /// while recording.
    ///
    /// - Throws: `.invalidConfiguration` when the file cannot be read or is not such a model.
    public static func rnnoise(model: URL) throws -> AudioFilter {
        let file = model.standardizedFileURL
        _ = try RNNoiseModel(contentsOf: file)
        return try AudioFilter(graph: "arnndn=m=" + Self.escaped(Self.escaped(file.path)))
    }

    /// `value` with libavfilter's escaping: a backslash before each character that the
    /// graph's or the options' parser would take for syntax (done twice for an option's value
    /// inside a graph).
    static func escaped(_ value: String) -> String {
        var out = ""
        for character in value {
            if "\\':=[],;".contains(character) || character.isWhitespace { out.append("\\") }
            out.append(character)
        }
        return out
    }

    public var description: String { graph }
}
