import Foundation
import ReelFFmpeg

/// The recorder's per-recording work, done only on the recorder's thread: hands each sample to
/// the ``RecordingMachine`` (which decides what is recorded, and when) and acts on what it
/// says with the recording's one encode (``RecordingFileWriter``): frames and audio to encode,
/// pauses to put on the disk, clips to begin. It watches the limits, and at the end finishes
/// the encode and, in clip mode, merges the clips.
final class RecorderPipeline: @unchecked Sendable {
    /// A request from the API, applied in order with the samples.
    typealias Control = RecorderStateMachine.Control

    let url: URL
    let settings: Recorder.Settings
    let plan: TrackPlan
    let session: RecordingSession
    /// The maximum duration asked for (the machine's limit also holds the time of clips an
    /// undo removed, see ``handBackRemovedClips()``).
    let limit: MediaTime?
    var machine: RecordingMachine
    /// What the clips finished so far hold, and which are (clip mode).
    var clipAccount = ClipAccounting()
    /// Clips were removed (their time handed back) since progress last heard (see ``takeClipsRemoved()``).
    var clipsRemoved = false
    /// The sound was made to reach the pause at the limit (see ``endSoundAtLimit()``).
    private var paddedAtLimit = false
    private(set) var writer: RecordingFileWriter!
    /// The clips' sink in clip mode.
    private(set) var clipFiles: ClipFileSink?
    var ending: RecordingEnding = .requested
    /// Where the sound of a recording without video is kept to, as silence, past what came:
    /// a source was interrupted when it ended (see ``soundInterrupted(untilSessionTime:)``).
    private var silentTail: MediaTime?
    /// Clips whose files went before the merge (see ``RecordingSession/lostClips``).
    var lostClips: [URL] = []
    /// The limits, as values: the file's size, the duration (the machine cuts at it), and when
    /// the disk is looked at and whether the free space leaves the minimum.
    private let sizeLimit: FileSizeLimit, durationLimit: DurationLimit
    private var spaceGuard: FreeSpaceGuard
    /// Reads the free space (with a minimum of free space) and follows the clips folder (clip
    /// mode) on its own queue.
    private(set) var freeSpace: FreeSpaceWatch?
    /// Events to report, collected while handling samples.
    var onClipStarted: ((Int) -> Void)?
    var onClipFinished: ((Clip) -> Void)?

    /// The sinks fed by the recording's encoders beside its file (a replay buffer, live streams).
    let sinks: [any PacketSink]
    /// The live streams among ``sinks``, whose statistics go into progress.
    let liveStreams: [LiveStream]
    /// Whether the recording has a file (else only ``sinks`` take what is encoded).
    let writesFile: Bool
    /// For a file made at the stop (a GIF), the hidden file recorded into until then.
    private(set) var intermediate: URL?
    /// Hears how far making the file from the intermediate has come, at the stop.
    var onConverting: (@Sendable (WorkProgress) -> Void)?

    var timeline: RecordingTimeline { machine.timeline }

