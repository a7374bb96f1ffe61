import Foundation
import ReelFFmpeg

/// The recorder's per-recording work, done only on the recorder's thread: lays samples onto
/// the recording timeline (pauses taken out), writes them into one file or one file per clip,
/// watches the limits, and at the end finalises (and in clip mode merges) the result.
final class RecorderPipeline: @unchecked Sendable {
    /// A request from the API, applied in order with the samples.
    typealias Control = RecorderStateMachine.Control

    let url: URL
    let settings: Recorder.Settings
    let plan: TrackPlan
    let session: RecordingSession
    let limit: MediaTime?
    private(set) var timeline: RecordingTimeline
    /// The files being written, by timeline interval. One in single-file mode (key 0); in clip
    /// mode usually one, but audio may run ahead into the next clip before the video has left
    /// the last, so a few can be open at once.
    private(set) var open: [Int: RecordingFileWriter] = [:]
    /// The preset the adapter has stepped to (see `RecorderPipeline+Speed.swift`): files opened
    /// from now on (clip mode's next clip) start at it.
    var adaptedVideoPreset: String?
    private var finishedIntervals = Set<Int>()
    private var finishedBytes: Int64 = 0
    private var finishedFrames: Int64 = 0
    /// The encoded media of the finished files, and in clip mode what they add to the merged
    /// file at most (media and index).
    private var finishedMedia: Int64 = 0
    private var finishedShare: Int64 = 0
    /// The duration of the last file finished (what it holds, when a size limit cut it short).
    private var finishedDuration = MediaTime.zero
    /// Under a size limit, audio that came ahead of the video waits for it, so that a stop at
    /// the limit leaves both tracks ending together (at most 3 s are held).
    private var heldAudio: [SourcedSample] = []
    /// In clip mode under a size limit: the clips so far leave no room for another.
    private var sizeUsedUp = false
    private var heldAudioDuration = MediaTime.zero
    private var pendingAudio: [SourcedSample] = []
    private var pendingAudioDuration = MediaTime.zero
    /// The latest session time each input has delivered up to (video: frame time; audio: end).
    private var videoReached: MediaTime?
    private var audioReached: [MediaTime?]
    /// Whether video frames still come and count (they stop at the limit or when the source goes).
    private var video = VideoTrackState.awaitingFrames
    /// The frames of the video source written, as runs of consecutive frames and slots.
    private var writtenRuns: [RecordedFrames.Run] = []
    /// The last frame written: its timeline interval, its source's frame number and its slot.
    private var lastWritten: (interval: Int, sequence: Int64, slot: Int64)?
    /// The picture last written, where and when (recorded time), for the frame modes that
    /// leave repeated pictures out.
    private var lastPicture: (interval: Int, id: UInt64, recorded: MediaTime)?
    /// The newest repeated picture left out, written where its interval or the recording
    /// ends so that the file lasts as long as it was recorded.
    private var heldRepeat: (frame: VideoFrame, interval: Int, at: MediaTime, slot: Int64)?
    /// Where the encoder was last asked for a keyframe (frame modes that leave pictures out):
    /// the interval and the encoder's grid slot.
    private var lastKeyframe: (interval: Int, index: Int64)?
    /// Where the single file was finalised, if not at `url` (it was moved while recorded).
    private var finishedURL: URL?
    /// Frames missing between frames written: frames the source or the recorder dropped.
    private(set) var droppedFrames: Int64 = 0
    private(set) var ending: RecordingEnding = .requested
    /// The size the video is encoded at (a source's odd size is made even).
    private var encodedVideoSize: PixelSize?
    private var nextSpaceCheck = MediaTime.zero
    /// Events to report, collected while handling samples.
    var onClipStarted: ((Int) -> Void)?
    var onClipFinished: ((Clip) -> Void)?

    /// The sinks fed by the recording's encoders beside its file (a replay buffer, live streams).
    let sinks: [any PacketSink]
    /// The live streams among ``sinks``, whose statistics go into progress.
    let liveStreams: [LiveStream]
    /// Whether the recording has a file (else only ``sinks`` take what is encoded).
    let writesFile: Bool

