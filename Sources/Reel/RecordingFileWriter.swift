import Foundation
import ReelFFmpeg

/// The one encode of a recording and where it goes: the ``StreamEncoder`` and its sinks — the
/// recording's file (one ``MovieFileSink``, or in clip mode a ``ClipFileSink`` that cuts the one
/// stream into a file per clip, or none), a replay buffer, live streams, an application's sinks
/// — and the audio laid out for it (each track's samples placed by their times, or mixed).
final class RecordingFileWriter {
    /// Where the encoder's packets are kept as a file.
    enum File {
        /// One file (single-file mode).
        case movie(MovieFileSink)
        /// A file per clip (clip mode).
        case clips(ClipFileSink)
        /// No file: the sinks take everything (a replay buffer, live streams).
        case none
    }

    let encoder: StreamEncoder
    let file: File
    private var aligners: [AudioTrackAligner]
    private var mixer: AudioMixer?
    /// Frames given to the encoder (some may still be inside it).
    private(set) var framesEncoded: Int64 = 0
    private(set) var lastVideoTime: MediaTime?
    private(set) var wroteSomething = false

    /// Opens the encoders for `plan` and adds `file` and `sinks` as their sinks, the file first
    /// (required: its failure ends the recording); a live stream or replay buffer is optional.
    /// `alignsTrackStarts`: every track's first packet decodes at the same time (what MP4/MOV
    /// files need, see ``StreamEncoder``).
    init(plan: TrackPlan, file: File, sinks: [any PacketSink], alignsTrackStarts: Bool) throws {
        aligners = plan.audioFormats.map { AudioTrackAligner(format: $0) }
        if let mix = plan.mixFormat { mixer = AudioMixer(inputs: plan.audioFormats.count, format: mix) }
        encoder = try StreamEncoder(video: plan.video, audio: plan.audioTracks, alignsTrackStarts: alignsTrackStarts)
        self.file = file
        do {
            switch file {
            case .movie(let movie): try encoder.addSink(movie, policy: .required)
            case .clips(let clips): try encoder.addSink(clips, policy: .required)
            case .none: break
            }
            for sink in sinks { try encoder.addSink(sink, policy: sink.policy) }
        } catch {
            if case .movie(let movie) = file { movie.discard() }  // nothing was recorded: the new file goes
            encoder.abandon()
            throw error
        }
    }

    /// The single file, if the recording writes one.
    var movie: MovieFileSink? {
        if case .movie(let movie) = file { return movie }
        return nil
    }

    /// The size the video is encoded at.
    var videoSize: PixelSize? { encoder.videoSize }

    // MARK: Appending

    /// Encodes a frame at recorded time `time`; returns whether it was taken (not a second frame
    /// in one slot).
    @discardableResult
    func appendVideo(_ frame: VideoFrame, at time: MediaTime) throws -> Bool {
        guard try advisingRecovery({ try encoder.appendVideo(frame, at: time) }) else { return false }
        framesEncoded += 1
        lastVideoTime = time
        wroteSomething = true
        return true
    }

    /// Lays `buffer` (its time the recorded time) onto input `input`'s track.
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

    private func append(_ buffer: AudioBuffer, track: Int) throws {
        try advisingRecovery { try encoder.appendAudio(buffer, track: track) }
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

    /// At a pause at recorded time `time`: the encoder gives out what it holds and the sinks
    /// write it out (see ``StreamEncoder/pause(endingAt:)``).
    func pause(at time: MediaTime) throws {
        try advisingRecovery { try encoder.pause(endingAt: time) }
    }

    /// In clip mode, at a pause: each audio track's encoder is finished once the track's sound
    /// reaches recorded time `time`, and a new one carries it on.
    func endClipAudio(at time: MediaTime) throws {
        try advisingRecovery { try encoder.endClipAudio(at: time) }
    }

    /// Runs `body`, adding to a full disk's error how to get the single file back.
    private func advisingRecovery<T>(_ body: () throws -> T) throws -> T {
        guard let movie else { return try body() }
        return try movie.advisingRecoveryWhenFull(encoder: encoder, body)
    }

    // MARK: The end

    /// Drains the encoders into the sinks and finishes them (the file first, finalised).
    /// Returns what the single file holds, if there is one.
    func finish() throws -> AssetWriter.Summary? {
        if let movie { return try movie.finishRecording(drainingInto: encoder) }
        try encoder.finish()
        return nil
    }

    /// Stops without draining or finalising: the file keeps what reached the disk.
    func abandon() {
        encoder.abandon()
    }

    // MARK: What it holds

    /// The encoded media written to the file(s) so far (0 without one).
    var mediaBytes: Int64 {
        switch file {
        case .movie(let movie): return movie.mediaBytes
        case .clips(let clips): return clips.openMediaBytes
        case .none: return 0
        }
    }

    /// Whether the file reached its size limit.
    var isFull: Bool { encoder.hasFullSink }
}
