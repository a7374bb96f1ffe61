/// The recorder's decisions as a value: samples in, actions out.
///
/// Takes the session's samples in the order the recorder's thread takes them and says, as
/// ``Action`` values, what to encode and when: which frames (on the recording's timeline, the
/// pauses taken out, placed on the frame grid), which audio (cut at the pauses and the duration
/// limit), where a pause has been reached (everything before it can go to the disk) and where a
/// clip begins. It holds what must wait: audio before the first frame (the recording begins
/// with its picture), audio running ahead of the video under a size limit or moved later by an
/// offset, and the repeated
/// picture a frame mode leaves out until its interval ends. It counts the frames lost between
/// those written and knows which frame went to which slot (``RecordedFrames``).
///
/// Nothing here encodes or touches a file: the owner acts on the actions (the recorder's
/// pipeline hands them to the one encoder), so every decision is tested on a manual clock
/// without an encoder. The one thing it asks of the encoder is its keyframe rule
/// (`keyframeDue`), so that a frame mode never leaves out the picture the encoder would make a
/// keyframe of.
package struct RecordingMachine: Sendable {
    /// What the machine records.
    package struct Configuration: Sendable {
        /// The frame grid of the video track (also the grid pauses snap to).
        package var frameRate: FrameRate
        /// Which pictures are written (constant: every slot; the others leave repeats out).
        package var frameMode: FrameMode
        /// The source whose frames are recorded, if the recording has video.
        package var videoSource: SourceID?
        /// The audio sources by track input.
        package var audioInputs: [SourceID: Int]
        /// The most time to record, if limited.
        package var limit: MediaTime?
        /// Whether audio running ahead of the video waits for it (a size limit or a minimum of
        /// free space: a stop there then leaves both tracks ending together).
        package var holdsAudioAheadOfVideo: Bool
        /// How much later than the pictures the sound of an input may be timed (the largest
        /// positive audio offset of the inputs): sound ahead of the video waits for it up to
        /// this (and 3 s) longer, and what lies past the last picture at the end is left out,
        /// so that a stop ends every track together.
        package var audioLead: MediaTime
        /// Whether a recording with video pauses at its limit instead of ending there (a camera
        /// recorder's take: an undo may give time back and the take goes on).
        package var pausesAtLimit: Bool

        /// Describes a recording; each argument is the property of the same name.
        package init(frameRate: FrameRate, frameMode: FrameMode = .constant, videoSource: SourceID?, audioInputs: [SourceID: Int],
                     limit: MediaTime? = nil, holdsAudioAheadOfVideo: Bool = false, audioLead: MediaTime = .zero,
                     pausesAtLimit: Bool = false) {
            self.frameRate = frameRate
            self.frameMode = frameMode
            self.videoSource = videoSource
            self.audioInputs = audioInputs
            self.limit = limit
            self.holdsAudioAheadOfVideo = holdsAudioAheadOfVideo
            self.audioLead = max(.zero, audioLead)
            self.pausesAtLimit = pausesAtLimit
        }

        var hasVideo: Bool { videoSource != nil }
        var hasAudio: Bool { !audioInputs.isEmpty }
    }

    /// What to do, in order.
    package enum Action: Sendable {
        /// Encode `frame` at recorded time `at` (a slot of the frame grid, later than the last).
        case video(VideoFrame, at: MediaTime)
        /// Encode `buffer` (its presentation time is its recorded time) into audio track input `input`.
        case audio(AudioBuffer, input: Int)
        /// The recording reached the pause that ends interval `interval`: everything recorded
        /// before it has been given and can go to the disk now.
        case pauseReached(interval: Int, at: MediaTime)
        /// Interval `interval` begins at recorded time `at`: a clip begins there, and its first
        /// frame is a keyframe.
        case intervalBegins(interval: Int, at: MediaTime)
    }

    package private(set) var configuration: Configuration
    /// The recording's timeline: where it began, its pauses.
    package private(set) var timeline: RecordingTimeline
    /// Whether frames still come and are recorded.
    package private(set) var video = VideoTrackState.awaitingFrames
    /// Whether a frame reached the duration limit (the recording ends there).
    package private(set) var reachedLimit = false
    /// Whether the recording is paused at its limit (``Configuration/pausesAtLimit``).
    package private(set) var pausedAtLimit = false
    /// Frames missing between frames written (frames the source or the recorder dropped), by why.
    package internal(set) var drops = FrameDrops()
    /// ``drops`` by the interval (a clip, in clip mode) they were counted in: see
    /// ``drops(inInterval:)``.
    package internal(set) var dropsByInterval: [Int: FrameDrops] = [:]
    /// Why frames of the video source were lost, as the recorder learnt it, until their gap is
    /// counted (see RecordingMachine+Accounting.swift).
    var ledger = FrameDropLedger()

    /// Audio before the first frame, waiting for it (at most 3 s).
    private var pendingAudio: [SourcedSample] = []
    private var pendingAudioDuration = MediaTime.zero
    /// Audio ahead of the video under a size limit or an audio lead (spanning at most
    /// ``heldAudioSpan``), in the order it came; each input's in time order.
    var heldAudio: [SourcedSample] = []
    /// The latest session time each input has delivered up to (video: frame time; audio: end).
    package private(set) var videoReached: MediaTime?
    private var audioReached: [MediaTime?]
    /// The frames of the video source written, as runs of consecutive frames and slots.
    var writtenRuns: [RecordedFrames.Run] = []
    /// The last frame written: its interval, its source's frame number and its slot.
    private var lastWritten: (interval: Int, sequence: Int64, slot: Int64)?
    /// The picture last written, where and when (recorded time), for the frame modes that
    /// leave repeated pictures out.
    private var lastPicture: (interval: Int, id: UInt64, recorded: MediaTime)?
    /// The newest repeated picture left out, written where its interval or the recording ends
    /// so that the file lasts as long as it was recorded.
    private var heldRepeat: (frame: VideoFrame, interval: Int, at: MediaTime, slot: Int64)?
    /// The slot of the last frame given to encode.
    private var lastSlot: Int64 = -1
    /// The picture last given to encode, and the intervals a picture was given in: an interval
    /// that sound began but whose frames were all lost (a source or a recorder that fell
    /// behind) is given this picture at its first slot, so that its clip has a picture and
    /// its sound is kept, and the slots are counted as lost.
    private var lastGiven: VideoFrame?
    private var intervalsWithPicture = Set<Int>()
    /// The intervals whose pause has been said to be reached (all before this index), and
    /// those said to have begun (recorded into: an interval nothing fell into has no clip).
    private var pausesReached = 0
    private var begunIntervals = Set<Int>()
    private var pausesSaid = Set<Int>()
    /// The recording ended at its size: audio held for the video is left out.
    var endedBySize = false

    /// A machine for `configuration`, nothing recorded yet.
    package init(configuration: Configuration) {
        self.configuration = configuration
        timeline = RecordingTimeline(frameDuration: configuration.hasVideo ? configuration.frameRate.frameDuration
                                                                           : MediaTime(value: 1, timescale: 100))
        audioReached = Array(repeating: nil, count: configuration.audioInputs.values.max().map { $0 + 1 } ?? 0)
    }

    // MARK: Controls

    /// Pauses at `time` (the next frame slot); returns the recorded time there, or `nil` if
    /// not recording (not begun, or paused already).
    package mutating func pause(at time: MediaTime) -> MediaTime? {
        guard timeline.hasBegun, timeline.pause(at: time) != nil else { return nil }
        return timeline.recordedDuration(upTo: time)
    }

    /// Resumes at `time` (the next frame slot); returns the recorded time there, or `nil` if
    /// not paused.
    package mutating func resume(at time: MediaTime) -> MediaTime? {
        guard timeline.resume(at: time) != nil else { return nil }
        pausedAtLimit = false
        return timeline.recordedDuration(upTo: time)
    }

    /// Recorded time of clips an undo removed is recorded again: the limit moves on by
    /// `removed`, so that what the recording keeps may reach the limit it was given. Nothing
    /// once the limit was reached (the recording ends there).
    package mutating func handBack(_ removed: MediaTime) {
        guard removed > .zero, !reachedLimit, let limit = configuration.limit else { return }
        configuration.limit = limit + removed
    }

    /// The video source has gone for good: frames still queued are recorded, and the limit no
    /// longer waits for more.
    package mutating func videoSourceWentAway() {
        video.sourceWentAway()
    }


    // MARK: Samples

    /// Takes one sample; `keyframeDue` tells whether the encoder makes a keyframe of the
    /// picture at a slot (the frame modes never leave that picture out). `applyControls` is
    /// called once the recording has begun and its time zero is known (scheduled pauses and
    /// resumes are applied then).
    package mutating func take(_ sample: SourcedSample, keyframeDue: (Int64) -> Bool,
                               applyControls: (inout RecordingMachine) -> Void = { _ in }) -> [Action] {
        var actions: [Action] = []
        switch sample.sample {
        case .video(let frame):
            guard sample.source == configuration.videoSource, video.recordsFrames else { return [] }
            let t = frame.presentationTime
            if !timeline.hasBegun {
                timeline.begin(at: t)
                applyControls(&self)
                let held = pendingAudio
                pendingAudio = []
                pendingAudioDuration = .zero
                for audio in held { actions += take(audio, keyframeDue: keyframeDue) }
            }
            videoReached = t
            pauseIfReached(t, into: &actions)
            releaseHeldAudio(upTo: t + configuration.frameRate.frameDuration, into: &actions)
            takeFrame(frame, at: t, keyframeDue: keyframeDue, into: &actions)
        case .audio(let buffer):
            guard let input = configuration.audioInputs[sample.source] else { return [] }
            if !timeline.hasBegun {
                pendingAudio.append(sample)
                pendingAudioDuration += buffer.duration
                // Audio waits up to 3 s for the first frame, so that the recording begins with
                // the picture; without video it begins with the first audio.
                if configuration.hasVideo && pendingAudioDuration < MediaTime(value: 3, timescale: 1) { return [] }
                beginWithPendingAudio(applyControls: applyControls, into: &actions)
                return actions
            }
            if !holdsAudioForVideo { while !heldAudio.isEmpty { releaseFirstHeldAudio(into: &actions) } }
            if hold(sample, into: &actions) { return actions }
            place(buffer, input: input, into: &actions)
            if !configuration.hasVideo { pauseIfReached(buffer.endTime, into: &actions) }
        }
        return actions
    }

    /// The frame at session time `t`: left out (a repeat a frame mode leaves out, a second one
    /// in a slot, one past the limit or in a pause) or given to encode.
    private mutating func takeFrame(_ frame: VideoFrame, at t: MediaTime, keyframeDue: (Int64) -> Bool, into actions: inout [Action]) {
        let interval = timeline.intervalIndex(containing: t)
        // A repeat held for the end of its interval: the interval ended.
        if let held = heldRepeat, held.interval != interval { writeHeldRepeat(into: &actions) }
        guard let i = interval, let recorded = timeline.recordedTime(for: t) else { return forgetLost(before: frame.sequenceNumber) }
        let rate = configuration.frameRate
        let slot = rate.frameIndex(at: recorded, rounding: .nearest)
        if let limit = configuration.limit, slot >= rate.frameIndex(at: limit, rounding: .nearest) {
            if configuration.pausesAtLimit {
                // The recording waits at its limit: a pause there, which a resume ends once
                // time was handed back.
                if !pausedAtLimit, timeline.pause(at: t) != nil {
                    pausedAtLimit = true
                    pauseIfReached(t, into: &actions)
                }
                return
            }
            writeHeldRepeat(into: &actions)
            video.reachedLimit()
            reachedLimit = true
            return
        }
        begin(interval: i, into: &actions)
        // A second frame in one slot (a source faster than the rate) adds nothing.
        guard slot > lastSlot else { return }
        if leavesOut(frame, interval: i, recorded: recorded, slot: slot, keyframeDue: keyframeDue) {
            // Accounted for, not lost: the slot repeats the picture before (and so do those of
            // the frames lost just before it: they are not said either).
            forgetLost(before: frame.sequenceNumber)
            lastWritten = (i, frame.sequenceNumber, slot)
            heldRepeat = (frame, i, rate.time(ofFrame: slot), slot)
            return
        }
        give(frame, interval: i, slot: slot, into: &actions)
        countGap(before: frame, interval: i, slot: slot)
        heldRepeat = nil
        lastPicture = frame.identity.map { (i, $0.id, recorded) }
    }

    /// Gives `frame` to encode at grid slot `slot` of interval `interval`.
    private mutating func give(_ frame: VideoFrame, interval: Int, slot: Int64, into actions: inout [Action]) {
        lastSlot = slot
        lastGiven = frame
        intervalsWithPicture.insert(interval)
        actions.append(.video(frame, at: configuration.frameRate.time(ofFrame: slot)))
        noteWritten(frame.sequenceNumber, slot: slot)
    }

    /// Says once that interval `interval` has begun: something recorded falls into it.
    private mutating func begin(interval: Int, into actions: inout [Action]) {
        guard !begunIntervals.contains(interval) else { return }
        begunIntervals.insert(interval)
        actions.append(.intervalBegins(interval: interval, at: timeline.intervals[interval].offset))
    }

    /// Once the recording has passed the end of an interval (its video, or without video its
    /// sound, is past it): the held repeat is given, and the pause said to be reached.
    private mutating func pauseIfReached(_ time: MediaTime, into actions: inout [Action]) {
        let ended = timeline.intervals.prefix { $0.end.map { $0 <= time } ?? false }.count
        guard ended > pausesReached else { return }
        writeHeldRepeat(into: &actions)
        while pausesReached < ended {
            // Only intervals that began (were recorded into) have anything to put away.
            if begunIntervals.contains(pausesReached) { sayPauseReached(interval: pausesReached, into: &actions) }
            pausesReached += 1
        }
    }

    /// Says once that the pause ending interval `index` has been reached (the interval began
    /// and ended), giving it a picture first if none of its frames came.
    private mutating func sayPauseReached(interval index: Int, into actions: inout [Action]) {
        guard !pausesSaid.contains(index) else { return }
        pausesSaid.insert(index)
        let interval = timeline.intervals[index]
        fillWithoutPicture(interval: index, into: &actions)
        actions.append(.pauseReached(interval: index, at: interval.offset + (interval.duration ?? .zero)))
    }

    /// Whether the frame mode leaves `frame` out: a picture that repeats the one last written
    /// in the same interval, in a mode that records changes only (a variable-rate recording
    /// keeps one a second), unless the encoder would make it a keyframe, or it begins its
    /// interval (a clip begins with a picture).
    private func leavesOut(_ frame: VideoFrame, interval: Int, recorded: MediaTime, slot: Int64, keyframeDue: (Int64) -> Bool) -> Bool {
        guard configuration.frameMode != .constant, let id = frame.identity?.id, let last = lastPicture,
              last.interval == interval, last.id == id else { return false }
        // A keyframe is due: the repeat is written, as one (live streams, replay buffers and
        // a crash's recovery need keyframes every interval of time, not of pictures).
        if keyframeDue(slot) { return false }
        if configuration.frameMode == .variable {
            return (recorded - last.recorded).seconds < FrameMode.longestVariableGap - configuration.frameRate.frameDuration.seconds / 2
        }
        return true
    }

    /// Interval `index` began (its sound came) but no frame of it did: the picture given last
    /// is given again at its first slot (its clip then has a picture, and its sound is kept),
    /// and that slot is counted as lost (the slots after it are, when the next frame or the
    /// end comes: see ``countGap(before:interval:slot:)``).
    private mutating func fillWithoutPicture(interval index: Int, into actions: inout [Action]) {
        guard configuration.hasVideo, !intervalsWithPicture.contains(index), let frame = lastGiven else { return }
        let slot = configuration.frameRate.frameIndex(at: timeline.intervals[index].offset, rounding: .nearest)
        guard slot > lastSlot else { return }
        countLost(max(0, slot - (lastWritten?.slot ?? slot) - 1) + 1, before: nil, interval: index)
        give(frame, interval: index, slot: slot, into: &actions)
        lastWritten = (index, frame.sequenceNumber, slot)
    }

    /// Gives the repeated picture held back, where its interval or the recording ends.
    private mutating func writeHeldRepeat(into actions: inout [Action]) {
        guard let held = heldRepeat else { return }
        heldRepeat = nil
        guard held.slot > lastSlot else { return }
        give(held.frame, interval: held.interval, slot: held.slot, into: &actions)
    }

    /// Begins the recording with the audio held so far (no frame came): at the earliest of it.
    /// A recording of audio alone begins with its first samples, not at the session's zero: a
    /// server with a large latency may deliver them later than a short recording lasts.
    private mutating func beginWithPendingAudio(applyControls: (inout RecordingMachine) -> Void, into actions: inout [Action]) {
        let held = pendingAudio
        pendingAudio = []
        pendingAudioDuration = .zero
        guard let start = held.lazy.compactMap({ sample -> MediaTime? in
            if case .audio(let buffer) = sample.sample { return buffer.presentationTime } else { return nil }
        }).min() else { return }
        timeline.begin(at: start)
        applyControls(&self)
        for sample in held {
            guard case .audio(let buffer) = sample.sample, let input = configuration.audioInputs[sample.source] else { continue }
            place(buffer, input: input, into: &actions)
            if !configuration.hasVideo { pauseIfReached(buffer.endTime, into: &actions) }
        }
    }

    /// Gives the recorded parts of `buffer`, each at its recorded time, cut at the limit.
    mutating func place(_ buffer: AudioBuffer, input: Int, into actions: inout [Action]) {
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
            let recordedStart = interval.offset + (piece.start - interval.start)
            if let limit = configuration.limit {
                if recordedStart >= limit { continue }
                let room = (limit - recordedStart).convertedValue(to: rate, rounding: .down)
                to = min(to, from + Int(room))
            }
            guard to > from else { continue }
            begin(interval: piece.interval, into: &actions)
            var slice = (from == 0 && to == buffer.frameCount) ? buffer : buffer.slice(frames: from..<to)
            slice.presentationTime = recordedStart
            actions.append(.audio(slice, input: input))
            // Sound of an interval whose pause the video passed before anything of it came
            // (its frames were lost): its pause is said now that it has begun.
            if configuration.hasVideo, piece.interval < pausesReached { sayPauseReached(interval: piece.interval, into: &actions) }
        }
    }

    /// Counts the frames missing before `frame`: those its source numbered but that never
    /// reached the file (dropped by the source, by a full queue) and whose slots are empty. A
    /// source faster than the recording (two frames to a slot) or slower (empty slots, no
    /// numbers missing) loses nothing. The slots run on across pauses (they are the recorded
    /// timeline's), so frames lost at a resume, or a whole interval's, count too; the frames
    /// of a pause, numbered but not recorded, have no slot and do not.
    private mutating func countGap(before frame: VideoFrame, interval: Int, slot: Int64) {
        let missing = lastWritten.map { last in min(frame.sequenceNumber - last.sequence - 1, slot - last.slot - 1) } ?? 0
        countLost(max(0, missing), before: frame.sequenceNumber, interval: interval)
        lastWritten = (interval, frame.sequenceNumber, slot)
    }

    /// Notes that frame `sequence` of the video source went to slot `slot`.
    private mutating func noteWritten(_ sequence: Int64, slot: Int64) {
        if let last = writtenRuns.last, last.sequence + last.count == sequence, last.slot + last.count == slot {
            writtenRuns[writtenRuns.count - 1].count += 1
        } else {
            writtenRuns.append(RecordedFrames.Run(sequence: sequence, slot: slot, count: 1))
        }
    }

    // MARK: The end

    /// The recording ends early, where the video has come (at its size, or for lack of disk
    /// space): audio held for the video is left out (it lies past the video's end).
    package mutating func endEarly() {
        endedBySize = true
        heldAudio = []
    }

    /// Ends the recording: what is held is given (audio that waited for a frame that never came,
    /// audio held for the video, the held repeat), and the slots after the last frame up to
    /// the end are counted as lost.
    package mutating func finish(keyframeDue: (Int64) -> Bool) -> [Action] {
        var actions: [Action] = []
        if !timeline.hasBegun, !pendingAudio.isEmpty { beginWithPendingAudio(applyControls: { _ in }, into: &actions) }
        if configuration.audioLead > .zero, holdsAudioForVideo, let videoReached {
            // Sound moved later than the pictures: what lies past the last one is left out
            // (it would run on past the video's end by the offset).
            releaseHeldAudio(cutAt: videoReached + configuration.frameRate.frameDuration, into: &actions)
        }
        while !heldAudio.isEmpty { releaseFirstHeldAudio(into: &actions) }
        writeHeldRepeat(into: &actions)
        // The last interval, if sound began it and no frame reached it: it lasts as long as
        // its sound, and its slots after the picture given it are lost too.
        var reach = recordedDuration
        if let last = timeline.intervals.indices.last, begunIntervals.contains(last), !intervalsWithPicture.contains(last) {
            fillWithoutPicture(interval: last, into: &actions)
            reach = max(reach, soundRecorded)
        }
        if configuration.hasVideo, video != .sourceGone, let last = lastWritten {
            let end = configuration.frameRate.frameIndex(at: reach, rounding: .nearest)
            countLost(max(0, end - last.slot - 1), before: nil, interval: timeline.intervals.indices.last ?? last.interval)
        }
        return actions
    }

    // MARK: What it holds

    /// Recorded time so far.
    package var recordedDuration: MediaTime {
        let limit = configuration.limit
        let frame = configuration.frameRate.frameDuration
        if configuration.hasVideo && video.videoDecidesEnd(hasAudio: configuration.hasAudio) {
            guard let reached = videoReached else { return .zero }
            let d = timeline.recordedDuration(upTo: reached + frame)
            return limit.map { min($0, d) } ?? d
        }
        var reached = audioReached.compactMap { $0 }.max() ?? .zero
        if let video = videoReached { reached = max(reached, video + frame) }
        let d = timeline.recordedDuration(upTo: reached)
        return limit.map { min($0, d) } ?? d
    }

    /// How much sound has been recorded (of the track that has come furthest), whatever the video did.
    package var soundRecorded: MediaTime {
        audioReached.compactMap { $0 }.max().map { timeline.recordedDuration(upTo: $0) } ?? .zero
    }

    /// Whether the recording is paused at its limit (``pausedAtLimit``) and every audio input
    /// has come past that pause: the sound its clip gets has all been given (a chunk lost on
    /// the way, or a limit between two frames, may leave it short of the pause).
    package var soundPassedPauseAtLimit: Bool {
        guard pausedAtLimit, let end = timeline.intervals.last?.end else { return false }
        return audioReached.allSatisfy { reached in reached.map { $0 >= end } ?? true }
    }

    /// Whether the duration limit has been reached by every track (the recording is complete).
    package var isComplete: Bool {
        guard let limit = configuration.limit else { return false }
        let videoComplete = !configuration.hasVideo || video.isDone(hasAudio: configuration.hasAudio)
        let audioComplete = audioReached.allSatisfy { reached in
            reached.map { timeline.recordedDuration(upTo: $0) >= limit } ?? false
        }
        return videoComplete && audioComplete
    }

}