    init(url: URL, settings: Recorder.Settings, sources: [SourceDescriptor], session: RecordingSession,
         sinks: [any PacketSink] = [], writesFile: Bool = true) throws {
        self.url = url
        self.settings = settings
        self.session = session
        self.sinks = sinks
        liveStreams = sinks.compactMap { $0 as? LiveStream }
        self.writesFile = writesFile
        limit = settings.maxRecordedDuration
        if !sinks.isEmpty, settings.pauseMode == .clips {
            // Each clip opens encoders of its own and starts its timestamps again: a sink fed
            // by them would take streams that restart at every resume, and cost an encode each.
            let what = sinks.contains { $0 is ReplayBuffer } ? "a replay buffer" : "live streams (packet sinks)"
            throw ReelError(.invalidConfiguration, "\(what) cannot be fed in clip pause mode",
                            hint: "use the single-file pause mode (the default) with \(what)")
        }
        if !writesFile, settings.maxFileSize != nil {
            throw ReelError(.invalidConfiguration, "a recorder that writes no file (a replay buffer or live streams only) has no file to limit in size",
                            hint: "limit the replay buffer's bytes (ReplayBuffer's maxBytes) instead")
        }
        if let limit, limit <= .zero { throw ReelError(.invalidConfiguration, "the maximum duration must be positive") }
        if let max = settings.maxFileSize, max <= 0 { throw ReelError(.invalidConfiguration, "the maximum file size must be positive") }
        plan = try TrackPlan(settings: settings, sources: sources)
        audioReached = Array(repeating: nil, count: plan.audioFormats.count)
        timeline = RecordingTimeline(frameDuration: plan.video != nil ? settings.video.frameRate.frameDuration
                                                                      : MediaTime(value: 1, timescale: 100))
        if settings.pauseMode == .clips {
            // The merged file appears at the end; refuse now if it could not be written then.
            if FileManager.default.fileExists(atPath: url.path) && !settings.overwrite {
                throw ReelError(.fileExists, "\(url.path) already exists", hint: LibraryHint.allowOverwriting)
            }
            // A folder that holds another recording's clips is refused, never reused.
            try session.claim(target: url, keepsClips: settings.keepsClips)
        }
        do {
            try checkFreeSpace()
            // Open the first file now, so that a bad path or codec fails before the session starts.
            let first = try makeWriter(interval: 0)
            open[0] = first
            encodedVideoSize = first.videoSize
        } catch {
            if settings.pauseMode == .clips { session.releaseClaim() }
            throw error
        }
    }

    private var container: Container { settings.container ?? Container(pathExtension: url.pathExtension) ?? .mp4 }

    private func makeWriter(interval: Int) throws -> RecordingFileWriter {
        var plan = self.plan
        if let adaptedVideoPreset { plan.video?.settings.preset = adaptedVideoPreset }
        if settings.pauseMode == .singleFile {
            return try RecordingFileWriter(url: url, interval: 0, plan: plan, settings: settings, overwrite: settings.overwrite,
                                  maximumFileSize: settings.maxFileSize, sinks: sinks, writesFile: writesFile)
        }
        let clipURL = session.folder.appendingPathComponent(String(format: "clip-%03d.%@", interval + 1, container.fileExtension))
        // Never over a file that is there: the folder was claimed empty of clips. Under a size
        // limit each clip gets the room the clips before it left in the merged file.
        let room = settings.maxFileSize.map { $0 - finishedShare - mergeHeadroom }
        let writer = try RecordingFileWriter(url: clipURL, interval: interval, plan: plan, settings: settings, overwrite: false,
                                    maximumFileSize: room)
        do {
            try session.clipStarted(clipURL)
        } catch {
            writer.abandon()
            unlink(clipURL.path)
            throw error
        }
        return writer
    }

    // MARK: Controls

    func apply(_ control: Control) throws -> (paused: Bool, at: MediaTime)? {
        switch control {
        case .pause(let time):
            guard timeline.hasBegun, timeline.pause(at: time) != nil else { return nil }
            return (true, timeline.recordedDuration(upTo: time))
        case .resume(let time):
            guard timeline.resume(at: time) != nil else { return nil }
            announceFirstClip()
            return (false, timeline.recordedDuration(upTo: time))
        case .videoSourceGone:
            // Frames still queued are written; the limit no longer waits for more.
            video.sourceWentAway()
            return nil
        }
    }

    var isPaused: Bool { timeline.isPaused }

    /// Whether the first clip's start was reported: when recording begins, or, for a
    /// recording that begins paused, at the first resume (its writer was opened at the start).
    private var firstClipAnnounced = false

    private func announceFirstClip() {
        guard !firstClipAnnounced, timeline.intervals.first?.end == nil, !timeline.intervals.isEmpty else { return }
        firstClipAnnounced = true
        onClipStarted?(0)
    }

