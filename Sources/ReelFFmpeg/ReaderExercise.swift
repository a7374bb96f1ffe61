import Foundation
internal import CFFmpeg
import ReelCore

/// Runs every part of Reel that reads media files over one file: what the fuzzer
/// (`Sources/ReelFuzz`) does with each input and what its regression test does with every file
/// of the corpus. Package-internal: not part of Reel's API.
///
/// Each reader either succeeds or throws a `ReelError`; anything else (another error type, a
/// crash, a hang) is a bug.
package enum ReaderExercise {
    /// What one reader made of the file.
    package enum Outcome: Sendable, CustomStringConvertible {
        case succeeded
        case failed(ReelError)
        /// An error that is not a `ReelError`: a bug.
        case unexpected(String)

        package var description: String {
            switch self {
            case .succeeded: return "succeeded"
            case .failed(let error): return "\(error.code): \(error.description)"
            case .unexpected(let text): return "unexpected error: \(text)"
            }
        }
    }

    /// Silences libav's own logging altogether (the fuzzer's inputs are damaged on purpose).
    package static func silenceLogging() {
        FFmpeg.silenceLibraryLogging()
        av_log_set_level(AV_LOG_QUIET)
    }

    /// The readers, in the order they run.
    package static let readers = ["isCutOff", "probe", "decode", "remux", "recover", "merge", "reencode"]

    /// Runs the readers over the file at `url`, writing what they write into `scratch` (a folder
    /// that exists), and returns what each made of it. `maxPackets` bounds the packets decoded.
    /// The file at `url` is only read.
    package static func run(_ url: URL, scratch: URL, maxPackets: Int = 1_000) -> [(reader: String, outcome: Outcome)] {
        FFmpeg.silenceLibraryLogging()
        var results: [(String, Outcome)] = []
        func attempt(_ reader: String, _ body: () throws -> Void) {
            do {
                try body()
                results.append((reader, .succeeded))
            } catch let error as ReelError {
                results.append((reader, .failed(error)))
            } catch {
                results.append((reader, .unexpected("\(type(of: error)): \(error)")))
            }
        }
        var cutOff = false
        attempt("isCutOff") { cutOff = Recovery.isCutOff(url) }
        var facts: ClipFacts?
        attempt("probe") { facts = try ClipFacts.probe(url, number: 1) }
        attempt("decode") { try decodeAll(url, maxPackets: maxPackets) }
        attempt("remux") {
            try Remuxer.remux(url, to: scratch.appendingPathComponent("remuxed.mkv"), container: .mkv, overwrite: true)
        }
        attempt("recover") {
            // Only for what `reel recover` takes; anything else is refused with a ReelError too.
            guard cutOff else { return }
            _ = try Recovery.recover(url, to: scratch.appendingPathComponent("recovered.mp4"), overwrite: true)
        }
        attempt("merge") {
            // The file after itself, the second time muted: copying, silence, or re-encoding.
            _ = try Merger.merge([MergeInput(url: url), MergeInput(url: url, isMuted: true)],
                                 to: scratch.appendingPathComponent("merged.mp4"),
                                 options: MergeOptions(allowsReencoding: true, overwrite: true))
        }
        attempt("reencode") {
            guard let facts else { return }
            let output = scratch.appendingPathComponent("reencoded.mkv")
            try? FileManager.default.removeItem(at: output)
            let join = try ReencodingJoiner(url: output, container: .mkv, clips: [facts])
            do {
                try join.append(facts, from: try facts.open(), muted: false)
                _ = try join.finish()
            } catch {
                join.abandon()
                throw error
            }
        }
        return results
    }

    /// Decodes the video and audio streams of `url`, up to `maxPackets` packets, converting
    /// each picture and sound as a re-encoding merge does.
    static func decodeAll(_ url: URL, maxPackets: Int) throws {
        let input = try InputFile(url: url)
        let ctx = input.context
        var decoders: [Int: Decoder] = [:]
        for i in 0..<Int(ctx.pointee.nb_streams) {
            let type = ctx.pointee.streams[i]!.pointee.codecpar.pointee.codec_type
            guard type == AVMEDIA_TYPE_VIDEO || type == AVMEDIA_TYPE_AUDIO else { continue }
            decoders[i] = try Decoder(input: input, stream: i)
        }
        let picture = PictureConverter(size: PixelSize(width: 64, height: 64))
        let sound = SoundConverter(sampleRate: 48_000, channels: 2)
        func drain(_ decoder: Decoder) throws {
            while try decoder.receive() == .frame {
                if decoder.context.pointee.codec_type == AVMEDIA_TYPE_VIDEO {
                    _ = try picture.convert(decoder.frame)
                } else {
                    _ = try sound.convert(decoder.frame)
                }
            }
        }
        var count = 0
        while count < maxPackets {
            guard let packet = try input.next(failing: { FFmpeg.error($0, "cannot read \(url.lastPathComponent)", code: .invalidMedia) }) else { break }
            count += 1
            guard let decoder = decoders[Int(packet.pointee.stream_index)] else { continue }
            try decoder.send(packet)
            try drain(decoder)
        }
        for decoder in decoders.values {
            try decoder.send(nil)
            try drain(decoder)
        }
        _ = try sound.flush()
    }
}