    init(url: URL, settings: Recorder.Settings, sources: [SourceDescriptor], session: RecordingSession,
         sinks: [any PacketSink] = [], writesFile: Bool = true, soundLead: MediaTime = .zero,
         freeSpaceReader: FreeSpaceWatch.Reader? = nil) throws {
        self.url = url
        self.settings = settings
        self.session = session
        self.sinks = sinks
        liveStreams = sinks.compactMap { $0 as? LiveStream }
        self.writesFile = writesFile
        limit = settings.maxRecordedDuration
        spaceGuard = FreeSpaceGuard(minimum: writesFile ? settings.minimumFreeSpace : nil)
        sizeLimit = FileSizeLimit(maximum: settings.maxFileSize)
        durationLimit = DurationLimit(maximum: limit)
        if settings.video.frameMode != .constant, let stream = liveStreams.first(where: \.timesPicturesByDuration) {
            throw ReelError(.invalidConfiguration, "\(stream.name) writes HLS in fragmented MP4 segments, which time each picture as one frame: "
                            + "a recording that leaves out pictures that did not change (the \(settings.video.frameMode.rawValue) frame mode) would play at the wrong times in it",
                            hint: "write HLS in MPEG-TS segments, or record every picture (the constant frame mode)")
        }
        if !writesFile, settings.maxFileSize != nil {
            throw ReelError(.invalidConfiguration, "a recorder that writes no file (a replay buffer or live streams only) has no file to limit in size",
                            hint: "limit the replay buffer's bytes (ReplayBuffer's maxBytes) instead")
        }
        if let limit, limit <= .zero { throw ReelError(.invalidConfiguration, "the maximum duration must be positive") }
        if let max = settings.maxFileSize, max <= 0 { throw ReelError(.invalidConfiguration, "the maximum file size must be positive") }
        plan = try TrackPlan(settings: settings, sources: sources)
        let container = settings.container(for: url)
        if writesFile { try settings.checkAudioSources(plan.audioFormats.count, into: container) }
        if writesFile, container.intermediateContainer != nil {
            try Self.checkMadeAtStop(url: url, container: container, settings: settings, plan: plan)
            intermediate = Recovery.gifIntermediate(for: url)
        }
        machine = RecordingMachine(configuration: .init(frameRate: settings.video.frameRate, frameMode: settings.video.frameMode,
                                                        videoSource: plan.video != nil ? plan.videoSource : nil,
                                                        audioInputs: plan.audioInputs, limit: limit,
                                                        holdsAudioAheadOfVideo: settings.maxFileSize != nil || settings.minimumFreeSpace != nil,
                                                        audioLead: soundLead,
                                                        pausesAtLimit: settings.pausesAtLimit && plan.video != nil))
        let clips = writesFile && settings.pauseMode == .clips
        if clips {
            // The merged file appears at the end; refuse now if it could not be written then.
            if FileManager.default.fileExists(atPath: url.path) && !replacesFile {
                throw ReelError(.fileExists, "\(url.path) already exists", hint: LibraryHint.allowOverwriting)
            }
            // A folder that holds another recording's clips is refused, never reused.
            try session.claim(target: url, keepsClips: settings.keepsClips)
            // The clips folder holds the name from now on: a dated name reserved for the
            // recording is given back, so that a crash leaves the folder and no empty file.
            if Recorder.isOwnReservation(url) { Recorder.releaseReservation(url) }
        }
        do {
            // What the file cannot hold (H.264 in WebM, AAC in WebM) is refused before it is made.
            if writesFile { try AssetWriter.validate(fileConfiguration(url: intermediate ?? url, overwrite: false, maximumFileSize: nil)) }
            // Said now with what to do; while recording, the disk is looked at on a queue of its own.
            if let minimum = spaceGuard.minimum { try RecordingFile.checkFreeSpace(in: spaceFolder, minimum: minimum) }
            if spaceGuard.minimum != nil || clips {
                let session = session, fileFolder = url.deletingLastPathComponent()
                let folder: @Sendable () -> URL = { clips ? session.folder : fileFolder }
                // In clip mode the clips folder is followed there too (renamed, moved or deleted
                // while recorded: said within a second), before its free space is read.
                var follow: (@Sendable () -> Void)?
                if clips { follow = { try? session.followFolder() } }
                freeSpace = FreeSpaceWatch(folder: folder, reads: spaceGuard.minimum != nil, reader: freeSpaceReader, follow: follow)
            }
            // The file (or the clips' sink) and the encoders now, so that a bad path or codec
            // fails before the session starts.
            let file: RecordingFileWriter.File
            if clips {
                file = .clips(ClipFileSink(events: clipEvents()))
            } else if let intermediate {
                // Never over anything: its name is new. The file it is made into is written at the stop.
                file = .movie(try MovieFileSink(configuration: fileConfiguration(url: intermediate, overwrite: false, maximumFileSize: nil)))
            } else if writesFile {
                file = .movie(try MovieFileSink(configuration: fileConfiguration(url: url, overwrite: replacesFile,
                                                                                 maximumFileSize: settings.maxFileSize)))
            } else {
                file = .none
            }
            writer = try RecordingFileWriter(plan: plan, file: file, sinks: sinks,
                                             alignsTrackStarts: writesFile && fileContainer.isISOBaseMedia)
            if case .clips(let sink) = file { clipFiles = sink }
        } catch {
            if clips { session.releaseClaim() }
            throw error
        }
    }

