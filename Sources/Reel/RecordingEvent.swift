import Foundation

/// How far a recording has come.
public struct RecordingProgress: Sendable, Hashable {
    /// Recorded time so far.
    public var duration: MediaTime
    /// The recording's limit, if it has one.
    public var maxDuration: MediaTime?
    /// The encoded video and audio written so far, in bytes: the media the file holds, without
    /// its container's boxes and index and without the space kept at its front for the index
    /// (the finished file's size is ``RecordingSummary/bytes``). In clip mode, that of the
    /// clips kept: a clip removed takes its bytes with it, as ``duration`` leaves out its time.
    public var bytes: Int64
    /// Video frames written so far.
    public var frames: Int64
    /// Video frames dropped so far (sources that fell behind, or a recorder that could not keep
    /// up); in clip mode, those of the clips kept (``RecordingSession/frameDrops``: a clip
    /// removed takes its drops with it, as ``duration`` leaves out its time).
    public var droppedFrames: Int64
    /// Whether the recording is paused.
    public var isPaused: Bool
    /// Clips so far (the one being recorded included); in one file (``Recorder/PauseMode/singleFile``)
    /// the parts between pauses: one more than the pauses so far.
    public var clipCount: Int
    /// Audio the recorder could not take in time (it fell behind by seconds), or that a source
    /// could not read in time and lost (``SourceEvent/droppedAudio(at:duration:)``): the file
    /// has silence there, so sound and picture stay in sync, and the loss is counted here.
    public var droppedAudio: MediaTime
    /// Each live stream's state: bytes sent, rate, frames dropped for the network (the file has
    /// them), reconnects; in the order the streams were given.
    public var streams: [LiveStream.Statistics]

    /// Creates a progress report; each argument is the property of the same name.
    public init(duration: MediaTime, maxDuration: MediaTime?, bytes: Int64, frames: Int64, droppedFrames: Int64,
                isPaused: Bool = false, clipCount: Int = 1, droppedAudio: MediaTime = .zero, streams: [LiveStream.Statistics] = []) {
        self.droppedAudio = droppedAudio
        self.streams = streams
        self.duration = duration
        self.maxDuration = maxDuration
        self.bytes = bytes
        self.frames = frames
        self.droppedFrames = droppedFrames
        self.isPaused = isPaused
        self.clipCount = clipCount
    }

    /// The fraction of the limit reached, if there is a limit.
    public var fractionOfLimit: Double? {
        guard let maxDuration, maxDuration > .zero else { return nil }
        return min(1, duration.seconds / maxDuration.seconds)
    }
}

/// What a finished recording holds.
public struct RecordingSummary: Sendable, Hashable {
    /// The file; for clips left unmerged (``Recorder/Settings/mergesClipsAtEnd`` off, or no
    /// room to merge them when the disk stopped the recording: ``clipsNotMerged``), the folder
    /// that holds them (``RecordingSession/folder``).
    public var url: URL
    /// The recorded duration.
    public var duration: MediaTime
    /// Video frames in the file.
    public var frames: Int64
    /// Video frames dropped while recording.
    public var droppedFrames: Int64
    /// The frames dropped by why (encoder behind, capture late, stalled, lost by the source);
    /// they add up to ``droppedFrames``.
    public var frameDrops = FrameDrops()
    /// The frames each source said it lost while the recording recorded, by why: for a
    /// composed recording (``Compositor``), each composed source's own losses (the composed
    /// picture then shows that source's frame before); never more than the source's frames in
    /// that time. Empty when none said any. It is what the sources said, not what the file
    /// lacks, so it can differ from ``droppedFrames``: it counts losses in clips removed later
    /// (``RecordingSession/removeLastClip()``) too, and losses the recorder made up for
    /// (a picture repeated in a composed frame).
    public var frameDropsBySource: [SourceID: FrameDrops] = [:]
    /// Audio dropped while recording because the recorder fell behind, or lost because a
    /// source could not read it in time (silence in the file; the latter also makes the
    /// recording incomplete: see ``shortfalls``).
    public var droppedAudio: MediaTime = .zero
    /// The finished file's size in bytes (never more than ``Recorder/Settings/maxFileSize``).
    public var bytes: Int64
    /// The video size, if the file has video.
    public var videoSize: PixelSize?
    /// The video settings the recording was made with, if the file has video: as given, so
    /// their `size` is `nil` when the source's size was kept (``videoSize`` is the size recorded).
    public var video: VideoSettings?
    /// The audio tracks' titles, in order.
    public var audioTracks: [String]
    /// The audio settings (the same for every track).
    public var audio: AudioSettings?
    /// The container.
    public var container: Container
    /// Whether the recording stopped because it reached its maximum duration.
    public var reachedLimit: Bool
    /// How many clips (pause-separated parts) the recording had: in one file, one more than
    /// its pauses.
    public var clipCount: Int
    /// Why the recording ended.
    public var ending: RecordingEnding
    /// What each live stream sent and dropped, in the order the streams were given (after the
    /// stream ended).
    public var streams: [LiveStream.Statistics] = []
    /// Every step of the video encoder's speed, in order (see ``EncoderSpeedChange``): empty
    /// when it kept up, or when adapting was off.
    public var encoderSpeedChanges: [EncoderSpeedChange] = []
    /// What the recording's sources were asked to record and did not record, in the order it
    /// happened: a source lost or interrupted, one silent from start to end (an application that
    /// never played), part of a source not recorded (see ``SourceShortfall``). Empty when every
    /// source recorded all it was asked to.
    public var shortfalls: [SourceShortfall] = []
    /// Other programs' recordings that this recording's sources ended as they started, in the
    /// order it happened: what each source said (``SourceEvent/endedAnotherRecording(_:)``),
    /// after its name and a colon. They do not make the recording incomplete: it recorded
    /// all it was asked to.
    public var endedRecordings: [String] = []
    /// Clips recorded and then lost before the merge, in clip mode: their files were deleted
    /// while the recording went on (their folder deleted: ``ClipsFolderChange/remade(_:lostClips:)``).
    /// The file holds the other clips; empty when it holds every clip kept.
    public var lostClips: [URL] = []
    /// What became of the file while it was recorded, if someone renamed, moved or deleted it:
    /// ``url`` is where the recording went. `nil` when it stayed where it was made.
    public var relocation: FileRelocation?
    /// A GIF recording (``Container/gif``) that its disk stopped, whose GIF could not be made at
    /// the end (no room left for it): why, and its hint says how to make it once there is
    /// room. ``url`` is then the recording's intermediate (``Recorder/intermediateURL``),
    /// ended where it is with what reached the disk, which keeps the recording and plays.
    /// `nil` when the GIF was made (or the recording is no GIF).
    public var gifNotMade: ReelError?
    /// A clip-mode recording (``Recorder/PauseMode/clips``) that its disk stopped: the
    /// clips keep the recording (the clip the disk cut off ended where it is with what reached
    /// the disk, as a recovery does there, needing no room), and the disk that just filled has
    /// no room for the file they make. ``url`` is then the clips folder; this says so, and its
    /// hint how to merge them once there is room (``RecordingSession/recover(folder:to:overwrite:progress:)``).
    /// `nil` when the clips were merged (or the recording has none). A clip-mode recording
    /// whose disk filled failed with an `.insufficientStorage` error; a ``CameraRecorder``'s
    /// take still does (its delegate hears it, as AVFoundation reports `AVErrorDiskFull`).
    public var clipsNotMerged: ReelError?