    /// Recorded time so far.
    var recordedDuration: MediaTime {
        if plan.video != nil && video.videoDecidesEnd(hasAudio: !plan.audioTracks.isEmpty) {
            guard let reached = videoReached else { return .zero }
            let d = timeline.recordedDuration(upTo: reached + settings.video.frameRate.frameDuration)
            return limit.map { min($0, d) } ?? d
        }
        var reached = audioReached.compactMap { $0 }.max() ?? .zero
        if let video = videoReached { reached = max(reached, video + settings.video.frameRate.frameDuration) }
        let d = timeline.recordedDuration(upTo: reached)
        return limit.map { min($0, d) } ?? d
    }

    /// How much sound has been recorded (of the track that has come furthest), whatever the
    /// video did.
    private var soundRecorded: MediaTime {
        audioReached.compactMap { $0 }.max().map { timeline.recordedDuration(upTo: $0) } ?? .zero
    }

    /// The encoded media written so far (what progress reports as bytes: not the container's
    /// boxes, not the space kept for the index).
    var mediaBytes: Int64 { finishedMedia + open.values.reduce(0) { $0 + $1.mediaBytes } }

    /// What merging the clips may add beyond their media and index: the merger keeps space for
    /// the index at the front of files of 6.5 MB and more (see `Merger.indexReservation`).
    private var mergeHeadroom: Int64 {
        guard settings.pauseMode == .clips, let max = settings.maxFileSize, max >= 6_500_000 else { return 0 }
        return 70_000
    }
    var framesWritten: Int64 { finishedFrames + open.values.reduce(0) { $0 + $1.videoFrames } }
    var clipCount: Int { settings.pauseMode == .clips ? session.clips.count + open.count : timeline.intervals.count }

    func progress(droppedAudio: MediaTime) -> RecordingProgress {
        RecordingProgress(duration: recordedDuration, maxDuration: limit, bytes: mediaBytes, frames: framesWritten,
                          droppedFrames: droppedFrames, isPaused: isPaused, clipCount: clipCount, droppedAudio: droppedAudio,
                          streams: liveStreams.map(\.statistics))
    }

    // MARK: Samples

    /// Called when the timeline begins and before each sample, to apply pending pauses and resumes.
    var applyPendingControls: (() throws -> Void)?

    /// Handles one sample; returns true once the recording must end (a limit was reached).
    func handle(_ sample: SourcedSample) throws -> Bool {
        try applyPendingControls?()
        switch sample.sample {
        case .video(let frame):
            guard sample.source == plan.videoSource, video.recordsFrames else { return false }
            let t = frame.presentationTime
            if !timeline.hasBegun {
                timeline.begin(at: t)
                try applyPendingControls?()
                announceFirstClip()
                let held = pendingAudio
                pendingAudio = []
                pendingAudioDuration = .zero
                for audio in held { _ = try handle(audio) }
            }
            videoReached = t
            try flushAtPause(reached: t)
            try releaseHeldAudio(upTo: t + settings.video.frameRate.frameDuration)
            let interval = timeline.intervalIndex(containing: t)
            // A repeat held for the end of its interval: the interval ended.
            if let held = heldRepeat, held.interval != interval { try writeHeldRepeat() }
            if let i = interval, let recorded = timeline.recordedTime(for: t) {
                if let limit, settings.video.frameRate.frameIndex(at: recorded, rounding: .nearest)
                    >= settings.video.frameRate.frameIndex(at: limit, rounding: .nearest) {
                    try writeHeldRepeat()
                    video.reachedLimit()
                    ending = .maxDuration
                } else {
                    let at = settings.pauseMode == .singleFile ? recorded : t - timeline.intervals[i].start
                    let slot = settings.video.frameRate.frameIndex(at: recorded, rounding: .nearest)
                    if leavesOut(frame, interval: i, recorded: recorded) {
                        // Accounted for, not lost: the slot repeats the picture before.
                        lastWritten = (i, frame.sequenceNumber, slot)
                        heldRepeat = (frame, i, at, slot)
                    } else if let writer = try writer(for: i), try writer.appendVideo(frame, at: at) {
                        noteKeyframe(interval: i, at: at)
                        countGap(before: frame, interval: i, slot: slot)
                        noteWritten(frame.sequenceNumber, slot: slot)
                        heldRepeat = nil
                        lastPicture = frame.identity.map { (i, $0.id, recorded) }
                    }
                }
            }
        case .audio(let buffer):
            guard let input = plan.audioInputs[sample.source] else { return false }
            if !timeline.hasBegun {
                pendingAudio.append(sample)
                pendingAudioDuration += buffer.duration
                // Audio waits up to 3 s for the first frame, so that the recording begins with
                // the picture; without video it begins with the first audio.
                if plan.video != nil && pendingAudioDuration < MediaTime(value: 3, timescale: 1) { return false }
                try beginWithPendingAudio()
                return try limitReached()
            }
            if !holdsAudioForVideo { while !heldAudio.isEmpty { try releaseFirstHeldAudio() } }
            if holdsAudioForVideo, !heldAudio.isEmpty || buffer.presentationTime >= (videoReached ?? timeline.zero ?? .zero) + settings.video.frameRate.frameDuration {
                heldAudio.append(sample)
                heldAudioDuration += buffer.duration
                while heldAudioDuration > MediaTime(value: 3, timescale: 1), !heldAudio.isEmpty { try releaseFirstHeldAudio() }
                return try limitReached()
            }
            try place(buffer, input: input)
            if plan.video == nil { try flushAtPause(reached: buffer.endTime) }
        }
        try closeClipIfDone()
        return try limitReached()
    }