    var container: Container { settings.container(for: url) }
    /// Whether the file at the recording's URL may be replaced: the settings allow it, or it is
    /// still the empty file of a dated name this process reserved (asked at each use: a file
    /// that appears at a released name meanwhile is never replaced unasked).
    var replacesFile: Bool { settings.overwrite || Recorder.isOwnReservation(url) }
    /// The container written while recording: the container's intermediate, if it has one.
    var fileContainer: Container { container.intermediateContainer ?? container }

    /// Refuses what a file made only at the stop (a GIF) cannot keep: sound, clips, a size
    /// limit; and a file at its name unless it may be replaced (checked now, not at the stop).
    private static func checkMadeAtStop(url: URL, container: Container, settings: Recorder.Settings, plan: TrackPlan) throws {
        let kind = container.fileExtension.uppercased()
        guard plan.video != nil else {
            throw ReelError(.invalidConfiguration, "a \(kind) holds pictures, and the recording has no video source",
                            hint: "add a video source, or record the sound into a sound file")
        }
        if !plan.audioTracks.isEmpty {
            throw ReelError(.invalidConfiguration, "a \(kind) holds no sound, and the recording has audio sources",
                            hint: "record without audio sources into a \(kind), or record into a video file (MP4, MKV, WebM) to keep the sound")
        }
        if settings.pauseMode == .clips {
            throw ReelError(.invalidConfiguration, "a \(kind) is made from one recording at the stop, not from clips",
                            hint: "pause in the single-file mode (the paused time is left out)")
        }
        if settings.maxFileSize != nil {
            throw ReelError(.invalidConfiguration, "a \(kind) is made at the stop, so the size it will have cannot be kept to a limit while recording",
                            hint: "limit the duration instead")
        }
        if !settings.overwrite && !Recorder.isOwnReservation(url) && FileManager.default.fileExists(atPath: url.path) {
            throw ReelError(.fileExists, "\(url.path) already exists", hint: LibraryHint.allowOverwriting)
        }
        if container == .gif { try GIFConverter.checkCanConvert() }
    }

    /// The configuration of a file of the recording: the single file, or a clip's.
    func fileConfiguration(url: URL, overwrite: Bool, maximumFileSize: Int64?) -> AssetWriter.Configuration {
        var configuration = AssetWriter.Configuration(url: url, container: fileContainer, video: plan.video, audio: plan.audioTracks,
                                                      fragmentInterval: settings.fragmentInterval, overwrite: overwrite,
                                                      expectedDuration: settings.maxRecordedDuration, maximumFileSize: maximumFileSize)
        configuration.writeBufferSize = settings.writeBufferSize
        return configuration
    }

    // MARK: Controls

    /// The pause and resume requests waiting (the recorder's state machine keeps them); called
    /// on the recorder's thread once the recording has begun and before each sample.
    var takeControls: (() -> [Control])?
    /// A pause or resume took effect: whether it paused, and the recorded time there.
    var controlApplied: ((_ paused: Bool, _ at: MediaTime) -> Void)?

    /// Pauses and resumes applied, said once the machine is no longer being changed and the
    /// session has reached the time each was scheduled at (`due`).
    private var appliedControls: [(paused: Bool, at: MediaTime, due: MediaTime)] = []

    /// Says the pauses and resumes applied that are due by session time `now`: one scheduled
    /// ahead (a delayed start) is said when it happens, not when it was taken.
    private func reportAppliedControls(upTo now: MediaTime) {
        guard appliedControls.contains(where: { $0.due <= now }) else { return }
        let due = appliedControls.filter { $0.due <= now }
        appliedControls.removeAll { $0.due <= now }
        for change in due { controlApplied?(change.paused, change.at) }
    }

    /// Applies the waiting requests to `machine` (the pipeline's, passed in while it is being
    /// changed: the recording's zero became known).
    private func applyControls(to machine: inout RecordingMachine) {
        guard machine.timeline.hasBegun, let controls = takeControls?(), !controls.isEmpty else { return }
        for control in controls {
            switch control {
            case .pause(let time):
                if let at = machine.pause(at: time) { appliedControls.append((true, at, time)) }
            case .resume(let time):
                if let at = machine.resume(at: time) { appliedControls.append((false, at, time)) }
            case .videoSourceGone:
                // Frames still queued are written; the limit no longer waits for more.
                machine.videoSourceWentAway()
            }
        }
    }

