import Foundation
import ReelFFmpeg

/// Writes one file of a recording — the whole recording in single-file mode, or one clip in
/// clip mode: the asset writer and the audio laid out for it. With packet sinks (a replay buffer,
/// live streams), the same encode also feeds them; a recorder without a file (a replay buffer or
/// live streams only) has its encoders feed the sinks alone (``writer`` is `nil`).
final class RecordingFileWriter {
    /// The file's writer; `nil` when only a replay buffer is kept.
    let writer: AssetWriter?
    /// The encoders when there is no file (replay buffer only); `nil` when ``writer`` has its own.
    let encoder: StreamEncoder?
    /// Where the file is now (a file being replaced keeps its place until this one holds
    /// something: see ``AssetWriter/url``).
    let fileURL: URL
    var url: URL { writer?.url ?? fileURL }
    /// Frames encoded (the writer counts its own; without one, counted here).
    private var framesEncoded: Int64 = 0

    /// What a finished file holds.
    struct Finished {
        var duration: MediaTime
        var videoFrames: Int64
        var bytes: Int64
    }
    /// The timeline interval (clip) this file holds.
    let interval: Int
    private var aligners: [AudioTrackAligner]
    private var mixer: AudioMixer?
    private(set) var lastVideoTime: MediaTime?
    private(set) var wroteSomething = false

    /// `maximumFileSize`: the most bytes this file may have (see ``AssetWriter/Configuration``).
    /// `sinks`: sinks fed by the same encoders (a replay buffer, live streams), added in order;
    /// `writesFile`: whether there is a file at all (without one, the sinks take everything).
    init(url: URL, interval: Int, plan: TrackPlan, settings: Recorder.Settings, overwrite: Bool,
         maximumFileSize: Int64? = nil, sinks: [any PacketSink] = [], writesFile: Bool = true) throws {
        self.interval = interval
        fileURL = url
        aligners = plan.audioFormats.map { AudioTrackAligner(format: $0) }
        if let mix = plan.mixFormat { mixer = AudioMixer(inputs: plan.audioFormats.count, format: mix) }
        if writesFile {
            var configuration = AssetWriter.Configuration(url: url, container: settings.container, video: plan.video,
                                                          audio: plan.audioTracks, fragmentInterval: settings.fragmentInterval,
                                                          overwrite: overwrite, expectedDuration: settings.maxRecordedDuration,
                                                          maximumFileSize: maximumFileSize)
            configuration.writeBufferSize = settings.writeBufferSize
            let writer = try AssetWriter(configuration: configuration)
            do {
                for sink in sinks { try writer.addSink(sink, policy: Self.policy(of: sink)) }
            } catch {
                writer.discard()  // nothing was recorded: the new file goes
                throw error
            }
            self.writer = writer
            encoder = nil
        } else {
            let encoder = try StreamEncoder(video: plan.video, audio: plan.audioTracks)
            do {
                for sink in sinks { try encoder.addSink(sink, policy: Self.policy(of: sink)) }
            } catch {
                encoder.abandon()
                throw error
            }
            self.writer = nil
            self.encoder = encoder
        }
    }

    /// What a sink's end does to the recording: a live stream that fails for good (or a replay
    /// buffer) is dropped and the recording goes on (the stream says so in its own events); an
    /// application's own sink is one the recording depends on, as it always was.
    static func policy(of sink: any PacketSink) -> SinkPolicy {
        sink is LiveStream || sink is ReplayBuffer ? .optional : .required
    }

    var videoFrames: Int64 { writer?.videoFrameCount ?? framesEncoded }
    /// The encoded media written so far (see ``AssetWriter/mediaBytes``); 0 without a file.
    var mediaBytes: Int64 { writer?.mediaBytes ?? 0 }
    /// The size the video is encoded at.
    var videoSize: PixelSize? { writer?.videoSize ?? encoder?.videoSize }
    /// Whether the file has reached its size limit (never without a file).
    var isFull: Bool { writer?.isFull ?? false }
    /// Packets in the file so far.
    var packetsWritten: Int64 { writer?.packetsWritten ?? 0 }
    /// The size the file would have if finalised now (0 without a file).
    var projectedFileSize: Int64 { writer?.projectedFileSize ?? 0 }
    /// The bytes of a typical frame in the file (0 without a file).
    var typicalFrameBytes: Int64 { writer?.typicalFrameBytes ?? 0 }

    /// Where the audio of input `input` has been laid down to, in the file's time.
    func audioEnd(_ input: Int) -> MediaTime { aligners[input].nextTime }

    /// Encodes a frame at `time` in this file.
    /// Encodes a frame; returns whether it was written (not a second frame in one slot).
    @discardableResult
    func appendVideo(_ frame: VideoFrame, at time: MediaTime) throws -> Bool {
        if let writer {
            guard try writer.appendVideo(frame, at: time) else { return false }
        } else {
            guard try encoder?.appendVideo(frame, at: time) == true else { return false }
            framesEncoded += 1
        }
        lastVideoTime = time
        wroteSomething = true
        return true
    }

    /// Lays `buffer` (its time already in this file's time) onto input `input`'s track.
    func appendAudio(_ buffer: AudioBuffer, input: Int) throws {
        for piece in try aligners[input].place(buffer) {
            wroteSomething = true
            if mixer != nil {
                if let mixed = try mixer!.add(piece, input: input) { try append(mixed, track: 0) }
            } else {
                try append(piece, track: input)
            }
        }
    }

    /// Fills every audio track with silence up to `end`, so all tracks end together.
    func padAudio(to end: MediaTime) throws {
        for i in aligners.indices {
            let target = end.convertedValue(to: Int32(aligners[i].format.sampleRate), rounding: .down)
            let missing = target - aligners[i].nextSample
            if missing > 0 {
                try appendAudio(.silence(format: aligners[i].format, frameCount: Int(missing), at: aligners[i].nextTime), input: i)
            }
        }
        if mixer != nil, let rest = mixer!.flush() { try append(rest, track: 0) }
    }

    /// At a pause: the encoders give out what they hold and the file (and the sinks) write it
    /// out (see ``StreamEncoder/pause()``).
    func pause() throws {
        if let writer { try writer.pause() } else { try encoder?.pause() }
    }

    /// Drains the encoders and finalises the file (without one: finishes the sinks).
    func finish() throws -> Finished {
        guard let writer else {
            try encoder?.finish()
            let duration = lastVideoTime ?? aligners.map(\.nextTime).max() ?? .zero
            return Finished(duration: duration, videoFrames: framesEncoded, bytes: 0)
        }
        let summary = try writer.finish()
        return Finished(duration: summary.duration, videoFrames: summary.videoFrames, bytes: summary.bytes)
    }

    func abandon() {
        if let writer { writer.abandon() } else { encoder?.abandon() }
    }
}

extension RecordingFileWriter {
    /// Encodes audio for `track` into the file's writer, or the encoders of the buffer alone.
    fileprivate func append(_ buffer: AudioBuffer, track: Int) throws {
        if let writer { try writer.appendAudio(buffer, track: track) } else { try encoder?.appendAudio(buffer, track: track) }
    }
}