    /// The intervals whose pause has been flushed to the file (single-file mode).
    private var flushedPauses = 0

    /// Once the recording has reached a pause (its video, or without video its sound, is past
    /// the end of an interval): what was recorded before it goes to the disk now, so that a
    /// kill during the pause loses none of it. The encoder gives out the frames it held and the
    /// file completes its fragment (see ``StreamEncoder/pause()``).
    private func flushAtPause(reached time: MediaTime) throws {
        guard settings.pauseMode == .singleFile, let writer = open[0] else { return }
        let ended = timeline.intervals.prefix { $0.end.map { $0 <= time } ?? false }.count
        guard ended > flushedPauses else { return }
        flushedPauses = ended
        try writeHeldRepeat()
        try writer.pause()
    }

    /// Whether the frame mode leaves `frame` out: a picture that repeats the one last written
    /// in the same interval, in a mode that records changes only (a variable-rate recording
    /// keeps one a second).
    private func leavesOut(_ frame: VideoFrame, interval: Int, recorded: MediaTime) -> Bool {
        guard settings.video.frameMode != .constant, let id = frame.identity?.id, let last = lastPicture,
              last.interval == interval, last.id == id else { return false }
        // A keyframe is due: the repeat is written, as one (live streams, replay buffers and
        // a crash's recovery need keyframes every interval of time, not of pictures).
        if keyframeDue(interval: interval, at: settings.pauseMode == .singleFile ? recorded : frame.presentationTime - timeline.intervals[interval].start) {
            return false
        }
        if settings.video.frameMode == .variable {
            return (recorded - last.recorded).seconds < FrameMode.longestVariableGap - settings.video.frameRate.frameDuration.seconds / 2
        }
        return true
    }

    /// Whether the encoder asks for a keyframe at encoder time `at` of `interval` (it follows
    /// the same ``VideoSettings/keyframeDue(at:after:)``).
    private func keyframeDue(interval: Int, at: MediaTime) -> Bool {
        // A clip's file has an encoder of its own; a single file's encoder goes on.
        let last = lastKeyframe.flatMap { settings.pauseMode == .singleFile || $0.interval == interval ? $0.index : nil }
        return settings.video.keyframeDue(at: settings.video.frameRate.frameIndex(at: at, rounding: .nearest), after: last)
    }

    /// Notes a frame written at encoder time `at` of `interval`: a keyframe if one was due.
    private func noteKeyframe(interval: Int, at: MediaTime) {
        guard settings.video.frameMode != .constant, keyframeDue(interval: interval, at: at) else { return }
        lastKeyframe = (interval, settings.video.frameRate.frameIndex(at: at, rounding: .nearest))
    }

    /// Writes the repeated picture held back, where its interval or the recording ends.
    private func writeHeldRepeat() throws {
        guard let held = heldRepeat else { return }
        heldRepeat = nil
        guard !finishedIntervals.contains(held.interval), let writer = try writer(for: held.interval),
              try writer.appendVideo(held.frame, at: held.at) else { return }
        noteKeyframe(interval: held.interval, at: held.at)
        noteWritten(held.frame.sequenceNumber, slot: held.slot)
    }

    /// Whether audio ahead of the video waits for it (under a size limit, while video comes).
    private var holdsAudioForVideo: Bool {
        settings.maxFileSize != nil && plan.video != nil && video.expectsFrames
    }

    /// Writes the held audio that starts before `time`.
    private func releaseHeldAudio(upTo time: MediaTime) throws {
        while let first = heldAudio.first, case .audio(let buffer) = first.sample, buffer.presentationTime < time {
            try releaseFirstHeldAudio()
        }
    }