    var isPaused: Bool { timeline.isPaused }

    /// Recorded time so far.
    var recordedDuration: MediaTime { machine.recordedDuration }

    /// The encoded media written so far (what progress reports as bytes: not the container's
    /// boxes, not the space kept for the index); in clip mode, of the clips kept and those
    /// still being written.
    var mediaBytes: Int64 {
        let finished = clipFiles == nil ? clipAccount.finishedMedia : clipAccount.media(of: session.clips)
        return finished + writer.mediaBytes
    }

    var framesWritten: Int64 { writer.framesEncoded }
    var clipCount: Int { clipFiles != nil ? session.clips.count + (clipFiles?.unfinishedCount ?? 0) : timeline.intervals.count }
    var droppedFrames: Int64 { machine.droppedFrames }

    func progress(droppedAudio: MediaTime) -> RecordingProgress {
        // In clip mode, what the clips kept lost: a clip removed takes its drops with it.
        RecordingProgress(duration: max(.zero, recordedDuration - clipAccount.handedBack), maxDuration: limit, bytes: mediaBytes, frames: framesWritten,
                          droppedFrames: clipFiles != nil ? session.frameDrops.total : droppedFrames, isPaused: isPaused, clipCount: clipCount, droppedAudio: droppedAudio,
                          streams: liveStreams.map(\.statistics))
    }

    // MARK: Chapter markers

    /// The markers asked for at or before a session time (all with `nil`), at their session
    /// times (the recorder keeps them).
    var takeMarkers: ((_ upTo: MediaTime?) -> [Chapter])?
    /// A marker was placed: at its recorded time.
    var markerPlaced: ((Chapter) -> Void)?
    /// The single file's chapters so far, on its timeline.
    var chapters: [Chapter] = []
    /// The last chapter placed: its start on the recorded timeline, its clip (in clip mode) and
    /// the titles given to the markers it holds. A marker at its instant joins it.
    var lastChapter: (start: MediaTime, clip: Int?, titles: [String])?
    /// How many chapters were placed (markers joined into one counted once): an untitled one
    /// is named by its number.
    var chaptersPlaced = 0

    // MARK: Samples

    /// Handles one sample; returns true once the recording must end (a limit was reached).
    func handle(_ sample: SourcedSample) throws -> Bool {
        let now = sample.sample.presentationTime
        handBackRemovedClips()
        applyControls(to: &machine)
        reportAppliedControls(upTo: now)
        let encoder = writer.encoder
        let actions = machine.take(sample, keyframeDue: { encoder.keyframeDue(atGridIndex: $0) },
                                   applyControls: { [unowned self] machine in applyControls(to: &machine) })
        reportAppliedControls(upTo: now)
        try perform(actions)
        try endSoundAtLimit()
        try placeMarkers(upTo: sample.sample.presentationTime)
        if clipFiles != nil { reportUnfinishedClips() }
        return limitReached()
    }

    /// Paused at its limit (``Settings/pausesAtLimit``), once the sound has come past the
    /// pause: the clip's sound is made to reach its end (silence for what is missing), so that
    /// its audio encoders are finished and the clip is completed now. No sound past the limit
    /// comes to push it there, as more sound does at a pause asked for.
    private func endSoundAtLimit() throws {
        guard machine.pausedAtLimit else {
            paddedAtLimit = false
            return
        }
        guard !paddedAtLimit, machine.soundPassedPauseAtLimit, let last = timeline.intervals.last, let length = last.duration else { return }
        paddedAtLimit = true
        try writer.padAudio(to: last.offset + length)
    }

