import Foundation
internal import CFFmpeg
import ReelCore

/// Writes clips one after the other into one file by decoding them and encoding them again
/// with the first clip's size, frame rate and video codec. Audio track N takes its codec,
/// sample rate and channels from the first clip that has an Nth audio track, so no clip's audio
/// is lost; clips without it are silent there.
final class ReencodingJoiner {
    private let writer: AssetWriter
    private let picture: PictureConverter?
    private let audioFormats: [AudioFormat]
    /// Samples handed to each audio track so far.
    private var fed: [Int64]
    private(set) var offset = MediaTime.zero
    /// The chapters of the clips appended, on the joined timeline.
    private var chapters: [Chapter] = []

    init(url: URL, container: Container, clips: [ClipFacts]) throws {
        let first = clips[0]
        if first.video == nil, let later = clips.first(where: { $0.video != nil }) {
            throw ReelError(.incompatibleClips, "\(later.label) has video but clip 1 has none",
                            hint: "merge clips that all have video, or put a clip with video first")
        }
        var video: AssetWriter.VideoTrack?
        if let v = first.video {
            let rate = v.frameRate.num > 0 && v.frameRate.den > 0 && Double(v.frameRate.num) / Double(v.frameRate.den) <= 240
                ? FrameRate(v.frameRate.num, per: v.frameRate.den) : FrameRate(30)
            let codec = v.videoCodec.flatMap { container.canHold($0) && VideoEncoder.isAvailable($0) ? $0 : nil } ?? .h264
            let size = PixelSize(width: Int(v.width) & ~1, height: Int(v.height) & ~1)
            video = AssetWriter.VideoTrack(settings: VideoSettings(codec: codec, size: size, frameRate: rate),
                                           inputFormat: .yuv420p, inputSize: size)
        }
        var audio: [AssetWriter.AudioTrack] = []
        let trackCount = clips.map(\.audio.count).max() ?? 0
        for t in 0..<trackCount {
            let a = clips.first { $0.audio.count > t }!.audio[t]
            let codec = a.audioCodec.flatMap { container.canHold($0) ? $0 : nil } ?? container.defaultAudioCodec
            let channels = Int(min(max(a.channels, 1), 2))
            var settings = AudioSettings(codec: codec, sampleRate: Int(a.sampleRate), channels: channels,
                                         bitRate: SilentPacket.bitRate(a.bitRate, codec: codec, channels: channels))
            if (try? settings.validate()) == nil { settings.sampleRate = 48_000 }
            audio.append(AssetWriter.AudioTrack(settings: settings,
                                                inputFormat: AudioFormat(sampleFormat: .f32, sampleRate: settings.sampleRate, channels: settings.channels),
                                                title: a.title))
        }
        writer = try AssetWriter(configuration: AssetWriter.Configuration(url: url, container: container, video: video, audio: audio))
        picture = video.map { PictureConverter(size: $0.inputSize) }
        audioFormats = audio.map(\.inputFormat)
        fed = Array(repeating: 0, count: audio.count)
    }