    private func releaseFirstHeldAudio() throws {
        let sample = heldAudio.removeFirst()
        guard case .audio(let buffer) = sample.sample, let input = plan.audioInputs[sample.source] else { return }
        heldAudioDuration -= buffer.duration
        try place(buffer, input: input)
    }

    /// Begins the recording with the audio held so far (no frame came): at the earliest of it,
    /// which is then recorded. A recording of audio alone begins with its first samples, not at
    /// the session's zero: a server with a large latency may deliver them later than the
    /// whole of a short recording lasts.
    private func beginWithPendingAudio() throws {
        let held = pendingAudio
        pendingAudio = []
        pendingAudioDuration = .zero
        guard let start = held.lazy.compactMap({ sample -> MediaTime? in
            if case .audio(let buffer) = sample.sample { return buffer.presentationTime } else { return nil }
        }).min() else { return }
        timeline.begin(at: start)
        try applyPendingControls?()
        announceFirstClip()
        for sample in held {
            guard case .audio(let buffer) = sample.sample, let input = plan.audioInputs[sample.source] else { continue }
            try place(buffer, input: input)
            try closeClipIfDone()
        }
    }

    /// How much of the session time `[start, end)` the recording holds (pauses and what lies
    /// past the limit taken out).
    func recordedLength(from start: MediaTime, to end: MediaTime) -> MediaTime {
        var total = MediaTime.zero
        for piece in timeline.split(from: start, to: end) {
            var a = timeline.intervals[piece.interval].offset + (piece.start - timeline.intervals[piece.interval].start)
            var b = a + (piece.end - piece.start)
            if let limit { a = min(a, limit); b = min(b, limit) }
            if b > a { total += b - a }
        }
        return total
    }

    /// Counts the frames missing before `frame`: those its source numbered but that never
    /// reached the file (dropped by the source, by a full queue) and whose slots are empty. A
    /// source faster than the recording (two frames to a slot) or slower (empty slots, no
    /// numbers missing) loses nothing; pauses start the count again.
    private func countGap(before frame: VideoFrame, interval: Int, slot: Int64) {
        if let last = lastWritten, last.interval == interval {
            let missing = min(frame.sequenceNumber - last.sequence - 1, slot - last.slot - 1)
            if missing > 0 { droppedFrames += missing }
        }
        lastWritten = (interval, frame.sequenceNumber, slot)
    }

    /// Notes that frame `sequence` of the video source went to slot `slot` of the (merged) file.
    private func noteWritten(_ sequence: Int64, slot: Int64) {
        if let last = writtenRuns.last, last.sequence + last.count == sequence, last.slot + last.count == slot {
            writtenRuns[writtenRuns.count - 1].count += 1
        } else {
            writtenRuns.append(RecordedFrames.Run(sequence: sequence, slot: slot, count: 1))
        }
    }

    /// Which frames the finished recording holds, and where (see ``RecordedFrames``).
    var recordedFrames: RecordedFrames {
        RecordedFrames(videoSource: plan.videoSource, frameRate: settings.video.frameRate, timeline: timeline,
                       end: recordedDuration, runs: writtenRuns)
    }

    /// Writes the recorded parts of `buffer` into the files of their intervals.
    private func place(_ buffer: AudioBuffer, input: Int) throws {
        let start = buffer.presentationTime, end = buffer.endTime
        audioReached[input] = max(audioReached[input] ?? end, end)
        let rate = Int32(buffer.format.sampleRate)
        let startSample = start.convertedValue(to: rate, rounding: .nearest)
        for piece in timeline.split(from: start, to: end) {
            let interval = timeline.intervals[piece.interval]
            var from = Int(piece.start.convertedValue(to: rate, rounding: .nearest) - startSample)
            var to = Int(piece.end.convertedValue(to: rate, rounding: .nearest) - startSample)
            from = max(0, min(buffer.frameCount, from))
            to = max(from, min(buffer.frameCount, to))
            // Recorded time of the piece, cut at the limit.
            let recordedStart = interval.offset + (piece.start - interval.start)
            if let limit {
                if recordedStart >= limit { continue }
                let room = (limit - recordedStart).convertedValue(to: rate, rounding: .down)
                to = min(to, from + Int(room))
            }
            guard to > from, let writer = try writer(for: piece.interval) else { continue }
            var slice = (from == 0 && to == buffer.frameCount) ? buffer : buffer.slice(frames: from..<to)
            slice.presentationTime = settings.pauseMode == .singleFile ? recordedStart : piece.start - interval.start
            try writer.appendAudio(slice, input: input)
        }
    }