    /// Acts on the machine's actions, in order.
    private func perform(_ actions: [RecordingMachine.Action]) throws {
        for action in actions {
            // No room for another clip: the recording ends at its size, there.
            if clipAccount.sizeUsedUp { return }
            switch action {
            case .video(let frame, let time):
                try writer.appendVideo(frame, at: time)
            case .audio(let buffer, let input):
                try writer.appendAudio(buffer, input: input)
            case .pauseReached(let interval, let time):
                // What was recorded before the pause goes to the disk now: the encoder gives out
                // the frames it held, the file completes its fragment.
                try writer.pause(at: time)
                if let clipFiles {
                    // The clip's sound ends there too: its audio encoders are finished once the
                    // sound reaches the pause (see `StreamEncoder+ClipAudio.swift`).
                    try writer.endClipAudio(at: time)
                    try clipFiles.pauseReached(clip: interval, at: time)
                }
            case .intervalBegins(let interval, let time):
                guard let clipFiles else { continue }
                if interval > 0 {
                    // No room left for another clip in the merged file: the recording ends at its size.
                    if let max = settings.maxFileSize, finishedShare + mergeHeadroom + 8192 >= max {
                        clipAccount.sizeUsedUp = true
                        return
                    }
                    writer.encoder.requestKeyframe(atGridIndex: settings.video.frameRate.frameIndex(at: time, rounding: .nearest))
                    // Sound of this clip may come before the video reaches the pause: the
                    // clip before's sound ends here all the same (said before any is given).
                    try writer.endClipAudio(at: time)
                }
                clipFiles.cut(clip: interval, at: time)
                onClipStarted?(session.index(ofClipBegun: interval))
            }
        }
    }

    /// Asks each limit what the recording comes to after a sample (the size, the disk when it
    /// is due, the duration), and applies the first that says stop; whether the recording ends.
    private func limitReached() -> Bool {
        let now = recordedDuration
        var action = sizeLimit.action(sizeFigures(), at: now)
        if action == .goOn, spaceGuard.isDue(recorded: now, written: clipAccount.finishedMedia + writer.mediaBytes) {
            // The disk is looked at again on the watch's queue: the clips folder moved or deleted
            // is said within a second (what cannot be made again fails the next clip, and the
            // clip being recorded goes to a rescue folder).
            action = freeSpaceAction(at: now)
        }
        // The disk filled, and had back the room of the file's index reservation that its index
        // will not need: what was recorded reaches the disk, and the recording ends here, for
        // the disk (a full disk is no place to go on).
        if action == .goOn, diskFilled { action = .stop(.lowDiskSpace, at: now) }
        // A frame past the limit, or (sound only) every track at it.
        if action == .goOn { action = durationLimit.action(reached: machine.reachedLimit, complete: machine.isComplete, at: now) }
        switch action {
        case .goOn:
            return false
        case .reached(let reason):
            ending = RecordingEnding(reason)
            return false
        case .stop(.maxDuration, _):
            ending = .maxDuration
            return true
        case .stop(let reason, _):
            // Held audio past the video's end is left out: sound and pictures end together.
            ending = RecordingEnding(reason)
            machine.endEarly()
            return true
        }
    }

    /// Whether the disk of the file (or of a clip being recorded) filled as it was written
    /// (see ``MovieFileSink/diskFilled``).
    private var diskFilled: Bool {
        (writer.movie.map { [$0] } ?? clipFiles?.openFiles ?? []).contains { $0.diskFilled }
    }

    /// What the file (or the clips and their merge) will come to, for the size limit: what it
    /// has, what the encoder still holds, and its index.
    private func sizeFigures() -> FileSizeLimit.Figures {
        guard sizeLimit.maximum != nil else { return FileSizeLimit.Figures(projected: 0, typicalFrameBytes: 0) }
        let inEncoder = writer.encoder.framesInEncoder
        let files = writer.movie.map { [$0] } ?? clipFiles?.openFiles ?? []
        let projected = finishedShare + mergeHeadroom + files.reduce(0) { $0 + $1.projectedFileSize(framesInEncoder: inEncoder) }
        return FileSizeLimit.Figures(projected: projected, typicalFrameBytes: files.map(\.typicalFrameBytes).max() ?? 0,
                                     full: clipAccount.sizeUsedUp || writer.isFull)
    }

