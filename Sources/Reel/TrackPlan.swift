import Foundation
import ReelFFmpeg

/// The tracks a recorder writes, worked out from the session's sources.
struct TrackPlan {
    var video: AssetWriter.VideoTrack?
    var videoSource: SourceID?
    var videoSize: PixelSize?
    /// Audio sources by input index.
    var audioInputs: [SourceID: Int] = [:]
    var audioFormats: [AudioFormat] = []
    var audioTracks: [AssetWriter.AudioTrack] = []
    var titles: [String] = []
    var mixFormat: AudioFormat?

    init(settings: Recorder.Settings, sources: [SourceDescriptor]) throws {
        for source in sources where source.kind == .video {
            if case .video(let size, let pixelFormat, _) = source.format {
                video = AssetWriter.VideoTrack(settings: settings.video, inputFormat: pixelFormat, inputSize: size)
                // A size a filter made is the shape the user asked for: kept at a size of the recorder's own.
                video?.keepsAspect = source.sizeMadeByFilter
                videoSource = source.id
                videoSize = settings.video.size ?? size
                break
            }
        }
        for source in sources where source.kind.isAudio {
            guard case .audio(let format) = source.format else { continue }
            audioInputs[source.id] = audioFormats.count
            audioFormats.append(format)
            switch source.kind {
            case .micAudio: titles.append("Microphone")
            case .appAudio: titles.append(Self.appAudioTitle(source.name))
            default: titles.append(source.name)
            }
        }
        if settings.mixesAudio && audioFormats.count > 1 {
            guard Set(audioFormats.map(\.sampleRate)).count == 1 else {
                throw ReelError(.invalidConfiguration, "cannot mix audio sources of different sample rates")
            }
            let mix = AudioFormat(sampleFormat: .f32, sampleRate: audioFormats[0].sampleRate, channels: settings.audio.channels)
            mixFormat = mix
            audioTracks = [AssetWriter.AudioTrack(settings: settings.audio, inputFormat: mix, title: "Mix")]
            titles = ["Mix"]
        } else {
            audioTracks = zip(audioFormats, titles).map { AssetWriter.AudioTrack(settings: settings.audio, inputFormat: $0, title: $1) }
        }
        if video == nil && audioTracks.isEmpty {
            throw ReelError(.cannotAddOutput, "the recorder has nothing to record", hint: "add a video or audio input first")
        }
    }

    /// The title of an app-audio track: what it records, as the source names it ("App audio
    /// of 'beeper'", "App audio except 'zoom'", "App audio of 'speakers'"), or "App audio"
    /// for the default sink's. Every one was "App audio", whichever application it held.
    static func appAudioTitle(_ sourceName: String) -> String {
        guard sourceName.hasPrefix("app audio "), sourceName != "app audio (default)" else { return "App audio" }
        return "A" + sourceName.dropFirst()
    }
}