    /// Whether every source recorded all it was asked to for the whole recording (no
    /// ``shortfalls``): the file is finalised either way, but an incomplete one misses sound or
    /// pictures that were asked for.
    public var isComplete: Bool { shortfalls.isEmpty }

    /// Whether the recording delivered all that was asked of it: every source recorded all of
    /// it (``isComplete``), no nearly full disk ended it early (``RecordingEnding/lowDiskSpace``),
    /// every live stream and HLS output ran to the end (no ``LiveStream/Statistics/failure``),
    /// and no clip was lost before the merge (no ``lostClips``).
    /// Dropped frames (``droppedFrames``, ``droppedAudio``) do not count: they are said, and the
    /// file is whole without them.
    public var isWhole: Bool {
        isComplete && ending != .lowDiskSpace && streams.allSatisfy { $0.failure == nil } && lostClips.isEmpty
    }
}

/// Something a recording's source was asked to record and did not: why, and from when.
public struct SourceShortfall: Sendable, Hashable {
    /// What happened to the source.
    public enum Kind: String, Sendable, Hashable {
        /// It went away for good (``SourceEvent/lost(_:)``).
        case lost
        /// It stopped delivering for a while (``SourceEvent/interrupted(_:)``); it may have come
        /// back, leaving a gap.
        case interrupted
        /// It had nothing to record from the start to the end (``SourceEvent/silent(_:)`` and no
        /// ``SourceEvent/resumed``): an application that never played.
        case silent
        /// Part of what it was asked for played and was not recorded
        /// (``SourceEvent/incomplete(_:)``).
        case incomplete
    }

    /// The source's name.
    public var source: String
    /// What happened.
    public var kind: Kind
    /// What the source said.
    public var error: ReelError
    /// The recorded time when it happened (zero for what was so from the start).
    public var at: MediaTime

    /// Describes a shortfall; each argument is the property of the same name.
    public init(source: String, kind: Kind, error: ReelError, at: MediaTime) {
        self.source = source
        self.kind = kind
        self.error = error
        self.at = at
    }
}

/// Why a recording ended.
public enum RecordingEnding: String, Sendable, Hashable {
    /// It was stopped.
    case requested
    /// It reached its maximum recorded duration.
    case maxDuration
    /// It reached its maximum file size.
    case maxFileSize
    /// The disk came down to the minimum free space, or filled (the file then holds all that
    /// was recorded until then: the room it kept for its index that the index did not need
    /// took the rest).
    case lowDiskSpace
    /// Every source it recorded was lost or came to its end.
    case sourcesGone
}