    /// Whether the free space last read, less what reached the disk since and what the file
    /// still has on its way to it (the fragment being filled, the frames in the encoder:
    /// megabytes for a busy picture), leaves the minimum. Decided from the watch's figure;
    /// the disk is looked at again on the watch's queue, for the next time.
    private func freeSpaceAction(at now: MediaTime) -> LimitAction {
        guard let freeSpace else { return .goOn }
        let inEncoder = writer.encoder.framesInEncoder
        let files = writer.movie.map { [$0] } ?? clipFiles?.openFiles ?? []
        let toCome = files.reduce(0) { $0 + $1.bytesToCome(framesInEncoder: inEncoder) }
        let onDisk = finishedBytes + files.reduce(0) { $0 + $1.bytesOnDisk }
        defer { freeSpace.refresh(onDisk: onDisk) }
        return spaceGuard.action(freeSpace.latest, onDisk: onDisk, toCome: toCome, reserved: files.reduce(0) { $0 + $1.indexReservation }, at: now)
    }

    /// The folder whose disk the recording fills: the clips folder's in clip mode, else the file's.
    var spaceFolder: URL {
        settings.pauseMode == .clips ? session.folder : url.deletingLastPathComponent()
    }

    /// How much of the session time `[start, end)` the recording holds (pauses and what lies
    /// past the limit taken out).
    func recordedLength(from start: MediaTime, to end: MediaTime) -> MediaTime {
        machine.recordedLength(from: start, to: end)
    }

    /// Which frames the finished recording holds, and where (see ``RecordedFrames``).
    var recordedFrames: RecordedFrames {
        RecordedFrames(videoSource: plan.videoSource, frameRate: settings.video.frameRate, timeline: timeline,
                       end: recordedDuration, runs: machine.writtenRuns(limitedTo: ending == .maxFileSize || keptByFullDisk != nil ? finishedFramesAtEnd : nil))
    }
    /// The frames the finished file or clips hold (known once finished).
    var finishedFramesAtEnd: Int64?

    /// Goes on encoding the video at `preset` from the next frame (see
    /// ``StreamEncoder/changeVideoPreset(to:)``).
    func changeVideoPreset(to preset: String) throws -> PresetChangeOutcome {
        try writer.encoder.changeVideoPreset(to: preset)
    }

    // MARK: The end

    /// Notes that the recording ends because its maximum duration passed on the clock, the
    /// sources having delivered less (one stalled).
    func limitPassedOnClock() {
        if ending == .requested { ending = .maxDuration }
    }

    /// A recording of sound alone whose source was interrupted when it ended (its audio server
    /// gone and not back), at `time` on the session's clock: its sound is kept to there, the
    /// time since the interruption as silence, as an interruption in the middle is (issue 26,
    /// F7: the file ended where the sound stopped, seconds short of the session). Within the
    /// limit; a recording with video ends with its frames.
    func soundInterrupted(untilSessionTime time: MediaTime) {
        guard plan.video == nil, !plan.audioTracks.isEmpty, timeline.hasBegun else { return }
        let end = timeline.recordedDuration(upTo: time)
        silentTail = limit.map { min($0, end) } ?? end
    }

    /// The end of the sound, past what came, that ``soundInterrupted(untilSessionTime:)`` keeps:
    /// for a recording stopped or at its limit (not one a full disk or its size ended).
    var soundKeptTo: MediaTime? { ending == .requested || ending == .maxDuration ? silentTail : nil }

    /// Notes that the recording ends because every source has gone (unless a limit ended it).
    func sourcesWentAway() {
        if ending == .requested { ending = .sourcesGone }
    }

    /// Stops without finishing: what is on disk stays (fragmented, playable). Returns the
    /// clips folder if the recording is in clips there (clip mode), for the error to say so.
    func abandon() -> URL? {
        freeSpace?.settle()
        writer.abandon()
        guard clipFiles != nil, writer.wroteSomething || !session.clips.isEmpty else { return nil }
        return session.folder
    }
}

extension RecordingEnding {
    /// The ending a limit's stop gives a recording.
    init(_ reason: LimitReason) {
        switch reason {
        case .maxDuration: self = .maxDuration
        case .maxFileSize: self = .maxFileSize
        case .lowDiskSpace: self = .lowDiskSpace
        }
    }
}
