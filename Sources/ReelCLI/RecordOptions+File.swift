import Foundation
import Reel

/// The file a recording goes into: its name (`-o`), its kind (`--format`, or the name's
/// extension) and what that kind implies for the codecs.
extension RecordOptions {
    /// The frame rate of a GIF unless `--fps` says otherwise: smooth enough for a screen, and
    /// a size people share.
    static let gifFrameRate = FrameRate(15)

    /// The kinds of file `-o` takes, as messages list them.
    static let fileKinds = ".mp4, .mov, .mkv, .webm, .gif; sound only .m4a, .opus, .ogg, .flac, .wav"

    /// The container `-o FILE`'s extension or `--format` names, if any (checked later).
    static func impliedContainer(_ args: ParsedArguments) -> Container? {
        if let path = args.value("output") ?? nil, let c = Container(pathExtension: URL(fileURLWithPath: path).pathExtension) { return c }
        return (args.value("format") ?? nil).flatMap { Container(name: $0) }
    }

    /// `--format`, `-o`, `--audio-codec`, `--audio-bitrate`, and whether the file can hold the codecs.
    mutating func parseFile(_ args: ParsedArguments) throws {
        if let text = args.value("format") ?? nil {
            guard let c = Container(name: text) else { throw UsageError("unknown format '\(text)' (use mp4, mov, mkv, webm or gif; for sound only m4a, opus, ogg, flac or wav)") }
            container = c
        }
        if let path = args.value("output") ?? nil {
            guard !path.isEmpty else { throw UsageError("-o needs a file name") }
            // "x.mp4 " made x.mp4 .mp4: a space after the name is a quoting slip.
            if let last = path.last, last.isWhitespace, !path.allSatisfy(\.isWhitespace) {
                throw UsageError("-o \"\(path)\": the name ends with a space (a slip in the quoting?); give it without the space")
            }
            switch try OutputLocation.checkOutputPath(path, option: "-o", wanted: "a file (\(Self.fileKinds)) or a folder", allowsFolder: true) {
            case .folder:
                outputFolder = URL(fileURLWithPath: path, isDirectory: true)
            case .missingFolder:
                throw UsageError("-o \(path): there is no such folder (create it, or give a file name)")
            case .file, .special:
                break
            }
        }
        if let path = args.value("output") ?? nil, outputFolder == nil {
            let url = URL(fileURLWithPath: path)
            output = url
            let ext = url.pathExtension
            if let implied = Container(pathExtension: ext) {
                if args.has("format") && implied != container {
                    throw UsageError("-o \(path) says .\(ext) but --format says \(container.rawValue)")
                }
                container = implied
            } else if !ext.isEmpty {
                throw UsageError("unknown file type '.\(ext)' (use \(Self.fileKinds); or --format)")
            } else {
                // `-o talk` means talk.mp4, unless a file named exactly that is there already.
                try OutputLocation.checkNoFileWithoutEnding(path, option: "-o")
                output = url.appendingPathExtension(container.fileExtension)
            }
        }
        if container.isAudioOnly {
            if videoSourceCount > 0 {
                throw UsageError(".\(container.fileExtension) files hold sound only: record --mic, --app-audio or --tone into them, "
                                 + "or the video into an .mp4, .mov, .mkv or .webm file")
            }
        }
        // A WAV or FLAC holds one audio track: the library says what two sources need.
        do {
            try Recorder.Settings(container: container, mixesAudio: mixesAudio).checkAudioSources(audioSourceCount, into: container)
        } catch let error as ReelError {
            throw UsageError(error.message + (CommandLineHints.rephrased(error).hint.map { ": \($0)" } ?? ""))
        }
        if container.isAudioOnly || container == .webm {
            // The codec the file's kind implies (Opus for .opus and .webm, FLAC for .flac…).
            audio.codec = container.defaultAudioCodec
        }
        if let name = args.value("audio-codec") ?? nil {
            guard let codec = AudioCodec(name: name) else { throw UsageError("unknown audio codec '\(name)' (use aac, opus, flac or pcm)") }
            audio.codec = codec
            audio.bitRate = AudioSettings(codec: codec, channels: audio.channels).bitRate
        }
        if args.has("audio-bitrate") && audio.codec.isLossless {
            throw UsageError("--audio-bitrate does nothing with \(audio.codec.displayName) audio (lossless: it takes what the sound needs)")
        }
        if args.has("audio-bitrate") {
            audio.bitRate = try ValueParser.bitRate(args.value("audio-bitrate")!, option: "audio-bitrate",
                                                    in: audio.codec.bitRateRange(channels: audio.channels),
                                                    what: " for \(audio.codec.displayName)")
        }
        if videoSourceCount > 0 && !container.canHold(video.codec) {
            throw UsageError("\(container.rawValue) files cannot hold \(video.codec.rawValue) (use \(container == .webm ? "--codec vp9 or av1" : "--format mkv"))")
        }
        // A GIF holds no sound at all (checkFileKind says so if sound is asked for).
        if container != .gif, !container.canHold(audio.codec) {
            throw UsageError("\(container.rawValue) files cannot hold \(audio.codec.rawValue) audio (use --audio-codec \(container.defaultAudioCodec.rawValue))")
        }
        try checkFileKind(args)
    }

    /// What a GIF needs: pictures only, at most 50 a second (its pictures last whole
    /// hundredths of a second), made from one recording at the stop.
    private mutating func checkFileKind(_ args: ParsedArguments) throws {
        guard container == .gif else { return }
        let sound = [("--mic", microphone != nil), ("--app-audio", appAudio != nil), ("--tone", tone)].filter(\.1).map(\.0)
        if !sound.isEmpty {
            throw UsageError("a GIF holds no sound: record \(sound.joined(separator: " and ")) into an .mp4, .mkv or .webm file, or leave \(sound.count == 1 ? "it" : "them") out")
        }
        if videoSourceCount == 0 { throw UsageError("a GIF holds pictures: give a screen, window, camera or --test-pattern to record") }
        if video.frameRate.framesPerSecond > 50 {
            throw UsageError("a GIF's pictures last whole hundredths of a second: use --fps 50 or less (15 by default)")
        }
        if let given = ["max-size", "keep-clips"].first(where: args.has) ?? (args.value("pause-mode") == "clips" ? "pause-mode" : nil) {
            throw UsageError("--\(given) does not work with a GIF, which is made from the whole recording at the stop")
        }
    }
}
