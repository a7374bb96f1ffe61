import Foundation
import Reel

/// An audio source that `--audio-offset` and `--audio-filter` name (`mic:`, `app:`, `tone:`).
public enum AudioTarget: String, CaseIterable, Sendable {
    /// The microphone (`--mic`).
    case mic
    /// What applications play (`--app-audio`).
    case app
    /// The synthetic tone (`--tone`).
    case tone

    /// The option that adds the source.
    var option: String {
        switch self {
        case .mic: "--mic"
        case .app: "--app-audio"
        case .tone: "--tone"
        }
    }
}

/// What the recorded sound goes through: `--audio-offset`, `--audio-filter` and `--denoise`.
extension RecordOptions {
    /// The audio sources given, in the order their options are listed.
    var audioTargets: [AudioTarget] {
        [microphone != nil ? .mic : nil, appAudio != nil ? .app : nil, tone ? .tone : nil].compactMap { $0 }
    }

    /// `--audio-offset [SOURCE:]MS`, `--denoise` (the microphone's) and `--audio-filter
    /// [SOURCE:]GRAPH`, each graph checked now; filters apply in that order.
    mutating func parseSound(_ args: ParsedArguments) throws {
        let present = audioTargets
        func split(_ text: String, option: String) throws -> (targets: [AudioTarget], body: String) {
            for target in AudioTarget.allCases where text.hasPrefix(target.rawValue + ":") {
                guard present.contains(target) else {
                    throw UsageError("--\(option) \(text) is for the \(target.rawValue) source, which is not recorded: give \(target.option) as well")
                }
                return ([target], String(text.dropFirst(target.rawValue.count + 1)))
            }
            guard !present.isEmpty else { throw UsageError("--\(option) works on sound: give --mic, --app-audio or --tone as well") }
            return (present, text)
        }
        var offsetGiven: Set<AudioTarget> = []
        for text in args.all("audio-offset").compactMap({ $0 }) {
            let (targets, body) = try split(text, option: "audio-offset")
            var trimmed = body.hasSuffix("ms") ? String(body.dropLast(2)) : body
            // "+200" as the help writes it (±MS): later by 200 ms.
            if trimmed.hasPrefix("+") { trimmed.removeFirst() }
            guard let ms = ValueParser.decimal(trimmed, signed: true), ms.isFinite, abs(ms) <= 10_000 else {
                throw UsageError("--audio-offset needs milliseconds from -10000 to 10000, e.g. 200 or -150, not '\(body)'")
            }
            for target in targets {
                guard offsetGiven.insert(target).inserted else { throw UsageError("--audio-offset is given twice for the \(target.rawValue) source") }
                sound[target, default: (.zero, [])].offset = MediaTime(value: Int64((ms * 1000).rounded()), timescale: 1_000_000)
            }
        }
        if args.has("denoise") {
            guard microphone != nil else {
                throw UsageError("--denoise cleans the microphone's sound: give --mic as well (for another source: --audio-filter app:afftdn)")
            }
            sound[.mic, default: (.zero, [])].filters.append(try Self.denoiser(args.value("denoise") ?? nil))
        }
        for text in args.all("audio-filter").compactMap({ $0 }) {
            let (targets, body) = try split(text, option: "audio-filter")
            let filter: AudioFilter
            do {
                filter = try AudioFilter(graph: body)
            } catch let error as ReelError {
                throw UsageError("--audio-filter: \(error.message)" + (CommandLineHints.rephrased(error).hint.map { " (\($0))" } ?? ""))
            }
            for target in targets { sound[target, default: (.zero, [])].filters.append(filter) }
        }
    }

    /// What `--denoise[=rnnoise:MODEL]` asks for: afftdn, or RNNoise with the model file
    /// (read and checked now, before anything is recorded).
    static func denoiser(_ value: String?) throws -> AudioFilter {
        guard let value, value != "afftdn" else { return .denoise }
        guard value.hasPrefix("rnnoise:"), value.count > "rnnoise:".count else {
            throw UsageError("--denoise takes nothing (afftdn) or =rnnoise:MODEL, the path of an RNNoise .rnnn model file, not '\(value)'")
        }
        do {
            return try AudioFilter.rnnoise(model: URL(fileURLWithPath: String(value.dropFirst("rnnoise:".count))))
        } catch let error as ReelError {
            throw UsageError("--denoise: \(error.message)" + (CommandLineHints.rephrased(error).hint.map { " (\($0))" } ?? ""))
        }
    }

    /// Refuses an `--audio-offset` at least as long as the recording (`--duration`,
    /// `--max-duration`): it moves the source's sound earlier (or later) by that much, so none
    /// of it would be in the file, and the source would look as if it had failed (later: a
    /// silent track, said to be complete).
    func refuseOffsetsAsLongAsTheRecording() throws {
        guard let limit else { return }
        for target in AudioTarget.allCases {
            guard let offset = sound[target]?.offset, offset != .zero, (offset < .zero ? MediaTime.zero - offset : offset) >= limit else { continue }
            let longest = Int((limit.seconds * 1000).rounded(.up)) - 1
            let way = offset < .zero ? "earlier" : "later"
            throw UsageError("--audio-offset \(Int((offset.seconds * 1000).rounded())) moves the \(target.rawValue) source's sound "
                             + "\(String(format: "%g", abs(offset.seconds))) s \(way), at least as long as the whole recording "
                             + "(\(String(format: "%g", limit.seconds)) s): none of it would be recorded. For this recording the offset "
                             + "must be between -\(longest) and \(longest) ms (a late Bluetooth headset or USB microphone needs a few hundred)")
        }
    }

    /// Gives each audio source among `sources` (added to `session`) its offset and filters.
    func applySound(to sources: [any CaptureSource], in session: CaptureSession) {
        for source in sources {
            let target: AudioTarget? = switch source.kind {
            case .micAudio: .mic
            case .appAudio: .app
            case .audio: .tone
            case .video: nil
            }
            guard let target, let settings = sound[target], let connection = session.connection(for: source) else { continue }
            connection.audioOffset = settings.offset
            connection.audioFilters = settings.filters
        }
    }
}
