import Foundation
import ReelFFmpeg

/// Writes one file of a recording — the whole recording in single-file mode, or one clip in
/// clip mode: the asset writer and the audio laid out for it.
final class RecordingFileWriter {
    let writer: AssetWriter
    /// Where the file is now (a file being replaced keeps its place until this one holds
    /// something: see ``AssetWriter/url``).
    var url: URL { writer.url }
    /// The timeline interval (clip) this file holds.
    let interval: Int
    private var aligners: [AudioTrackAligner]
    private var mixer: AudioMixer?
    private(set) var lastVideoTime: MediaTime?
    private(set) var wroteSomething = false

    /// `maximumFileSize`: the most bytes this file may have (see ``AssetWriter/Configuration``).
    init(url: URL, interval: Int, plan: TrackPlan, settings: Recorder.Settings, overwrite: Bool,
         maximumFileSize: Int64? = nil) throws {
        self.interval = interval
        aligners = plan.audioFormats.map { AudioTrackAligner(format: $0) }
        if let mix = plan.mixFormat { mixer = AudioMixer(inputs: plan.audioFormats.count, format: mix) }
        writer = try AssetWriter(configuration: .init(url: url, container: settings.container, video: plan.video,
                                                      audio: plan.audioTracks, fragmentInterval: settings.fragmentInterval,
                                                      overwrite: overwrite, expectedDuration: settings.maxRecordedDuration,
                                                      maximumFileSize: maximumFileSize))
    }

    var videoFrames: Int64 { writer.videoFrameCount }
    /// The encoded media written so far (see ``AssetWriter/mediaBytes``).
    var mediaBytes: Int64 { writer.mediaBytes }

    /// Where the audio of input `input` has been laid down to, in the file's time.
    func audioEnd(_ input: Int) -> MediaTime { aligners[input].nextTime }

    /// Encodes a frame at `time` in this file.
    /// Encodes a frame; returns whether it was written (not a second frame in one slot).
    @discardableResult
    func appendVideo(_ frame: VideoFrame, at time: MediaTime) throws -> Bool {
        guard try writer.appendVideo(frame, at: time) else { return false }
        lastVideoTime = time
        wroteSomething = true
        return true
    }

    /// Lays `buffer` (its time already in this file's time) onto input `input`'s track.
    func appendAudio(_ buffer: AudioBuffer, input: Int) throws {
        for piece in try aligners[input].place(buffer) {
            wroteSomething = true
            if mixer != nil {
                if let mixed = try mixer!.add(piece, input: input) { try writer.appendAudio(mixed, track: 0) }
            } else {
                try writer.appendAudio(piece, track: input)
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
        if mixer != nil, let rest = mixer!.flush() { try writer.appendAudio(rest, track: 0) }
    }

    func finish() throws -> AssetWriter.Summary { try writer.finish() }

    func abandon() { writer.abandon() }
}