    /// The writer for interval `interval`: an open one, or a new clip; `nil` for a clip that
    /// has already been finished (late samples).
    private func writer(for interval: Int) throws -> RecordingFileWriter? {
        if settings.pauseMode == .singleFile { return open[0] }
        if let writer = open[interval] { return writer }
        if finishedIntervals.contains(interval) { return nil }
        // No room left for another clip in the merged file: the recording ends at its size.
        if let max = settings.maxFileSize, finishedShare + mergeHeadroom + 8192 >= max {
            sizeUsedUp = true
            return nil
        }
        let writer = try makeWriter(interval: interval)
        open[interval] = writer
        onClipStarted?(interval)
        return writer
    }

    /// In clip mode, finishes each clip whose interval has ended once video and audio have
    /// passed its end.
    private func closeClipIfDone() throws {
        if settings.pauseMode == .clips {
            for interval in open.keys.sorted() {
                // The first file waits for its interval while a recording begins paused.
                guard timeline.intervals.indices.contains(interval), let end = timeline.intervals[interval].end else { continue }
                let videoPassed = plan.video == nil || (videoReached.map { $0 >= end } ?? false)
                let audioPassed = audioReached.allSatisfy { $0.map { $0 >= end } ?? false }
                guard videoPassed && audioPassed else { break }
                try finishClip(interval)
            }
        }
        if let last = open.keys.max(), let writer = open[last] { session.setCurrentDuration(currentDuration(of: writer)) }
    }

    /// How long the clip being recorded is (in single-file mode: since the last resume).
    private func currentDuration(of writer: RecordingFileWriter) -> MediaTime {
        if settings.pauseMode == .singleFile {
            guard let last = timeline.intervals.last, last.end == nil else { return .zero }
            return max(.zero, recordedDuration - last.offset)
        }
        if plan.video != nil, let last = writer.lastVideoTime { return last + settings.video.frameRate.frameDuration }
        guard timeline.intervals.indices.contains(writer.interval) else { return .zero }
        let interval = timeline.intervals[writer.interval]
        if let duration = interval.duration { return duration }
        // Still open, and sound only: as far as the sound has reached since the clip began (a
        // sound-only recording's last clip counted 0 s, and its summary only the clips before).
        return max(.zero, recordedDuration - interval.offset)
    }

    /// Finishes the file of `interval`: pads its audio to its end and finalises it.
    private func finishClip(_ interval: Int) throws {
        guard let writer = open.removeValue(forKey: interval) else { return }
        finishedIntervals.insert(interval)
        guard writer.wroteSomething else {
            // Our own file, created empty for this clip (or for a recording that never left its
            // first pause): nothing of the user's, and no file at all when only a replay buffer
            // is kept.
            writer.abandon()
            if writer.writer != nil { unlink(writer.url.path) }
            if settings.pauseMode == .clips { try session.clipDiscarded(writer.url) }
            return
        }
        // No picture in a video file: the size limit left no room for its first frame (a
        // detailed screen's first keyframe is over a megabyte), or, recording to one file, the
        // stop came before the first frame (a moment of the tone may be in). That is no
        // recording: ours, it goes (a clip's sound alone would not merge with the clips before
        // it), and a single file's finishing says nothing was recorded. A video source that
        // never came while sound was recorded for a second or more keeps its file.
        let pictureless = plan.video != nil && writer.writer?.videoFramesWritten == 0
        let noRoom = pictureless && writer.isFull
        let tooShort = pictureless && settings.pauseMode == .singleFile && writer.videoFrames == 0
            && soundRecorded < MediaTime(value: 1, timescale: 1)
        if noRoom || tooShort, writer.writer?.discardWithoutPicture() == true {
            if settings.pauseMode == .clips { try session.clipDiscarded(writer.url); return }
            if noRoom {
                throw ReelError(.nothingRecorded, "the first frame alone is larger than the size limit (\(settings.maxFileSize ?? 0) bytes): nothing was recorded",
                                hint: "allow a larger file (--max-size) or a smaller first frame (a higher --crf, a smaller --size)")
            }
            return
        }
        var duration: MediaTime
        if settings.pauseMode == .singleFile {
            duration = recordedDuration
        } else {
            let interval = timeline.intervals[writer.interval]
            duration = interval.duration ?? currentDuration(of: writer)
            if let limit { duration = min(duration, max(.zero, limit - interval.offset)) }
        }
        if plan.video != nil, video.videoDecidesEnd(hasAudio: !plan.audioTracks.isEmpty), let last = writer.lastVideoTime {
            // The frames that were actually written decide where the file ends (unless the
            // video went away and the audio went on).
            duration = min(duration, last + settings.video.frameRate.frameDuration)
        }
        try writer.padAudio(to: duration)
        let summary = try writer.finish()
        // A size limit may have left out the last packets.
        if writer.isFull { duration = min(duration, summary.duration) }
        finishedDuration = duration
        finishedBytes += summary.bytes
        finishedFrames += summary.videoFrames
        finishedMedia += writer.mediaBytes
        finishedShare += writer.mediaBytes + 48 * writer.packetsWritten
        // Where the file ended up: moved while recorded, it was finalised at its new name.
        if settings.pauseMode != .clips { finishedURL = writer.url }
        if settings.pauseMode == .clips {
            let clip = Clip(url: writer.url, duration: duration, frameCount: summary.videoFrames, hasAudio: !plan.audioTracks.isEmpty)
            try session.append(clip)
            onClipFinished?(clip)
        }
    }