/// Something that happened to a recording.
public enum RecordingEvent: Sendable {
    /// The file is open and recording has begun.
    case started(URL)
    /// Periodic progress: the first as soon as something has been recorded (the first frame or
    /// sound), then about twice a second of recorded time.
    case progress(RecordingProgress)
    /// Recording paused; `recorded` is the recorded time at the pause.
    case paused(recorded: MediaTime)
    /// Recording resumed after a pause.
    case resumed(recorded: MediaTime)
    /// A clip began: `index` is where it stands among the clips kept (from zero; its index in
    /// ``RecordingSession/clips`` once finished). Clips removed before it (an undo) or found
    /// empty are not counted, so it is not the number in the clip's file name.
    case clipStarted(index: Int)
    /// A clip was finished and its file finalised (clip mode).
    case clipFinished(Clip)
    /// A chapter marker was placed (``Recorder/addMarker(_:)``): its title, and its time on the
    /// recording's timeline (recorded time, pauses left out). A marker at the instant of the
    /// one before joins its chapter: the event then gives that chapter, with both titles.
    case markerAdded(Chapter)
    /// The clips folder was renamed, moved or deleted while recorded, and what the recorder did.
    case clipsFolderChanged(ClipsFolderChange)
    /// A source went away; the recording goes on with the others.
    case sourceLost(name: String, error: ReelError)
    /// A source stopped delivering for a while and is trying to come back; the recording goes
    /// on with the others.
    case sourceInterrupted(name: String, error: ReelError)
    /// An interrupted or silent source delivers again.
    case sourceResumed(name: String)
    /// A source has nothing of what it was asked to record to deliver (no chosen application
    /// plays); ``sourceResumed(name:)`` follows when something does.
    case sourceSilent(name: String, error: ReelError)
    /// Part of what a source was asked to record plays but is not recorded; the recording goes
    /// on (see ``SourceEvent/incomplete(_:)``).
    case sourceIncomplete(name: String, error: ReelError)
    /// A source's start ended another program's recording, as `message` says (see
    /// ``SourceEvent/endedAnotherRecording(_:)``): the recording goes on, complete, and its
    /// summary lists it (``RecordingSummary/endedRecordings``).
    case anotherRecordingEnded(name: String, message: String)
    /// A source's capture missed sound because the machine was busy (see
    /// ``SourceEvent/missedAudio(at:duration:)``): the recording has silence there and goes on,
    /// complete. Like dropped frames it is counted (``RecordingProgress/droppedAudio``,
    /// ``RecordingSummary/droppedAudio``) and said at most every ten seconds for each source:
    /// `duration` is what it missed since it was last said (the first time, at once).
    case audioMissed(name: String, duration: MediaTime)
    /// A live stream lost its connection (or could not connect again); it keeps trying and the
    /// recording goes on. `name` is its address without the key.
    case streamInterrupted(name: String, error: ReelError)
    /// A live stream is connected again and sends from a keyframe.
    case streamResumed(name: String)
    /// A live stream stopped for good (HLS that could not be written); the recording goes on.
    case streamFailed(name: String, error: ReelError)
    /// One of the recorder's ``Recorder/sinks`` that the recording does not depend on (its
    /// ``PacketSink/policy`` is ``SinkPolicy/optional``) failed, was full or went, and was
    /// finished and dropped: it takes no more packets, and the recording goes on. `name` is
    /// the sink's description (its type's name unless it is `CustomStringConvertible`);
    /// `error` is what it threw, `nil` when it answered ``SinkFlow/full`` or ``SinkFlow/gone``.
    /// (Live streams say so by ``streamFailed(name:error:)``.)
    case sinkDropped(name: String, error: ReelError?)
    /// Video frames began to be lost for a reason (at least a few), or go on being lost (the
    /// count takes in the frames the recorder knows are being lost and whose gap is counted
    /// when the next frame comes, or at the end): said
    /// at most every ten seconds of recorded time for each reason, with what helps
    /// (``FrameDropReason/hint``). The summary counts them all (``RecordingSummary/frameDrops``).
    case framesDropped(FrameDropNotice)
    /// The video encoder fell behind and steps to a faster preset, or has kept up for a while
    /// and steps back (or such a step was refused: see ``EncoderSpeedChange/refusal``).
    case encoderSpeedChanged(EncoderSpeedChange)
    /// Clip mode, at the stop: the clips are being merged into the file; how far the merge has
    /// come, a few times a second, the first at 0 and the last at 1 (a long merge, or one that
    /// encodes FLAC again, takes a while). ``finished(_:)`` follows.
    case merging(WorkProgress)
    /// A GIF recording, at the stop: the recording is being made into the GIF (see
    /// ``Container/gif``); how far that has come, a few times a second, the first at 0 and the
    /// last at 1 (its intermediate is read twice: once to fit the palette, once to write the
    /// pictures). ``finished(_:)`` follows.
    case converting(WorkProgress)
    /// The recording is complete and its file finalised.
    case finished(RecordingSummary)
    /// The recording failed; what was written up to then stays on disk.
    case failed(ReelError)
}