    /// Decodes `clip` and encodes it at the end of the timeline; a `muted` clip's audio is silence.
    /// `meter` hears how far reading has come: `readBefore` (the earlier clips' bytes) plus the
    /// position in this one.
    func append(_ clip: ClipFacts, from input: InputFile, muted: Bool, meter: ProgressMeter? = nil, readBefore: Int64 = 0,
                chapters: [Chapter] = []) throws {
        self.chapters += input.chapters(ofClipAt: clip.zero, adding: chapters, joinedAt: offset)
        let videoPosition = clip.streams.firstIndex { $0.kind == .video }
        if picture != nil && videoPosition == nil {
            throw ReelError(.incompatibleClips, "\(clip.label) has no video but clip 1 has", hint: "merge clips that all have video")
        }
        let videoDecoder = picture == nil ? nil : try videoPosition.map { try Decoder(input: input, stream: clip.streams[$0].index) }
        let audioStreams = clip.audio
        clipLimit = offset + clip.plausibleLength
        clipLabel = clip.label
        tracks = []
        for (t, format) in audioFormats.enumerated() {
            let source = !muted && t < audioStreams.count ? audioStreams[t] : nil
            tracks.append(AudioTrackFeed(format: format, start: fed[t],
                                         decoder: try source.map { try Decoder(input: input, stream: $0.index) },
                                         zero: source.map { clip.zero.ticks(in: $0.timeBase) } ?? 0,
                                         limit: clip.plausibleLength, label: clip.label))
        }
        var length = ClipLength()
        let videoZero = videoPosition.map { clip.zero.ticks(in: clip.streams[$0].timeBase) } ?? 0

        func drainVideo() throws {
            guard let decoder = videoDecoder, let picture else { return }
            while try decoder.receive() == .frame {
                guard let ts = decoder.frameTimestamp else { continue }
                let t = MediaTime(ticks: ts - videoZero, decoder.timeBase)
                guard t >= .zero else { continue }
                let frame = try picture.convert(decoder.frame)
                try writer.appendVideo(frame, at: offset + t)
                // Silent tracks keep up with the video, so the file stays interleaved.
                for t2 in tracks.indices where tracks[t2].decoder == nil {
                    try feed(track: t2, silenceUntil: offset + t)
                }
            }
        }
        func drainAudio(_ t: Int) throws {
            guard let decoder = tracks[t].decoder else { return }
            while try decoder.receive() == .frame {
                try tracks[t].take(decoder: decoder)
                try flushAudio(t, keeping: tracks[t].format.sampleRate / 2)
            }
        }

        var packets = ClipReader(clip, from: input, meter: meter, readBefore: readBefore)
        while let (packet, j) = try packets.next() {
            let facts = clip.streams[j]
            let zero = clip.zero.ticks(in: facts.timeBase)
            let pts = packet.pointee.pts != FFmpeg.noPTS ? packet.pointee.pts : packet.pointee.dts
            if pts != FFmpeg.noPTS {
                var duration = packet.pointee.duration
                if duration <= 0 { duration = facts.frameDurationTicks }
                length.note(stream: j, start: MediaTime(ticks: pts - zero, facts.timeBase), duration: MediaTime(ticks: max(0, duration), facts.timeBase))
            }
            if j == videoPosition, let videoDecoder {
                try videoDecoder.send(packet)
                try drainVideo()
            } else if let t = audioStreams.firstIndex(where: { $0.index == facts.index }), t < tracks.count, let decoder = tracks[t].decoder {
                try decoder.send(packet)
                try drainAudio(t)
            }
        }
        if let left = packets.leftOut { packetsLeftOut.append(left) }
        if let videoDecoder {
            try videoDecoder.send(nil)
            try drainVideo()
        }
        for t in tracks.indices {
            if let decoder = tracks[t].decoder {
                try decoder.send(nil)
                try drainAudio(t)
                try tracks[t].finish()
            }
        }
        let end = offset + length.length(video: videoPosition, grid: videoPosition.flatMap { clip.streams[$0].inexactFrameDuration })
        guard end <= clipLimit else { throw damagedTimestamps(end - offset) }
        for t in tracks.indices {
            // Exactly the clip's length of audio: what was decoded, cut or padded with silence.
            let target = end.convertedValue(to: Int32(audioFormats[t].sampleRate)) - fed[t]
            try flushAudio(t, keeping: 0, limit: target)
            try feed(track: t, silenceUntil: end)
        }
        offset = end
    }

    /// Hands track `t` what it has decoded, but for the last `keeping` samples (which may lie
    /// past the clip's end) and never more than `limit` samples.
    private func flushAudio(_ t: Int, keeping: Int, limit: Int64 = .max) throws {
        let count = min(Int64(tracks[t].pendingFrames - keeping), limit)
        guard count > 0 else { return }
        let data = tracks[t].takeFrames(Int(count))
        let at = MediaTime(value: fed[t], timescale: Int32(audioFormats[t].sampleRate))
        try writer.appendAudio(AudioBuffer(format: audioFormats[t], presentationTime: at, wholeFrames: data), track: t)
        fed[t] += count
    }

    /// Pads track `t` with silence up to `time` on the merged timeline, a second at a time.
    private func feed(track t: Int, silenceUntil time: MediaTime) throws {
        guard time <= clipLimit else { throw damagedTimestamps(time - offset) }
        let rate = audioFormats[t].sampleRate
        let target = time.convertedValue(to: Int32(rate))
        guard target > fed[t] else { return }
        tracks[t].clear()
        while fed[t] < target {
            let count = Int(min(target - fed[t], Int64(rate)))
            let at = MediaTime(value: fed[t], timescale: Int32(rate))
            try writer.appendAudio(AudioBuffer.silence(format: audioFormats[t], frameCount: count, at: at), track: t)
            fed[t] += Int64(count)
        }
    }

    /// The end of the clip being appended may not lie past this.
    private var clipLimit = MediaTime.zero
    private var clipLabel = ""

    private func damagedTimestamps(_ time: MediaTime) -> ReelError {
        ReelError(.invalidMedia, "\(clipLabel) is damaged: its timestamps run to \(Int(time.seconds)) s, past its length",
                  hint: "merge only complete recordings")
    }

    private var tracks: [AudioTrackFeed] = []
    /// The packets that the clips appended list and do not play (see ``ClipReader/leftOut``).
    private(set) var packetsLeftOut: [MergeSummary.PacketsLeftOut] = []

    /// The chapters that begin at or after the joined file's end (see ``MergeSummary/leftOutMarkers``).
    var chaptersPastTheEnd: [Chapter] { chapters.filter { $0.start >= offset } }

    func finish() throws -> AssetWriter.Summary {
        writer.opened?.file.setChapters(chapters, end: offset)
        return try writer.finish()
    }

    func abandon() { writer.cancelWriting() }
}