    private func limitReached() throws -> Bool {
        if let max = settings.maxFileSize {
            // The writers refuse what would take the file past the limit; stop before that, while
            // the next frame and what the encoders still hold fit (held audio past the video's
            // end is left out at this stop).
            let projected = finishedShare + mergeHeadroom + open.values.reduce(0) { $0 + $1.projectedFileSize }
            let next = 2 * (open.values.map(\.typicalFrameBytes).max() ?? 0)
            if sizeUsedUp || open.values.contains(where: \.isFull) || projected + next >= max {
                ending = .maxFileSize
                return true
            }
        }
        if recordedDuration >= nextSpaceCheck {
            nextSpaceCheck = recordedDuration + MediaTime(value: 1, timescale: 1)
            do { try checkFreeSpace() } catch { ending = .lowDiskSpace; return true }
        }
        guard let limit else { return false }
        let videoComplete = plan.video == nil || video.isDone(hasAudio: !plan.audioTracks.isEmpty)
        let audioComplete = audioReached.allSatisfy { reached in
            reached.map { timeline.recordedDuration(upTo: $0) >= limit } ?? false
        }
        return videoComplete && audioComplete
    }

    private func checkFreeSpace() throws {
        guard writesFile, let minimum = settings.minimumFreeSpace else { return }
        let folder = settings.pauseMode == .clips ? session.folder : url.deletingLastPathComponent()
        let free = ((try? FileManager.default.attributesOfFileSystem(forPath: folder.path))?[.systemFreeSize] as? NSNumber)?.int64Value
        if let free, free < minimum {
            throw ReelError(.insufficientStorage, "only \(free / 1_000_000) MB free in \(folder.path)",
                            hint: "free some space or record elsewhere")
        }
    }

    // MARK: The end

    /// Ends the recording: finishes the open file and, in clip mode, merges the clips into the
    /// recorder's file.
    func finish() throws -> RecordingSummary {
        if !timeline.hasBegun, !pendingAudio.isEmpty { try beginWithPendingAudio() }
        // Audio held for the video: past the video's end when the size limit stopped it.
        if ending == .maxFileSize {
            heldAudio = []
            heldAudioDuration = .zero
        } else {
            while !heldAudio.isEmpty { try releaseFirstHeldAudio() }
        }
        try writeHeldRepeat()
        var recorded = recordedDuration
        // Slots after the last frame written, up to the end of the recording, lost their frames too.
        if plan.video != nil, video != .sourceGone, let last = lastWritten, last.interval == timeline.intervals.count - 1,
           timeline.intervals[last.interval].end == nil {
            let end = settings.video.frameRate.frameIndex(at: recorded, rounding: .nearest)
            if end - last.slot - 1 > 0 { droppedFrames += end - last.slot - 1 }
        }
        for interval in open.keys.sorted() { try finishClip(interval) }
        if ending == .maxFileSize {
            // What the files hold, if the limit left out the last packets.
            if settings.pauseMode == .singleFile {
                recorded = min(recorded, finishedDuration)
            } else {
                recorded = min(recorded, session.clips.reduce(.zero) { $0 + $1.duration })
            }
            var excess = writtenRuns.reduce(0) { $0 + $1.count } - finishedFrames
            while excess > 0, let last = writtenRuns.last {
                let cut = min(excess, last.count)
                if cut == last.count { writtenRuns.removeLast() } else { writtenRuns[writtenRuns.count - 1].count -= cut }
                excess -= cut
            }
        }
        // In clip mode the file holds the clips the session kept (takes removed are not in it),
        // unless a limit cut it shorter still.
        if settings.pauseMode == .clips && !session.clips.isEmpty {
            let kept = session.clips.reduce(MediaTime.zero) { $0 + $1.duration }
            recorded = ending == .maxFileSize ? min(recorded, kept) : kept
        }
        var url = finishedURL ?? self.url
        var frames = settings.pauseMode == .clips ? session.clips.reduce(0) { $0 + $1.frameCount } : finishedFrames
        var bytes = finishedBytes
        // Counted now: merging removes the clips from the session.
        let clipCount = settings.pauseMode == .clips ? session.clips.count : timeline.intervals.count
        if settings.pauseMode == .clips {
            let clips = session.clips
            guard !clips.isEmpty else {
                session.releaseClaim()
                throw ReelError(.nothingRecorded, "nothing was recorded", hint: "check that the sources deliver samples")
            }
            if settings.mergesClipsAtEnd {
                let merged: MergeSummary
                do {
                    try session.mergeStarting()
                    merged = try session.merge(to: self.url, allowsReencoding: false, overwrite: settings.overwrite)
                } catch var error as ReelError {
                    // The clips hold the recording: say where, and how to merge them later.
                    try? session.recordingEnded(merged: false)
                    error.hint = "the recording is in the clips in \(session.folder.path); merge them with: reel recover \(Shell.quoted(session.folder.path)) -o FILE"
                    throw error
                }
                url = merged.url
                frames = merged.videoFrames
                // The clips go only once the merged file, read back from the disk, is known to
                // hold every frame of them.
                let clipFrames = clips.reduce(0) { $0 + $1.frameCount }
                let onDisk = try? PacketCount.count(url)
                guard frames == clipFrames, onDisk?.videoPackets == clipFrames else {
                    try? session.recordingEnded(merged: false)
                    throw ReelError(.encodingFailed, "the merged file holds \(onDisk?.videoPackets ?? frames) frames but the clips \(clipFrames)",
                                    hint: "the clips are kept in \(session.folder.path)")
                }
                // Without video no frame count tells a loss: the seconds of sound must all be there.
                if clipFrames == 0 {
                    let clipSeconds = clips.reduce(0.0) { $0 + ((try? PacketCount.count($1.url))?.audioSeconds ?? .infinity) }
                    guard let onDisk, onDisk.holdsAudio(of: clipSeconds, clips: clips.count) else {
                        try? session.recordingEnded(merged: false)
                        throw ReelError(.encodingFailed, "the merged file holds \(String(format: "%.2f", onDisk?.audioSeconds ?? 0)) s of sound but the clips \(String(format: "%.2f", clipSeconds)) s",
                                        hint: "the clips are kept in \(session.folder.path)")
                    }
                }
                bytes = ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.int64Value ?? bytes
                try session.recordingEnded(merged: true)
                // Kept clips stay as plain files; the manifest's work is done.
                // The session still lists the clips merged (what each take held).
                if !settings.keepsClips { session.removeFilesOfClips() }
                session.removeManifestAndEmptyFolder()
            } else {
                try session.recordingEnded(merged: false)
                url = session.folder
            }
        } else if frames == 0 && bytes == 0 && (writesFile || !timeline.hasBegun) {
            throw ReelError(.nothingRecorded, "nothing was recorded", hint: "check that the sources deliver samples")
        }
        return RecordingSummary(url: url, duration: recorded, frames: frames, droppedFrames: droppedFrames, bytes: bytes,
                                videoSize: encodedVideoSize ?? plan.videoSize, video: plan.video != nil ? settings.video : nil,
                                audioTracks: plan.titles, audio: plan.titles.isEmpty ? nil : settings.audio,
                                container: container, reachedLimit: ending == .maxDuration,
                                clipCount: clipCount,
                                ending: ending)
    }

    /// Notes that the recording ends because every source has gone (unless a limit ended it).
    func sourcesWentAway() {
        if ending == .requested { ending = .sourcesGone }
    }

    /// Stops without finishing: what is on disk stays (fragmented, playable). Returns the
    /// clips folder if the recording is in clips there (clip mode), for the error to say so.
    func abandon() -> URL? {
        for writer in open.values { writer.abandon() }
        guard settings.pauseMode == .clips, !open.isEmpty || !session.clips.isEmpty else { return nil }
        return session.folder
    }
}
